"""MemoryStorage: every collection in dicts, for tests and throw-away servers.

Nothing survives the process. Each collection (``MemoryRecords``) has one
lock that makes every method atomic, and the indexes a database would keep,
made from its schema (``memory_indexes``), so that every page is
O(log N + limit) and every search O(log N + matches) rather than a scan.

The change feed is one more sorted index: each record's latest position,
tombstones included; positions are handed out under the lock.

Idempotency keys are the store's, one dict for every collection
(``keys.MemoryKeys``), whose lock is held around a keyed write.

``touched`` counts
the records each call has looked at, so tests can show what a page costs
without timing it.
"""
from __future__ import annotations

import itertools
import logging
import os
import threading
from collections.abc import Iterable, Sequence
from typing import Any

from sortedcontainers import SortedList

from ..validation import Schema
from . import (Conflict, NotFound, Position, Precondition, StaleVersion, Watch, checked_id,
               position)
from .feed import Change
from .keys import Key, MemoryKeys
from .memory_indexes import Indexes, past
from .opening import check_fresh_ids

_log = logging.getLogger("usersvc.storage")


class MemoryStorage:
    def __init__(self, schemas: Iterable[Schema] | None) -> None:
        if schemas is None:
            raise ValueError("memory:// holds nothing yet: name its collections")
        self.schemas = tuple(schemas)
        self.keys = MemoryKeys()
        self.collections = {s.plural: MemoryRecords(s, self.keys) for s in self.schemas}

    def __getitem__(self, plural: str) -> MemoryRecords:
        return self.collections[plural]

    def stop_waiting(self) -> None:
        for records in self.collections.values():
            records.stop_waiting()

    def close(self) -> None:
        self.stop_waiting()



