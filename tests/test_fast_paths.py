"""Each fast path (``usersvc.fast``'s registry, and the ``PERF`` comments
left in the stores) against its plain definition beside it: the same
results, on values hypothesis makes, on a declaration that says
everything a ``Schema`` can (``every_kind``)."""
from __future__ import annotations

import functools
import importlib
import json
import tempfile
import time
from unittest import mock
from urllib.parse import quote_plus, urlencode

import pytest
from every_kind import THINGS, thing_maker
from helpers import race
from hypothesis import given, settings, strategies as st
from sortedcontainers import SortedList

from usersvc import USER, Schema, fast, make_app, ref, text
from usersvc.fields import search_terms
from usersvc.representation import DEFAULT, JSON, PROBLEMS
from usersvc.request import Request
from usersvc.routing import Route
from usersvc.storage import Conflict, NotFound, Precondition, StoreError, open_store
from usersvc.storage.memory.collection import Indexes, MemoryRecords
from usersvc.storage.memory.walks import Sorted
from usersvc.storage.sql.collection import Table
from usersvc.storage.sql.dialects import POSTGRES, SQLITE


def _state(indexes: Indexes) -> tuple:
    return (list(indexes.ids), indexes.unique,
            {f: {v: list(ids) for v, ids in by_value.items()}
             for f, by_value in indexes.filtered.items()},
            {pair: {v: list(entries) for v, entries in by_value.items()}
             for pair, by_value in indexes.within.items()},
            {f: list(order) for f, order in indexes.orders.items()},
            list(indexes.named), indexes.named)


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


@pytest.mark.parametrize("dialect", [SQLITE, POSTGRES], ids=["sqlite", "postgres"])
@pytest.mark.parametrize("schema, records", [(THINGS, _things(20)),
                                             (USER, [USER.record._make((1, "Ada", "A@x.org", 1))])])
def test_a_rows_columns_are_row_ofs(schema, records, dialect):
    table = Table(schema, dialect)
    fast_row, plain_row = _pair("usersvc.storage.sql.collection:Table.row")
    for record in records:
        values = list(record[1:-1])
        assert fast_row(table, values) == plain_row(table, values) == list(
            table.row_of(dict(zip(schema.fields, values, strict=True))).values())


@given(st.text(), st.booleans(), st.booleans())
def test_a_terms_value_is_json_dumps_of_the_search_terms(text, by_words, whole):
    table = Table(USER, SQLITE)
    fast_one, plain_one = _pair("usersvc.storage.sql.collection:Table.terms_value")
    assert fast_one(table, text, by_words, whole) == plain_one(table, text, by_words, whole) \
        == json.dumps(sorted(set(search_terms(text, by_words, whole))), ensure_ascii=False)


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
                           (USER,
                            USER.record._make((n, f"Zoë \"{n}\"\n", f"a{n}@b.org", version)))):
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


@given(st.text(alphabet=st.sampled_from("aZé-_9 "), max_size=16),
       st.dictionaries(st.sampled_from(["HTTP_A", "HTTP_A_Z", "HTTP_IDEMPOTENCY_KEY", "HTTP_9"]),
                       st.text(max_size=3)))
def test_a_header_is_read_as_the_plain_one_reads_it(name, headers):
    from usersvc.request import Request
    fast_one, plain_one = _pair("usersvc.request:Request.header")
    request = Request(headers)
    for asked in (name, "Idempotency-Key", "a-z", "A"):
        _same(fast_one, plain_one, request, asked)


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


# -- the memory store's (usersvc.fast.memory)

@pytest.mark.parametrize("schema, records", [
    (THINGS, _things(60)),
    (USER, [USER.record._make((i, f"Ada {i % 3} Lovelace", f"ADA{i}@example.org", 1))
            for i in range(1, 40)])])
