"""The cost rule for filtered pages (docs/api.md, "Asking", "What a page
costs"): a page whose conditions are equalities on a filter, and at most
one range on the page's sort field, reads only what it returns when the
filter is kept in that order (by id always; in another order where the
schema's ``filtered_sorts`` names it), shown without timing: the memory
store's ``touched`` counter, SQLite's and PostgreSQL's query plans. What
they answer is every store's as the plain model's (test_asking)."""
from __future__ import annotations

import re
import sqlite3
from contextlib import closing

import pytest
from conftest import opened, schema_of_its_own
from every_kind import THINGS, thing_maker
from helpers import DEADLINE, within
from webob import Request

from usersvc import USER, asking, make_app
from usersvc.storage.sql import POSTGRES, SQLITE, Table

ask = lambda name, value: asking.read(THINGS, name, value)  # noqa: E731
N = 3000


def _fill(things, n: int = N, done_in: int = 2, absent_in: int = 3) -> list:
    """``n`` things, one in ``done_in`` done, one in ``absent_in`` without a
    weight (an optional sort)."""
    make = thing_maker()
    return [things.create(**{**make(f"Thing {i:04d}"), "done": i % done_in == 0,
                             "weight": i % 5 * 1.5 if i % absent_in else None})
            for i in range(n)]


weight = THINGS.fields["weight"].collate


@pytest.fixture(scope="module")
def memory():
    for storage in opened("memory://", (USER, THINGS)):
        yield storage, _fill(storage["things"])


#: (the page asked, what it keeps as a plain predicate, and its order's key)
INDEXED = [
    (dict(done=False, sort="title"), lambda r: not r.done),
    (dict(done=True, sort="title", reverse=True, after=("thing 2000", 2001)),
     lambda r: r.done and r.title.casefold() < "thing 2000"),
    (dict(done=False, sort="title", where=(ask("title[gte]", "THING 1500"),)),
     lambda r: not r.done and r.title.casefold() >= "thing 1500"),
    (dict(sort="at", where=(ask("done[eq]", "true"), ask("at[lt]", "2026-01-01T00:30:00Z"))),
     lambda r: r.done and r.at < "2026-01-01T00:30:00"),
    (dict(count=4, sort="title"), lambda r: r.count == 4),
    (dict(count=4, done=True, sort="title"), lambda r: r.count == 4 and r.done),
    (dict(sort="count", reverse=True, where=(ask("level[in]", "high,low"),)),
     lambda r: r.level in ("high", "low")),
    (dict(done=True), lambda r: r.done),                          # by id: always kept
    (dict(level="normal", reverse=True, where=(ask("id[lt]", "2000"),)),
     lambda r: r.level == "normal" and r.id < 2000),
    # an optional sort: its values, then the records without one, both ways
    (dict(sort="weight"), lambda r: True),
    (dict(sort="weight", after=(weight(6), 2970)), lambda r: True),      # across the two
    (dict(sort="weight", reverse=True, after=(weight(0), 40)), lambda r: True),
    (dict(sort="weight", reverse=True, after=(None, 2000)), lambda r: True),
    (dict(done=True, sort="weight", reverse=True, after=(weight(0), 100)), lambda r: r.done),
    (dict(done=False, sort="weight", after=(None, 1000)), lambda r: not r.done),
    (dict(sort="weight", reverse=True, where=(ask("weight[lt]", "4"),)),      # values only
     lambda r: r.weight is not None and r.weight < 4),
]


def _expected(records, keeps, arguments) -> list:
    """The page, from the records: an optional sort's without a value last."""
    sort, reverse = arguments.get("sort", "id"), arguments.get("reverse", False)

    def key(r):
        if sort == "id":
            return r.id
        value = getattr(r, sort)
        return _ranked((None if value is None else THINGS.fields[sort].collate(value), r.id))

    def _ranked(position):
        return (position[0] is None) != reverse, position
    kept = sorted(filter(keeps, records), key=key, reverse=reverse)
    if "after" in arguments:
        after = arguments["after"] if sort == "id" else _ranked(arguments["after"])
        kept = [r for r in kept if (key(r) < after if reverse else key(r) > after)]
    return kept[:10]


@pytest.mark.parametrize("arguments, keeps", INDEXED, ids=[repr(a) for a, _ in INDEXED])
def test_an_indexed_page_reads_only_what_it_returns_on_memory(memory, arguments, keeps):
    storage, records = memory
    collection = storage.collections["things"]        # (``touched``: their bulk's own)
    collection.bulk.touched = 0
    page = storage["things"].list(limit=10, **arguments)
    assert page == _expected(records, keeps, arguments)
    assert len(page) == 10
    # The filters' own index in the order: each record looked at is one
    # returned (two filters: the smaller index, the other checked).
    looked = collection.bulk.touched
    if "done" in arguments and "count" in arguments:
        assert looked <= 10 * 2 * 7, looked       # count=4: 1 in 7; done: 1 in 2
    else:
        assert looked == 10, looked
    if arguments.get("sort") == "weight" and "where" not in arguments:   # (reaching both)
        assert {r.weight is None for r in page} == ({True} if None in arguments.get(
            "after", ()) else {False, True} if "after" in arguments else {False}), page


