"""The memory store's fast paths (``usersvc.fast``), beside the plain
definitions they replace with the same results (``tests/test_fast_paths.py``):
a new record's index entries made without comparing them with a record
that is not there, the indexes in smaller parts, an entry added in one
method, a page without conditions walked straight from its order, the
locks of a step with nothing to undo taken without an ``ExitStack``, a
record read without a call to check it, and a page's feed position read
without a call.
"""
from __future__ import annotations

from bisect import bisect_right, insort
from collections.abc import Callable
from itertools import islice
from typing import Any

from ..storage.memory.walks import ABSENT, NONE, Sorted, walk
from ..storage.served import Step
from . import plain

_list: Callable[..., list[Any]] = plain("usersvc.storage.memory.bulk:MemoryBulk.list")
_get = plain("usersvc.storage.memory.collection:MemoryRecords.get")
_move: Callable[[Any, Any, Any], None] = plain("usersvc.storage.memory.collection:Indexes.move")
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
    create) made without comparing them with a record that is not there
    (5.3% of a user's POST); an update's, each index looked at only where
    its field's value changed, without the plain one's generators (5% of
    a user's PUT); a delete as the plain one makes it."""
    if new is None:
        return _move(self, old, new)
    if old is not None:
        return _update(self, old, new)
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


def _update(self: Any, old: Any, new: Any) -> None:
    """An update's moves (``indexes_move``)."""
    record_id = new[0]
    for at, unique, order, collate in self._indexed:
        before, after = old[at], new[at]
        if before == after:
            continue
        before = None if before is None else collate(before)
        after = None if after is None else collate(after)
        if before == after:         # (a change of case only)
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
        before, after = old[at] is None, new[at] is None
        if before != after:
            (order.add if after else order.remove)((ABSENT, record_id))
    for at, collate, by, by_collate, by_value in self._filters:
        if old[at] == new[at] and (by is None or old[by] == new[by]):
            continue
        before = after = None
        if old[at] is not None:
            before = collate(old[at]), record_id if by is None else (by_collate(old[by]), record_id)
        if new[at] is not None:
            after = collate(new[at]), record_id if by is None else (by_collate(new[by]), record_id)
        if before == after:
            continue
        if before is not None:
            entries = by_value[before[0]]
            entries.remove(before[1])
            if not entries:
                del by_value[before[0]]
        if after is not None:
            by_value[after[0]].add(after[1])
    for at, _, _ in self._searched:
        if old[at] != new[at]:
            gone, came = self._words_of(old), self._words_of(new)
            named = self.named
            for word in gone - came:
                ids = named[word]
                ids.discard(record_id)
                if not ids:
                    del named[word]
            for word in came - gone:
                ids = named.get(word)
                if ids is None:
                    named[word] = {record_id}
                else:
                    ids.add(record_id)
            return


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
    contents = self.contents
    with contents.lock:
        index = contents.indexes.ids if sort == "id" else contents.indexes.orders[sort]
        page = list(islice(map(contents.records.__getitem__, walk(
            sort, reverse, after, NONE, (index,), sort in self.schema.optional)), limit))
        self.touched += len(page)
        return page


def records_get(self: Any, record_id: int) -> Any:
    """``MemoryRecords.get``: a record that is there read in the lock
    without a call to ``_checked`` (its precondition is none); an id no
    record holds as the plain one answers it (``NotFound``)."""
    contents = self.contents
    with contents.lock:
        record = contents.records.get(record_id)
    return _get(self, record_id) if record is None else record


def records_position_and_list(self: Any, **arguments: Any) -> tuple[int, list[Any]]:
    """``MemoryRecords.position_and_list``: the feed's position read here,
    as ``MemoryBulk.position`` reads it, not in a call; the page the bulk's."""
    contents = self.contents
    undo = contents.undo
    return (contents.last if undo is None else undo.last), self.bulk.list(**arguments)


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
            self.collections[p].contents.lock for p in locked]
    for lock in locks:
        lock.acquire()
    try:
        return run(Step(self, None, locked, True))
    finally:
        for lock in reversed(locks):
            lock.release()
