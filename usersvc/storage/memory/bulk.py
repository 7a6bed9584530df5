"""What the memory store does with many records at once (``MemoryBulk``,
a ``MemoryRecords``'s ``bulk``, over their ``collection.Contents``): pages,
counts, searches and the change feed (its ``Indexes`` walked: ``walks``),
restoring a copy (``restore``), each under the collection's lock, and a
batch's writes, undone together if one fails (``undoing``); and what a
forked process is told at its first write (``forked``).

``touched`` counts the records each call has looked at, so tests can show
what a page costs without timing it.
"""
from __future__ import annotations

import builtins
import functools
import itertools
import logging
import operator
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any, Protocol

from ...schema import Schema
from ..errors import Conflict
from ..feed import Change, Listeners
from ..protocol import Keyset
from ..stored import check_fresh_ids
from .walks import NONE, bounded, bounds, chosen, matches, past, ranked, walk

if TYPE_CHECKING:       # (the checker's alone: ``collection`` imports this module)
    from .walks import Indexes as Walked, Sorted

    class Indexes(Walked, Protocol):
        """A collection's indexes as ``bulk`` reads them (``collection.Indexes`` is one):
        walked, and a record's entries moved (a batch's undo)."""
        def move(self, old: Any, new: Any) -> None: ...

    class Contents(Protocol):
        """What one collection holds, as ``bulk`` reads and writes it
        (``collection.Contents`` is one)."""
        records: dict[int, Any]
        seqs: Sorted
        seq_of: dict[int, int]
        undo: Undo | None
        last_id: int
        seq: int
        last: int
        make: Callable[[Any], Any]

        @property
        def lock(self) -> AbstractContextManager[Any]: ...

        @property
        def indexes(self) -> Indexes: ...

        def put(self, old: Any, new: Any) -> None: ...

Where = Sequence[Any]                   # a page's conditions (``asking.Condition``)
_log = logging.getLogger("usersvc.storage")


