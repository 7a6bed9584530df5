"""One collection of the memory store: its records in a dict, under one
lock that makes every method atomic (``MemoryRecords``), and the indexes a
database would keep (``Indexes``), which pages, counts, searches and the
feed walk (``bulk``): a page is O(log N + limit). The feed is one more
sorted index: each record's latest position, tombstones included.
"""
from __future__ import annotations

import itertools
import logging
import os
import threading
from typing import Any

from ...fields import search_terms
from ...schema import Schema
from ..errors import Conflict, NotFound, Precondition, StaleVersion
from ..feed import Listeners, new_history
from .bulk import MemoryBulk
from .walks import ABSENT, Sorted, or_absent

_log = logging.getLogger("usersvc.storage")


class Indexes:
    """A collection's indexes, by its schema: ids, sorted; per unique field,
    its collated values to ids, per other filter to ids, sorted; per sort
    (and prefix field searched by it), ``(collated, id)`` sorted (``(ABSENT,
    id)`` without a value), and per filtered sort (``within``) the same per
    value of the filter; the search terms of its searched fields
    (``fields.search_terms``), sorted, each with its records' ids. A write
    moves only the entries whose collated values changed (``move``)."""

    def __init__(self, schema: Schema) -> None:
        self.schema, self.ids = schema, Sorted()
        self.unique = {f: {} for f in schema.unique}            # collated -> id
        self.filtered = {f: {} for f in schema.filters if f not in schema.unique}  # collated -> ids
        self.orders = {f: Sorted() for f in dict.fromkeys((*schema.sorts[1:],
                                                           *schema.prefixes_by_key))}
        self.within = {(f, sort): {} for f, sorts in schema.filtered_sorts.items()
                       for sort in sorts}           # collated -> (collated, id) sorted
        # What each write walks, made once from the schema: (a field's
        # place in a record, and its index of each kind, or None).
        place = {f: i for i, f in enumerate(schema.record._fields)}
        collate = {f: kind.collate for f, kind in schema.fields.items()}
        self._claims = tuple((f, place[f], ids, collate[f]) for f, ids in self.unique.items())
        self._indexed = tuple((place[f], self.unique.get(f), self.filtered.get(f),
                               self.orders.get(f), collate[f])
                              for f in dict.fromkeys((*self.unique, *self.filtered, *self.orders)))
        self._pairs = tuple((place[f], collate[f], place[sort], or_absent(collate[sort]) if
                             sort in schema.optional else collate[sort], by_value)
                            for (f, sort), by_value in self.within.items())
        self._absent = tuple((place[f], self.orders[f]) for f in schema.sorts[1:]
                             if f in schema.optional)      # (ABSENT, id) for each without one
        self._searched = tuple((place[f], *how) for f, how in schema.searched.items())
        self.all_words = Sorted()           # distinct search terms, sorted
        self.named: dict[str, set[int]] = {}  # term -> ids of the records with it

    def claim(self, record: list[Any], record_id: int) -> None:
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
        for at, unique, filtered, order, collate in self._indexed:
            before = None if old is None else old[at]
            after = None if new is None else new[at]
            if before == after:
                continue
            before = None if before is None else collate(before)
            after = None if after is None else collate(after)
            if before == after:         # (a change of case only)
                continue
            if unique is not None:
                if before is not None:
                    del unique[before]
                if after is not None:
                    unique[after] = record_id
            elif filtered is not None:
                _move(filtered, before, after, record_id, record_id)
            if order is not None:
                if before is not None:
                    order.remove((before, record_id))
                if after is not None:
                    order.add((after, record_id))
        for at, order in self._absent:
            before, after = (r is not None and r[at] is None for r in (old, new))
            if before != after:
                (order.add if after else order.remove)((ABSENT, record_id))
        for f_at, f_collate, s_at, s_collate, by_value in self._pairs:
            before, after = (None if r is None or r[f_at] is None else
                             (f_collate(r[f_at]), (s_collate(r[s_at]), record_id))
                             for r in (old, new))
            if before != after:
                _move(by_value, before and before[0], after and after[0],
                      before and before[1], after and after[1])
        for at, _, _ in self._searched:
            if old is None or new is None or old[at] != new[at]:
                self._rewords(record_id, self._words_of(old), self._words_of(new))
                break

    def add(self, record: Any) -> None:
        """A new record's entries (every create): ``move`` from nothing."""
        self.move(None, record)

    def _words_of(self, record: Any) -> set[str]:
        """A record's search terms, from all its searched fields together."""
        found: set[str] = set()
        for at, by_words, whole in (() if record is None else self._searched):
            if record[at] is not None:
                found.update(search_terms(record[at], by_words, whole))
        return found

    def _rewords(self, record_id: int, gone: set[str], came: set[str]) -> None:
        for word in gone - came:
            named = self.named[word]
            named.discard(record_id)
            if not named:
                del self.named[word]
                self.all_words.remove(word)
        for word in came - gone:
            if word not in self.named:
                self.all_words.add(word)
                self.named[word] = set()
            self.named[word].add(record_id)


