"""Each fast path (``usersvc.fast``'s registry, and the ``PERF`` comments
left in the stores) against its plain definition beside it: the same results, on values hypothesis makes, on a
declaration that says everything a ``Schema`` can (``every_kind``)."""
from __future__ import annotations

import importlib
import json
import time
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

from every_kind import THINGS, thing_maker
from urllib.parse import quote_plus, urlencode

from usersvc import USER, fast, make_app
from usersvc.representation import DEFAULT, JSON, PROBLEMS
from usersvc.request import Request
from usersvc.fields import search_terms
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


# -- the registry's fast paths (usersvc.fast), each against its plain definition

def _pair(where: str):
    """The fast and the plain definitions of the fast path that replaces ``where``."""
    found = [s for s in fast.SPEEDUPS if s.plain == where]
    assert len(found) == 1, where
    return fast.fast(found[0]), fast.plain(where)


def _same(fast_one, plain_one, *args):
    """Both give the same value, or raise the same error with the same words."""
    try:
        expected = plain_one(*args)
    except Exception as e:
        with pytest.raises(type(e)) as raised:
            fast_one(*args)
        assert str(raised.value) == str(e)
    else:
        assert fast_one(*args) == expected


JSONISH = st.text(alphabet=st.sampled_from(' \t\n{}[]":,0123456789.eE-+truefalsnl\\u'), max_size=25)


@given(st.one_of(JSONISH, st.from_regex(r'\s*\{"name": "[a-z]*"\}\s*', fullmatch=True)))
def test_decode_is_the_json_decoders(text):
    _same(*_pair("usersvc.representation.json_format:JSONFormat.decode"), JSON, text)


JSON_VALUES = st.one_of(st.none(), st.booleans(), st.text(), st.integers(-2**70, 2**70),
                        st.floats(allow_nan=False, allow_infinity=False), st.lists(st.integers()))


@given(st.dictionaries(st.text(max_size=5), JSON_VALUES, max_size=5))
def test_render_is_the_encoders(record):
    _same(*_pair("usersvc.representation.json_format:JSONFormat.render"), JSON, USER, record)


@given(st.integers(1, 60), st.integers(1, 2**62))
def test_render_record_is_render_of_as_dict(n, version):
    fast_one, plain_one = _pair("usersvc.representation.json_format:JSONFormat.render_record")
    for schema, record in ((THINGS, _things(n)[-1]._replace(version=version)),
                           (USER, USER.record._make((n, f"Zoë \"{n}\"\n", f"a{n}@b.org", version)))):
        assert fast_one(JSON, schema, record) == plain_one(JSON, schema, record)


ACCEPTS = st.lists(st.sampled_from([
    "application/json", "application/xml", "text/xml;charset=UTF-8", "text/*;q=0.5", "*/*",
    "*/*;q=0", "text/html", "application/problem+json;q=0.9", "application/*", "image/png",
    "application/json;q=0", "nonsense", ";;", "application/xml; q=1.0, text/html;q=0.1", " "]),
    max_size=4).map(", ".join)


@given(ACCEPTS, st.sampled_from([DEFAULT, PROBLEMS]))
def test_best_offer_is_the_plain_reading_of_accept(header, offers):
    _same(*_pair("usersvc.representation:best_offer"), header, offers)


@given(st.one_of(st.none(), st.lists(st.sampled_from([
    "application/json", "application/merge-patch+json", "application/xml", "text/xml",
    "application/vnd.thing+json", "application/atom+xml", "text/plain", " charset=utf-8",
    "charset=latin-1", 'charset="UTF8"', "APPLICATION/JSON", ""]), max_size=3).map(";".join)),
    st.booleans())
def test_body_format_reads_content_type_alike(content_type, patch):
    fast_one, plain_one = _pair("usersvc.representation:body_format")
    assert fast_one(content_type, patch=patch) is plain_one(content_type, patch=patch)


@pytest.mark.parametrize("status", [200, 201, 204, 304, 400, 404, 409, 412, 422, 500, 503])
def test_status_line_is_the_plain_ones(status):
    _same(*_pair("usersvc.request:status_line"), status)


@given(st.sampled_from(["http", "https"]),
       st.none() | st.sampled_from(["h", "h:80", "h:443", "h:8080", "[::1]:80"]),
       st.sampled_from(["localhost", "srv"]), st.none() | st.sampled_from(["80", "443", "81"]),
       st.sampled_from(["", "/v1", "/a b/\xc3\xa9"]))
def test_base_url_of_is_the_plain_ones(scheme, host, server, port, script):
    _same(*_pair("usersvc.request:base_url_of"), scheme, host, server, port, script)


@given(st.text(alphabet=st.sampled_from("ab.9:[]/ <>_-"), max_size=12))
def test_good_host_is_the_plain_ones(host):
    _same(*_pair("usersvc.app:good_host"), host)


QUERIES = st.one_of(
    st.text(alphabet=st.sampled_from("ab=&+%;2F0AcEd\x80\xc3\xa9\xff []5Bb"), max_size=30),
    st.text(alphabet=st.sampled_from("abz09=&._~-[]%5BbDd"), max_size=30))


@given(QUERIES)
def test_parameters_are_the_plain_ones(raw):
    fast_one, plain_one = _pair("usersvc.request:Request.parameters")
    _same(fast_one, plain_one, Request({"QUERY_STRING": raw}))


