"""The memory store's ``Indexes`` as its schema lays them out, and what
each write walks in them (``laid_out``, ``write_plan``, made once); and
how its pages walk them: an order from a keyset, within the bounds a
range on the order's field sets (``walk``, ``bounds``), or a filter's
values' indexes in that order (``chosen``); the records filters and
``q`` match (``matches``), and those of them past a keyset, sorted
(``ranked``, ``past``). An index is a ``Sorted``;
in an optional sort's, a record without a value is ``(ABSENT, id)``:
after every value, so walked last going up, and after the values going
down."""
from __future__ import annotations

import heapq
import itertools
import operator
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from sortedcontainers import SortedDict, SortedList

from ... import fields
from ...schema import Schema
from ..protocol import Keyset, keyset

_SECOND = operator.itemgetter(1)      # the id of a (key, id) keyset
Bound = tuple[Any, bool]       # an index entry, and whether it is in
NONE: tuple[Bound | None, Bound | None] = (None, None)      # no range: the whole order


class Sorted(SortedList):  # type: ignore[misc]  # (sortedcontainers has no types)
    """An index: sortedcontainers' ``SortedList``, as it is (its load, its
    ``add``). A class of the store's own so that the fast build can give
    the store's indexes a smaller load and an ``add`` in one method
    (``usersvc.fast.memory``) without changing ``SortedList`` for anyone
    else; an index takes its load when it is made."""

    DEFAULT_LOAD_FACTOR = SortedList.DEFAULT_LOAD_FACTOR    # parts of 500 to 2,000 entries
    add = SortedList.add

    if TYPE_CHECKING:       # its walks, as sortedcontainers makes them (it has no types)
        def irange(self, minimum: Any = None, maximum: Any = None,
                   inclusive: tuple[bool, bool] = (True, True),
                   reverse: bool = False) -> Iterator[Any]: ...

        def __iter__(self) -> Iterator[Any]: ...

        def __reversed__(self) -> Iterator[Any]: ...


#: An index per value of a field (a filter's, a filtered sort's): collated
#: values to a ``Sorted``, made when a write first asks for one.
PerValue = defaultdict[Any, Sorted]

if TYPE_CHECKING:       # (the checker's alone: ``collection`` imports this module)
    class Indexes(Protocol):
        """A collection's indexes as the walks read them (``collection.Indexes``
        is one): its schema, and each index ``laid_out`` makes."""
        schema: Schema
        ids: Sorted
        unique: dict[str, dict[Any, int]]
        filtered: dict[str, PerValue]
        orders: dict[str, Sorted]
        within: dict[tuple[str, str], PerValue]
        named: Any      # (a ``SortedDict``: term -> ids)


class _Absent:
    """``ABSENT``: greater than every value, equal to itself only."""
    __slots__ = ()

    def __lt__(self, other: Any) -> bool:
        return False

    def __le__(self, other: Any) -> bool:
        return other is self

    def __gt__(self, other: Any) -> bool:
        return other is not self

    def __ge__(self, other: Any) -> bool:
        return True

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT = _Absent()
_VALUES_ONLY: Bound = ((ABSENT,), False)        # below every record without a value


