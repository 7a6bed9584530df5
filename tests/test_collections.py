"""docs/api.md, "Collections declared once": a second collection, declared
as the README declares it (``books.BOOKS``), over HTTP on every store:
optional and integer fields in JSON, XML, pages and OpenAPI, uniqueness,
listing, the feed; and ``examples/library.py`` run as a person runs it."""
from __future__ import annotations

import json
import re

import pytest
from books import BOOKS
from conftest import Client, problem
from helpers import ROOT, Served, call
from openapi_spec_validator import validate

from usersvc import USER, Schema, make_app
from usersvc.fields import Field, FieldError

DUNE = {"title": "Dune", "isbn": "0441013597", "year": 1965}


def serving(store_url, collection):
    """A client of an app serving users and ``collection`` from the store."""
    app = make_app(store_url, collections=(USER, collection))
    yield Client(app)
    app.close()


@pytest.fixture
def library(store_url):
    yield from serving(store_url, BOOKS)


def test_an_optional_field_is_left_out_until_given(library):
    created = library.post("/books", json_body={"title": "Emma", "isbn": "x-1"})
    assert created.status_code == 201 and created.json == {"id": 1, "title": "Emma", "isbn": "x-1"}
    xml = library.get("/books/1", headers={"Accept": "application/xml"})
    assert xml.body == b"<book><id>1</id><title>Emma</title><isbn>x-1</isbn></book>"
    assert library.patch("/books/1", json_body={"year": 1815}).json["year"] == 1815


def test_a_put_without_an_optional_field_and_a_patch_with_null_remove_it(library):
    library.post("/books", json_body=DUNE)
    assert library.patch("/books/1", json_body={"year": None}).json == \
        {"id": 1, "title": "Dune", "isbn": "0441013597"}
    assert library.patch("/books/1", json_body={"year": 1965}).json["year"] == 1965
    replaced = library.put("/books/1", json_body={"title": "Dune", "isbn": "0441013597"})
    assert "year" not in replaced.json and replaced.headers["ETag"] == '"1-4"'
    body = problem(library.patch("/books/1", json_body={"title": None}), 422)
    assert body["errors"] == [{"pointer": "/title", "detail": "is required and cannot be removed"}]


def as_xml(document):
    return "<book>" + "".join(f"<{k}>{v}</{k}>" for k, v in document.items()) + "</book>"


@pytest.mark.parametrize("method", ["POST", "PUT"])
@pytest.mark.parametrize("in_xml", [False, True], ids=["json", "xml"])
def test_a_required_field_missing_beside_an_optional_one_is_a_422_and_nothing_is_kept(
        library, method, in_xml):
    library.post("/books", json_body=DUNE)
    document = {"title": "Dune Messiah", "year": 1969}          # no isbn
    body = as_xml(document) if in_xml else json.dumps(document)
    path = "/books" if method == "POST" else "/books/1"
    response = library.request(method, path, body=body,
                               content_type="application/xml" if in_xml else "application/json",
                               headers={"Accept": "application/json"})
    assert problem(response, 422)["errors"] == [{"pointer": "/isbn", "detail": "is required"}]
    assert library.get("/books").json == [{"id": 1, **DUNE}]
    assert library.get("/books/changes").json[-1]["seq"] == 1


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH"])
def test_null_for_an_optional_field_is_no_value_in_every_method(library, method):
    library.post("/books", json_body=DUNE)
    path = "/books" if method == "POST" else "/books/1"
    response = library.request(method, path, json_body={**DUNE, "isbn": "j", "year": None})
    assert response.status_code in (200, 201), response.text
    assert "year" not in response.json
    library.patch("/books/1", json_body={"year": 1965})
    xml = library.request(method, path, body=as_xml({**DUNE, "isbn": "x", "year": ""}),
                          content_type="application/xml", headers={"Accept": "application/json"})
    assert xml.status_code in (200, 201), xml.text
    assert "year" not in xml.json


@pytest.mark.parametrize("method, detail", [
    ("POST", "is required and cannot be null"), ("PUT", "is required and cannot be null"),
    ("PATCH", "is required and cannot be removed")])
def test_null_for_a_required_field_is_a_422_that_says_so(library, method, detail):
    library.post("/books", json_body=DUNE)
    path = "/books" if method == "POST" else "/books/1"
    body = problem(library.request(method, path, json_body={**DUNE, "isbn": None}), 422)
    assert body["errors"] == [{"pointer": "/isbn", "detail": detail}]


@pytest.mark.parametrize("year, detail", [
    (True, "must be a whole number"), (1965.0, "must be a whole number"),
    ("1965", "must be a whole number"),
    (-1, "must be from 0 to 9999"), (10_000, "must be from 0 to 9999"),
])
def test_an_integer_field_takes_json_integers_within_its_bounds(library, year, detail):
    body = problem(library.post("/books", json_body={**DUNE, "year": year}), 422)
    assert body["errors"] == [{"pointer": "/year", "detail": detail}]
    assert library.get("/books").json == []


