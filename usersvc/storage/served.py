"""How a store serves its collections (``Collections``), as they are or behind a
``Checked``, and inside one of its atomic steps (``Step``): docs/architecture.md, "Words"."""
from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .errors import Dangling, NotCurrent, NotFound, Precondition, Referred, StaleVersion
from .feed import Change, Listener, Stop
from .stored import references_of

if TYPE_CHECKING:
    from .protocol import Atomic, ServedRecords, ServedStorage, T
    from .references import References


class Collections:
    """A store's collections by plural, as it serves them (``storage[plural]``,
    made by ``serve``): every store here is one."""

    references: dict[str, References] = {}  # by plural
    checked: dict[str, Checked] = {}    # by plural
    served: dict[str, ServedRecords] = {}
    involved: dict[str, set[str]] = {}  # what a step writing one holds, by plural (``locked``)

    def __getitem__(self, plural: str) -> ServedRecords:
        return self.served[plural]

    def serve(self: ServedStorage) -> None:
        """Once ``collections`` are made (the store's own): a ``Checked`` before each whose
        schema declares references or timestamps (the others served as they are)."""
        self.references = references_of([r.schema for r in self.collections.values()])
        self.checked = {plural: Checked(records, self.references.get(plural), self)
                        for plural, records in self.collections.items()
                        if plural in self.references or records.schema.read_only}
        self.served = {**self.collections, **self.checked}
        self.involved = {plural: refs.involved for plural, refs in self.references.items()}

    def locked(self, plurals: Iterable[str]) -> tuple[str, ...]:
        """The collections a step that writes to ``plurals`` holds, by plural,
        on every store: those it writes and those their references make it
        read (named, or naming them). A step reads no other: no two steps
        ever wait for each other (docs/architecture.md, "One lock order")."""
        return tuple(sorted({held for plural in plurals
                             for held in self.involved.get(plural, (plural,))}))


class Step:
    """A store inside one of its atomic steps, as ``run`` sees it (``protocol.Atomic``):
    ``step[plural]``, a collection as served, checked in this step; ``step.raw(plural)``, as
    it is: on memory (no ``db``) the store's own records, whose locks the step holds
    (``locked``); on SQL, bound to the step's transaction (``db``: ``SQLRecords.bound``)."""

    __slots__ = ("storage", "db", "locked", "nothing_to_undo")

    def __init__(self, storage: ServedStorage, db: Any = None, locked: tuple[str, ...] = (),
                 nothing_to_undo: bool = False) -> None:
        self.storage, self.db, self.locked = storage, db, locked
        #: Whether a part of it (``attempt``) has nothing to undo of its own: a
        #: refused write leaves the step as it was (SQLite, memory; never PostgreSQL).
        self.nothing_to_undo = nothing_to_undo

    def __getitem__(self, plural: str) -> ServedRecords:
        if plural in self.storage.checked:      # (its writes' checks made in this step)
            return Checked(self.raw(plural), self.storage.checked[plural].refs, self.storage, self)
        return self.raw(plural)

    def raw(self, plural: str) -> ServedRecords:
        records = self.storage.collections[plural]
        return records if self.db is None else (
            records.bound(self.db))     # type: ignore[attr-defined]  # (a db: SQLRecords)

    def attempt(self, part: Callable[..., T], *args: Any) -> T:
        """``part(*args)``, whose writes in this step are undone if it
        raises (the error goes on), the rest of the step going on: a
        savepoint on SQL; on memory, what it changed put back."""
        if self.nothing_to_undo:    # (its one write fails whole)
            return part(*args)
        return self.storage.attempt(self, part, args)