def _move(by_value: dict[Any, Sorted], before: Any, after: Any,
          old_entry: Any, new_entry: Any) -> None:
    """An entry of an index kept per value (``filtered``, ``within``) moved
    from ``before``'s index to ``after``'s (``None``: not there)."""
    if before is not None:
        entries = by_value[before]
        entries.remove(old_entry)
        if not entries:
            del by_value[before]
    if after is not None:
        entries = by_value.get(after)
        if entries is None:
            entries = by_value[after] = Sorted()
        entries.add(new_entry)


class MemoryRecords(MemoryBulk):
    """One collection's records, under one lock (what it does with many
    records at once: ``MemoryBulk``)."""

    def __init__(self, schema: Schema, commits: Listeners | None = None) -> None:
        self.schema, self.commits = schema, commits or Listeners()  # the store's, shared
        self._lock = threading.RLock()      # re-entered by a batch's writes (``undoing``)
        self._undo: Any = None                # a batch's ``bulk.Undo``, while it runs
        self._records: dict[int, Any] = {}
        self._make = schema.record._make
        self._names = tuple(schema.fields)
        self._indexes = Indexes(schema)
        self._last_id = 0
        self._seq = self._last = 0           # the last position handed out; the last entry's
        self._seqs = Sorted()            # each record's latest position, sorted,
        self._id_at: dict[int, int] = {}     # and the record it belongs to;
        self._seq_of: dict[int, int] = {}    # id -> its position there
        self._pid = os.getpid()
        self.history = new_history()        # the feed's: this store's life is its history

    def get(self, record_id: int) -> Any:
        with self._lock:
            return self._get(record_id)

    # -- writes -----------------------------------------------------------

    def create(self, **fields: Any) -> Any:
        record = [None, *map(fields.pop, self._names, itertools.repeat(None)), 1]
        if fields:
            raise TypeError(f"not fields of {self.schema.a_name}: {', '.join(fields)}")
        self.schema.check_complete(record[1:-1])
        with self._lock:
            self._indexes.claim(record, 0)
            record[0] = self._last_id = self._last_id + 1
            record = self._make(record)
            self._put(None, record)
        if self.commits.listeners:
            self.commits.announce(self.schema.plural)
        return record

    def update(self, record_id: int, *, precondition: Precondition | None = None,
               **fields: Any) -> Any:
        with self._lock:
            old = self._checked(record_id, precondition)
            new = [record_id, *map(fields.pop, self._names, old[1:-1]), old.version + 1]
            if fields:
                raise TypeError(f"not fields of {self.schema.a_name}: {', '.join(fields)}")
            self.schema.check_complete(new[1:-1])
            self._indexes.claim(new, record_id)
            new = self._make(new)
            self._put(old, new)
        if self.commits.listeners:
            self.commits.announce(self.schema.plural)
        return new

    def delete(self, record_id: int, *, precondition: Precondition | None = None) -> None:
        with self._lock:
            self._put(self._checked(record_id, precondition), None)
        if self.commits.listeners:
            self.commits.announce(self.schema.plural)

    def _put(self, old: Any, new: Any) -> None:
        """``new`` in place of ``old`` (``None``: none), in the records and the
        indexes, at the feed's next position; what it was, kept for a batch."""
        record_id = (old or new).id
        was = self._seq_of.get(record_id)
        if self._undo is not None:
            self._undo.saw(record_id, old, was)
        if self._pid != os.getpid():
            self._forked()
        if new is None:
            del self._records[record_id]
        else:
            self._records[record_id] = new
        if old is None:
            self._indexes.add(new)
        else:
            self._indexes.move(old, new)
        if was is not None:
            self._seqs.remove(was)
            del self._id_at[was]
        seq = self._seq = self._last = self._seq + 1
        self._seqs.add(seq)
        self._id_at[seq], self._seq_of[record_id] = record_id, seq

    def _forked(self) -> None:
        """A write in a process forked from the one that made the store (workers
        after ``--preload``): its own copy from here on. Said once a process."""
        self._pid = os.getpid()
        _log.warning("memory:// is one process's: process %d writes to its own copy of %s, "
                     "which no other process sees (use SQLite or PostgreSQL with several "
                     "workers)", self._pid, self.schema.plural)

    def _get(self, record_id: int) -> Any:
        try:
            return self._records[record_id]     # (no record holds an id out of range)
        except KeyError:
            raise NotFound(self.schema, record_id) from None

    def _checked(self, record_id: int, precondition: Precondition | None) -> Any:
        record = self._get(record_id)
        if precondition is not None and not precondition.allows(record.version):
            raise StaleVersion(record_id)
        return record
