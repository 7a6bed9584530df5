"""docs/api.md, "Changing a declaration": the explicit migrations a schema
declares (``dropped``, ``converted``, ``defaults``, ``timestamps`` turned on),
done once when a SQL store opens, in one transaction: each record they
change gets a new version, a feed entry and (with timestamps) a new
``updated``; each is logged in one line; a value that does not convert
refuses the open, naming the record, and changes nothing."""
from __future__ import annotations

import logging
import os
import subprocess
import sys
from contextlib import contextmanager

import pytest
from conftest import POSTGRES_REQUIRED, POSTGRES_URL
from helpers import ROOT, race

from usersvc import USER, Schema, choice, integer, make_app, text
from usersvc.storage import SchemaMismatch, open_store

FIELDS = {"title": text(200), "isbn": text(20), "year": text(10), "note": text(100)}
V1 = Schema("book", "books", FIELDS, optional=("year", "note"), unique=("isbn",),
            filters=("isbn", "year"), sorts=("title",), words=("title", "note"))
BOOKS = [("Dune", "0441013597", "1965", "a classic"), ("Emma", "x-2", "1815", None),
         ("Odd", "x-3", None, "no year"), ("Zed", "x-4", "2001", None)]

SQL_STORES = [pytest.param("sqlite", id="sqlite-file")]
if POSTGRES_URL or POSTGRES_REQUIRED:
    SQL_STORES.append(pytest.param("postgres", id="postgres"))


@pytest.fixture(params=SQL_STORES)
def empty_url(request, tmp_path):
    """An empty SQL store's URL."""
    return (request.getfixturevalue("postgres_url") if request.param == "postgres"
            else f"sqlite:///{tmp_path}/empty.db")


@pytest.fixture(params=SQL_STORES)
def url(request, tmp_path):
    """A store of the four books in V1, each at version 1."""
    url = (request.getfixturevalue("postgres_url") if request.param == "postgres"
           else f"sqlite:///{tmp_path}/library.db")
    with opened(url, V1) as books:
        for title, isbn, year, note in BOOKS:
            books.create(title=title, isbn=isbn, year=year, note=note)
    return url


@contextmanager
def opened(url, schema):
    storage = open_store(url, (USER, schema))
    try:
        yield storage["books"]
    finally:
        storage.close()


def declared(**changes):
    """V1 with its fields and options changed."""
    fields = {k: v for k, v in {**FIELDS, **changes.pop("fields", {})}.items() if v is not None}
    options = dict(optional=("year", "note"), unique=("isbn",), filters=("isbn", "year"),
                   sorts=("title",), words=("title", "note"))
    options.update(changes)
    roles = ("optional", "unique", "filters", "sorts", "words")
    options = {k: tuple(f for f in v if f in fields) if k in roles else v
               for k, v in options.items()}
    return Schema("book", "books", fields, **options)


def state(books):
    """Each record, and the feed's entries after the four creates."""
    return books.list(), [(c.id, c.record) for c in books.changes(after=4)]


def logged(caplog, schema, url):
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="usersvc.storage"), opened(url, schema) as books:
        found = state(books)
    return found, [r.getMessage() for r in caplog.records if r.name == "usersvc.storage"]


def test_dropped_removes_the_field_and_changes_only_the_records_that_had_it(url, caplog):
    schema = declared(fields={"note": None}, dropped=("note",))
    (records, feed), said = logged(caplog, schema, url)
    assert said == ["books: note dropped (2 records)"]
    assert [(r.id, r.version) for r in records] == [(1, 2), (2, 1), (3, 2), (4, 1)]
    assert [i for i, _ in feed] == [1, 3] and feed[0][1] == records[0]
    assert not hasattr(records[0], "note")
    with opened(url, schema) as books:
        assert books.list(q="classic") == [] and [b.id for b in books.list(q="dune")] == [1]
    # Done once: the next open finds nothing to do.
    assert logged(caplog, schema, url) == ((records, feed), [])