class Checked:
    """One collection's ``records``, each write checked and stamped in the
    open, on every store: a ``ref`` names a record that exists, a record
    named is not deleted; ``created`` and ``updated`` come from one clock
    read, ``updated`` never going back. A write that must look at other
    records is made in one atomic step of ``storage`` (or the ``step``
    running: a batch's, whose earlier writes count), so nothing can change
    between the look and the write. Reads go straight to ``records``, each by name."""

    def __init__(self, records: ServedRecords, refs: References | None, storage: Atomic,
                 step: Step | None = None) -> None:
        self.records, self.refs, self.storage, self.step = records, refs, storage, step
        self.schema, self.stamps = records.schema, records.schema.read_only
        self.targets, self.referrers = (refs.targets, refs.referrers) if refs else ((), ())

    def create(self, **fields: Any) -> Any:
        """Stamped; made in a step where it names a record, looked for
        first (``Dangling`` if there is none)."""
        if self.stamps:
            if not self.stamps.isdisjoint(fields):
                raise TypeError(f"created and updated are set by the store ({self.schema.plural})")
            from ..kinds.dates import now  # (loaded with a schema that has stamps)
            fields["created"] = fields["updated"] = now()
        if not self._names_a_record(fields):
            return self.records.create(**fields)

        def run(step: Step) -> Any:
            self._check_targets(step, fields)
            return step.raw(self.schema.plural).create(**fields)
        return self._step(run, nothing_to_undo=True)

    def update(self, record_id: int, *, precondition: Precondition | None = None,
               **fields: Any) -> Any:
        """Made in a step where it is stamped or names a record: the record
        read, its version and the timestamps sent compared, then written."""
        sent = {f: fields.pop(f) for f in self.stamps if f in fields}
        if not self.stamps and not self._names_a_record(fields):
            return self.records.update(record_id, precondition=precondition, **fields)

        def run(step: Step) -> Any:
            # The record first, then its version: a 404 or 412 comes before
            # anything the body says (a 422 for a record it names).
            records = step.raw(self.schema.plural)
            current = records.get(record_id)
            if precondition is not None and not precondition.allows(current.version):
                raise StaleVersion(record_id)
            if self.stamps:
                from ..kinds.dates import now
                for field, value in sent.items():
                    if value is not None and value != getattr(current, field):
                        raise NotCurrent(field)
                fields["updated"] = max(now(), current.updated)    # (a clock set back)
            self._check_targets(step, fields)
            return records.update(record_id, precondition=precondition, **fields)
        return self._step(run, nothing_to_undo=True)

    def delete(self, record_id: int, *, precondition: Precondition | None = None) -> None:
        """Made in a step where others may name the record (``Referred`` if one does)."""
        if not self.referrers:
            return self.records.delete(record_id, precondition=precondition)

        def run(step: Step) -> None:
            # Deleted first, then looked for: on PostgreSQL the delete waits
            # for a write that names the record, and the look then sees it.
            step.raw(self.schema.plural).delete(record_id, precondition=precondition)
            for referrer, field in self.referrers:      # (``field``: a filter, not q or where)
                if step.raw(referrer.plural).count(**{field: record_id}):  # type: ignore[arg-type]  # (a filter's keyword, by name)
                    raise Referred(self.schema, record_id, referrer, field)
        return self._step(run)

    def get(self, record_id: int) -> Any:
        return self.records.get(record_id)

    def list(self, **arguments: Any) -> builtins.list[Any]:
        return self.records.list(**arguments)

    def count(self, **filters: Any) -> int:
        return self.records.count(**filters)

    def last_id(self) -> int:
        return self.records.last_id()

    def restore(self, records: Sequence[Any], *, last_id: int = 0) -> None:
        return self.records.restore(records, last_id=last_id)

    @property
    def history(self) -> str:
        return self.records.history

    def changes(self, *, after: int = 0, limit: int = 100) -> builtins.list[Change]:
        return self.records.changes(after=after, limit=limit)

    def entry(self, record_id: int) -> Change | None:
        return self.records.entry(record_id)

    def position(self) -> int:
        return self.records.position()

    def position_and_list(self, **arguments: Any) -> tuple[int, builtins.list[Any]]:
        return self.records.position_and_list(**arguments)

    def restore_changes(self, changes: Sequence[Change], *, last_id: int = 0) -> None:
        return self.records.restore_changes(changes, last_id=last_id)

    def announce_commits(self, listener: Listener) -> Stop:  # (served alone: ``CommitsAnnounced``)
        return self.records.announce_commits(listener)

    @property
    def writes_failing(self) -> str | None:     # (``None`` on memory: none kept)
        return getattr(self.records, "writes_failing", None)

    def _names_a_record(self, fields: dict[str, Any]) -> bool:
        """Whether a write gives a reference a value (a record to look for)."""
        return any(fields.get(f) is not None for f, _ in self.targets)

    def _step(self, run: Callable[[Step], T], nothing_to_undo: bool = False) -> T:
        if self.step is not None:       # the step running (a batch's, or one a feature wraps)
            return run(self.step)
        return self.storage.atomically((self.schema.plural,), run, nothing_to_undo=nothing_to_undo)

    def _check_targets(self, step: Step, fields: dict[str, Any]) -> None:
        for field, target in self.targets:
            if fields.get(field) is not None:
                try:
                    step.raw(target.plural).get(fields[field])
                except NotFound:
                    raise Dangling(target, field, fields[field]) from None
