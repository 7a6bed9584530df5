"""docs/api.md, "Collections declared once": a stored collection brought up
to its schema when a SQL store opens (usersvc/storage/sql/evolution.py).

What can be done safely is done in place, once, atomically, keeping every
record's version (its ETags) and adding nothing to the feed; what cannot is
refused in one line naming the collection and the field, with nothing
changed. A database made fresh from a declaration and one brought to it
from an earlier one, or from release 0.1.0, hold the same tables, columns,
indexes and triggers.
"""
from __future__ import annotations

import logging
import multiprocessing
import shutil
import sqlite3
import subprocess
import sys
from contextlib import closing, contextmanager

import pytest
from conftest import POSTGRES_REQUIRED, POSTGRES_URL
from helpers import RELEASE_0_1_0, ROOT, load_release_dump

from usersvc import USER, Schema, integer, text
from usersvc.storage import SchemaMismatch, open_store

V1 = Schema("book", "books", {"title": text(200), "isbn": text(20)}, unique=("isbn",))
#: V1 with an optional field, and a filter, a sort, a search and a uniqueness added.
V2 = Schema("book", "books", {"title": text(200), "isbn": text(20), "year": integer(0, 9999)},
            optional=("year",), unique=("isbn", "year"), filters=("isbn",), sorts=("title",),
            words=("title",), prefixes=("isbn",))

SQL_STORES = [pytest.param("sqlite", id="sqlite-file")]
if POSTGRES_URL or POSTGRES_REQUIRED:
    SQL_STORES.append(pytest.param("postgres", id="postgres"))


@pytest.fixture(params=SQL_STORES)
def url(request, tmp_path):
    if request.param == "postgres":
        return request.getfixturevalue("postgres_url")
    return f"sqlite:///{tmp_path}/library.db"


@contextmanager
def opened(url, *schemas):
    storage = open_store(url, (USER, *schemas))
    try:
        yield storage["books"]
    finally:
        storage.close()


def fill(url):
    """Three books in V1, one of them changed twice: versions 1, 3, 1."""
    with opened(url, V1) as books:
        for title, isbn in [("Dune", "0441013597"), ("Emma", "x-2"), ("dune messiah", "x-3")]:
            books.create(title=title, isbn=isbn)
        books.update(2, title="Emma W.")
        books.update(2, title="Emma")
        return books.list(), books.changes()


def structure(url):
    """Every table's columns, every index's columns and every trigger's
    statement, as the database itself reports them (order aside)."""
    if url.startswith("sqlite"):
        with closing(sqlite3.connect(url.removeprefix("sqlite:///"))) as db:
            found = set()
            for kind, name, table, sql in db.execute(
                    "SELECT type, name, tbl_name, sql FROM sqlite_master"):
                if kind == "table":
                    found |= {("column", name, c[1], c[2], c[3])
                              for c in db.execute(f"PRAGMA table_info({name})")}
                elif kind == "index":
                    columns = tuple(c[2] for c in db.execute(f"PRAGMA index_info({name})"))
                    found.add(("index", name if sql else "(inline)", table, columns))
                else:
                    found.add((kind, name, " ".join(sql.split())))
            return found
    import psycopg

    from usersvc.storage.postgres.store import split_url
    with psycopg.connect(split_url(url)[0]) as db:
        rows = db.execute("""
            SELECT 'column', table_name, column_name, data_type, is_nullable
              FROM information_schema.columns
             WHERE table_schema = current_schema()
            UNION ALL SELECT 'index', tablename, indexname, indexdef, '' FROM pg_indexes
             WHERE schemaname = current_schema()
            UNION ALL SELECT 'trigger', c.relname, t.tgname, pg_get_triggerdef(t.oid), ''
              FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
             WHERE NOT t.tgisinternal AND c.relnamespace = current_schema()::regnamespace
            UNION ALL SELECT 'function', proname, '', prosrc, '' FROM pg_proc
             WHERE pronamespace = current_schema()::regnamespace""").fetchall()
        (schema,), = db.execute("SELECT current_schema()").fetchall()
        return {tuple(" ".join(str(v).replace(f"{schema}.", "").split()) for v in row)
                for row in rows}


def changes_logged(caplog):
    return [r.getMessage() for r in caplog.records if r.name == "usersvc.storage"
            and r.getMessage().startswith("books: ")]


