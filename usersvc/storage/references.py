"""References between collections (``kinds.ref``), kept by every store alike.

A write that gives a ``ref`` field a value checks that the record it names
exists, and a delete of a record that a ``ref`` may name checks that none
does (restrict): each in one atomic step of the store
(``Storage.atomically``) holding the collections involved, so that no
write between the check and the change can make it wrong. On PostgreSQL
that step takes each collection's lock (its feed's), which every write of
the collection takes too; a delete deletes first and then looks, so a
reference made meanwhile is seen. Inside a batch's step, the batch's own
earlier writes count, and the step is the batch's.

A store wraps each collection that refers or is referred to in a
``Referring`` (``Collections.refer``); the others are served as they are,
at no cost.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..validation import Schema, pointer
from . import Conflict, Contradiction, NotFound, Precondition


class Dangling(Contradiction):
    """A ``ref`` names a record that does not exist (422, at the field)."""

    def __init__(self, target: Schema, field: str, record_id: int) -> None:
        super().__init__(f"There is no {target.name} {record_id}.")
        self._errors = [(pointer(field), f"there is no {target.name} {record_id}")]

    @property
    def errors(self) -> list[tuple[str, str]]:
        return self._errors


class Referred(Conflict):
    """A record that others refer to cannot be deleted (409)."""

    def __init__(self, schema: Schema, record_id: int, referrer: Schema, field: str) -> None:
        super().__init__(f"The {schema.name} {record_id} is the {field} of one or more "
                         f"{referrer.plural}: change or delete them first.")


@dataclass(frozen=True)
class References:
    """What one collection's writes check: its ``ref`` fields and the
    collections they name (``targets``), and the ``ref`` fields of any
    collection that name it (``referrers``)."""

    schema: Schema
    targets: tuple[tuple[str, Schema], ...]
    referrers: tuple[tuple[Schema, str], ...]

    def writing(self) -> list[str]:
        """The collections a write holds: its own and those it names."""
        return [self.schema.plural, *(target.plural for _, target in self.targets)]

    def deleting(self) -> list[str]:
        """The collections a delete holds: its own and those that name it."""
        return [self.schema.plural, *(referrer.plural for referrer, _ in self.referrers)]


def references(schemas: Sequence[Schema]) -> dict[str, References]:
    """Each collection's references, by plural (only those with any);
    ``ValueError`` for a ``ref`` to a collection the store does not hold."""
    by_plural = {s.plural: s for s in schemas}
    found = {}
    for schema in schemas:
        targets = []
        for field, kind in schema.fields.items():
            if kind.refers_to is not None:
                if kind.refers_to not in by_plural:
                    raise ValueError(f"{schema.plural}.{field}: refers to {kind.refers_to}, "
                                     "which the store does not hold (declare both)")
                targets.append((field, by_plural[kind.refers_to]))
        referrers = tuple((s, f) for s in schemas for f, kind in s.fields.items()
                          if kind.refers_to == schema.plural)
        if targets or referrers:
            found[schema.plural] = References(schema, tuple(targets), referrers)
    return found


class Referring:
    """One collection's records (``records``), its writes checking its
    references in one atomic step of ``storage``; or, ``inside`` one
    already (``storage`` is then the step's unit), in that step. Reads,
    and writes that cannot break a reference, go straight to ``records``."""

    def __init__(self, records: Any, refs: References, storage: Any,
                 inside: bool = False) -> None:
        self.records, self.refs, self.storage, self.inside = records, refs, storage, inside

    def __getattr__(self, name: str) -> Any:
        return getattr(self.records, name)

    def create(self, *, key: Any = None, **fields: Any) -> Any:
        if not self.refs.targets:
            return self.records.create(key=key, **fields)

        def run(unit: Any) -> Any:
            self._check_targets(unit, fields)
            return _records(unit, self.refs.schema.plural).create(**fields)
        return self._step(self.refs.writing(), run, key)

    def update(self, record_id: int, *, precondition: Precondition | None = None,
               key: Any = None, **fields: Any) -> Any:
        if not any(fields.get(field) is not None for field, _ in self.refs.targets):
            return self.records.update(record_id, precondition=precondition, key=key, **fields)

        def run(unit: Any) -> Any:
            self._check_targets(unit, fields)
            return _records(unit, self.refs.schema.plural).update(
                record_id, precondition=precondition, **fields)
        return self._step(self.refs.writing(), run, key)

    def delete(self, record_id: int, *, precondition: Precondition | None = None) -> None:
        if not self.refs.referrers:
            return self.records.delete(record_id, precondition=precondition)

        def run(unit: Any) -> None:
            # Deleted first, then looked for: on PostgreSQL the delete waits
            # for a write that names the record, and the look then sees it.
            _records(unit, self.refs.schema.plural).delete(record_id, precondition=precondition)
            for referrer, field in self.refs.referrers:
                if _records(unit, referrer.plural).count(**{field: record_id}):
                    raise Referred(self.refs.schema, record_id, referrer, field)
        return self._step(self.refs.deleting(), run, None)

    def _step(self, plurals: list[str], run: Any, key: Any) -> Any:
        if self.inside:         # a batch's: its key is the batch's
            return run(self.storage)
        return self.storage.atomically(plurals, run, key=key)

    def _check_targets(self, unit: Any, fields: dict[str, Any]) -> None:
        for field, target in self.refs.targets:
            record_id = fields.get(field)
            if record_id is not None:
                try:
                    _records(unit, target.plural).get(record_id)
                except NotFound:
                    raise Dangling(target, field, record_id) from None


def _records(unit: Any, plural: str) -> Any:
    """A unit's collection itself (not its ``Referring``)."""
    records = unit[plural]
    return records.records if isinstance(records, Referring) else records


class Inside:
    """A store inside one of its atomic steps, as ``run`` sees it: its
    collections (a memory store's, whose locks the step holds)."""

    def __init__(self, storage: Any) -> None:
        self.storage = storage

    def __getitem__(self, plural: str) -> Any:
        records, refs = self.storage.collections[plural], self.storage.references.get(plural)
        return records if refs is None else Referring(records, refs, self, inside=True)


__all__ = ["Dangling", "Inside", "Referred", "References", "Referring", "references"]
