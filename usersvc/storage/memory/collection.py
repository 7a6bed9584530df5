"""One collection of the memory store: its records in a dict, under one
lock that makes every method atomic (``MemoryRecords``), and the indexes a
database would keep (``Indexes``), which pages, counts, searches and the
feed walk (``bulk``): a page is O(log N + limit). The feed is one more
sorted index: each record's latest position, tombstones included."""
from __future__ import annotations

import os
import threading
from typing import Any

from sortedcontainers import SortedDict

from ...fields import search_terms
from ...schema import Schema
from ..errors import Conflict, NotFound, Precondition, StaleVersion
from ..feed import Listeners, new_history
from .bulk import MemoryBulk, forked
from .walks import ABSENT, Sorted, laid_out, write_plan


class Indexes:
    """A collection's indexes, as its schema lays them out (``walks.laid_out``):
    ids, sorted; per unique field, filter, sort and filtered sort, collated
    values to ids, or ``(collated, id)`` sorted (``(ABSENT, id)`` without a
    value); the search terms of its searched fields, sorted, each with its
    records' ids. A write moves only the entries whose collated values change."""

    def __init__(self, schema: Schema) -> None:
        self.schema, self.ids = schema, Sorted()
        self.named: SortedDict = SortedDict()    # a search term -> its records' ids
        self.unique, self.filtered, self.orders, self.within = laid_out(schema)
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
            before, after = (None if r is None or r[at] is None else collate(r[at])
                             for r in (old, new))
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
            before, after = (r is not None and r[at] is None for r in (old, new))
            if before != after:
                (order.add if after else order.remove)((ABSENT, record_id))
        for at, collate, by, by_collate, by_value in self._filters:
            # (value, entry): a filter's entry is the id; a filtered sort's, ``(sorted by, id)``
            before, after = (None if r is None or r[at] is None else (collate(r[at]),
                             record_id if by is None else (by_collate(r[by]), record_id))
                             for r in (old, new))
            if before != after:
                _move(by_value, before, after)
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


def _move(by_value: dict[Any, Sorted], old: Any, new: Any) -> None:
    """An entry of an index kept per value (``filtered``, ``within``) moved
    from ``old``'s ``(value, entry)`` to ``new``'s (``None``: not there)."""
    if old is not None:
        by_value[old[0]].remove(old[1])
        if not by_value[old[0]]:
            del by_value[old[0]]
    if new is not None:
        by_value[new[0]].add(new[1])


class MemoryRecords(MemoryBulk):
    """One collection's records, under one lock (what it does with many
    records at once: ``MemoryBulk``)."""

    def __init__(self, schema: Schema, commits: Listeners | None = None) -> None:
        self.schema, self.commits = schema, commits or Listeners()  # the store's, shared
        self._lock = threading.RLock()      # re-entered by a batch's writes (``undoing``)
        self._undo: Any = None                # a batch's ``bulk.Undo``, while it runs
        self._records: dict[int, Any] = {}
        self._make, self._indexes, self._last_id = schema.record._make, Indexes(schema), 0
        self._seq = self._last = 0           # the last position handed out; the last entry's
        self._seqs = Sorted()            # each record's latest (position, id), sorted,
        self._seq_of: dict[int, int] = {}    # and its position by id
        self._pid = os.getpid()
        self.history = new_history()        # the feed's: this store's life is its history

    def get(self, record_id: int) -> Any:
        with self._lock:
            return self._checked(record_id)

    def create(self, **fields: Any) -> Any:
        record = [None, *self.schema.values(fields), 1]     # (a ``TypeError`` if not fields)
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
            new = self._make([record_id, *self.schema.values(fields, old), old.version + 1])
            self._indexes.claim(new, record_id)
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
        if self._pid != os.getpid():        # (a process forked from the one that made it)
            self._pid = forked(self.schema.plural)
        if new is None:
            del self._records[record_id]
        else:
            self._records[record_id] = new
        self._indexes.move(old, new)
        if was is not None:
            self._seqs.remove((was, record_id))
        seq = self._seq_of[record_id] = self._seq = self._last = self._seq + 1
        self._seqs.add((seq, record_id))

    def _checked(self, record_id: int, precondition: Precondition | None = None) -> Any:
        record = self._records.get(record_id)     # (no record holds an id out of range)
        if record is None:
            raise NotFound(self.schema, record_id)
        if precondition is not None and not precondition.allows(record.version):
            raise StaleVersion(record_id)
        return record
