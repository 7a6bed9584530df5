"""The SQL stores' fast paths (``usersvc.fast``), beside ``Table.row``,
``Table.terms_value`` and ``SQLRecords.bound`` (``storage.sql.collection``),
which they replace with the same values (``tests/test_fast_paths.py``).
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..fields import search_terms

_STRING = json.encoder.encode_basestring     # a JSON string (the C one), as json.dumps writes it


def row(self: Any, values: Sequence[Any]) -> list[Any]:
    """``Table.row``: the columns from the values' places, found once for
    the table, without the dicts ``row_of`` makes (a third of its work)."""
    try:
        places = self.places
    except AttributeError:      # (its first row; not ``__dict__``: ``usersvc.fast.sqlite``)
        s, fields = self.schema, list(self.schema.fields)
        places = self.places = (
            [(fields.index(f), s.fields[f].collate) for f in self.collated],
            [(fields.index(f), *how) for f, how in s.searched.items()],
            [(fields.index(f), s.fields[f].to_stored) for f in self.stored_as])
    collated_at, words_at, stored_at = places
    made = list(values)
    for at, collate in collated_at:
        made.append(None if values[at] is None else collate(values[at]))
    for at, by_words, whole in words_at:
        made.append(self.terms_value(values[at], by_words, whole))
    for at, to_stored in stored_at:
        if made[at] is not None:
            made[at] = to_stored(made[at])
    return made


def terms_value(self: Any, value: str | None, by_words: bool, whole: bool) -> Any:
    """``Table.terms_value``: SQLite's JSON array written as
    ``json.dumps(found, ensure_ascii=False)`` writes it, without the
    encoder (a tenth of its work)."""
    if value is None:
        return None
    found = sorted(set(search_terms(value, by_words, whole)))
    return found if self.dialect.arrays else "[" + ", ".join(map(_STRING, found)) + "]"


def bound(self: Any, db: Any) -> Any:
    """``SQLRecords.bound``: a step on the connection of the last one (the
    SQLite writer's, always) given the same records (1,500 instructions a
    step), and a new one made as ``copy.copy`` makes it, in a third of its time."""
    try:
        last = self.last_bound
    except AttributeError:      # (its first step; not ``__dict__``: ``usersvc.fast.sqlite``)
        last = None
    if last is not None and last.db is db:
        return last
    records = object.__new__(type(self))
    for name, value in self.__dict__.items():   # (set one by one: kept in its slots)
        setattr(records, name, value)
    records.db, records.last_bound = db, None
    self.last_bound = records
    return records
