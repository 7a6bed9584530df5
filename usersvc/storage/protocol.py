"""The storage protocol: what every store promises, for any schema
(``tests/store_contract.py`` holds each store to it).

One store per storage URL (memory, a SQLite file, a PostgreSQL database)
holds every collection of an app; ``store["users"]`` is one collection's
records (``RecordStore``):

- ids are assigned by the store, increase with every create and are never
  reused, not even after a delete;
- every change to a record gives it a new ``version`` (the ETag is made of it);
- unique fields and preconditions are enforced by the store itself, in the
  same atomic step as the write, never checked first by the caller.

The errors it raises, and what the stores share, are the package's
(``usersvc.storage``).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, Union, runtime_checkable

if TYPE_CHECKING:
    from . import Precondition
    from ..validation import Schema


#: Where a page starts: an id (id order), or a case-folded value and an id.
Position = Union[int, tuple[str, int]]


def position(record: Any, sort: str) -> Position:
    """Where ``record`` stands in ``sort`` order, as ``list(after=...)`` takes it."""
    if sort == "id":
        return record.id
    return (getattr(record, sort).casefold(), record.id)


class RecordStore(Protocol):
    """One collection's records, as the HTTP layer needs them (``schema``:
    what they are). Every method is safe to call from several threads at
    once. Values arrive validated and cleaned by the schema; text keys are
    compared case-folded (``str.casefold``). Every store here also keeps a
    change feed (``feed.ChangeFeed``)."""

    schema: Schema

    def get(self, record_id: int) -> Any:
        """The record (``schema.record``) with that id; raises ``NotFound``."""

    def list(self, *, limit: int = 100, sort: str = "id", reverse: bool = False,
             after: Position | None = None, q: str | None = None,
             **filters: str) -> list[Any]:
        """Up to ``limit`` records in ``sort`` order, backwards if ``reverse``,
        from just past ``after`` (``None``: from the first).

        Orders: ``id``, and each of ``schema.sorts``, by the case-folded
        value and then by id. A position is an id in id order and a
        ``(case-folded value, id)`` pair in the others (``position``).
        Filters, all of which must hold: one per ``schema.filters`` field,
        the records whose value equals it, case-folded; ``q``, the records
        of which a search key (``schema.search_keys``) starts with it."""

    def count(self, *, q: str | None = None, **filters: str) -> int:
        """How many records the filters of ``list`` keep, on all pages."""

    def create(self, *, key: Any = None, **fields: Any) -> Any:
        """A new record with a fresh id and version 1 (an optional field not
        given is absent); raises ``Conflict``. With ``key`` (``keys.Key``),
        the answer instead, kept with the key in the write's atomic step
        (``keys.KeepsKeys``); for a key kept before, its answer, nothing
        written (``keys.KeyReused`` if the request differs)."""

    def update(self, record_id: int, *, precondition: Precondition | None = None,
               key: Any = None, **fields: Any) -> Any:
        """Change the given fields (``None``: remove an optional one) and the
        version, atomically with the precondition check; raises
        ``NotFound``, ``StaleVersion``, ``Conflict``. ``key``: as for
        ``create``, the answer (those three errors' too), kept."""

    def delete(self, record_id: int, *, precondition: Precondition | None = None) -> None:
        """Remove the record, atomically with the precondition check; raises
        ``NotFound``, ``StaleVersion``."""

    def last_id(self) -> int:
        """The highest id this collection ever handed out, deleted or not (0: none)."""

    def restore(self, records: Sequence[Any], *, last_id: int = 0) -> None:
        """Add records as they are, ids and versions kept, in one atomic step
        (for ``usersvc copy``); new ids afterwards are above ``last_id`` and
        every id given. Raises ``Conflict`` if a unique value is taken or an
        id is not above every id the collection ever handed out."""


@runtime_checkable
class Storage(Protocol):
    """Every collection of one storage URL: ``storage[plural]``."""

    schemas: tuple[Schema, ...]

    def __getitem__(self, plural: str) -> RecordStore:
        """The collection's records; ``KeyError`` if the store does not hold it."""

    def stop_waiting(self) -> None:
        """Answer every request waiting for changes now, and every later one at once."""

    def close(self) -> None:
        """Release connections and files; the store is of no use afterwards."""
