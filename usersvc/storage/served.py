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

from collections.abc import Iterable, Sequence
from typing import Any

from ..validation import Schema


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
        """The collections a step that writes to ``plurals`` holds, by plural
        (after an idempotency key's lock), on every store: those it writes
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

    def stop_waiting(self) -> None:
        for records in self.collections.values():
            records.stop_waiting()


class Step:
    """A store inside one of its atomic steps, as ``run`` sees it:
    ``step[plural]``, a collection as served, checked in this step;
    ``step.raw(plural)``, as it is: on memory (no ``db``) the store's own
    records, whose locks the step holds; on SQL, bound to the step's
    transaction (``db``), which the store commits, or undoes if ``run`` raises."""

    def __init__(self, storage: Any, db: Any = None) -> None:
        self.storage, self.db = storage, db

    def __getitem__(self, plural: str) -> Any:
        checked = self.storage.checked.get(plural)
        return self.raw(plural) if checked is None else checked.in_step(self)

    def raw(self, plural: str) -> Any:
        records = self.storage.collections[plural]
        return records if self.db is None else records.bound(self.db)


def references_of(schemas: Sequence[Schema]) -> dict[str, Any]:
    """Each collection's references, by plural (``references.references``,
    imported where a schema has a ``ref``: none has, none is); ``ValueError``
    for a ``ref`` to a collection the store does not hold."""
    if not any(kind.refers_to for schema in schemas for kind in schema.fields.values()):
        return {}
    from .references import references
    return references(schemas)


__all__ = ["Collections", "Step", "references_of"]