def test_converted_puts_every_value_through_the_function_and_the_new_kind(url, caplog):
    schema = declared(fields={"year": integer(0, 9999)}, converted={"year": int})
    (records, feed), said = logged(caplog, schema, url)
    assert said == ["books: year converted from text(10) to integer(0, 9999) (3 records)"]
    assert [(r.id, r.year, r.version) for r in records] == [
        (1, 1965, 2), (2, 1815, 2), (3, None, 1), (4, 2001, 2)]
    assert [i for i, _ in feed] == [1, 2, 4]
    with opened(url, schema) as books:
        assert [b.id for b in books.list(year=1815)] == [2]
        assert books.create(title="New", isbn="n-1", year=2020).year == 2020
    app = make_app(url, collections=(USER, schema))
    try:
        from webob import Request
        assert Request.blank("/books?year=1965").get_response(app).json[0]["year"] == 1965
    finally:
        app.close()


@pytest.mark.parametrize("year, convert, why", [
    ("c. 1900", int, "ValueError: invalid literal for int() with base 10: 'c. 1900'"),
    ("99999", int, "must be from 0 to 9999")])
def test_a_value_that_does_not_convert_refuses_the_open_and_changes_nothing(url, year, convert,
                                                                           why):
    with opened(url, V1) as books:
        books.create(title="Bad", isbn="x-5", year=year)
        before = state(books)
    schema = declared(fields={"year": integer(0, 9999)}, converted={"year": convert})
    with pytest.raises(SchemaMismatch) as refused:
        open_store(url, (USER, schema))
    assert str(refused.value) == (f"books.year: the stored book 5 ({year!r}) does not convert "
                                  f"to integer(0, 9999): {why} (nothing was changed)")
    with opened(url, V1) as books:
        assert state(books) == before


def test_defaults_give_a_new_required_field_and_a_field_made_required_their_value(url, caplog):
    schema = declared(fields={"shelf": text(5)}, optional=("note",),
                      defaults={"shelf": " A1 ", "year": "unknown"})
    (records, feed), said = logged(caplog, schema, url)
    assert said == ["books: year is now required: 'unknown' where a record had none (1 record)",
                    "books: shelf is now required: 'A1' where a record had none (4 records)"]
    assert [(r.year, r.shelf, r.version) for r in records] == [
        ("1965", "A1", 2), ("1815", "A1", 2), ("unknown", "A1", 2), ("2001", "A1", 2)]
    assert [i for i, _ in feed] == [1, 2, 3, 4]
    with opened(url, schema) as books, pytest.raises(TypeError, match="shelf"):
        books.create(title="No shelf", isbn="x-9", year="2000")


def test_timestamps_turned_on_give_every_record_one_time_and_a_new_version(url, caplog):
    schema = declared(timestamps=True)
    (records, feed), said = logged(caplog, schema, url)
    when = records[0].created
    assert said == [f"books: timestamps added: created and updated are {when} (4 records)"]
    assert {(r.created, r.updated, r.version) for r in records} == {(when, when, 2)}
    assert [i for i, _ in feed] == [1, 2, 3, 4]
    with opened(url, schema) as books:
        changed = books.update(3, title="Odder")
        assert changed.updated >= when and changed.created == when
        assert [b.id for b in books.list(sort="updated", reverse=True)][0] == 3
    # A later migration moves ``updated`` of the records it changes, and only theirs.
    later = declared(fields={"note": None}, dropped=("note",), timestamps=True)
    (records, _), _ = logged(caplog, later, url)
    assert [r.updated > when for r in records] == [True, False, True, False]


def test_processes_opening_together_migrate_once(url):
    schema = declared(fields={"year": integer(0, 9999)}, converted={"year": int})

    def open_and_close(_):
        with opened(url, schema) as books:
            return [b.version for b in books.list()]
    assert race(4, open_and_close) == [[2, 2, 1, 2]] * 4


def test_a_migration_is_declared_with_what_it_needs(url):
    with pytest.raises(ValueError, match="dropped names a stored field"):
        declared(dropped=("note",))
    with pytest.raises(ValueError, match="converted maps a field"):
        declared(converted={"year": "int"})
    with pytest.raises(ValueError, match="defaults gives a required field"):
        declared(defaults={"note": "x"})
    with pytest.raises(ValueError, match="the default '' must not be empty"):
        declared(fields={"shelf": text(5)}, defaults={"shelf": ""})
    # Without its migration, a change that needs one is refused, naming it.
    with pytest.raises(SchemaMismatch, match="books.note: a stored field the schema lacks"):
        open_store(url, (USER, declared(fields={"note": None})))
    with pytest.raises(SchemaMismatch, match="books.year: stored as text, declared as integer"):
        open_store(url, (USER, declared(fields={"year": integer(0, 9999)})))