def test_a_new_records_entries_are_move_from_nothing(schema, records):
    """A create's entries, an update's (each record moved to another's
    values, and back), a delete's: the fast move leaves what the plain one does."""
    fast_move, plain_move = _pair("usersvc.storage.memory.collection:Indexes.move")
    fast, plain = Indexes(schema), Indexes(schema)
    for record in records:
        fast_move(fast, None, record)
        plain_move(plain, None, record)
    assert _state(fast) == _state(plain)
    for step in (1, 2, 7):
        # (not strict: each record and the one a step on, the last ones none)
        for record, other in zip(records[::step], records[step::step], strict=False):
            changed = record._replace(**{f: getattr(other, f) for f in schema.fields
                                         if f not in schema.unique})
            if schema is USER:      # (a unique value moved too: to one no other holds)
                changed = changed._replace(email=f"moved{record.id}@example.org")
            for old, new in ((record, changed), (changed, record)):
                fast_move(fast, old, new)
                plain_move(plain, old, new)
                assert _state(fast) == _state(plain)
    for record in records[::3]:         # and what it made, a later move takes away
        fast_move(fast, record, None)
        plain_move(plain, record, None)
    assert _state(fast) == _state(plain)


def _sorted(load: int) -> Sorted:
    made = Sorted()
    made._reset(load)
    return made


@given(st.lists(st.tuples(st.sampled_from(["add", "add", "add", "remove", "at"]),
                          st.integers(-50, 3_000)), min_size=20, max_size=3_000),
       st.sampled_from([4, 8, 500]))