@given(st.text(alphabet=st.sampled_from("aZ09._~-+ %&=[]/é\x00\""), max_size=12))
def test_quoted_is_urlencodes_quoting(text):
    fast_one, plain_one = _pair("usersvc.listing:quoted")
    assert fast_one(text) == plain_one(text) == quote_plus(text)
    assert f"{fast_one(text)}={fast_one(text)}" == urlencode([(text, text)])


@pytest.mark.parametrize("schema", [USER, THINGS], ids=["users", "things"])
def test_known_parameters_are_the_plain_ones(schema):
    fast_one, plain_one = _pair("usersvc.listing:known_parameters")
    assert fast_one(schema) == plain_one(schema)
    assert fast_one(schema) == plain_one(schema)     # (and again, kept)


def test_asking_found_at_once_is_the_module_imported():
    fast_one, plain_one = _pair("usersvc.listing:_asking")
    assert fast_one() is plain_one() is importlib.import_module("usersvc.asking")


@given(st.sampled_from([*THINGS.field_names, "created", "nope"]),
       st.sampled_from(["eq", "ne", "in", "exists", "gt", "gte", "lt", "lte", "like"]),
       st.one_of(st.sampled_from(["true", "false", "3", "-9", "1e3", "2026-03-01",
                                  "2026-03-01T10:00:00Z", "low,high", '"a,b",c', "x" * 30,
                                  "https://example.org", ""]),
                 st.text(alphabet=st.sampled_from('abc019,"\\ -:TZ.\x00'), max_size=12)))
def test_a_condition_read_is_the_plain_reading(field, op, text):
    fast_one, plain_one = _pair("usersvc.asking:read")
    for _ in range(2):      # (the second, kept)
        _same(fast_one, plain_one, THINGS, f"{field}[{op}]", text)


TEXTS = st.one_of(st.text(alphabet=st.characters(max_codepoint=127)), st.text(),
                  st.sampled_from(["Ada Lovelace-Byron", "ÉMILE Zoła", "ﬁx_ß", "İı", "हिन्दी नाम"]))


@given(TEXTS)
def test_fold_is_the_plain_folding(text):
    _same(*_pair("usersvc.fields:fold"), text)


@given(TEXTS)
def test_words_are_the_plain_ones(text):
    _same(*_pair("usersvc.fields:words"), text)


@given(st.from_regex(r"[+-][0-9]{2}:[0-9]{2}", fullmatch=True))
def test_an_offset_is_the_plain_reading(offset):
    fast_one, plain_one = _pair("usersvc.kinds.dates:_offset")
    for _ in range(2):      # (the second, kept)
        _same(fast_one, plain_one, offset)


@given(st.lists(st.integers(0, 2**62), min_size=1, max_size=4))
def test_now_is_the_plain_stamp_of_the_same_instant(instants):
    fast_one, plain_one = _pair("usersvc.kinds.dates:now")
    for ns in sorted(instants):     # (seconds come again, and go by)
        with mock.patch.object(time, "time_ns", return_value=ns):
            assert fast_one() == plain_one()


#: Each fast path of the registry, and the test above that holds it to its plain definition.
HELD = {
    "usersvc.representation.json_format:JSONFormat.decode": test_decode_is_the_json_decoders,
    "usersvc.representation.json_format:JSONFormat.render": test_render_is_the_encoders,
    "usersvc.representation.json_format:JSONFormat.render_record":
        test_render_record_is_render_of_as_dict,
    "usersvc.representation:best_offer": test_best_offer_is_the_plain_reading_of_accept,
    "usersvc.representation:body_format": test_body_format_reads_content_type_alike,
    "usersvc.request:status_line": test_status_line_is_the_plain_ones,
    "usersvc.request:base_url_of": test_base_url_of_is_the_plain_ones,
    "usersvc.app:good_host": test_good_host_is_the_plain_ones,
    "usersvc.request:Request.parameters": test_parameters_are_the_plain_ones,
    "usersvc.listing:quoted": test_quoted_is_urlencodes_quoting,
    "usersvc.listing:known_parameters": test_known_parameters_are_the_plain_ones,
    "usersvc.listing:_asking": test_asking_found_at_once_is_the_module_imported,
    "usersvc.asking:read": test_a_condition_read_is_the_plain_reading,
    "usersvc.fields:fold": test_fold_is_the_plain_folding,
    "usersvc.fields:words": test_words_are_the_plain_ones,
    "usersvc.kinds.dates:_offset": test_an_offset_is_the_plain_reading,
    "usersvc.kinds.dates:now": test_now_is_the_plain_stamp_of_the_same_instant,
}


def test_every_fast_path_is_held_to_its_plain_definition():
    assert sorted(HELD) == sorted(s.plain for s in fast.SPEEDUPS)


def test_an_app_built_without_speedups_serves_with_every_plain_definition():
    """And one built with them, with every fast path; each swapped in where
    the plain one lives, so the code that calls it is the same."""
    for speedups in (False, True, False):
        make_app("memory://", speedups=speedups).close()
        for speedup in fast.SPEEDUPS:
            owner, name = fast._owner(speedup.plain)
            expected = fast.fast(speedup) if speedups else fast.plain(speedup.plain)
            assert owner.__dict__[name] is expected, speedup.plain
    make_app("memory://").close()      # (the default: on)
    assert fast.installed()
