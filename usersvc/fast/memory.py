"""The memory store's fast paths (``usersvc.fast``), beside the plain
definitions they replace with the same results (``tests/test_fast_paths.py``):
a new record's index entries made without comparing them with a record
that is not there, the indexes in smaller parts, an entry added in one
method, a page without conditions walked straight from its order, and the
locks of a step with nothing to undo taken without an ``ExitStack``.
"""
from __future__ import annotations

import itertools
from bisect import bisect_right, insort
from collections.abc import Callable
from typing import Any

from ..storage.memory.walks import ABSENT, NONE, Sorted, walk
from ..storage.served import Step
from . import plain

_list = plain("usersvc.storage.memory.bulk:MemoryBulk.list")
_move = plain("usersvc.storage.memory.collection:Indexes.move")
_atomically = plain("usersvc.storage.memory.store:MemoryStorage.atomically")

#: ``Sorted``'s parts of 250 to 1,000 entries (``SortedList``'s: 500 to
#: 2,000), so that an entry put in the middle moves half as many: 1% of a
#: user's POST with 1,000 users, more with more; smaller parts cost a page
#: more parts to cross (parts of 125 to 500 saved 1.3% of a POST and cost
#: a page of 20 2.2%: these, a page under 1%). An index takes its load
#: when it is made: a store made before ``install`` keeps SortedList's.
LOAD_FACTOR = 500


def sorted_add(self: Sorted, value: Any) -> None:
    """``SortedList.add``'s steps in one method: an entry above every other
    (a new id, a feed position, a new task's ``created``) appended without
    a search, and a part split, or the positional index kept, only when
    there is one to keep (``SortedList.add`` calls ``_expand`` each time):
    1.8% of a user's POST, 2.6% of a task's (issue 47)."""
    maxes = self._maxes
    if not maxes:
        self._lists.append([value])
        maxes.append(value)
        self._len = 1
        return
    if value >= maxes[-1]:
        pos = len(maxes) - 1
        self._lists[pos].append(value)
        maxes[pos] = value
    else:
        pos = bisect_right(maxes, value)
        insort(self._lists[pos], value)
    self._len += 1
    if self._index or len(self._lists[pos]) > self._load << 1:
        self._expand(pos)


def indexes_move(self: Any, old: Any, new: Any) -> None:
    """``Indexes.move``: a new record's entries (``old`` ``None``: every
    create) made without comparing them with a record that is not there:
    5.3% of a user's POST; any other move as the plain one makes it."""
    if old is not None:
        return _move(self, old, new)
    record = new
    record_id = record[0]
    self.ids.add(record_id)
    for at, unique, order, collate in self._indexed:
        value = record[at]
        if value is None:
            continue
        value = collate(value)
        if unique is not None:
            unique[value] = record_id
        if order is not None:
            order.add((value, record_id))
    for at, order in self._absent:
        if record[at] is None:
            order.add((ABSENT, record_id))
    for at, collate, by, by_collate, by_value in self._filters:
        if record[at] is not None:
            by_value[collate(record[at])].add(
                record_id if by is None else (by_collate(record[by]), record_id))
    if self._searched:
        named = self.named
        for word in self._words_of(record):
            ids = named.get(word)
            if ids is None:
                named[word] = {record_id}
            else:
                ids.add(record_id)


def bulk_list(self: Any, *, limit: int = 100, sort: str = "id", reverse: bool = False,
              after: Any = None, q: str | None = None, where: Any = (),
              **filters: Any) -> list[Any]:
    """``MemoryBulk.list``: a page without conditions (most pages) walked
    straight from its order's index, without asking which indexes to
    walk and what is left to check: 4.9% of a page of 20; any other as
    the plain one reads it."""
    if q is not None or filters or where:
        return _list(self, limit=limit, sort=sort, reverse=reverse, after=after, q=q,
                     where=where, **filters)
    with self._lock:
        index = self._indexes.ids if sort == "id" else self._indexes.orders[sort]
        page = list(itertools.islice(map(self._records.__getitem__, walk(
            sort, reverse, after, NONE, (index,), sort in self.schema.optional)), limit))
        self.touched += len(page)
        return page


def atomically(self: Any, plurals: Any, run: Callable[[Step], Any], *,
               nothing_to_undo: bool = False) -> Any:
    """``MemoryStorage.atomically``: a step with nothing to undo takes its
    collections' locks found once for each set of collections and kept by
    the store (0.25 µs, not 0.8), acquired and released in turn, without
    an ``ExitStack``; any other as the plain one makes it."""
    if not nothing_to_undo:
        return _atomically(self, plurals, run)
    locked = self.locked(plurals)
    try:
        locks = self.held_locks[locked]
    except (AttributeError, KeyError):      # (the first step over these collections)
        locks = vars(self).setdefault("held_locks", {})[locked] = [
            self.collections[p]._lock for p in locked]
    for lock in locks:
        lock.acquire()
    try:
        return run(Step(self, None, locked, True))
    finally:
        for lock in reversed(locks):
            lock.release()