def test_sorted_adds_as_sortedlist_adds(steps, load):
    """``Sorted.add``'s fast path (its steps in one method, an entry above
    every other appended) leaves what ``SortedList.add`` leaves: the same
    parts, maxima, length and positional index (built by a read by
    position, kept by later adds), whatever came before."""
    fast_add, plain_add = _pair("usersvc.storage.memory.walks:Sorted.add")
    assert plain_add is SortedList.add
    fast, plain = _sorted(load), _sorted(load)
    for what, value in steps:
        if what == "add":
            value = value if value < 2_900 else len(plain) + value     # often above all
            fast_add(fast, value)
            plain_add(plain, value)
        elif what == "remove" and plain:
            gone = fast[value % len(plain)]
            assert gone == plain[value % len(plain)]
            fast.remove(gone)
            plain.remove(gone)
        elif what == "at" and plain:    # a middle part's: builds the positional index
            assert fast[len(plain) // 2] == plain[len(plain) // 2]
        assert (fast._lists, fast._maxes, fast._len, fast._index, fast._offset) == (
            plain._lists, plain._maxes, plain._len, plain._index, plain._offset)
    fast._check()


@given(st.lists(st.tuples(st.booleans(), st.integers(0, 5_000)), max_size=6_000))
def test_sorted_in_smaller_parts_holds_what_sortedlist_holds(steps):
    """``Sorted``'s fast load (parts of 250 to 1,000 entries) against
    SortedList's (500 to 2,000): the same entries, in order, read alike
    by position and by range, as entries come and go."""
    fast_load, plain_load = _pair("usersvc.storage.memory.walks:Sorted.DEFAULT_LOAD_FACTOR")
    assert plain_load == SortedList.DEFAULT_LOAD_FACTOR and fast_load < plain_load
    fast, plain = _sorted(fast_load), _sorted(plain_load)
    for add, value in steps:
        if add or value not in plain:
            fast.add(value)
            plain.add(value)
        else:
            fast.remove(value)
            plain.remove(value)
    fast._check()
    assert list(fast) == list(plain)
    assert max(map(len, fast._lists), default=0) <= 2 * fast_load
    if plain:
        assert fast[len(plain) // 3] == plain[len(plain) // 3]
        assert list(fast.irange(1_000, 2_000)) == list(plain.irange(1_000, 2_000))


def _records(count: int) -> MemoryRecords:
    records = MemoryRecords(USER)
    records.restore([USER.record._make((i, f"Ada {i % 7}", f"a{i}@example.org", 1))
                     for i in range(1, count + 1)])
    return records


@given(st.integers(0, 40), st.integers(1, 30), st.sampled_from(["id", "name", "email"]),
       st.booleans(), st.integers(-1, 45),
       st.sampled_from([{}, {"q": "ada"}, {"email": "a3@example.org"}]))
def test_a_page_without_conditions_is_the_plain_ones(count, limit, sort, reverse, after, asked):
    """A page of ``MemoryBulk.list``'s fast path (no filter, ``q`` or
    condition: walked straight from its order) is the plain one's, and
    touches as many records; a page with conditions is the plain one's."""
    fast_list, plain_list = _pair("usersvc.storage.memory.bulk:MemoryBulk.list")
    fast, plain = _records(count), _records(count)
    if after >= 0:
        place = min(after, count)
        after = place if sort == "id" else (
            (None, 0) if place == 0 else (USER.fields[sort].collate(
                getattr(plain.get(place), sort)), place))
    else:
        after = None
    arguments = dict(limit=limit, sort=sort, reverse=reverse, after=after, **asked)
    assert fast_list(fast.bulk, **arguments) == plain_list(plain.bulk, **arguments)
    assert fast.bulk.touched == plain.bulk.touched


@given(st.integers(0, 20), st.lists(st.integers(-2, 25), max_size=10))
def test_a_record_read_is_the_plain_ones(count, deleted_and_asked):
    """``MemoryRecords.get``'s fast path answers each id as the plain one:
    the record, or ``NotFound`` for an id no record holds (never made,
    deleted, out of range)."""
    fast_get, plain_get = _pair("usersvc.storage.memory.collection:MemoryRecords.get")
    records = _records(count)
    for record_id in deleted_and_asked[::2]:
        if 0 < record_id <= count and record_id in records.contents.records:
            records.delete(record_id)
    for record_id in deleted_and_asked:
        answers = []
        for get in (fast_get, plain_get):
            try:
                answers.append(get(records, record_id))
            except NotFound as e:
                answers.append(("NotFound", str(e)))
        assert answers[0] == answers[1]


@given(st.integers(0, 20), st.integers(0, 5), st.booleans())
def test_a_position_and_a_page_are_the_plain_ones(count, deleted, in_a_batch):
    """``MemoryRecords.position_and_list``'s fast path answers as the plain
    one, outside a batch and inside one (the position as before it)."""
    fast_read, plain_read = _pair(
        "usersvc.storage.memory.collection:MemoryRecords.position_and_list")
    records = _records(count)
    for record_id in range(1, min(deleted, count) + 1):
        records.delete(record_id)

    def both():
        return (fast_read(records, limit=7, sort="name"), plain_read(records, limit=7, sort="name"))
    if in_a_batch:
        with records.bulk.undoing():
            records.create(name="New", email="new@example.org")
            fast, plain = both()
    else:
        fast, plain = both()
    assert fast == plain


OWNED = Schema("note", "notes", {"text": text(50), "owner": ref("users")},
               optional=("owner",), unique=("text",))


@given(st.lists(st.tuples(st.sampled_from(["user", "note", "fails", "raises"]),
                          st.integers(1, 4)), max_size=25))
def test_a_step_with_nothing_to_undo_ends_as_the_plain_ones(steps):
    """``MemoryStorage.atomically``'s fast path (a step with nothing to
    undo holds its collections' locks and keeps no undo) answers as the
    plain one, and leaves its store as the plain one leaves its own: a
    refused write changes nothing either way."""
    fast_one, plain_one = _pair("usersvc.storage.memory.store:MemoryStorage.atomically")
    stores = open_store("memory://", (USER, OWNED)), open_store("memory://", (USER, OWNED))

    def run(what, n, step):
        if what == "user":
            return step["users"].create(name="Ada", email=f"a{n}@example.org")
        if what == "raises":        # (a promise broken: read, then refused)
            step["users"].get(n)
            raise Conflict("refused")
        return step["notes"].create(text=f"note {n}", owner=n if what == "note" else 99)
    for what, n in steps:
        answers = []
        for atomically, store in zip((fast_one, plain_one), stores, strict=True):
            try:
                answers.append(atomically(store, ("notes",) if what != "user" else ("users",),
                                          functools.partial(run, what, n), nothing_to_undo=True))
            except StoreError as e:
                answers.append((type(e), str(e)))
        assert answers[0] == answers[1]
    for plural in ("users", "notes"):
        fast_records, plain_records = (s[plural] for s in stores)
        assert fast_records.list(limit=100) == plain_records.list(limit=100)
        assert fast_records.changes(limit=100) == plain_records.changes(limit=100)
        assert fast_records.last_id() == plain_records.last_id()
    for store in stores:
        store.close()
TEMPLATES = ["/users/{id:int}", "/users/{id:int}/x", "/users/changes", "/a/b/{n:int}/{m:int}",
             "/users/{id:int}/{m:int}"]
SEGMENTS = st.sampled_from(["7", "07", "0", "+1", "x", "changes", "", "9" * 20, "\u0661", "12"])


@given(st.sampled_from(TEMPLATES), st.lists(SEGMENTS, min_size=3, max_size=3))
def test_a_route_matches_as_the_plain_one_on_the_paths_the_router_hands_it(template, rest):
    """The router hands a route the paths as long as its template whose
    first segment is its own: on those, the same parameters, or none."""
    fast_one, plain_one = _pair("usersvc.routing:Route.match")
    route = Route(template, object())
    parts = template.split("/")[:2] + rest[:len(template.split("/")) - 2]
    _same(fast_one, plain_one, route, parts)


def test_the_kept_sparse_module_is_the_imported_one():
    fast_one, plain_one = _pair("usersvc.listing:_sparse")
    assert fast_one() is plain_one() is importlib.import_module("usersvc.sparse")
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
# -- SQLite's fast paths (usersvc.fast.sqlite): the writer, kept answers,
# pages from kept records and the writer's steps, each against the plain
# commit on the request's thread, on the same writes

NAMES = ["Ada", "Bea", "Cy"]
EMAILS = ["ada@example.org", "ADA@example.org", "bea@example.org", "cy@example.org"]
WRITES = st.lists(st.one_of(
    st.tuples(st.just("create"), st.sampled_from(NAMES), st.sampled_from(EMAILS)),
    st.tuples(st.just("update"), st.integers(1, 5), st.sampled_from(EMAILS),
              st.sampled_from([None, 1, 2])),
    st.tuples(st.just("delete"), st.integers(1, 5), st.sampled_from([None, 1, 2])),
    # an atomic step that creates, then fails (undone, its id kept taken) or not
    st.tuples(st.just("step"), st.sampled_from(EMAILS), st.booleans()),
    st.tuples(st.just("keyed"), st.sampled_from(EMAILS)),     # a step with nothing to undo
), max_size=10)


class Refused(Exception):
    """What a step raises to be undone."""


def _write(storage, write):
    users = storage["users"]
    kind, *args = write
    if kind == "create":
        return users.create(name=args[0], email=args[1])
    if kind == "update":
        record_id, email, version = args
        precondition = None if version is None else Precondition(match=frozenset({version}))
        return users.update(record_id, email=email, precondition=precondition)
    if kind == "delete":
        record_id, version = args
        precondition = None if version is None else Precondition(match=frozenset({version}))
        return users.delete(record_id, precondition=precondition)

    def step(made):
        created = made["users"].create(name="Step", email=args[0])
        if kind == "step" and args[1]:
            raise Refused(created.id)
        return created
    return storage.atomically(("users",), step, nothing_to_undo=kind == "keyed")


def _played(speedups: bool, writes) -> list:
    """What a store on a new file answers to ``writes``, on the build asked
    for: each write's result or error, then its pages, reads and feed."""
    fast.install(speedups)
    seen = []
    with tempfile.TemporaryDirectory() as where:
        storage = open_store(f"sqlite:///{where}/users.db")
        users = storage["users"]
        try:
            for write in writes:
                try:
                    outcome = _write(storage, write)
                except (StoreError, Refused) as e:
                    outcome = (type(e).__name__, str(e))
                found = []
                for record_id in range(1, 7):
                    try:
                        found.append(users.get(record_id))
                    except NotFound as e:
                        found.append(str(e))
                seen.append((outcome, users.list(), users.list(limit=2, sort="email"),
                             found, users.changes(), users.last_id()))
        finally:
            storage.close()
    return seen


@settings(max_examples=30, deadline=None)
@given(WRITES)
def test_sqlite_s_writer_answers_the_plain_commit_s_answers(writes):
    """The writer thread, its steps, kept answers and pages (the fast build)
    against the plain commit on the request's thread: the same records,
    errors, pages, reads and feed, write by write."""
    try:
        assert _played(True, writes) == _played(False, writes)
    finally:
        fast.install(True)


@pytest.mark.parametrize("speedups", [True, False], ids=["fast", "plain"])
def test_sqlite_writes_from_threads_are_each_made_once_on_either_build(tmp_path, speedups):
    """Eight threads at once (a barrier), each creating its own user and
    changing it, and all racing for one address: on either build every
    write is made once, one of the race wins, the feed has each change."""
    fast.install(speedups)
    storage = open_store(f"sqlite:///{tmp_path}/users.db")
    users = storage["users"]
    try:
        def writes(i):      # (``race`` releases the eight together)
            made = users.create(name=f"U{i}", email=f"u{i}@example.org")
            users.update(made.id, name=f"U{i} changed", precondition=Precondition(
                match=frozenset({1})))
            try:
                users.create(name="Twin", email="twin@example.org")
                return "won"
            except Conflict:
                return "lost"
        outcomes = race(8, writes)
        assert sorted(outcomes) == ["lost"] * 7 + ["won"]
        listed = users.list()
        assert sorted(u.name for u in listed) == sorted([*(f"U{i} changed" for i in range(8)),
                                                         "Twin"])
        assert all(u.version == 2 for u in listed if u.name != "Twin")
        assert len(users.changes(limit=100)) == 9
    finally:
        storage.close()
        fast.install(True)


# -- the idempotency feature's keyed write (usersvc.fast.idempotency): the
# same answers and records on either build, on memory (no step made) and
# SQLite, with and without records wrappers (metrics)

KEYED = st.lists(st.tuples(
    st.sampled_from(["POST", "PATCH"]), st.sampled_from(["k1", "k2", "k3"]),
    st.sampled_from(NAMES), st.sampled_from(EMAILS), st.sampled_from([None, "1", "2"])),
    min_size=1, max_size=8)


def _keyed(url: str, speedups: bool, features: tuple[str, ...], requests) -> list:
    """Each keyed request's status, headers and body, then the users, on a
    new app of the build asked for."""
    from webob import Request as Blank
    app = make_app(url, speedups=speedups, features=features)
    seen = []
    try:
        for method, key, name, email, version in requests:
            path = "/users" if method == "POST" else "/users/1"
            headers = {"Idempotency-Key": key, "Content-Type": "application/json"}
            if version is not None:
                headers["If-Match"] = f'"{version}"'
            res = Blank.blank(path, method=method, headers=headers,
                              body=json.dumps({"name": name, "email": email}).encode()
                              ).get_response(app)
            seen.append((res.status, sorted(res.headerlist), res.body))
        seen.append(Blank.blank("/users").get_response(app).body)
    finally:
        app.close()
    return seen


@pytest.mark.parametrize("features", [("idempotency",), ("idempotency", "metrics")],
                         ids=["alone", "wrapped"])
@pytest.mark.parametrize("store", ["memory", "sqlite"])
@settings(max_examples=15, deadline=None)
@given(requests=KEYED)
def test_a_keyed_write_answers_as_the_plain_one(store, features, requests):
    try:
        with tempfile.TemporaryDirectory() as where:
            url = "memory://" if store == "memory" else f"sqlite:///{where}/"
            fast_one = _keyed(url + ("" if store == "memory" else "f.db"), True, features,
                              requests)
            plain_one = _keyed(url + ("" if store == "memory" else "p.db"), False, features,
                               requests)
        assert fast_one == plain_one
    finally:
        fast.install(True)


# -- a schema's values (usersvc.fast.schema), on every field a declaration
# can have, given, left out, None or unknown

@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from([*THINGS.fields, "nope"]),
                       st.sampled_from([None, "x", 1, True])), st.booleans(), st.booleans())