@pytest.mark.parametrize("text, status, year", [
    (" 1965\n", 201, 1965), ("0", 201, 0), ("19x5", 422, None), ("1e3", 422, None),
])
def test_an_integer_field_in_xml_is_its_trimmed_decimal_text(library, text, status, year):
    body = f"<book><title>Dune</title><isbn>1</isbn><year>{text}</year></book>"
    response = library.post("/books", body=body, content_type="application/xml",
                            headers={"Accept": "application/json"})
    assert response.status_code == status, response.text
    if year is not None:
        assert response.json["year"] == year


def test_a_unique_field_is_a_409_pointing_at_it(library):
    library.post("/books", json_body=DUNE)
    body = problem(library.post("/books", json_body={**DUNE, "isbn": "0441013597".upper()}), 409)
    assert body["errors"] == [{"pointer": "/isbn", "detail": "is already taken"}]
    assert body["detail"] == "The isbn 0441013597 belongs to another book."


def test_books_are_listed_by_what_their_schema_declares(library):
    for title, isbn in [("Emma", "c-3"), ("dune", "a-1"), ("Dune Messiah", "b-2")]:
        library.post("/books", json_body={"title": title, "isbn": isbn})
    assert [b["title"] for b in library.get("/books?sort=-title").json] == [
        "Emma", "Dune Messiah", "dune"]
    assert [b["isbn"] for b in library.get("/books?q=dun").json] == ["a-1", "b-2"]
    assert [b["isbn"] for b in library.get("/books?isbn=B-2").json] == ["b-2"]
    body = problem(library.get("/books?year=1965"), 400)
    assert body["detail"].endswith("/books takes: limit, sort, after, cursor, isbn, q, fields, "
                                   "id[gt|gte|lt|lte], title[gt|gte|lt|lte], isbn[eq|ne|in].")
    feed = library.get("/books/changes").json
    assert [(c["seq"], c["book"]["isbn"]) for c in feed] == [(1, "c-3"), (2, "a-1"), (3, "b-2")]


def test_the_openapi_document_describes_books_from_their_schema(library):
    schemas = library.get("/openapi.json").json["components"]["schemas"]
    assert schemas["Book"]["required"] == ["id", "title", "isbn"]
    assert schemas["Book"]["properties"]["year"] == {
        "type": "integer", "minimum": 0, "maximum": 9999}
    assert schemas["BookCreate"]["required"] == ["title", "isbn"]
    assert schemas["BookPatch"]["properties"]["year"]["anyOf"][1] == {"type": "null"}


def test_a_books_page_asks_for_the_required_fields_and_a_number_for_the_year(library):
    page = library.get("/books", headers={"Accept": "text/html"}).text
    assert ('<input id="new-year" name="year" type="number" value="" min="0" max="9999"\n'
            ' aria-describedby') in page      # its bounds, which the browser checks too
    assert '<input id="new-title" name="title" type="text" value="" required' in page
    library.post("/books", json_body={"title": "Emma", "isbn": "x-1"})
    page = library.get("/books", headers={"Accept": "text/html"}).text
    assert ('<td><a href="books/1">1</a></td><td><a href="books/1">Emma</a></td>'
            '<td>x-1</td><td></td>') in page
    root = library.get("/", headers={"Accept": "text/html"}).text
    assert 'href="/users"' in root and 'href="/books"' in root


def test_serve_py_serves_collections_named_by_module_and_name(store_url, tmp_path):
    # serve.py's folder is on the path, as it is for `python serve.py` in a checkout.
    served = Served("--storage", store_url, "--collections", "examples.library:BOOKS", cwd=tmp_path)
    try:
        assert call(served.address, "POST", "/books", DUNE)[0] == 201
        assert call(served.address, "POST", "/users",
                    {"name": "Ada", "email": "a@example.org"})[0] == 201
        status, _, body = call(served.address, "GET", "/openapi.json")
        assert status == 200 and "/books/{id}" in json.loads(body)["paths"]
    finally:
        assert served.stop() == 0


def test_examples_library_serves_users_and_books(store_url, tmp_path):
    served = Served("--storage", store_url, cwd=tmp_path, script=ROOT / "examples" / "library.py")
    try:
        status, headers, body = call(served.address, "POST", "/books", DUNE)
        assert status == 201 and json.loads(body) == {"id": 1, **DUNE}
        assert call(served.address, "POST", "/users",
                    {"name": "Ada", "email": "a@example.org"})[0] == 201
        status, _, body = call(served.address, "GET", "/books?q=DUNE")
        assert status == 200 and [b["isbn"] for b in json.loads(body)] == ["0441013597"]
        status, _, body = call(served.address, "GET", "/books/changes")
        assert [c["id"] for c in json.loads(body)] == [1]
    finally:
        assert served.stop() == 0


# -- a kind of field an embedder writes, in their own module -----------------

