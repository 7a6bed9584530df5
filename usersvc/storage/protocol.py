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

Errors::

    StoreError
     +-- NotFound          no record with that id        (HTTP 404)
     +-- Conflict          a unique field is taken       (HTTP 409)
          +-- Referred     a record that refs name, deleted (``references``)
     +-- StaleVersion      a precondition does not hold  (HTTP 412)
     +-- Contradiction     the call contradicts what the store keeps (HTTP 422;
          |                a feature may raise its own)
          +-- NotCurrent   a timestamp sent that is not the record's (``checked``)
          +-- Dangling     a ref that names no record (``references``)
     +-- StoreUnavailable  busy or down; try again later (HTTP 503)
          +-- WritesFailing  a full disk, an I/O error, a read-only database (HTTP 503)
    SchemaMismatch         a stored collection the schema cannot open as it is (``stored``)

What the stores share at run time is the package's (``usersvc.storage``).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, Union, runtime_checkable

from ..schema import Schema, pointer


class StoreError(Exception):
    """Base of the errors a store raises; ``str()`` is a sentence for people,
    ``errors`` the fields at fault, as ``(JSON Pointer, detail)`` pairs."""

    @property
    def errors(self) -> list[tuple[str, str]]:
        return []


class NotFound(StoreError):
    """There is no record with that id (never was, or was deleted)."""

    def __init__(self, schema: Schema, record_id: int):
        super().__init__(f"There is no {schema.name} with id {record_id}.")
        self.record_id = record_id


class Conflict(StoreError):
    """A unique field's value already belongs to another record (``field``:
    which; empty when it cannot be told, as in a restore)."""

    def __init__(self, detail: str, field: str = ""):
        super().__init__(detail)
        self.field = field

    @classmethod
    def taken(cls, schema: Schema, field: str, value: Any) -> Conflict:
        noun = schema.fields[field].noun or field
        return cls(f"The {noun} {value} belongs to another {schema.name}.", field)

    @property
    def errors(self) -> list[tuple[str, str]]:
        return [(pointer(self.field), "is already taken")] if self.field else []


class StaleVersion(StoreError):
    """The record exists, but its version does not satisfy the precondition."""

    def __init__(self, record_id: int):
        super().__init__(
            f"The precondition failed: record {record_id} has changed or does not match."
        )
        self.record_id = record_id


class Contradiction(StoreError):
    """The call contradicts what the store keeps (a feature may raise its
    own: ``Problem.from_error`` answers any with a 422)."""


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


class StoreUnavailable(StoreError):
    """No answer now (a lock held too long, a lost connection); nothing was
    changed, and the call may work later."""


class WritesFailing(StoreUnavailable):
    """A cause outside the store stops its writes until it is put right (a
    full disk, an I/O error, a read-only database); reads work, nothing was
    changed, and writes work again once the cause is gone."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"The store cannot write now: {reason}. Nothing was changed; "
                         "try again later.")
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Precondition:
    """``If-Match`` / ``If-None-Match``, reduced to the versions they name.

    ``match`` is the set of versions a write may replace (``None``: any);
    ``none_match`` the set it may not (``None``: every version, as ``*`` says).
    """

    match: frozenset[int] | None = None
    none_match: frozenset[int] | None = frozenset()

    def allows(self, version: int) -> bool:
        if self.match is not None and version not in self.match:
            return False
        if self.none_match is None or version in self.none_match:
            return False
        return True


#: Where a page starts: an id (id order), or a collated value and an id.
Position = Union[int, tuple[Any, int]]


def position(schema: Schema, record: Any, sort: str) -> Position:
    """Where ``record`` stands in ``sort`` order, as ``list(after=...)``
    takes it: its id, or its value collated (``Field.collate``) and its id;
    ``(None, id)`` for a record without a value of an optional sort (after
    every value, in either direction)."""
    if sort == "id":
        return record.id
    value = getattr(record, sort)
    return (None if value is None else schema.fields[sort].collate(value), record.id)


class RecordStore(Protocol):
    """One collection's records, as the HTTP layer needs them (``schema``:
    what they are). Every method is safe to call from several threads at
    once. Values arrive validated and cleaned by the schema, and are
    compared collated (``Field.collate``: text case-folded). Every store here
    also keeps a change feed (``feed.ChangeFeed``)."""

    schema: Schema

    def get(self, record_id: int) -> Any:
        """The record (``schema.record``) with that id; raises ``NotFound``."""

    def list(self, *, limit: int = 100, sort: str = "id", reverse: bool = False,
             after: Position | None = None, q: str | None = None, where: Sequence[Any] = (),
             **filters: Any) -> list[Any]:
        """Up to ``limit`` records in ``sort`` order, backwards if ``reverse``,
        from just past ``after`` (``None``: from the first).

        Orders: ``id``, and each of ``schema.sorts``, by the value collated
        and then by id; an optional sort's records without a value come
        after the rest both ways, by id (backwards if ``reverse``). A
        position is an id in id order and a ``(collated, id)`` pair in the
        others, ``(None, id)`` without a value (``position``). Filters, all of which must
        hold: one per ``schema.filters`` field, the records whose value
        collates as the one given does; ``q``, the records
        of which a search term (a word of a ``words`` field, a ``prefixes``
        field whole) starts with it; ``where``, conditions with an operator
        (``asking.Condition``: what its ``holds`` keeps)."""

    def count(self, *, q: str | None = None, where: Sequence[Any] = (), **filters: Any) -> int:
        """How many records the filters of ``list`` keep, on all pages."""

    def create(self, **fields: Any) -> Any:
        """A new record with a fresh id and version 1 (an optional field not
        given is absent); raises ``Conflict``."""

    def update(self, record_id: int, *, precondition: Precondition | None = None,
               **fields: Any) -> Any:
        """Change the given fields (``None``: remove an optional one) and the
        version, atomically with the precondition check; raises
        ``NotFound``, ``StaleVersion``, ``Conflict``."""

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
class Atomic(Protocol):
    """A store's capability: several writes, on any of its collections,
    made together or not at all (``POST /batch``). Every store here has it;
    an embedder's own may not."""

    def atomically(self, plurals: Sequence[str], run: Any, *,
                   nothing_to_undo: bool = False) -> Any:
        """``run(step)``, where ``step[plural]`` is each collection
        ``plurals`` names, writing in one atomic step of the store (one
        transaction; memory: their locks held): ``run``'s result, once
        committed. If ``run`` raises, none of its writes is kept and the
        error goes on. ``nothing_to_undo``: the caller's promise that
        ``run`` reads, then makes one write at most, which fails whole or
        not at all; so the store keeps nothing to undo it with (memory: no
        copy of what it changes; SQLite: no savepoint). What ``run`` may
        ask of its step besides (``served.Step``): ``step.raw(plural)``, a
        collection as it is, its writes not checked; ``step.attempt(part)``,
        ``part()`` whose writes are undone if it raises while the step goes
        on; ``step.db``, the step's transaction (``Transactional``). What
        wraps a step (a feature that keeps a write's answer in its step)
        asks the step so: no method of a store takes a feature's argument."""


