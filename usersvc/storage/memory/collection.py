"""One collection of the memory store: what it holds (``Contents``: its
records in a dict, and the indexes a database would keep, ``Indexes``,
which its ``bulk`` walks: a page is O(log N + limit)), and its records
(``MemoryRecords``)."""
from __future__ import annotations

import builtins
import threading
from collections.abc import Sequence
from os import getpid
from typing import Any

from ...fields import search_terms
from ...schema import Schema
from ..errors import Conflict, NotFound, Precondition, StaleVersion
from ..feed import Change, Listener, Listeners, Stop, new_history
from ..stored import Restores
from .bulk import MemoryBulk, Undo, forked
from .walks import ABSENT, Sorted, laid_out, write_plan


class Indexes:
    """A collection's indexes, as its schema lays them out (``walks.laid_out``):
    ids, sorted; per unique field, filter, sort and filtered sort, collated
    values to ids, or ``(collated, id)`` sorted (``(ABSENT, id)`` without a
    value); the search terms of its searched fields, sorted, each with its
    records' ids. A write moves only the entries whose collated values change."""

    def __init__(self, schema: Schema) -> None:
        self.schema, self.ids = schema, Sorted()
        self.unique, self.filtered, self.orders, self.within, self.named = laid_out(schema)
        # What each write walks, made once (a field's place, its indexes: ``write_plan``)
        self._claims, self._indexed, self._filters, self._absent, self._searched = write_plan(self)

    def claim(self, record: Any, record_id: int) -> None:
        """Raise ``Conflict`` if a unique value belongs to another record."""
        for field, at, ids, collate in self._claims:
            holder = None if record[at] is None else ids.get(collate(record[at]))
            if holder is not None and holder != record_id:
                raise Conflict.taken(self.schema, field, record[at])

    def move(self, old: Any, new: Any) -> None:
        """Move a record's index entries from ``old`` to ``new`` (``None``:
        not there), touching only the entries whose collated values change."""
        record_id = (old or new).id
        if old is None:
            self.ids.add(record_id)
        elif new is None:
            self.ids.remove(record_id)
        for at, unique, order, collate in self._indexed:
            if old is not None and new is not None and old[at] == new[at]:
                continue
            before = None if old is None or old[at] is None else collate(old[at])
            after = None if new is None or new[at] is None else collate(new[at])
            if before == after:         # (no value either way, or a change of case only)
                continue
            if unique is not None:
                unique.pop(before, None)
                if after is not None:
                    unique[after] = record_id
            if order is not None:
                if before is not None:
                    order.remove((before, record_id))
                if after is not None:
                    order.add((after, record_id))
        for at, order in self._absent:
            before = old is not None and old[at] is None
            after = new is not None and new[at] is None
            if before != after:
                (order.add if after else order.remove)((ABSENT, record_id))
        for at, collate, by, by_collate, by_value in self._filters:
            # An index kept per value (``filtered``, ``within``): its (value, entry) moved; a
            # filter's entry is the id, a filtered sort's ``(sorted by, id)``; none: not there
            before, after = (None if r is None or r[at] is None else (collate(r[at]),
                             record_id if by is None else (by_collate(r[by]), record_id))
                             for r in (old, new))
            if before != after and before is not None:
                by_value[before[0]].remove(before[1])
                if not by_value[before[0]]:
                    del by_value[before[0]]
            if before != after and after is not None:
                by_value[after[0]].add(after[1])
        if any(old is None or new is None or old[at] != new[at] for at, _, _ in self._searched):
            gone, came = self._words_of(old), self._words_of(new)
            for word in gone - came:
                self.named[word].discard(record_id)
                if not self.named[word]:
                    del self.named[word]
            for word in came - gone:
                self.named.setdefault(word, set()).add(record_id)

    def _words_of(self, record: Any) -> set[str]:
        """A record's search terms, from all its searched fields together."""
        return {word for at, by_words, whole in self._searched
                if record is not None and record[at] is not None
                for word in search_terms(record[at], by_words, whole)}


