"""What every store checks and sets around a collection's writes, alike,
where the schema asks: its references (``references``: a ``ref`` names a
record that exists; a record named is not deleted) and its timestamps
(``Schema(timestamps=True)``: ``created`` and ``updated``, set from one
clock read, ``updated`` never earlier than before).

A write that needs to look at other records (a reference's, or the one it
changes, for its timestamps) is made in one atomic step of the store
(``Storage.atomically``) holding the collections it involves, so no write
between the look and the change can make it wrong; on PostgreSQL that
step takes each collection's lock, which every write of it takes too.
Inside a batch's step, the batch's own earlier writes count, and the step
is the batch's. A store wraps only the collections that need it
(``Collections.check``); the others are served as they are, at no cost.
"""
from __future__ import annotations

from typing import Any

from ..kinds.dates import now
from ..validation import pointer
from . import Contradiction, NotFound, Precondition, StaleVersion
from .references import Dangling, References, Referred


class NotCurrent(Contradiction):
    """A write sent a timestamp other than the record's (422, at the field)."""

    def __init__(self, field: str) -> None:
        super().__init__(f"The {field} time is set by the service: send its current value, "
                         "or leave it out.")
        self._errors = [(pointer(field), "is set by the service: send its current value "
                                         "or leave it out")]

    @property
    def errors(self) -> list[tuple[str, str]]:
        return self._errors


class Checked:
    """One collection's records (``records``), each write checked and
    stamped as its schema asks, in one atomic step of ``storage`` where it
    must look at other records; or, ``inside`` one already (``storage`` is
    then the step's unit), in that step. Reads go straight to ``records``."""

    def __init__(self, records: Any, refs: References | None, storage: Any,
                 inside: bool = False) -> None:
        self.records, self.storage, self.inside = records, storage, inside
        self.schema = schema = records.schema
        self.targets = () if refs is None else refs.targets
        self.referrers = () if refs is None else refs.referrers
        self.stamps = schema.read_only
        self.own = (schema.plural,)     # the step holds what it checks too (``Collections.locked``)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.records, name)

    def create(self, *, key: Any = None, **fields: Any) -> Any:
        if self.stamps:
            if not self.stamps.isdisjoint(fields):
                raise TypeError(f"created and updated are set by the store ({self.schema.plural})")
            fields["created"] = fields["updated"] = now()
        if not self._names_a_record(fields):
            return self.records.create(key=key, **fields)

        def run(unit: Any) -> Any:
            self._check_targets(unit, fields)
            return _records(unit, self.schema.plural).create(**fields)
        return self._step(run, key, one_write=True)

    def update(self, record_id: int, *, precondition: Precondition | None = None,
               key: Any = None, **fields: Any) -> Any:
        sent = {f: fields.pop(f) for f in self.stamps if f in fields}
        if not self.stamps and not self._names_a_record(fields):
            return self.records.update(record_id, precondition=precondition, key=key, **fields)

        def run(unit: Any) -> Any:
            # The record first, then its version: a 404 or 412 comes before
            # anything the body says (a 422 for a record it names).
            records = _records(unit, self.schema.plural)
            current = records.get(record_id)
            if precondition is not None and not precondition.allows(current.version):
                raise StaleVersion(record_id)
            if self.stamps:
                for field, value in sent.items():
                    if value is not None and value != getattr(current, field):
                        raise NotCurrent(field)
                fields["updated"] = max(now(), current.updated)    # (a clock set back)
            self._check_targets(unit, fields)
            return records.update(record_id, precondition=precondition, **fields)
        return self._step(run, key, one_write=True)

    def delete(self, record_id: int, *, precondition: Precondition | None = None) -> None:
        if not self.referrers:
            return self.records.delete(record_id, precondition=precondition)

        def run(unit: Any) -> None:
            # Deleted first, then looked for: on PostgreSQL the delete waits
            # for a write that names the record, and the look then sees it.
            _records(unit, self.schema.plural).delete(record_id, precondition=precondition)
            for referrer, field in self.referrers:
                if _records(unit, referrer.plural).count(**{field: record_id}):
                    raise Referred(self.schema, record_id, referrer, field)
        return self._step(run, None)

    def _names_a_record(self, fields: dict[str, Any]) -> bool:
        """Whether a write gives a reference a value (a record to look for)."""
        return bool(self.targets) and any(fields.get(f) is not None for f, _ in self.targets)

    def _step(self, run: Any, key: Any, one_write: bool = False) -> Any:
        if self.inside:         # a batch's: its key is the batch's
            return run(self.storage)
        return self.storage.atomically(self.own, run, key=key, one_write=one_write)

    def _check_targets(self, unit: Any, fields: dict[str, Any]) -> None:
        for field, target in self.targets:
            record_id = fields.get(field)
            if record_id is not None:
                try:
                    _records(unit, target.plural).get(record_id)
                except NotFound:
                    raise Dangling(target, field, record_id) from None


def _records(unit: Any, plural: str) -> Any:
    """A unit's collection itself (not its ``Checked``)."""
    return unit.raw(plural)


class Inside:
    """A store inside one of its atomic steps, as ``run`` sees it: its
    collections (a memory store's, whose locks the step holds)."""

    def __init__(self, storage: Any) -> None:
        self.storage = storage

    def __getitem__(self, plural: str) -> Any:
        return within(self.storage, self.storage.collections[plural], self)

    def raw(self, plural: str) -> Any:
        return self.storage.collections[plural]


def within(storage: Any, records: Any, unit: Any) -> Any:
    """``records`` as a step's ``unit`` gives them: checked, where ``storage`` checks them."""
    if records.schema.plural not in storage.checked:
        return records
    return Checked(records, storage.references.get(records.schema.plural), unit, inside=True)


__all__ = ["Checked", "Inside", "NotCurrent", "within"]