def test_a_page_with_no_index_in_its_order_reads_what_its_filter_matches(memory):
    """``level`` is kept by count (THINGS' filtered_sorts), not by title: a
    page filtered by it in title order reads every record it matches."""
    storage, records = memory
    collection = storage.collections["things"]
    collection.bulk.touched = 0
    page = storage["things"].list(limit=10, level="high", sort="title")
    assert page == _expected(records, lambda r: r.level == "high", {"sort": "title"})
    assert collection.bulk.touched == N // 3 + len(page)


def test_writes_keep_each_filtered_sort_in_step(memory):
    """A change of the filter's value or of the order's moves the entry: a
    second store, changed, then asked every indexed question."""
    for storage in opened("memory://", (USER, THINGS)):
        things = storage["things"]
        made = _fill(things, 200)
        for record in made[::3]:
            things.update(record.id, done=not record.done, title=f"Again {record.id}")
        for record in made[1::5]:
            things.update(record.id, count=(record.count + 1) % 7, level="high")
        for record in made[2::7]:
            things.delete(record.id)
        records = things.list(limit=1000)
        for arguments, keeps in INDEXED:
            arguments = {k: v for k, v in arguments.items() if k != "after"}
            assert things.list(limit=10, **arguments) == _expected(records, keeps, arguments)


SQL_PAGES = [dict(done=False, sort="title"), dict(done=True, sort="title", reverse=True),
             dict(sort="title", where=(ask("done[eq]", "false"), ask("title[gte]", "thing 1"))),
             dict(count=3, sort="title", after=("thing 0100", 101)),
             dict(level="low", sort="count", reverse=True), dict(done=True)]


def _index_of(arguments) -> str:
    field = next(f for f in ("done", "count", "level") if f in arguments or any(
        c.field == f for c in arguments.get("where", ())))
    sort = arguments.get("sort", "id")
    return f"things_{field}_order" if sort == "id" else f"things_{field}_by_{sort}"


@pytest.mark.parametrize("arguments", SQL_PAGES, ids=repr)
def test_an_indexed_page_is_a_search_of_the_filters_index_on_sqlite(tmp_path_factory, arguments):
    path = _sqlite_things(tmp_path_factory)
    query, params = Table(THINGS, SQLITE).pages.page(limit=10, **arguments)
    with closing(sqlite3.connect(path)) as db:
        db.execute("ANALYZE")
        found = " / ".join(row[-1] for row in db.execute("EXPLAIN QUERY PLAN " + query, params))
    assert found.startswith(f"SEARCH u USING INDEX {_index_of(arguments)} ") or found.startswith(
        f"SEARCH u USING COVERING INDEX {_index_of(arguments)} "), found
    assert "TEMP B-TREE" not in found, found


#: Pages in an optional sort's order: its values' walk, then, if the page
#: is short, the records' without one (in id order), or that walk alone
#: past the values.
SQL_OPTIONAL = [dict(sort="weight"), dict(sort="weight", reverse=True, after=(weight(3), 500)),
                dict(done=True, sort="weight", reverse=True),
                dict(sort="weight", after=(None, 100)),
                dict(done=False, sort="weight", reverse=True, after=(None, 500))]


def _walks(table, arguments) -> list:
    """A page's statements: its first walk's, and the one after it when it
    finds nothing (``PageQueries.rest``)."""
    rest = table.rest({"limit": 10, **arguments}, 0)
    return [table.page(limit=10, **arguments), *([table.page(**rest)] if rest else [])]


def _optional_indexes(arguments) -> tuple[str, str]:
    """The indexes of its values and of those without one (PostgreSQL's own;
    SQLite walks the first for both, its NULLs together, in id order)."""
    index = "things_done_by_weight" if "done" in arguments else "things_weight_order"
    return index, index.replace("_order", "") + "_absent"


@pytest.mark.parametrize("arguments", SQL_OPTIONAL, ids=repr)
def test_an_optional_sorts_page_is_a_search_of_its_index_on_sqlite(tmp_path_factory, arguments):
    path = _sqlite_things(tmp_path_factory)
    walks = _walks(Table(THINGS, SQLITE).pages, arguments)
    assert len(walks) == 1 + (None not in arguments.get("after", ()))
    values = _optional_indexes(arguments)[0]
    with closing(sqlite3.connect(path)) as db:
        db.execute("ANALYZE")
        for query, params in walks:
            found = " / ".join(row[-1] for row in db.execute("EXPLAIN QUERY PLAN " + query, params))
            assert found.startswith(f"SEARCH u USING INDEX {values} ("), found
            assert "TEMP B-TREE" not in found, found