def or_absent(collate: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``collate``, and ``ABSENT`` for no value (an optional sort's index entry)."""
    return lambda value: ABSENT if value is None else collate(value)


def laid_out(schema: Schema) -> tuple[dict[str, dict[Any, int]], dict[str, PerValue],
                                      dict[str, Sorted], dict[tuple[str, str], PerValue], Any]:
    """A collection's ``Indexes``, empty, as its schema declares them:
    per unique field (collated -> id), per other filter (collated -> ids,
    a ``Sorted``), per sort and prefix field searched by it (a ``Sorted``
    of ``(collated, id)``), per filtered sort (collated -> the same); the
    search terms, sorted (a term -> its records' ids). A value's
    ``Sorted`` is made when a write first asks for it (a ``defaultdict``):
    a read asks with ``in`` or ``get``, which make none."""
    unique: dict[str, dict[Any, int]] = {f: {} for f in schema.unique}
    filtered: dict[str, PerValue] = {f: defaultdict(Sorted) for f in schema.filters
                                     if f not in schema.unique}
    orders = {f: Sorted() for f in dict.fromkeys((*schema.sorts[1:], *schema.prefixes_by_key))}
    within: dict[tuple[str, str], PerValue] = {
        (f, sort): defaultdict(Sorted) for f, sorts in schema.filtered_sorts.items()
        for sort in sorts}
    return unique, filtered, orders, within, SortedDict()


def write_plan(indexes: Indexes) -> tuple[tuple[Any, ...], ...]:
    """What each write of a collection walks (``Indexes.claim`` and
    ``move``), made once from its schema: each field's place in a record
    and collation, with its index of each kind (or ``None``): the unique
    ones to claim; every unique or sort field's indexes; each filter's
    index, and each filtered sort's, with the field it sorts by (an optional
    sort's value ``ABSENT`` when it has none; a filter's own: ``None``); the
    optional sorts, whose records without a value are ``(ABSENT, id)``;
    the searched fields (how each is searched)."""
    schema = indexes.schema
    place = {f: i for i, f in enumerate(schema.field_names)}     # (id, then the fields)
    collate = {f: kind.collate for f, kind in schema.fields.items()}
    claims = tuple((f, place[f], ids, collate[f]) for f, ids in indexes.unique.items())
    indexed = tuple((place[f], indexes.unique.get(f), indexes.orders.get(f), collate[f])
                    for f in dict.fromkeys((*indexes.unique, *indexes.orders)))
    filters: tuple[tuple[Any, ...], ...] = tuple(
        (place[f], collate[f], None, None, ids) for f, ids in indexes.filtered.items())
    filters += tuple((place[f], collate[f], place[sort], or_absent(collate[sort]) if
                      sort in schema.optional else collate[sort], by_value)
                     for (f, sort), by_value in indexes.within.items())
    absent = tuple((place[f], indexes.orders[f]) for f in schema.sorts[1:]
                   if f in schema.optional)
    searched = tuple((place[f], *how) for f, how in schema.searched.items())
    return claims, indexed, filters, absent, searched


def walk(sort: str, reverse: bool, after: Keyset | None,
         within: tuple[Bound | None, Bound | None], walked: Sequence[Sorted],
         optional: bool = False) -> Iterator[int]:
    """The ids in ``sort`` order from just past ``after``, ``within`` the
    lowest and highest entries a range on the sort field lets in
    (``bounds``), in the indexes ``walked`` (``chosen``), merged; an
    ``optional`` sort's records without a value last, both ways."""
    if type(after) is tuple and after[0] is None:
        after = (ABSENT, after[1])
    if len(walked) == 1:
        found = _from(walked[0], reverse, after, within, optional)
    else:       # (going down, an optional sort's values first: then the rest)
        found = heapq.merge(*(_from(index, reverse, after, within, optional) for index in walked),
                            key=_values_first if optional and reverse else None, reverse=reverse)
    return found if sort == "id" else map(_SECOND, found)


def _values_first(entry: tuple[Any, int]) -> tuple[bool, tuple[Any, int]]:
    return entry[0] is not ABSENT, entry


def _from(index: Sorted, reverse: bool, after: Keyset | None,
          within: tuple[Bound | None, Bound | None], optional: bool = False) -> Iterator[Any]:
    """One index's entries from just past ``after``, ``within`` two bounds.
    (``irange`` walks the index without SortedList's positional index,
    which slicing would build and every later change would keep up.)
    Going down an ``optional`` sort: its values, then the entries without
    one (a range keeps none of them)."""
    if optional and reverse:
        if type(after) is tuple and after[0] is ABSENT:
            return index.irange(minimum=(ABSENT,), maximum=after, inclusive=(True, False),
                                reverse=True)
        values = _from(index, True, after, (within[0], _tighter(within[1], _VALUES_ONLY, min)))
        if within != NONE:
            return values
        return itertools.chain(values, index.irange(minimum=(ABSENT,), reverse=True))
    low, high = within
    if low is None and high is None:        # (no range: most pages)
        if after is None:
            return reversed(index) if reverse else iter(index)
        if reverse:
            return index.irange(maximum=after, inclusive=(True, False), reverse=True)
        return index.irange(minimum=after, inclusive=(False, True))
    if after is not None:       # (a keyset is an entry: past it, never it)
        if reverse:
            high = _tighter(high, (after, False), min)
        else:
            low = _tighter(low, (after, False), max)
    return index.irange(minimum=None if low is None else low[0],
                        maximum=None if high is None else high[0],
                        inclusive=(low is None or low[1], high is None or high[1]),
                        reverse=reverse)


def chosen(indexes: Indexes, sort: str, equal: dict[str, tuple[Any, ...]]
           ) -> tuple[list[Sorted], str | None] | None:
    """The indexes a page with ``equal`` conditions (a filter's collated
    values: one for ``=``, several for ``in``) walks in ``sort`` order, and
    the filter they hold: of the filters kept in this order (by id always,
    in another if it is one of the filter's ``filtered_sorts``), the one
    with the fewest entries, its values' indexes; ``None``: none is (or
    one is unique). No conditions: the order's own index."""
    if not equal:
        return [indexes.ids if sort == "id" else indexes.orders[sort]], None
    best: tuple[int, list[Sorted], str] | None = None
    for field, values in equal.items():
        if field in indexes.unique:
            return None         # (one record at most: ``matches`` finds it)
        by_value = indexes.filtered[field] if sort == "id" else indexes.within.get((field, sort))
        if by_value is not None:
            found = [by_value[v] for v in dict.fromkeys(values) if v in by_value]
            size = sum(map(len, found))
            if best is None or size < best[0]:
                best = (size, found, field)
    return None if best is None else best[1:]


def bounded(sort: str, condition: Any) -> bool:
    """Whether ``bounds`` keeps a page to ``condition`` (a range on its order)."""
    return condition.field == sort and condition.op in _EDGES


def bounds(sort: str, where: Sequence[Any]) -> tuple[Bound | None, Bound | None]:
    """The lowest and highest index entries of ``sort`` that its ranges in
    ``where`` let in: a page walks from one to the other, O(log N + what
    it reads), rather than from an end. In an order by a field, an entry
    is ``(collated, id)``: ``(v,)`` sorts before every ``(v, id)``, and
    ``(v, inf)`` after; a range keeps no record without a value."""
    low = high = None
    for c in where:
        if c.field != sort or c.op not in _EDGES:
            continue
        v = c.collated
        edge = (v, c.op in ("gte", "lte")) if sort == "id" else _EDGES[c.op](v)
        if c.op in ("gt", "gte"):
            low = _tighter(low, edge, max)
            if sort != "id":
                high = _tighter(high, _VALUES_ONLY, min)
        else:
            high = _tighter(high, edge, min)
    return low, high


_PAST = float("inf")        # after every id
_EDGES: dict[str, Callable[[Any], Bound]] = {
    "gt": lambda v: ((v, _PAST), False), "gte": lambda v: ((v,), True),
    "lt": lambda v: ((v,), False), "lte": lambda v: ((v, _PAST), True)}


def _tighter(bound: Bound | None, other: Bound, pick: Callable[[Any, Any], Any]) -> Bound:
    """Of two bounds, the one that lets fewer in (at the same entry: the
    one that leaves it out)."""
    if bound is None or bound[0] != other[0]:
        return other if bound is None or pick(bound[0], other[0]) == other[0] else bound
    return (bound[0], bound[1] and other[1])


def matches(indexes: Indexes, filters: dict[str, str], q: str | None,
            records: dict[int, Any]) -> set[int]:
    """The records the filters keep, in no order: a look-up per filter,
    one range of the words and of each prefix field's index for ``q``."""
    ids: set[int] | None = None
    for field, value in filters.items():
        if field not in indexes.unique and field not in indexes.filtered:
            raise TypeError(f"{indexes.schema.plural} cannot be filtered by {field}")
        collated = indexes.schema.fields[field].collate(value)
        if field in indexes.unique:
            holder = indexes.unique[field].get(collated)
            found = set() if holder is None else {holder}
        else:
            found = set(indexes.filtered[field].get(collated, ()))
        ids = found if ids is None else ids & found
    if q is not None:
        prefix = fields.fold(q)
        searched: set[int] = set()
        if ids is None or len(ids) > 1:
            for term in indexes.named.irange(minimum=prefix):
                if not term.startswith(prefix):
                    break
                searched |= indexes.named[term]
            for field in indexes.schema.prefixes_by_key:
                for term, record_id in indexes.orders[field].irange(minimum=(prefix,)):
                    if term is ABSENT or not term.startswith(prefix):
                        break
                    searched.add(record_id)
        else:           # one record or none: look at it, not at the index
            searched = {i for i in ids if any(
                term.startswith(prefix) for term in search_terms(indexes.schema, records[i]))}
        ids = searched if ids is None else ids & searched
    assert ids is not None
    return ids


def ranked(schema: Schema, sort: str, reverse: bool) -> Callable[[Any], Any]:
    """A record's place in ``sort`` order, as ``sorted(key=...,
    reverse=reverse)`` and ``past`` take it: its ``keyset``, after
    whether it has a value (so that one without comes last both ways)."""
    if sort == "id":
        return operator.attrgetter("id")

    def place(record: Any) -> tuple[bool, Keyset]:
        at = keyset(schema, record, sort)
        return (at[0] is None) != reverse, at   # type: ignore[index]  # (not by id: a pair)
    return place


def past(records: list[Any], rank: Callable[[Any], Any], reverse: bool,
         after: Keyset | None) -> Iterable[Any]:
    """The records (sorted, ``rank`` their key) that come after the keyset ``after``."""
    if after is None:
        return records
    start = ((after[0] is None) != reverse, after) if type(after) is tuple else after
    if reverse:
        return (r for r in records if rank(r) < start)
    return (r for r in records if rank(r) > start)


def search_terms(schema: Schema, record: Any) -> set[str]:
    """What ``q`` is matched against, as a prefix: every word of the
    ``words`` fields and each ``prefixes`` field whole, folded."""
    terms = {value.casefold() for f in schema.prefixes_by_key
             if (value := getattr(record, f)) is not None}
    for field, (by_words, whole) in schema.searched.items():
        value = getattr(record, field)
        if value is not None:
            terms.update(fields.search_terms(value, by_words, whole))
    return terms
