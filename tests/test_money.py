"""A kind of an embedder's own that owns how it is stored: examples/money.py
(a decimal, "12.30" in JSON and XML, integer cents in every SQL column),
served by every store, sorted, filtered and asked for ranges, in OpenAPI
and the pages, copied between stores by ``usersvc copy --kinds money``, reached by a
declared conversion; and ``to_stored`` and ``from_stored`` each called once,
on the value the docs name."""
from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import pytest
from conftest import Client, opened
from helpers import ROOT, link_to
from webob import Request

from usersvc import Schema, make_app, text
from usersvc.fields import Field, FieldError
from usersvc.storage.stored import kind_of

sys.path.insert(0, str(ROOT / "examples"))
from money import PRODUCTS, Money  # noqa: E402

PRICES = ["12.3", "2.05", "100", "-0.5", "0.00"]


@pytest.fixture
def client(store_url):
    storage = next(opened_ := opened(store_url, (PRODUCTS,)))
    yield Client(make_app(storage))
    next(opened_, None)


def made(client, name, price):
    answer = client.post("/products", json_body={"name": name, "price": price})
    assert answer.status_code == 201, answer.text
    return answer.json


def test_money_is_a_decimal_on_the_wire_and_sorts_and_filters_by_value_on_every_store(client):
    for n, price in enumerate(PRICES):
        made(client, f"p{n}", price)
    listed = client.get("/products?sort=price").json
    assert [p["price"] for p in listed] == ["-0.50", "0.00", "2.05", "12.30", "100.00"]
    assert [p["price"] for p in client.get("/products?sort=-price").json] == [
        "100.00", "12.30", "2.05", "0.00", "-0.50"]
    assert [p["name"] for p in client.get("/products?price=12.30").json] == ["p0"]
    assert [p["name"] for p in client.get("/products?price=12.3").json] == ["p0"]
    two = client.get("/products?sort=price&limit=2")
    rest = client.get(link_to(two.headers).removeprefix("http://localhost")).json
    assert [p["price"] for p in rest] == ["2.05", "12.30"]
    xml = client.get("/products/1", headers={"Accept": "application/xml"}).text
    assert "<price>12.30</price>" in xml
    refused = client.post("/products", json_body={"name": "x", "price": 12.3})
    assert refused.status_code == 422 and refused.json["errors"][0]["pointer"] == "/price"
    assert client.get("/products?price=twelve").status_code == 400


def test_money_takes_ranges_by_value_on_every_store(client):
    """An ordered kind (``Field.ordered``): a declared sort of it takes
    ``gt``, ``gte``, ``lt``, ``lte``, compared as cents (as numbers, not as
    text: "100.00" is not before "12.30")."""
    for n, price in enumerate(PRICES):
        made(client, f"p{n}", price)
    asked = client.get("/products?price[gte]=2.05&price[lt]=100&sort=price")
    assert asked.status_code == 200, asked.text
    assert [p["price"] for p in asked.json] == ["2.05", "12.30"]
    assert [p["price"] for p in client.get("/products?price[gt]=0&sort=-price").json] == [
        "100.00", "12.30", "2.05"]
    assert [p["price"] for p in client.get("/products?price[lte]=-0.5").json] == ["-0.50"]
    refused = client.get("/products?price[gte]=ten")
    assert refused.status_code == 400 and "price[gte]" in refused.json["detail"]


def test_every_sql_column_keeps_integer_cents(tmp_path, postgres_url):
    for url in (f"sqlite:///{tmp_path}/shop.db", postgres_url):
        storage = next(opened_ := opened(url, (PRODUCTS,)))
        storage["products"].create(name="a", price="12.30")
        storage["products"].update(1, name="a", price="7.05")
        read = storage["products"].get(1)
        next(opened_, None)
        assert read.price == "7.05"
        if url.startswith("sqlite"):
            db = sqlite3.connect(f"{tmp_path}/shop.db")
            assert db.execute("SELECT price, typeof(price) FROM products").fetchall() == [
                (705, "integer")]
            assert db.execute("SELECT price FROM product_changes").fetchall() == [(705,)]
        else:
            import psycopg
            with psycopg.connect(url) as db:
                assert db.execute("SELECT price, pg_typeof(price)::text FROM products"
                                  ).fetchall() == [(705, "bigint")]