class MemoryRecords:
    keeps_keys = True

    def __init__(self, schema: Schema, keys: MemoryKeys | None = None) -> None:
        self.schema = schema
        self._keys = MemoryKeys() if keys is None else keys     # the store's, shared
        self._lock = threading.Lock()
        self._records: dict[int, Any] = {}
        self._make = schema.record._make
        self._names = tuple(schema.fields)
        self._indexes = Indexes(schema)
        self._last_id = 0
        self._seq = 0                        # the feed's last position
        self._seqs = SortedList()            # each record's latest position, sorted,
        self._id_at: dict[int, int] = {}     # and the record it belongs to;
        self._seq_of: dict[int, int] = {}    # id -> its position there
        self._watch = Watch(lambda: self._seq)
        self._pid = os.getpid()
        self.touched = 0

    # -- reads ------------------------------------------------------------

    def get(self, record_id: int) -> Any:
        with self._lock:
            return self._get(record_id)

    def list(self, *, limit: int = 100, sort: str = "id", reverse: bool = False,
             after: Position | None = None, q: str | None = None,
             **filters: str) -> list[Any]:
        with self._lock:
            if not filters and q is None:
                ids = self._indexes.walk(sort, reverse, after)
                page = list(map(self._records.__getitem__, itertools.islice(ids, limit)))
            else:
                found = sorted(self._matches(filters, q),
                               key=lambda r: position(r, sort), reverse=reverse)
                page = list(itertools.islice(past(found, sort, reverse, after), limit))
            self.touched += len(page)
            return page

    def count(self, *, q: str | None = None, **filters: str) -> int:
        with self._lock:
            if not filters and q is None:
                return len(self._records)
            return sum(1 for _ in self._matches(filters, q))

    def last_id(self) -> int:
        with self._lock:
            return self._last_id

    # -- writes -----------------------------------------------------------

    def create(self, *, key: Key | None = None, **fields: Any) -> Any:
        if key is not None:
            return self._keys.once(key, lambda: self.create(**fields))
        record = [None, *map(fields.pop, self._names, itertools.repeat(None)), 1]
        if fields:
            raise TypeError(f"not fields of a {self.schema.name}: {', '.join(fields)}")
        self.schema.check_complete(record[1:-1])
        with self._lock:
            self._indexes.claim(record, 0)
            self._last_id += 1
            record[0] = self._last_id
            record = self._make(record)
            self._add(record)
        self._watch.notify()
        return record

    def update(self, record_id: int, *, precondition: Precondition | None = None,
               key: Key | None = None, **fields: Any) -> Any:
        if key is not None:
            return self._keys.once(key, lambda: self.update(
                record_id, precondition=precondition, **fields))
        with self._lock:
            old = self._checked(record_id, precondition)
            new = [record_id, *map(fields.pop, self._names, old[1:-1]), old.version + 1]
            if fields:
                raise TypeError(f"not fields of a {self.schema.name}: {', '.join(fields)}")
            self.schema.check_complete(new[1:-1])
            self._indexes.claim(new, record_id)
            new = self._make(new)
            self._indexes.move(old, new)
            self._records[record_id] = new
            self._record(record_id)
        self._watch.notify()
        return new

    def delete(self, record_id: int, *, precondition: Precondition | None = None) -> None:
        with self._lock:
            record = self._checked(record_id, precondition)
            self._indexes.move(record, None)
            del self._records[record_id]
            self._record(record_id)
        self._watch.notify()

    def restore(self, records: Sequence[Any], *, last_id: int = 0) -> None:
        self._restore(records, (), last_id)

    def restore_changes(self, changes: Sequence[Change], *, last_id: int = 0) -> None:
        self._restore([c.record for c in changes if c.record is not None], changes, last_id)

    def _restore(self, records: Sequence[Any], changes: Sequence[Change], last_id: int) -> None:
        with self._lock:
            check_fresh_ids([*records, *changes], self._last_id)
            if changes and min(c.seq for c in changes) <= self._seq:
                raise Conflict(f"Positions are never reused: this store's feed is at {self._seq}.")
            ids = {c.id for c in changes} or {r.id for r in records}
            self._indexes.claim_all(records)
            if len(ids) < max(len(records), len(changes)):
                raise Conflict("Two of these records have the same id.")
            for record in sorted(records, key=lambda r: r.id):
                self._add(self._make(record))
            for record in records if changes else ():     # the positions _add gave, forgotten
                del self._id_at[self._seq_of[record.id]]
                self._seqs.remove(self._seq_of.pop(record.id))
            for change in changes:      # and each record or tombstone at the position given
                self._seqs.add(change.seq)
                self._id_at[change.seq] = change.id
                self._seq_of[change.id] = change.seq
            if changes:
                self._seq = max(self._seq, *(c.seq for c in changes))
            self._last_id = max(self._last_id, last_id, *ids)
        self._watch.notify()

    # -- the change feed --------------------------------------------------

    def changes(self, *, after: int = 0, limit: int = 100) -> list[Change]:
        with self._lock:
            seqs = itertools.islice(self._seqs.irange(minimum=after, inclusive=(False, True)),
                                    limit)
            found = [Change(seq, record_id, self._records.get(record_id))
                     for seq in seqs for record_id in (self._id_at[seq],)]
            self.touched += len(found)
            return found

    def position(self) -> int:
        return self._seq

    def position_and_list(self, **arguments: Any) -> tuple[int, list[Any]]:
        return self._seq, self.list(**arguments)

    def wait(self, after: int, timeout: float) -> None:
        self._watch.wait(after, timeout)

    def stop_waiting(self) -> None:
        self._watch.close()

    # -- the records and their positions ---------------------------------

    def _add(self, record: Any) -> None:
        self._records[record.id] = record
        self._indexes.move(None, record)
        self._record(record.id)

    def _record(self, record_id: int) -> None:
        """The record's latest change is the next position."""
        if self._pid != os.getpid():
            self._forked()
        old = self._seq_of.get(record_id)
        if old is not None:
            self._seqs.remove(old)
            del self._id_at[old]
        seq = self._seq = self._seq + 1
        self._seqs.add(seq)
        self._id_at[seq] = record_id
        self._seq_of[record_id] = seq

    def _forked(self) -> None:
        """A write in a process forked from the one that made the store (a
        server's workers after ``--preload``): each process has its own copy
        from here on, and none sees another's writes. Said once a process."""
        self._pid = os.getpid()
        _log.warning("memory:// is one process's: process %d writes to its own copy of %s, "
                     "which no other process sees (use SQLite or PostgreSQL with several "
                     "workers)", self._pid, self.schema.plural)

    def _matches(self, filters: dict[str, str], q: str | None) -> list[Any]:
        ids = self._indexes.matches(filters, q, self._records)
        self.touched += len(ids)
        return [self._records[i] for i in ids]

    def _get(self, record_id: int) -> Any:
        try:
            return self._records[checked_id(self.schema, record_id)]
        except KeyError:
            raise NotFound(self.schema, record_id) from None

    def _checked(self, record_id: int, precondition: Precondition | None) -> Any:
        record = self._get(record_id)
        if precondition is not None and not precondition.allows(record.version):
            raise StaleVersion(record_id)
        return record