_made: dict[str, str] = {}


def _sqlite_things(tmp_path_factory) -> str:
    if "sqlite" not in _made:
        path = str(tmp_path_factory.mktemp("things") / "things.db")
        for storage in opened(f"sqlite:///{path}?synchronous=normal", (USER, THINGS)):
            _fill(storage["things"], 600)
        _made["sqlite"] = path
    return _made["sqlite"]


@pytest.fixture(scope="module")
def analyzed():
    """2,000 things, one in 50 done, one in 50 without a weight, and fresh planner statistics in a
    PostgreSQL schema of their own; ``run(query, *params)``."""
    with schema_of_its_own("usersvc_things") as url:
        import psycopg

        from usersvc.storage.postgres.store import split_url
        for storage in opened(url, (USER, THINGS)):
            _fill(storage["things"], 2000, done_in=50, absent_in=50)
        with psycopg.connect(split_url(url)[0], autocommit=True) as db:
            db.execute("ANALYZE things")
            yield lambda query, *params: db.execute(query, params).fetchall()


@pytest.mark.parametrize("arguments", SQL_PAGES, ids=repr)
def test_an_indexed_page_is_a_search_of_an_index_in_its_order_on_postgres(analyzed, arguments):
    """PostgreSQL's planner chooses by cost: where the filter keeps one
    record in two it may walk the order's own index and skip the others
    (two read a record returned); where it keeps few, the filter's."""
    query, params = Table(THINGS, POSTGRES).pages.page(limit=10, **arguments)
    plan = "\n".join(row[0] for row in analyzed("EXPLAIN " + query, *params))
    assert "Seq Scan" not in plan and "Sort" not in plan, plan
    assert "Index Scan" in plan or "Index Only Scan" in plan, plan
    if arguments.get("done") is True:       # one in 50
        assert f" using {_index_of(arguments)} " in plan, plan


def test_the_app_answers_an_indexed_page_as_the_store_does(memory):
    storage, records = memory
    app = make_app(storage)
    response = Request.blank("/things?done=false&sort=-title&limit=5&title[lt]=thing 1000",
                             headers={"Accept": "application/json"}).get_response(app)
    assert response.status_int == 200, response.json
    kept = sorted((r for r in records if not r.done and r.title.casefold() < "thing 1000"),
                  key=lambda r: r.title.casefold(), reverse=True)
    assert [t["id"] for t in response.json] == [r.id for r in kept[:5]]


@pytest.mark.parametrize("arguments", SQL_OPTIONAL, ids=repr)
def test_an_optional_sorts_page_is_a_search_of_an_index_on_postgres(analyzed, arguments):
    # (by cost: a filter that keeps most may be checked on the sort's own indexes)
    values, without = _optional_indexes(arguments)
    if arguments.get("done") is not True:
        values, without = "things_weight_order", "things_weight_absent"
    walks = _walks(Table(THINGS, POSTGRES).pages, arguments)
    for (query, params), index in zip(walks, (values, without)[len(walks) == 1:], strict=True):
        plan = "\n".join(row[0] for row in analyzed("EXPLAIN " + query, *params))
        assert "Seq Scan" not in plan and "Sort" not in plan, plan
        assert re.search(f" using (things_done_by_weight(_absent)?|{index}) ", plan), plan


def test_a_page_across_the_values_takes_a_record_once_on_every_store(store_url):
    """A page in an optional sort's order that passes its values goes on
    with the records without one (on a SQL store, in a second statement);
    a record whose value goes between the two is on the page once (the
    store is made to write then: after the values' walk, before the other)."""
    for storage in opened(store_url, (USER, THINGS)):
        _a_page_across_the_values(storage, in_memory=store_url == "sqlite://")


def _a_page_across_the_values(storage, in_memory):
    things = storage["things"]
    made = _fill(things, 12)
    # (SQLite in memory: one connection, which the read holds: no write then)
    table = None if in_memory else getattr(storage.collections["things"], "table", None)
    if table is not None:
        walk_on = table.pages.rest

        def rest(arguments, found):
            things.update(last.id, weight=None)         # (between the two statements)
            return walk_on(arguments, found)
        table.pages.rest = rest
    valued = [r for r in made if r.weight is not None]
    last = max(valued, key=lambda r: (r.weight, r.id))
    if table is None:
        things.update(last.id, weight=None)
    page = within(DEADLINE, lambda: things.list(sort="weight", limit=100))
    assert len(page) == len({r.id for r in page}) == 12
    assert page[-1].weight is None and page[-1].id == max(
        r.id for r in page if r.weight is None)
