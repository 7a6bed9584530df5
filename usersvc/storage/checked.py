"""What every store checks and sets around a collection's writes, where its
schema asks: references (a ``ref`` names a record that exists; a record
named is not deleted: ``references``) and timestamps (``created`` and
``updated``, from one clock read, ``updated`` never going back).

It is part of every store's write path, in the open: a store serves each
collection (``storage[plural]``, ``served.Collections``) as its records,
or, where the schema declares references or timestamps, behind a
``Checked`` (this module is imported then: a store whose schemas declare
neither never loads it). A write that must look at other records (a
reference's, or the one it changes) is made in one atomic step
(``Storage.atomically``, run with a ``served.Step``) that holds the
collections it involves in the one order (``Collections.locked``), so
nothing can change between the look and the write. Inside a batch, the
step is the batch's and its earlier writes count.
"""
from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..kinds import dates
from .feed import Change
from .protocol import NotCurrent, NotFound, Precondition, StaleVersion
from .references import Dangling, References, Referred

if TYPE_CHECKING:
    from .served import Step


class Checked:
    """One collection's ``records``, each write checked and stamped, in an
    atomic step of ``storage`` where it must look at other records (or in
    the ``step`` already running); reads go straight to ``records``, each
    named (what ``RecordStore`` and ``feed.ChangeFeed`` name, and what the
    app asks of a store besides), so a reader sees all a ``Checked`` is."""

    def __init__(self, records: Any, refs: References | None, storage: Any,
                 step: Step | None = None) -> None:
        self.records, self.refs, self.storage, self.step = records, refs, storage, step
        self.schema = schema = records.schema
        self.targets = () if refs is None else refs.targets
        self.referrers = () if refs is None else refs.referrers
        self.stamps = schema.read_only
        self.own = (schema.plural,)     # the step holds what it checks too (``Collections.locked``)

    def in_step(self, step: Step) -> Checked:
        """This collection inside ``step`` (``step[plural]``): its records as
        the step has them, each write's checks made in the step."""
        return Checked(step.raw(self.schema.plural), self.refs, self.storage, step)

    def create(self, **fields: Any) -> Any:
        if self.stamps:
            if not self.stamps.isdisjoint(fields):
                raise TypeError(f"created and updated are set by the store ({self.schema.plural})")
            fields["created"] = fields["updated"] = dates.now()
        if not self._names_a_record(fields):
            return self.records.create(**fields)

        def run(step: Step) -> Any:
            self._check_targets(step, fields)
            return step.raw(self.schema.plural).create(**fields)
        return self._step(run, nothing_to_undo=True)

    def update(self, record_id: int, *, precondition: Precondition | None = None,
               **fields: Any) -> Any:
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
                for field, value in sent.items():
                    if value is not None and value != getattr(current, field):
                        raise NotCurrent(field)
                fields["updated"] = max(dates.now(), current.updated)    # (a clock set back)
            self._check_targets(step, fields)
            return records.update(record_id, precondition=precondition, **fields)
        return self._step(run, nothing_to_undo=True)

    def delete(self, record_id: int, *, precondition: Precondition | None = None) -> None:
        if not self.referrers:
            return self.records.delete(record_id, precondition=precondition)

        def run(step: Step) -> None:
            # Deleted first, then looked for: on PostgreSQL the delete waits
            # for a write that names the record, and the look then sees it.
            step.raw(self.schema.plural).delete(record_id, precondition=precondition)
            for referrer, field in self.referrers:
                if step.raw(referrer.plural).count(**{field: record_id}):
                    raise Referred(self.schema, record_id, referrer, field)
        return self._step(run)

    # -- reads, the feed, and what the app asks: the records' own, each
    # named (``RecordStore``, ``feed.ChangeFeed``), as they are -----------

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

    def announce_commits(self, listener: Any) -> Any:      # (served alone: ``CommitsAnnounced``)
        return self.records.announce_commits(listener)

    @property
    def writes_failing(self) -> str | None:
        """The records' (``None`` where they keep no such word: memory)."""
        return getattr(self.records, "writes_failing", None)

    def _names_a_record(self, fields: dict[str, Any]) -> bool:
        """Whether a write gives a reference a value (a record to look for)."""
        return bool(self.targets) and any(fields.get(f) is not None for f, _ in self.targets)

    def _step(self, run: Any, nothing_to_undo: bool = False) -> Any:
        if self.step is not None:       # the step running (a batch's, or one a feature wraps)
            return run(self.step)
        return self.storage.atomically(self.own, run, nothing_to_undo=nothing_to_undo)

    def _check_targets(self, step: Step, fields: dict[str, Any]) -> None:
        for field, target in self.targets:
            record_id = fields.get(field)
            if record_id is not None:
                try:
                    step.raw(target.plural).get(record_id)
                except NotFound:
                    raise Dangling(target, field, record_id) from None


__all__ = ["Checked", "NotCurrent"]