def test_a_migration_declared_wrong_stops_serve_py_in_one_line(tmp_path):
    (tmp_path / "wrong.py").write_text(
        "from usersvc import Schema, text\n"
        "T = Schema('task', 'tasks', {'title': text(5)}, defaults={'title': ''})\n")
    done = subprocess.run([sys.executable, str(ROOT / "serve.py"), "--collections", "wrong:T",
                           "--port", "0"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "tasks.title: the default '' must not be empty" in done.stderr


# -- found from outside: each change once, whatever is declared beside it -----

def test_a_conversion_is_done_once_and_a_later_change_beside_it_does_not_run_it_again(
        url, caplog):
    """Once, each start logged the conversion again, a new version and feed
    entry each time (the stored declaration kept the old type); with the
    converter still declared, a later change of the same field's rule ran
    it again (and failed with a traceback)."""
    converted = declared(fields={"year": integer(0, 9999)}, converted={"year": int})
    (records, feed), said = logged(caplog, converted, url)
    assert said == ["books: year converted from text(10) to integer(0, 9999) (3 records)"]
    for _ in range(2):          # opened again: nothing to do, nothing done
        assert logged(caplog, converted, url) == ((records, feed), [])
    narrowed = declared(fields={"year": integer(0, 3000)}, converted={"year": int})
    (again, later), said = logged(caplog, narrowed, url)
    assert said == ["books: year is now integer(0, 3000), was integer(0, 9999) "
                    "(every stored value keeps to it)"]
    assert (again, later) == (records, feed)        # a rule held, no record changed
    assert logged(caplog, narrowed, url) == ((records, feed), [])


def test_a_choices_values_changed_keep_its_filters_and_sorts_true(empty_url):
    """The stored keys (a choice's place among its values) follow the rule:
    once, ?level=high found nothing and ?level=normal the old high."""
    url = empty_url
    before = Schema("item", "items", {"name": text(9), "level": choice("low", "high")},
                    filters=("level",), sorts=("level",))
    after = Schema("item", "items", {"name": text(9), "level": choice("low", "normal", "high")},
                   filters=("level",), sorts=("level",))
    storage = open_store(url, (before,))
    storage["items"].create(name="a", level="high")
    storage["items"].create(name="b", level="low")
    storage.close()
    storage = open_store(url, (after,))
    try:
        items = storage["items"]
        items.create(name="c", level="normal")
        assert [i.name for i in items.list(level="high")] == ["a"]
        assert [i.name for i in items.list(level="normal")] == ["c"]
        assert [i.name for i in items.list(sort="level")] == ["b", "c", "a"]
        assert [i.name for i in items.list(sort="level", reverse=True)] == ["a", "c", "b"]
    finally:
        storage.close()


@pytest.mark.parametrize("how", ["converted", "defaults"])
def test_a_migration_that_makes_a_unique_field_collide_is_refused_in_one_line(
        url, caplog, how):
    """Once a driver's traceback; now the one-line refusal, nothing changed."""
    unique_note = declared(unique=("isbn", "note"))    # two books have no note
    if how == "converted":
        schema = declared(fields={"isbn": integer(0, 9)}, converted={"isbn": lambda v: 1})
    else:
        schema = declared(optional=("year",), unique=("isbn", "note"), defaults={"note": "same"})
    with opened(url, unique_note) as books:
        before = state(books)
    with pytest.raises(SchemaMismatch, match=r"declared unique, but more than one stored book"):
        open_store(url, (USER, schema))
    with opened(url, unique_note) as books:
        assert state(books) == before


def test_a_required_field_made_optional_is_done_in_place_changing_no_record(url, caplog):
    """Once refused as needing "an explicit migration", which none was."""
    with opened(url, V1) as books:
        before = state(books)
    loosened = declared(optional=("year", "note", "isbn"))
    (records, feed), said = logged(caplog, loosened, url)
    assert said == ["books: isbn is now optional (no record changed)"]
    assert (records, feed) == before
    assert logged(caplog, loosened, url) == ((records, feed), [])
    with opened(url, loosened) as books:
        made = books.create(title="Anon")       # no isbn: now it may be absent
        assert made.isbn is None and books.get(made.id).isbn is None
        assert [b.title for b in books.list(isbn="x-2")] == ["Emma"]     # its index kept