class Percent(Field):
    """A whole percentage: a kind usersvc does not ship, kept as an integer."""

    type = "integer"
    input_type = "number"

    def __call__(self, value):
        if type(value) is int and 0 <= value <= 100:
            return value
        raise FieldError("must be a whole percentage, from 0 to 100")

    def from_xml(self, text):
        return int(text) if text.strip().isdigit() else text

    def describe(self, in_xml=False):
        return {"type": "integer", "minimum": 0, "maximum": 100}

    def describe_stored(self):
        return self.describe()


class Slug(Field):
    """Lower-case letters, digits and hyphens: kept as text, compared case-folded."""

    def __call__(self, value):
        if isinstance(value, str) and re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", value):
            return value
        raise FieldError("must be a slug: lower-case letters and digits, joined by hyphens")

    def describe(self, in_xml=False):
        return {"type": "string", "pattern": "^[a-z0-9]+(?:-[a-z0-9]+)*$"}


class Flag(Field):
    """Yes or no: a JSON boolean, ``true``/``false`` in XML and on a page,
    kept as 0/1 in SQLite and as a boolean in PostgreSQL, read back as a bool."""

    type = "integer"
    input_type = "text"

    def __call__(self, value):
        if type(value) is bool:
            return value
        raise FieldError("must be true or false")

    def from_xml(self, text):
        return {"true": True, "false": False}.get(text.strip(), text)

    def to_text(self, value):
        return "true" if value else "false"

    def from_stored(self, value):
        return bool(value)

    def column_type(self, dialect):
        return "boolean" if dialect == "postgres" else "INTEGER"

    def describe(self, in_xml=False):
        return {"type": "boolean"}

    def describe_stored(self):
        return self.describe()


TARGETS = Schema("target", "targets", {"slug": Slug(), "reached": Percent(), "met": Flag()},
                 optional=("reached", "met"), unique=("slug",), filters=("slug",), sorts=("slug",))


@pytest.fixture
def targets(store_url):
    yield from serving(store_url, TARGETS)


def test_an_embedders_own_kinds_are_served_by_every_store(targets):
    made = targets.post("/targets", json_body={"slug": "q4-sales", "reached": 40})
    assert made.status_code == 201 and made.json == {"id": 1, "slug": "q4-sales", "reached": 40}
    xml = targets.post("/targets", body="<target><slug>q1</slug><reached> 7 </reached></target>",
                       content_type="application/xml", headers={"Accept": "application/xml"})
    assert xml.body == b"<target><id>2</id><slug>q1</slug><reached>7</reached></target>"
    body = problem(targets.post("/targets", json_body={"slug": "Q4 Sales", "reached": 140}), 422)
    assert body["errors"] == [
        {"pointer": "/slug",
         "detail": "must be a slug: lower-case letters and digits, joined by hyphens"},
        {"pointer": "/reached", "detail": "must be a whole percentage, from 0 to 100"}]
    problem(targets.post("/targets", json_body={"slug": "q4-sales"}), 409)      # unique
    assert targets.patch("/targets/1", json_body={"reached": 100}).json["reached"] == 100
    assert [t["slug"] for t in targets.get("/targets?sort=-slug").json] == ["q4-sales", "q1"]
    assert targets.get("/targets?slug=q1").json == [{"id": 2, "slug": "q1", "reached": 7}]
    document = targets.get("/openapi.json").json
    validate(document)
    schemas = document["components"]["schemas"]
    assert schemas["Target"]["properties"]["reached"] == {"type": "integer", "minimum": 0,
                                                          "maximum": 100}
    assert schemas["TargetCreate"]["properties"]["slug"]["pattern"] == "^[a-z0-9]+(?:-[a-z0-9]+)*$"
    page = targets.get("/targets/1", headers={"Accept": "text/html"}).text
    assert 'type="number"' in page


def test_an_embedders_kind_is_read_back_from_every_store_as_it_was_sent(targets):
    made = targets.post("/targets", json_body={"slug": "done", "met": True})
    assert made.json == {"id": 1, "slug": "done", "met": True}
    xml = targets.post("/targets", body="<target><slug>open</slug><met>false</met></target>",
                       content_type="application/xml", headers={"Accept": "application/xml"})
    assert xml.body == b"<target><id>2</id><slug>open</slug><met>false</met></target>"
    # Read back from the store (SQLite keeps 1 and 0): booleans again, in JSON and XML.
    assert targets.get("/targets/1").json == {"id": 1, "slug": "done", "met": True}
    assert [t["met"] for t in targets.get("/targets").json] == [True, False]
    assert targets.get("/targets/2", headers={"Accept": "application/xml"}).body == \
        b"<target><id>2</id><slug>open</slug><met>false</met></target>"
    assert targets.get("/targets/changes").json[0]["target"]["met"] is True
    assert targets.put("/targets/1", json_body={"slug": "done", "met": False}).json["met"] is False
    problem(targets.post("/targets", json_body={"slug": "x", "met": 1}), 422)
    page = targets.get("/targets/2", headers={"Accept": "text/html"}).text
    assert "<dd>false</dd>" in page
