"""One collection's indexes in memory (``Indexes``), made from its schema,
as a database keeps them, so that every page is O(log N + limit) and every
search O(log N + matches) rather than a scan:

- ids, sorted;
- per unique field, its keys (case-folded text, or the value) to ids;
  per other filter field, its keys to the set of ids;
- per sort field and per prefix field, ``(case-folded value, id)`` sorted:
  an order to walk, and a range for ``q`` to find values that start with it;
- for ``q`` in words fields: the distinct words, sorted, each with the ids
  of the records that have it (a write touches the sorted words only for a
  word no record had before).

A write moves only the entries whose keys changed (``move``). The memory
store (``memory``) holds them under its lock.
"""
from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from sortedcontainers import SortedList

from ..fields import words
from ..validation import Schema
from . import Conflict, Position, position

_SECOND = operator.itemgetter(1)      # the id of a (key, id) position


def _key(value: Any) -> Any:
    """How a value is compared: text case-folded, an integer as it is."""
    return value.casefold() if type(value) is str else value


class Indexes:
    """A collection's indexes, by its schema."""

    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        self._ids = SortedList()
        self._unique = {f: {} for f in schema.unique}            # key -> id
        self._filtered = {f: {} for f in schema.filters if f not in schema.unique}  # key -> ids
        self._orders = {f: SortedList() for f in dict.fromkeys((*schema.sorts[1:], *schema.prefixes))}
        # PERF: each write walks these, made once from the schema: (a
        # field's place in a record, and its index of each kind, or None).
        place = {f: i for i, f in enumerate(schema.record._fields)}
        self._claims = tuple((f, place[f], keys) for f, keys in self._unique.items())
        self._indexed = tuple((place[f], self._unique.get(f), self._filtered.get(f),
                               self._orders.get(f))
                              for f in dict.fromkeys((*self._unique, *self._filtered, *self._orders)))
        self._word_places = tuple(place[f] for f in schema.words)
        self._words = SortedList()           # distinct words, sorted
        self._named: dict[str, set[int]] = {}  # word -> ids of the records with it

    def claim(self, record: list[Any], record_id: int) -> None:
        """Raise ``Conflict`` if a unique value belongs to another record."""
        for field, at, keys in self._claims:
            holder = keys.get(_key(record[at]))
            if holder is not None and holder != record_id:
                raise Conflict.taken(self.schema, field, record[at])

    def move(self, old: Any, new: Any) -> None:
        """Move a record's index entries from ``old`` to ``new`` (``None``:
        not there), touching only the entries whose keys change."""
        record_id = (old or new).id
        if old is None:
            self._ids.add(record_id)
        elif new is None:
            self._ids.remove(record_id)
        for at, unique, filtered, order in self._indexed:
            before = None if old is None else old[at]
            after = None if new is None else new[at]
            if before == after:
                continue
            before, after = _key(before), _key(after)
            if before == after:         # (a change of case only)
                continue
            if unique is not None:
                if before is not None:
                    del unique[before]
                if after is not None:
                    unique[after] = record_id
            elif filtered is not None:
                if before is not None:
                    filtered[before].discard(record_id)
                    if not filtered[before]:
                        del filtered[before]
                if after is not None:
                    filtered.setdefault(after, set()).add(record_id)
            if order is not None:
                if before is not None:
                    order.remove((before, record_id))
                if after is not None:
                    order.add((after, record_id))
        for at in self._word_places:
            if old is None or new is None or old[at] != new[at]:
                self._rewords(record_id, self._words_of(old), self._words_of(new))
                break

    def _words_of(self, record: Any) -> set[str]:
        """A record's words, from all its ``words`` fields together."""
        found: set[str] = set()
        for at in (() if record is None else self._word_places):
            if record[at] is not None:
                found.update(words(record[at]))
        return found

    def _rewords(self, record_id: int, gone: set[str], came: set[str]) -> None:
        for word in gone - came:
            named = self._named[word]
            named.discard(record_id)
            if not named:
                del self._named[word]
                self._words.remove(word)
        for word in came - gone:
            if word not in self._named:
                self._words.add(word)
                self._named[word] = set()
            self._named[word].add(record_id)

    def walk(self, sort: str, reverse: bool, after: Position | None) -> Iterator[int]:
        """The ids in ``sort`` order from just past ``after``. (``irange``
        walks the index without SortedList's positional index, which
        slicing would build and every later change would keep up.)"""
        index = self._ids if sort == "id" else self._orders[sort]
        if after is None:
            walk = reversed(index) if reverse else iter(index)
        elif reverse:
            walk = index.irange(maximum=after, inclusive=(True, False), reverse=True)
        else:
            walk = index.irange(minimum=after, inclusive=(False, True))
        return walk if sort == "id" else map(_SECOND, walk)

    def matches(self, filters: dict[str, str], q: str | None,
                records: dict[int, Any]) -> set[int]:
        """The records the filters keep, in no order: a look-up per filter,
        one range of the words and of each prefix field's index for ``q``."""
        ids: set[int] | None = None
        for field, value in filters.items():
            key = _key(value)
            if field in self._unique:
                holder = self._unique[field].get(key)
                found = set() if holder is None else {holder}
            elif field in self._filtered:
                found = set(self._filtered[field].get(key, ()))
            else:
                raise TypeError(f"{self.schema.plural} cannot be filtered by {field}")
            ids = found if ids is None else ids & found
        if q is not None:
            prefix = q.casefold()
            searched: set[int] = set()
            if ids is None or len(ids) > 1:
                for word in self._words.irange(minimum=prefix):
                    if not word.startswith(prefix):
                        break
                    searched |= self._named[word]
                for field in self.schema.prefixes:
                    for key, record_id in self._orders[field].irange(minimum=(prefix,)):
                        if not key.startswith(prefix):
                            break
                        searched.add(record_id)
            else:           # one record or none: look at it, not at the index
                searched = {i for i in ids if any(
                    k.startswith(prefix) for k in self.schema.search_keys(records[i]))}
            ids = searched if ids is None else ids & searched
        assert ids is not None
        return ids

    def claim_all(self, records: Sequence[Any]) -> None:
        """Raise ``Conflict`` if a unique value of ``records`` is taken, by
        a record held or by another of them (for ``restore``)."""
        seen: dict[str, set[Any]] = {f: set(keys) for f, keys in self._unique.items()}
        for record in records:
            for field, keys in seen.items():
                key = _key(getattr(record, field))
                if key is not None and key in keys:
                    raise Conflict(f"The store already holds a {self.schema.name} with "
                                   f"this {field}: {getattr(record, field)}.", field)
                keys.add(key)


def past(records: list[Any], sort: str, reverse: bool,
          after: Position | None) -> Iterable[Any]:
    """The records (sorted by ``sort``) that come after the position ``after``."""
    if after is None:
        return records
    start: Any = after        # an id in id order, a (key, id) pair in the others
    if reverse:
        return (r for r in records if position(r, sort) < start)
    return (r for r in records if position(r, sort) > start)