def test_openapi_and_the_pages_serve_the_kind(client):
    made(client, "a", "12.30")
    document = client.get("/openapi.json").json
    price = document["components"]["schemas"]["Product"]["properties"]["price"]
    assert price == Money().describe_stored()
    page = client.get("/products/1", headers={"Accept": "text/html"}).text
    assert "12.30" in page and 'inputmode="decimal"' in page


def test_the_registry_holds_every_kind_an_embedder_defines():
    assert isinstance(kind_of("money"), Money)
    with pytest.raises(ValueError, match="usersvc copy --kinds MODULE"):
        kind_of("no_such_kind")


def test_usersvc_copy_carries_money_between_stores_given_its_module(tmp_path, postgres_url):
    source = f"sqlite:///{tmp_path}/shop.db"
    storage = next(opened_ := opened(source, (PRODUCTS,)))
    for n, price in enumerate(PRICES):
        storage["products"].create(name=f"p{n}", price=price)
    next(opened_, None)
    command = [sys.executable, "-m", "usersvc.serving.cli", "copy"]
    refused = subprocess.run([*command, source, f"sqlite:///{tmp_path}/no.db"],
                             cwd=ROOT / "examples", capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2
    assert refused.stderr.count("\n") == 1 and "does not know: money" in refused.stderr
    for dest in (f"sqlite:///{tmp_path}/copy.db", postgres_url):
        done = subprocess.run([*command, "--kinds", "money", source, dest],
                              cwd=ROOT / "examples", capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        copied = next(opened_ := opened(dest, (PRODUCTS,)))
        assert [p.price for p in copied["products"].list(sort="price")] == [
            "-0.50", "0.00", "2.05", "12.30", "100.00"]
        next(opened_, None)
    bad = subprocess.run([*command, "--kinds", "no_such_module", source, "memory://"],
                         cwd=ROOT / "examples", capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr.startswith("usersvc copy: --kinds cannot be used")


def test_a_declared_conversion_turns_text_into_money(tmp_path):
    url = f"sqlite:///{tmp_path}/shop.db"
    as_text = Schema("product", "products", {"name": text(200), "price": text(20)})
    storage = next(opened_ := opened(url, (as_text,)))
    storage["products"].create(name="a", price=" 12.3 ")
    next(opened_, None)
    as_money = Schema("product", "products", {"name": text(200), "price": Money()},
                      sorts=("price",), converted={"price": str.strip})
    storage = next(opened_ := opened(url, (as_money,)))
    assert storage["products"].get(1).price == "12.30"
    next(opened_, None)
    assert sqlite3.connect(f"{tmp_path}/shop.db").execute(
        "SELECT price FROM products").fetchall() == [(1230,)]


class Counted(Field):
    """A kind that keeps its values upper-cased and tells each call."""

    calls: list[tuple[str, object]] = []

    def __call__(self, value):
        if type(value) is str and value:
            return value.lower()
        raise FieldError("must be a string")

    def to_stored(self, value):
        self.calls.append(("to_stored", value))
        return value.upper()

    def from_stored(self, value):
        self.calls.append(("from_stored", value))
        return value.lower()

    def describe(self, in_xml=False):
        return {"type": "string"}


def test_to_stored_and_from_stored_are_each_called_once_on_the_documented_value(tmp_path):
    schema = Schema("thing", "things", {"code": Counted()})
    app = make_app(f"sqlite:///{tmp_path}/t.db", collections=(schema,))
    Counted.calls.clear()
    made = Request.blank("/things", method="POST", body=json.dumps({"code": "Ab"}).encode(),
                         content_type="application/json").get_response(app)
    assert made.json == {"id": 1, "code": "ab"}
    assert Counted.calls == [("to_stored", "ab")]       # the clean value; the answer made of it
    Counted.calls.clear()
    assert Request.blank("/things/1").get_response(app).json["code"] == "ab"
    assert Counted.calls == [("from_stored", "AB")]     # the column's value, once
    app.close()
