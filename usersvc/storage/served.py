"""How a store serves its collections, the base of every store here
(``Collections``): ``storage[plural]``, each collection's records, or
its records behind a ``checked.Checked`` where its schema declares
references or timestamps; ``step[plural]``, the same inside one of the
store's atomic steps (``Step``); and the one order in which a step holds
the collections it involves (``Collections.locked``).

``checked`` and ``references`` are imported for a store whose schemas
need them (``serve``, ``references_of``): one that serves users alone
never loads them.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from ..schema import Schema

T = TypeVar("T")


class Collections:
    """A store's collections by plural, as it serves them (``storage[plural]``):
    records, or records behind a ``checked.Checked`` where the schema asks
    (``serve``). Every store here is one."""

    collections: dict[str, Any]
    references: dict[str, Any] = {}     # (``references.References``, by plural)
    checked: dict[str, Any] = {}        # (``checked.Checked``, by plural)
    served: dict[str, Any] = {}

    def __getitem__(self, plural: str) -> Any:
        return self.served[plural]

    def serve(self) -> None:
        """Once ``collections`` are made: a ``Checked`` before each whose
        schema declares references or timestamps (``checked``, imported
        then: the records of a store that has none are served as they are)."""
        self.references = references_of([r.schema for r in self.collections.values()])
        checked = [plural for plural, records in self.collections.items()
                   if plural in self.references or records.schema.read_only]
        self.checked = {}
        if checked:
            from .checked import Checked
            self.checked = {plural: Checked(self.collections[plural],
                                            self.references.get(plural), self)
                            for plural in checked}
        self.served = {**self.collections, **self.checked}
        self._locked: dict[tuple[str, ...], tuple[str, ...]] = {}

    def locked(self, plurals: Iterable[str]) -> tuple[str, ...]:
        """The collections a step that writes to ``plurals`` holds, by plural,
        on every store: those it writes
        and those their references make it read (named, or naming them). A
        step reads no other: no two steps ever wait for each other
        (docs/architecture.md, "One lock order")."""
        plurals = tuple(plurals)
        found = self._locked.get(plurals)
        if found is None:
            involved = set(plurals)
            for plural in plurals:
                refs = self.references.get(plural)
                if refs is not None:
                    involved.update(target.plural for _, target in refs.targets)
                    involved.update(referrer.plural for referrer, _ in refs.referrers)
            found = self._locked[plurals] = tuple(sorted(involved))
        return found



class Step:
    """A store inside one of its atomic steps, as ``run`` sees it:
    ``step[plural]``, a collection as served, checked in this step;
    ``step.raw(plural)``, as it is: on memory (no ``db``) the store's own
    records, whose locks the step holds (``locked``: the collections'); on
    SQL, bound to the step's transaction (``db``), which the store commits,
    or undoes if ``run`` raises. What wraps a step reads ``db`` and runs
    its part in ``attempt`` (as a feature that keeps a write's answer in
    its step does: ``protocol.Atomic``)."""

    __slots__ = ("storage", "db", "locked", "nothing_to_undo")   # (PERF: one made a step)

    def __init__(self, storage: Any, db: Any = None, locked: tuple[str, ...] = (),
                 nothing_to_undo: bool = False) -> None:
        self.storage, self.db, self.locked = storage, db, locked
        #: Whether a part of it (``attempt``) has nothing to undo of its own:
        #: in a step told so (``Storage.atomically``), where a refused write
        #: leaves the step as it was (SQLite, memory; never on PostgreSQL).
        self.nothing_to_undo = nothing_to_undo

    def __getitem__(self, plural: str) -> Any:
        checked = self.storage.checked.get(plural)
        if checked is not None:
            return checked.in_step(self)
        records = self.storage.collections[plural]     # ``raw``'s (PERF: without a call)
        return records if self.db is None else records.bound(self.db)

    def raw(self, plural: str) -> Any:
        records = self.storage.collections[plural]
        return records if self.db is None else records.bound(self.db)

    def attempt(self, part: Callable[..., T], *args: Any) -> T:
        """``part(*args)``, whose writes in this step are undone if it
        raises (the error goes on), the rest of the step going on: a
        savepoint on SQL; on memory, what it changed put back. In a step
        with ``nothing_to_undo`` (its one write is ``part``'s, which fails
        whole), none where a refused write leaves the step as it was
        (SQLite, memory); PostgreSQL makes one anyway, as a refused
        statement ends its transaction."""
        if self.nothing_to_undo:    # (its one write fails whole: PERF, no call)
            return part(*args)
        return self.storage.attempt(self, part, args)


def references_of(schemas: Sequence[Schema]) -> dict[str, Any]:
    """Each collection's references, by plural (``references.references``,
    imported where a schema has a ``ref``: none has, none is); ``ValueError``
    for a ``ref`` to a collection the store does not hold."""
    if not any(kind.refers_to for schema in schemas for kind in schema.fields.values()):
        return {}
    from .references import references
    return references(schemas)


__all__ = ["Collections", "Step", "references_of"]