class Contents:
    """What one collection holds, shared by its records (one at a time) and their ``bulk``
    (many at once), under one lock that makes each of their methods atomic: the records by id
    and their ``Indexes``; the feed, one more sorted index (each record's latest position,
    tombstones included); the last id handed out; and the one write that changes them (``put``)."""

    def __init__(self, schema: Schema) -> None:
        self.schema, self.make, self.pid = (
            schema, schema.record._make, getpid())  # type: ignore[attr-defined]  # (namedtuple's)
        self.lock = threading.RLock()      # re-entered by a batch's writes (``undoing``)
        self.undo: Undo | None = None        # a batch's, while it runs
        self.records: dict[int, Any] = {}   # id -> record (deleted: its feed entry alone stays)
        self.indexes, self.last_id = Indexes(schema), 0   # (ids are never handed out twice)
        self.seq = self.last = 0           # the last position handed out; the last entry's
        self.seqs = Sorted()            # each record's latest (position, id), sorted,
        self.seq_of: dict[int, int] = {}    # and its position by id

    def put(self, old: Any, new: Any) -> None:
        """``new`` in place of ``old`` (``None``: none), in the records and the
        indexes, at the feed's next position; what it was, kept for a batch."""
        record_id = (old or new).id
        was = self.seq_of.get(record_id)
        if self.undo is not None:
            self.undo.saw(record_id, old, was)
        if self.pid != getpid():        # (a process forked from the one that made it)
            self.pid = forked(self.schema.plural)
        if new is None:
            del self.records[record_id]
        else:
            self.records[record_id] = new
        self.indexes.move(old, new)
        if was is not None:
            self.seqs.remove((was, record_id))
        seq = self.seq_of[record_id] = self.seq = self.last = self.seq + 1
        self.seqs.add((seq, record_id))


class MemoryRecords(Restores):
    """One collection's records: one record's reads and writes are here;
    what it does with many at once (pages, counts, the feed, a restore, a
    batch's undo) is its ``bulk``'s (``MemoryBulk``), over their ``contents``."""

    def __init__(self, schema: Schema, commits: Listeners | None = None) -> None:
        self.schema, self.commits = schema, commits or Listeners()  # the store's, shared
        self.contents, self.history = Contents(schema), new_history()  # (the feed's: this run's)
        self.bulk = MemoryBulk(schema, self.contents, self.commits)

    def get(self, record_id: int) -> Any:
        with self.contents.lock:
            return self._checked(record_id)

    def create(self, **fields: Any) -> Any:
        record = [None, *self.schema.values(fields), 1]     # (a ``TypeError`` if not fields)
        contents = self.contents
        with contents.lock:
            contents.indexes.claim(record, 0)
            record[0] = contents.last_id = contents.last_id + 1
            record = contents.make(record)
            contents.put(None, record)
        if self.commits.listeners:
            self.commits.announce(self.schema.plural)
        return record

    def update(self, record_id: int, *, precondition: Precondition | None = None,
               **fields: Any) -> Any:
        with self.contents.lock:
            old = self._checked(record_id, precondition)
            new = self.contents.make([record_id, *self.schema.values(fields, old), old.version + 1])
            self.contents.indexes.claim(new, record_id)
            self.contents.put(old, new)
        if self.commits.listeners:
            self.commits.announce(self.schema.plural)
        return new

    def delete(self, record_id: int, *, precondition: Precondition | None = None) -> None:
        with self.contents.lock:
            self.contents.put(self._checked(record_id, precondition), None)
        if self.commits.listeners:
            self.commits.announce(self.schema.plural)

    def _checked(self, record_id: int, precondition: Precondition | None = None) -> Any:
        record = self.contents.records.get(record_id)     # (no record holds an id out of range)
        if record is None:
            raise NotFound(self.schema, record_id)
        if precondition is not None and not precondition.allows(record.version):
            raise StaleVersion(record_id)
        return record

    # -- many records at once: the ``bulk``'s, each under the same lock

    def list(self, **arguments: Any) -> builtins.list[Any]:
        return self.bulk.list(**arguments)

    def position_and_list(self, **arguments: Any) -> tuple[int, builtins.list[Any]]:
        return self.bulk.position(), self.bulk.list(**arguments)

    def count(self, **filters: Any) -> int:
        return self.bulk.count(**filters)

    def last_id(self) -> int:
        return self.bulk.last_id()

    def changes(self, *, after: int = 0, limit: int = 100) -> builtins.list[Change]:
        return self.bulk.changes(after=after, limit=limit)

    def entry(self, record_id: int) -> Change | None:
        return self.bulk.entry(record_id)

    def position(self) -> int:
        return self.bulk.position()

    def _restore(self, records: Sequence[Any], changes: Sequence[Change], last_id: int) -> None:
        self.bulk.restore(records, changes, last_id)

    def announce_commits(self, listener: Listener) -> Stop:
        """``protocol.CommitsAnnounced``, for these records served alone:
        their store's announcements (each write, as it is made)."""
        return self.commits.add(listener)
