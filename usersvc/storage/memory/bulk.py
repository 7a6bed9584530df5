"""What the memory store does with many records at once: pages, counts,
searches and the change feed (its ``Indexes`` walked: ``walks``),
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
from contextlib import contextmanager
from typing import Any

from ..errors import Conflict
from ..protocol import Keyset
from ..feed import Change
from ..stored import Restores, check_fresh_ids
from .walks import NONE, bounded, bounds, chosen, matches, past, ranked, walk

Where = Sequence[Any]                   # a page's conditions (``asking.Condition``)
_log = logging.getLogger("usersvc.storage")


class MemoryBulk(Restores):
    """``RecordStore.list``, ``count``, ``restore`` and the feed's reads (a
    ``MemoryRecords``'s)."""

    touched = 0

    def list(self, *, limit: int = 100, sort: str = "id", reverse: bool = False,
             after: Keyset | None = None, q: str | None = None, where: Where = (),
             **filters: Any) -> builtins.list[Any]:
        with self._lock:
            # The indexes to walk in this order, and the filter they hold
            # (``None``: no index walks in this order: the matches, sorted).
            equal = {} if q is not None else self._equal(filters, where)
            found = None if q is not None else chosen(
                self._indexes, sort, {f: values for f, (values, _) in equal.items()})
            if found is None and q is None and not filters:     # (an = or in, unindexed)
                found = chosen(self._indexes, sort, {})
            if found is not None:
                walked, used = found
                records = map(self._records.__getitem__, walk(
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
        with self._lock:
            if not filters and q is None:
                if not where:
                    return len(self._records)
                return sum(map(self._holds(where), self._records.values()))
            return len(self._matches(filters, q, where))

    def _looked_at(self, records: Iterable[Any]) -> Iterator[Any]:
        for record in records:
            self.touched += 1
            yield record

    def _holds(self, where: Where, filters: dict[str, Any] | None = None) -> Any:
        """Whether a record meets every condition (``asking.Condition``) and
        has each filter's value."""
        fields, kinds = self.schema.record._fields, self.schema.fields
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
        for field, value in filters.items():
            if field not in self._indexes.unique and field not in self._indexes.filtered:
                raise TypeError(f"{self.schema.plural} cannot be filtered by {field}")
            equal[field] = ((self.schema.fields[field].collate(value),), None)
        return equal

    def last_id(self) -> int:
        with self._lock:
            return self._last_id

    # -- the change feed --------------------------------------------------

    def changes(self, *, after: int = 0, limit: int = 100) -> builtins.list[Change]:
        with self._lock:
            entries = itertools.islice(self._seqs.irange(minimum=(after + 1,)), limit)
            found = [Change(seq, record_id, self._records.get(record_id))
                     for seq, record_id in entries]
            self.touched += len(found)
            return found

    def entry(self, record_id: int) -> Change | None:
        with self._lock:
            seq = self._seq_of.get(record_id)
            return None if seq is None else Change(seq, record_id, self._records.get(record_id))

    def position(self) -> int:
        """The feed's last entry's position (while a batch runs: as before
        it). A failed batch's positions are never handed out again, and
        hold no entry: a wait at the end of the feed goes on waiting."""
        return self._last if self._undo is None else self._undo.last

    def position_and_list(self, **arguments: Any) -> tuple[int, builtins.list[Any]]:
        return self.position(), self.list(**arguments)

    def announce_commits(self, listener: Callable[[str | None], None]) -> Callable[[], None]:
        """``protocol.CommitsAnnounced``, for these records served alone:
        their store's announcements (each write, as it is made)."""
        return self.commits.add(listener)

    def _matches(self, filters: dict[str, str], q: str | None,
                 where: Where = ()) -> builtins.list[Any]:
        ids = matches(self._indexes, filters, q, self._records)
        self.touched += len(ids)
        found = [self._records[i] for i in ids]
        return list(filter(self._holds(where), found)) if where else found

    def _restore(self, records: Sequence[Any], changes: Sequence[Change], last_id: int) -> None:
        with self._lock:
            check_fresh_ids([*records, *changes], self._last_id)
            if changes and min(c.seq for c in changes) <= self._seq:
                raise Conflict(f"Positions are never reused: this store's feed is at {self._seq}.")
            ids = {c.id for c in changes} or {r.id for r in records}
            claim_all(self._indexes, records)
            if len(ids) < max(len(records), len(changes)):
                raise Conflict("Two of these records have the same id.")
            for record in sorted(records, key=lambda r: r.id):
                self._put(None, self._make(record))
            for record in records if changes else ():     # the positions _put gave, forgotten
                self._seqs.remove((self._seq_of.pop(record.id), record.id))
            for change in changes:      # and each record or tombstone at the position given
                self._seqs.add((change.seq, change.id))
                self._seq_of[change.id] = change.seq
            if changes:
                self._seq = self._last = max(self._seq, *(c.seq for c in changes))
            self._last_id = max(self._last_id, last_id, *ids)
        if self.commits.listeners:
            self.commits.announce(self.schema.plural)

    @contextmanager
    def undoing(self) -> Iterator[None]:
        """The collection's lock, held around a batch's writes (which take it
        again), and every change they made undone if the batch raises.
        Inside another's (a step's ``attempt``), what it kept is the outer
        one's to undo too."""
        with self._lock:
            outer = self._undo
            self._undo = undo = Undo(self._last)
            try:
                yield
            except BaseException:
                self._undo = outer
                self._put_back(undo)
                self._last = undo.last  # (its ids and positions are not handed out again)
                raise
            finally:
                self._undo = outer
            if outer is not None:       # as each was before the outer one began
                for record_id, was in undo.was.items():
                    outer.was.setdefault(record_id, was)
        if self.commits.listeners:
            self.commits.announce(self.schema.plural)

    def _put_back(self, undo: Undo) -> None:
        """Each record a batch changed as it was, at its position: all of
        theirs out of the indexes first, then all as they were (a unique
        value one took from another is free again by then)."""
        for record_id in undo.was:
            current = self._records.pop(record_id, None)
            if current is not None:
                self._indexes.move(current, None)
            self._seqs.remove((self._seq_of.pop(record_id), record_id))
        for record_id, (old, seq) in undo.was.items():
            if old is not None:
                self._records[record_id] = old
                self._indexes.move(None, old)
            if seq is not None:
                self._seqs.add((seq, record_id))
                self._seq_of[record_id] = seq

    # -- the records and their positions ---------------------------------


class Undo:
    """What a batch changed in one collection: each record it touched as it
    was before (``None``: absent) and its position then; and the feed's
    last entry's position when the batch began."""

    def __init__(self, last: int) -> None:
        self.last = last
        self.was: dict[int, tuple[Any, int | None]] = {}

    def saw(self, record_id: int, old: Any, seq: int | None) -> None:
        self.was.setdefault(record_id, (old, seq))


def claim_all(indexes: Any, records: Sequence[Any]) -> None:
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