def test_values_are_the_plain_ones(fields, every, with_old):
    """Given every field or some, ``None``s, a name that is no field, with a
    record to update or not: the same values, or the same ``TypeError``."""
    fast_one, plain_one = _pair("usersvc.schema:Schema.values")
    if every:
        fields = {**dict.fromkeys(THINGS.fields, "v"), **fields}
    old = (1, *(f"old {name}" for name in THINGS.fields), 1) if with_old else None
    _same(fast_one, plain_one, THINGS, fields, old)


HELD = {
    "usersvc.representation.json_format:JSONFormat.decode": test_decode_is_the_json_decoders,
    "usersvc.representation.json_format:JSONFormat.render": test_render_is_the_encoders,
    "usersvc.representation.json_format:JSONFormat.render_record":
        test_render_record_is_render_of_as_dict,
    "usersvc.representation:best_offer": test_best_offer_is_the_plain_reading_of_accept,
    "usersvc.representation:body_format": test_body_format_reads_content_type_alike,
    "usersvc.request:status_line": test_status_line_is_the_plain_ones,
    "usersvc.request:Request.header": test_a_header_is_read_as_the_plain_one_reads_it,
    "usersvc.request:base_url_of": test_base_url_of_is_the_plain_ones,
    "usersvc.app:good_host": test_good_host_is_the_plain_ones,
    "usersvc.request:Request.parameters": test_parameters_are_the_plain_ones,
    "usersvc.listing:quoted": test_quoted_is_urlencodes_quoting,
    "usersvc.storage.memory.collection:Indexes.move":
        test_a_new_records_entries_are_move_from_nothing,
    "usersvc.storage.memory.walks:Sorted.DEFAULT_LOAD_FACTOR":
        test_sorted_in_smaller_parts_holds_what_sortedlist_holds,
    "usersvc.storage.memory.walks:Sorted.add": test_sorted_adds_as_sortedlist_adds,
    "usersvc.storage.memory.bulk:MemoryBulk.list": test_a_page_without_conditions_is_the_plain_ones,
    "usersvc.storage.memory.collection:MemoryRecords.get": test_a_record_read_is_the_plain_ones,
    "usersvc.storage.memory.collection:MemoryRecords.position_and_list":
        test_a_position_and_a_page_are_the_plain_ones,
    "usersvc.storage.memory.store:MemoryStorage.atomically":
        test_a_step_with_nothing_to_undo_ends_as_the_plain_ones,
    "usersvc.storage.sqlite.connections:Connections.commit":
        test_sqlite_s_writer_answers_the_plain_commit_s_answers,
    "usersvc.storage.sqlite.store:SQLiteStorage.atomically":
        test_sqlite_s_writer_answers_the_plain_commit_s_answers,
    "usersvc.storage.sqlite.connections:Connections.read":
        test_sqlite_s_writer_answers_the_plain_commit_s_answers,
    "usersvc.storage.sql.bulk:SQLBulk._page":
        test_sqlite_s_writer_answers_the_plain_commit_s_answers,
    "usersvc.storage.sql.collection:Table.row": test_a_rows_columns_are_row_ofs,
    "usersvc.storage.sql.collection:Table.terms_value":
        test_a_terms_value_is_json_dumps_of_the_search_terms,
    "usersvc.storage.sql.collection:SQLRecords.bound":
        test_sqlite_s_writer_answers_the_plain_commit_s_answers,
    "usersvc.listing:_sparse": test_the_kept_sparse_module_is_the_imported_one,
    "usersvc.routing:Route.match":
        test_a_route_matches_as_the_plain_one_on_the_paths_the_router_hands_it,
    "usersvc.listing:known_parameters": test_known_parameters_are_the_plain_ones,
    "usersvc.listing:_asking": test_asking_found_at_once_is_the_module_imported,
    "usersvc.asking:read": test_a_condition_read_is_the_plain_reading,
    "usersvc.fields:fold": test_fold_is_the_plain_folding,
    "usersvc.fields:words": test_words_are_the_plain_ones,
    "usersvc.kinds.dates:_offset": test_an_offset_is_the_plain_reading,
    "usersvc.kinds.dates:now": test_now_is_the_plain_stamp_of_the_same_instant,
    "usersvc.features.idempotency:KeyedWrite.__call__": test_a_keyed_write_answers_as_the_plain_one,
    "usersvc.schema:Schema.values": test_values_are_the_plain_ones,
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
