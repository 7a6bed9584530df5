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

The errors each method raises are named in its docstring; what they are,
their tree and the precondition a write is held to, are ``errors``'s (one
small module: a request that meets a store meets them).

What the stores share at run time is the package's (``usersvc.storage``).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from ..schema import Schema
from .errors import Precondition
from .feed import Change, Listener, Stop

if TYPE_CHECKING:
    from .references import References
    from .served import Checked, Step
    from .sql.dialects import Dialect

T = TypeVar("T")

#: Where a page starts: an id (id order), or a collated value and an id.
Keyset = int | tuple[Any, int]


if TYPE_CHECKING:      # (the checker's alone, as the protocols at the end: nothing at run time)
    class Identified(Protocol):
        """A record as ``keyset`` reads it: its ``id``, and its fields by name."""

        @property
        def id(self) -> int: ...


def keyset(schema: Schema, record: Identified, sort: str) -> Keyset:
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
    also keeps a change feed (``ChangeFeed``)."""

    schema: Schema

    def get(self, record_id: int) -> Any:
        """The record (``schema.record``) with that id; raises ``NotFound``."""

    def list(self, *, limit: int = 100, sort: str = "id", reverse: bool = False,
             after: Keyset | None = None, q: str | None = None, where: Sequence[Any] = (),
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
class ChangeFeed(Protocol):
    """What a store with a change feed adds to ``RecordStore`` (every store
    here has one; the app serves ``/<plural>/changes``, and pages link to
    it, for a store that is one: checked once, when a collection is added)."""

    #: The feed's history token: 12 lowercase hex digits (``feed.new_history``).
    #: A property to the checker (read only: ``served.Checked``'s is one); an
    #: annotation at run time, as the protocol's ``__annotations__`` list its data.
    if TYPE_CHECKING:
        @property
        def history(self) -> str: ...
    else:
        history: str

    def changes(self, *, after: int = 0, limit: int = 100) -> list[Change]:
        """Up to ``limit`` entries past the position ``after``, oldest first."""

    def entry(self, record_id: int) -> Change | None:
        """The feed's entry for one record (``None``: it has none)."""

    def position(self) -> int:
        """The last position committed (0: no change yet)."""

    def position_and_list(self, **arguments: Any) -> tuple[int, list[Any]]:
        """``position()``, then ``list(**arguments)``: a page and where the
        feed stood before it was read (one call, for stores that save by it)."""

    def restore_changes(self, changes: Sequence[Change], *, last_id: int = 0) -> None:
        """``RecordStore.restore``, keeping the feed too (for ``usersvc
        copy``): each record, or tombstone, at its ``seq``, in one atomic
        step; later changes get positions above every one given. Raises
        ``Conflict`` as ``restore`` does, or if a position is not above the
        store's."""


@runtime_checkable
class Atomic(Protocol):
    """A store's capability: several writes, on any of its collections,
    made together or not at all (``POST /batch``). Every store here has it;
    an embedder's own may not."""

    def atomically(self, plurals: Sequence[str], run: Callable[[Step], T], *,
                   nothing_to_undo: bool = False) -> T:
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

    @property
    def dialect(self) -> Dialect | None: ...


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

    def announce_commits(self, listener: Listener) -> Stop:
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
        stopped first: nothing more will be told. It is called on threads
        that write or look for commits, so it must be quick (no I/O, no
        lock held for long) and must not raise: what it raises is logged,
        and the other listeners are told all the same. ``close()`` stops
        the store's thread."""


@runtime_checkable
class Storage(Protocol):
    """Every collection of one storage URL: ``storage[plural]``."""

    schemas: tuple[Schema, ...]

    def __getitem__(self, plural: str) -> RecordStore:
        """The collection's records; ``KeyError`` if the store does not hold it."""

    def close(self) -> None:
        """Release connections and files; the store is of no use afterwards."""



# What every store here is, for the checker alone (defined only when it reads
# this module: nothing at run time, where no code asks a store for them).
if TYPE_CHECKING:
    class ServedRecords(RecordStore, ChangeFeed, CommitsAnnounced, Protocol):
        """A collection's records as every store here serves them (``storage[plural]``:
        ``served.Collections``): a ``RecordStore`` that keeps a ``ChangeFeed`` and
        tells of its store's commits (``CommitsAnnounced``)."""

    class ServedStorage(Storage, Atomic, Transactional, CommitsAnnounced, Protocol):
        """Every store here (memory, SQLite, PostgreSQL): a ``Storage`` of
        ``ServedRecords`` with each capability above but ``CommitsObservable``
        (SQLite's alone), and what ``served`` asks of it besides: its own records
        as they are (``collections``), ``Collections``' attributes, and how a
        part of a step is undone (``attempt``). Each store is held to it where it
        calls ``Collections.serve`` and where it makes a ``Step``."""

        references: dict[str, References]
        checked: dict[str, Checked]
        served: dict[str, ServedRecords]
        involved: dict[str, set[str]]

        @property
        def collections(self) -> Mapping[str, ServedRecords]:
            """Its own records by plural, as they are (a ``Checked`` is before some)."""

        def __getitem__(self, plural: str) -> ServedRecords: ...

        def attempt(self, step: Step, part: Callable[..., T], args: tuple[Any, ...]) -> T:
            """``Step.attempt``: ``part(*args)``, its writes undone if it raises."""