class MemoryBulk:
    """What a ``MemoryRecords`` does with many records at once (its
    ``bulk``), over their ``Contents``, each under their lock:
    ``RecordStore.list``, ``count``, ``last_id``, the feed's reads, a
    restore and a batch's ``undoing``."""

    touched = 0

    def __init__(self, schema: Schema, contents: Contents, commits: Listeners) -> None:
        self.schema, self.contents, self.commits = schema, contents, commits

    def list(self, *, limit: int = 100, sort: str = "id", reverse: bool = False,
             after: Keyset | None = None, q: str | None = None, where: Where = (),
             **filters: Any) -> builtins.list[Any]:
        contents = self.contents
        with contents.lock:
            # The indexes to walk in this order, and the filter they hold
            # (``None``: no index walks in this order: the matches, sorted).
            equal = {} if q is not None else self._equal(filters, where)
            found = None if q is not None else chosen(
                contents.indexes, sort, {f: values for f, (values, _) in equal.items()})
            if found is None and q is None and not filters:     # (an = or in, unindexed)
                found = chosen(contents.indexes, sort, {})
            if found is not None:
                walked, used = found
                records = map(contents.records.__getitem__, walk(
                    sort, reverse, after, bounds(sort, where) if where else NONE, walked,
                    sort in self.schema.optional))
                # Left to check: all but the filter walked and the ranges the walk keeps to.
                by = equal[used][1] if used is not None else None
                left_filters = {f: v for f, v in filters.items() if f != used or by is not None}
                left = [c for c in where if c is not by and not bounded(sort, c)]
                if left or left_filters:    # each record looked at, kept or not, is touched
                    return list(itertools.islice(filter(self._holds(left, left_filters),
                                                        self._looked_at(records)), limit))
                page = list(itertools.islice(records, limit))
            else:
                rank = ranked(self.schema, sort, reverse)
                matched = sorted(self._matches(filters, q, where), key=rank, reverse=reverse)
                page = list(itertools.islice(past(matched, rank, reverse, after), limit))
            self.touched += len(page)
            return page

    def count(self, *, q: str | None = None, where: Where = (), **filters: Any) -> int:
        with self.contents.lock:
            if not filters and q is None:
                if not where:
                    return len(self.contents.records)
                return sum(map(self._holds(where), self.contents.records.values()))
            return len(self._matches(filters, q, where))

    def _looked_at(self, records: Iterable[Any]) -> Iterator[Any]:
        for record in records:
            self.touched += 1
            yield record

    def _holds(self, where: Where, filters: dict[str, Any] | None = None
               ) -> Callable[[Any], bool]:
        """Whether a record meets every condition (``asking.Condition``) and
        has each filter's value."""
        fields, kinds = self.schema.field_names, self.schema.fields     # (id, then the fields)
        checks = [(fields.index(c.field), None if c.field == "id" else kinds[c.field].collate,
                   c.holds) for c in where]
        checks += [(fields.index(f), kinds[f].collate,
                    functools.partial(operator.eq, kinds[f].collate(value)))
                   for f, value in (filters or {}).items()]

        def holds(record: Any) -> bool:
            for at, collate, keeps in checks:
                value = record[at]
                if not keeps(value if value is None or collate is None else collate(value)):
                    return False
            return True
        return holds

    def _equal(self, filters: dict[str, Any], where: Where) -> dict[str, tuple[Any, Any]]:
        """The collated values each filter's ``=`` (or ``in``) lets in, and
        the condition that says so (``None``: a plain ``field=value``)."""
        equal = {c.field: (c.collated if c.op == "in" else (c.collated,), c)
                 for c in where if c.op in ("eq", "in")}
        indexes = self.contents.indexes
        for field, value in filters.items():
            if field not in indexes.unique and field not in indexes.filtered:
                raise TypeError(f"{self.schema.plural} cannot be filtered by {field}")
            equal[field] = ((self.schema.fields[field].collate(value),), None)
        return equal

    def last_id(self) -> int:
        with self.contents.lock:
            return self.contents.last_id

    # -- the change feed --------------------------------------------------

    def changes(self, *, after: int = 0, limit: int = 100) -> builtins.list[Change]:
        contents = self.contents
        with contents.lock:
            entries = itertools.islice(contents.seqs.irange(minimum=(after + 1,)), limit)
            found = [Change(seq, record_id, contents.records.get(record_id))
                     for seq, record_id in entries]
            self.touched += len(found)
            return found

    def entry(self, record_id: int) -> Change | None:
        contents = self.contents
        with contents.lock:
            seq = contents.seq_of.get(record_id)
            return None if seq is None else Change(seq, record_id, contents.records.get(record_id))

    def position(self) -> int:
        """The feed's last entry's position (while a batch runs: as before
        it). A failed batch's positions are never handed out again, and
        hold no entry: a wait at the end of the feed goes on waiting."""
        return self.contents.last if self.contents.undo is None else self.contents.undo.last

    def _matches(self, filters: dict[str, str], q: str | None,
                 where: Where = ()) -> builtins.list[Any]:
        ids = matches(self.contents.indexes, filters, q, self.contents.records)
        self.touched += len(ids)
        found = list(map(self.contents.records.__getitem__, ids))
        return list(filter(self._holds(where), found)) if where else found

    def restore(self, records: Sequence[Any], changes: Sequence[Change], last_id: int) -> None:
        """``Restores._restore``: ``records``, and ``changes`` at their positions."""
        contents = self.contents
        with contents.lock:
            check_fresh_ids([*records, *changes], contents.last_id)
            if changes and min(c.seq for c in changes) <= contents.seq:
                raise Conflict("Positions are never reused: this store's feed is at "
                               f"{contents.seq}.")
            ids = {c.id for c in changes} or {r.id for r in records}
            claim_all(contents.indexes, records)
            if len(ids) < max(len(records), len(changes)):
                raise Conflict("Two of these records have the same id.")
            for record in sorted(records, key=lambda r: r.id):
                contents.put(None, contents.make(record))
            for record in records if changes else ():     # the positions put gave, forgotten
                contents.seqs.remove((contents.seq_of.pop(record.id), record.id))
            for change in changes:      # and each record or tombstone at the position given
                contents.seqs.add((change.seq, change.id))
                contents.seq_of[change.id] = change.seq
            if changes:
                contents.seq = contents.last = max(contents.seq, *(c.seq for c in changes))
            contents.last_id = max(contents.last_id, last_id, *ids)
        if self.commits.listeners:
            self.commits.announce(self.schema.plural)

    @contextmanager
    def undoing(self) -> Iterator[None]:
        """The collection's lock, held around a batch's writes (which take it
        again), and every change they made undone if the batch raises.
        Inside another's (a step's ``attempt``), what it kept is the outer
        one's to undo too."""
        contents = self.contents
        with contents.lock:
            outer = contents.undo
            contents.undo = undo = Undo(contents.last)
            try:
                yield
            except BaseException:
                contents.undo = outer
                self._put_back(undo)
                contents.last = undo.last  # (its ids and positions are not handed out again)
                raise
            finally:
                contents.undo = outer
            if outer is not None:       # as each was before the outer one began
                for record_id, was in undo.was.items():
                    outer.was.setdefault(record_id, was)
        if self.commits.listeners:
            self.commits.announce(self.schema.plural)

    def _put_back(self, undo: Undo) -> None:
        """Each record a batch changed as it was, at its position: all of
        theirs out of the indexes first, then all as they were (a unique
        value one took from another is free again by then)."""
        contents = self.contents
        for record_id in undo.was:
            current = contents.records.pop(record_id, None)
            if current is not None:
                contents.indexes.move(current, None)
            contents.seqs.remove((contents.seq_of.pop(record_id), record_id))
        for record_id, (old, seq) in undo.was.items():
            if old is not None:
                contents.records[record_id] = old
                contents.indexes.move(None, old)
            if seq is not None:
                contents.seqs.add((seq, record_id))
                contents.seq_of[record_id] = seq


class Undo:
    """What a batch changed in one collection: each record it touched as it
    was before (``None``: absent) and its position then; and the feed's
    last entry's position when the batch began."""

    def __init__(self, last: int) -> None:
        self.last = last
        self.was: dict[int, tuple[Any, int | None]] = {}

    def saw(self, record_id: int, old: Any, seq: int | None) -> None:
        self.was.setdefault(record_id, (old, seq))


def claim_all(indexes: Indexes, records: Sequence[Any]) -> None:
    """Raise ``Conflict`` if a unique value of ``records`` is taken, by
    a record held or by another of them (for ``restore``)."""
    seen: dict[str, set[Any]] = {f: set(held) for f, held in indexes.unique.items()}
    for record in records:
        for field, held in seen.items():
            value = getattr(record, field)
            collated = None if value is None else indexes.schema.fields[field].collate(value)
            if collated is not None and collated in held:
                raise Conflict(f"The store already holds {indexes.schema.a_name} with "
                               f"this {field}: {getattr(record, field)}.", field)
            held.add(collated)


def forked(plural: str) -> int:
    """This process's id, said once a process, at a collection's first
    write in a process forked from the one that made the store (workers
    after ``--preload``): it writes to its own copy from here on."""
    pid = os.getpid()
    _log.warning("memory:// is one process's: process %d writes to its own copy of %s, "
                 "which no other process sees (use SQLite or PostgreSQL with several "
                 "workers)", pid, plural)
    return pid