def test_an_optional_field_and_new_indexes_are_added_in_place_keeping_every_version(url, caplog):
    before, feed = fill(url)
    caplog.set_level(logging.INFO, logger="usersvc.storage")
    with opened(url, V2) as books:
        assert changes_logged(caplog) == [
            "books: year added, optional (integer)", "books: year is now unique",
            "books: isbn is now a filter", "books: title is now a sort",
            "books: title is now searched by its words", "books: isbn is now searched by its start"]
        after = books.list()
        assert [(b.id, b.title, b.isbn, b.version) for b in after] == \
            [(b.id, b.title, b.isbn, b.version) for b in before]       # versions: ETags hold
        assert all(b.year is None for b in after)
        assert books.changes() == [c._replace(record=books.get(c.id)) for c in feed]  # no entry
        assert [b.title for b in books.list(sort="title")] == ["Dune", "dune messiah", "Emma"]
        assert [b.id for b in books.list(q="DUNE")] == [1, 3] and books.count(q="x-") == 2
        assert [b.id for b in books.list(isbn="X-3")] == [3]
        assert books.update(1, year=1965).year == 1965
        with pytest.raises(Exception, match="year"):     # the new uniqueness holds
            books.update(3, year=1965)
        assert books.create(title="Persuasion", isbn="x-4", year=1817).version == 1
    caplog.clear()
    with opened(url, V2) as books:                            # opened again: nothing to do
        assert books.get(1).version == 2
    assert changes_logged(caplog) == []


#: V2's fields, with only V1's index: what dropping V2's filters, sort,
#: search and second uniqueness leaves.
V2_PLAIN = Schema("book", "books", V2.fields, optional=("year",), unique=("isbn",))


@pytest.mark.parametrize("path", [[V1, V2], [V1, V2, V2_PLAIN]],
                         ids=["added", "added-then-dropped"])
def test_a_database_made_from_a_declaration_is_the_one_brought_to_it(url, fresh, path):
    fill(url)
    for schema in path[1:]:
        with opened(url, schema):
            pass
    with opened(fresh, path[-1]):
        pass
    assert structure(url) == structure(fresh)


@pytest.fixture
def fresh(url, tmp_path, request):
    """A second, empty database of the same kind as ``url``."""
    if url.startswith("sqlite"):
        return f"sqlite:///{tmp_path}/fresh.db"
    return request.getfixturevalue("another_postgres_url")


@pytest.fixture
def another_postgres_url(postgres_url):
    from conftest import schema_of_its_own
    with schema_of_its_own("usersvc_test") as url:
        yield url


REFUSED = [
    (Schema("book", "books", {"title": text(200)}, unique=()),
     "books.isbn: a stored field the schema lacks"),
    (Schema("book", "books", {"title": text(200), "isbn": integer(0, 9)}),
     "books.isbn: stored as text, declared as integer"),
    (Schema("book", "books", {"title": text(200), "isbn": text(20), "pages": integer(1, 9999)}),
     "books.pages: a new required field (the records stored before have no value: declare "
     "it optional, or give them one with defaults=)"),
    (Schema("book", "books", {"title": text(200), "isbn": text(20)}, unique=("isbn", "title")),
     "books.title: declared unique, but more than one stored book has 'Dune' "
     "(compared case-folded)"),
]


@pytest.mark.parametrize("schema, said", REFUSED, ids=[s for _, s in REFUSED])
def test_what_cannot_be_done_in_place_is_refused_in_one_line_and_nothing_changes(url, schema, said):
    fill(url)
    with opened(url, V1) as books:
        books.create(title="DUNE", isbn="x-5")        # two titles alike, ignoring case
    kept = structure(url)
    with pytest.raises(SchemaMismatch) as refused:
        open_store(url, (USER, schema))
    assert said in str(refused.value) and "\n" not in str(refused.value)
    assert structure(url) == kept
    with opened(url, V1) as books:
        assert [b.version for b in books.list()] == [1, 3, 1, 1]


def test_a_field_made_required_is_refused(url):
    with opened(url, V2) as books:
        books.create(title="Dune", isbn="1")
    required = Schema("book", "books", {"title": text(200), "isbn": text(20),
                                        "year": integer(0, 9999)}, unique=("isbn",))
    with pytest.raises(SchemaMismatch, match=r"^books\.year: made required"):
        open_store(url, (USER, required))


