"""Each fast path (a ``PERF`` comment in usersvc) against its plain
definition beside it: the same results, on values hypothesis makes, on a
declaration that says everything a ``Schema`` can (``every_kind``)."""
from __future__ import annotations

import json
import re
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from every_kind import THINGS, thing_maker
from usersvc import USER
from usersvc.fields import fold, search_terms, words
from usersvc.storage.memory.collection import Indexes, Sorted
from usersvc.storage.sql.collection import Table
from usersvc.storage.sql.dialects import POSTGRES, SQLITE

def test_sorted_keeps_smaller_parts_in_order():
    """``Sorted`` is ``SortedList`` with a smaller load: its parts, as
    entries come and go, stay under 1,000 (SortedList's: under 2,000)."""
    many = Sorted()
    for n in range(20_000):
        many.add((str(n * 7919 % 20_000), n))
        if n % 3 == 0:
            many.remove(many[len(many) // 2])
    many._check()
    assert list(many) == sorted(many)
    assert max(map(len, many._lists)) <= 2 * Sorted.DEFAULT_LOAD_FACTOR == 1000


def _state(indexes: Indexes) -> tuple:
    return (list(indexes.ids), indexes.unique,
            {f: {v: list(ids) for v, ids in by_value.items()}
             for f, by_value in indexes.filtered.items()},
            {pair: {v: list(entries) for v, entries in by_value.items()}
             for pair, by_value in indexes.within.items()},
            {f: list(order) for f, order in indexes.orders.items()},
            list(indexes.all_words), indexes.named)


def _things(n: int) -> list:
    make, optional = thing_maker(), {"contact": "A@Example.org", "weight": 2.5,
                                     "due": "2026-03-01", "link": "https://example.org/x",
                                     "note": "Étude — naïve notes", "owner": 1}
    records = []
    for i in range(1, n + 1):
        document = make(f"Thing {i % 5} of MANY")
        if i % 2:
            document.update({f: (v.replace("A@", f"a{i}@") if f == "contact" else
                                 v + str(i) if f == "link" else v)
                             for f, v in optional.items()})
        fields = THINGS.for_create(document)
        records.append(THINGS.record._make((i, *THINGS.values(fields), 1)))
    return records


@pytest.mark.parametrize("schema, records", [
    (THINGS, _things(60)),
    (USER, [USER.record._make((i, f"Ada {i % 3} Lovelace", f"ADA{i}@example.org", 1))
            for i in range(1, 40)])])
def test_indexes_add_is_move_from_nothing(schema, records):
    fast, plain = Indexes(schema), Indexes(schema)
    for record in records:
        fast.add(record)
        plain.move(None, record)
    assert _state(fast) == _state(plain)
    for record in records[::3]:         # and what add made, move takes away
        fast.move(record, None)
        plain.move(record, None)
    assert _state(fast) == _state(plain)


@pytest.mark.parametrize("dialect", [SQLITE, POSTGRES], ids=["sqlite", "postgres"])
@pytest.mark.parametrize("schema, records", [(THINGS, _things(20)),
                                             (USER, [USER.record._make((1, "Ada", "A@x.org", 1))])])
def test_a_rows_columns_are_row_ofs(schema, records, dialect):
    table = Table(schema, dialect)
    for record in records:
        values = list(record[1:-1])
        assert table.row(values) == list(table.row_of(dict(zip(schema.fields, values))).values())


@given(st.text(), st.booleans(), st.booleans())
def test_a_terms_value_is_json_dumps_of_the_search_terms(text, by_words, whole):
    table = Table(USER, SQLITE)
    assert table.terms_value(text, by_words, whole) == json.dumps(
        sorted(set(search_terms(text, by_words, whole))), ensure_ascii=False)


@given(st.text(alphabet=st.characters(max_codepoint=127)))
def test_ascii_folds_and_splits_as_any_text_does(text):
    """``fold`` and ``words`` read ASCII text without NFKD: the same."""
    decomposed = unicodedata.normalize("NFKD", unicodedata.normalize("NFKD", text).casefold())
    assert fold(text) == "".join(c for c in decomposed if unicodedata.category(c) != "Mn")
    assert words(text) == re.sub(r"[\W_]", " ", fold(text)).split()


@given(st.text(alphabet=st.sampled_from("aZ09._~-+ %&=[]/é\x00\""), max_size=12))
def test_a_next_links_values_are_quoted_as_urlencode_quotes_them(text):
    from urllib.parse import quote_plus, urlencode

    from usersvc.listing import _quoted, _quoted_name
    assert _quoted(text) == quote_plus(text) == _quoted_name(text)
    assert f"{_quoted_name(text)}={_quoted(text)}" == urlencode([(text, text)])