@runtime_checkable
class Transactional(Protocol):
    """A store's capability, for what wraps its atomic steps (``Atomic``):
    what a step's ``step.db`` is. ``dialect``: the SQL its transaction's
    connection speaks (``sql.dialects``: ``SQLITE``, ``POSTGRES``), over
    the store's layout (``sql.history``'s tables); ``None``: a step has no
    ``db``, its collections are the store's own, in this process, and last
    as long as it does (memory). Every store here has it; an embedder's
    own may not."""

    dialect: Any


@runtime_checkable
class CommitsObservable(Protocol):
    """A store's capability: an observer of its commits, for any feature
    (``usersvc.hooks``; metrics count SQLite's). A store that groups writes
    into commits of its own has it (SQLite's writer); one whose every write
    is its own transaction need not (memory, PostgreSQL)."""

    def observe_commits(self, observer: Callable[[float, int], None]) -> bool:
        """``observer(seconds, writes)`` after each commit this process
        makes (seconds from BEGIN to the end of COMMIT; the writes in it),
        on the thread that committed, so quick and never raising; whether
        it will be told (SQLite's private in-memory database, ``sqlite://``,
        has no writer, so no commits to tell)."""


@runtime_checkable
class CommitsAnnounced(Protocol):
    """A store's capability: each commit that changes a collection told to
    listeners, whichever process made it, so that a feature learns of the
    changes it did not make (waiting for changes wakes its waiting
    requests so: ``usersvc.features.waiting``). Every store here has it, and
    so have their collections' records served alone (their store's
    announcements); an embedder's own may not (waiting then reads each
    feed's ``position()`` now and then: ``features.waiting.watch``)."""

    def announce_commits(self, listener: Callable[[str | None], None]) -> Callable[[], None]:
        """``listener(plural)`` after each commit that changes the collection
        ``plural``, from now on until the ``stop()`` returned is called:

        - a commit of this process, on the thread that made the write, once
          it is committed (memory: once it is made), so that a read then sees it;
        - another process's, on the store's own thread, which the first
          listener starts (and a process forked from this one starts again
          at its first use of the store): SQLite's looks at the file every
          0.2 s (``sqlite.poll``), PostgreSQL's listens for its NOTIFY
          (``postgres.notify``). A look that cannot tell which collections
          changed (SQLite's, or one that starts again) names each of them.

        A listener may be told more than once of one commit, or of a change
        not yet to be seen (a write inside a batch), or once more by a look
        under way as ``stop()`` is called: it reads what changed itself
        (``ChangeFeed.position``). ``listener(None)``, once, when the
        store closes (at once, if it is closed already), its own thread
        stopped first: nothing more will be told. It is called on threads that write or look for commits, so
        it must be quick (no I/O, no lock held for long) and must not raise:
        what it raises is logged, and the other listeners are told all the
        same. ``close()`` stops the store's thread."""


@runtime_checkable
class Storage(Protocol):
    """Every collection of one storage URL: ``storage[plural]``."""

    schemas: tuple[Schema, ...]

    def __getitem__(self, plural: str) -> RecordStore:
        """The collection's records; ``KeyError`` if the store does not hold it."""

    def close(self) -> None:
        """Release connections and files; the store is of no use afterwards."""