def test_a_rename_declared_once_keeps_the_values_and_gives_every_record_a_new_version(url, caplog):
    fill(url)
    caplog.set_level(logging.INFO, logger="usersvc.storage")
    renamed = Schema("book", "books", {"heading": text(200), "isbn": text(20)},
                     unique=("isbn",), sorts=("heading",), words=("heading",),
                     renamed={"heading": "title"})
    with opened(url, renamed) as books:
        assert [(b.heading, b.version) for b in books.list()] == \
            [("Dune", 2), ("Emma", 4), ("dune messiah", 2)]
        assert changes_logged(caplog)[:1] == [
            "books: heading renamed from title (every record a new version)"]
        assert sorted(c.record.heading for c in books.changes(after=5)) == [
            "Dune", "Emma", "dune messiah"]
        assert [b.id for b in books.list(q="dune")] == [1, 3]
    with opened(url, renamed) as books:                      # done once
        assert books.get(1).version == 2


def test_the_users_of_release_0_1_0_are_stored_as_a_fresh_database_stores_them(url, fresh):
    if url.startswith("sqlite"):
        shutil.copyfile(RELEASE_0_1_0, url.removeprefix("sqlite:///"))
    else:
        load_release_dump(url)
    for opened_url in (url, fresh):
        open_store(opened_url).close()
    assert structure(url) == structure(fresh)


def _open_in_process(url, barrier, results):
    barrier.wait()
    try:
        open_store(url, (USER, V2)).close()
        results.put("opened")
    except Exception as e:      # what a server would print at start, and exit
        results.put(f"{type(e).__name__}: {e}")


def test_processes_opening_a_new_declaration_together_apply_it_once(url):
    fill(url)
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(4), ctx.Queue()
    processes = [ctx.Process(target=_open_in_process, args=(url, barrier, results))
                 for _ in range(4)]
    for p in processes:
        p.start()
    assert [results.get(timeout=60) for _ in processes] == ["opened"] * 4
    for p in processes:
        p.join(timeout=60)
    with opened(url, V2) as books:
        assert [b.version for b in books.list()] == [1, 3, 1]


def test_the_server_refuses_a_stored_collection_it_cannot_open_in_one_line(tmp_path):
    author = Schema("book", "books", {"title": text(200), "isbn": text(20), "author": text(100)})
    with opened(f"sqlite:///{tmp_path}/library.db", author) as books:
        books.create(title="Dune", isbn="1", author="Frank Herbert")
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "library.py"),
                           "--storage", "sqlite:///library.db", "--port", "0"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr == ("usersvc: cannot open storage sqlite:///library.db: books.author: "
                           "a stored field the schema lacks (dropping or renaming it is an "
                           "explicit migration)\n")


# -- a rule narrowed ---------------------------------------------------------

def test_a_narrowed_rule_is_refused_naming_a_record_that_breaks_it_and_changes_nothing(url):
    wide = Schema("book", "books", {"title": text(200), "isbn": text(20),
                                    "year": integer(0, 9999)}, optional=("year",))
    storage = open_store(url, (wide,))
    storage["books"].create(title="Dune", isbn="0441013597", year=1965)
    storage["books"].create(title="The Left Hand of Darkness", isbn="0441478123")
    storage.close()
    for narrow, said in [
            (Schema("book", "books", {"title": text(5), "isbn": text(20), "year": integer(0, 9999)},
                    optional=("year",)), "books.title: declared text(5), but the stored book 2 "),
            (Schema("book", "books", {"title": text(200), "isbn": text(20),
                                      "year": integer(0, 1900)}, optional=("year",)),
             "books.year: declared integer(0, 1900), but the stored book 1 ")]:
        with pytest.raises(SchemaMismatch) as refused:
            open_store(url, (narrow,))
        assert str(refused.value).startswith(said) and "must be" in str(refused.value)
    storage = open_store(url, (wide,))          # nothing changed: the wide rule opens as before
    assert [b.title for b in storage["books"].list()] == ["Dune", "The Left Hand of Darkness"]
    storage.close()


def test_a_narrowed_rule_every_stored_value_keeps_to_is_applied_and_said(url, caplog):
    wide = Schema("book", "books", {"title": text(200), "isbn": text(20)})
    storage = open_store(url, (wide,))
    storage["books"].create(title="Dune", isbn="0441013597")
    storage.close()
    narrow = Schema("book", "books", {"title": text(10), "isbn": text(20)})
    with caplog.at_level(logging.INFO, logger="usersvc.storage"):
        storage = open_store(url, (narrow,))
    try:
        assert "books: title is now text(10), was text(200) (every stored value keeps to it)" \
            in caplog.messages
        assert storage["books"].get(1).title == "Dune"
    finally:
        storage.close()
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="usersvc.storage"):
        open_store(url, (narrow,)).close()       # recorded: the next open says nothing
    assert not [m for m in caplog.messages if "text(10)" in m]
