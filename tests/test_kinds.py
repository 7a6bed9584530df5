"""Every kind of field (``usersvc.kinds``), held to the same questions: is a
value of the kind kept and answered as the kind says, in JSON and XML, on
every store; is anything else a 422 pointing at it; does a list filter
by it (a value not of the kind: 400), sort by it (paged by cursor, both
ways), and keep it unique; do OpenAPI and the pages say what it takes.

A kind is one row of ``KINDS``: adding one adds its row, and every test
here asks it everything.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import pytest
from conftest import Client, problem
from helpers import link_to

from usersvc import Schema, boolean, make_app, text
from usersvc.fields import Field
from usersvc.storage import open_store


@dataclass
class Case:
    kind: Field
    #: (sent in JSON, answered in JSON, written as text in XML)
    good: list[tuple[Any, Any, str]]
    #: sent in JSON: each a 422
    bad: list[Any]
    #: (an XML element's text, the value answered in JSON)
    xml: list[tuple[str, Any]]
    #: an XML element's text: each a 422
    xml_bad: list[str]
    #: distinct values (as answered), in the kind's order
    order: list[Any]
    #: a filter's text that is not of the kind: each a 400
    filter_bad: list[str] = field(default_factory=list)
    #: two values that are the same to a uniqueness
    same: tuple[Any, Any] | None = None


KINDS = {
    "boolean": Case(
        boolean,
        good=[(True, True, "true"), (False, False, "false")],
        bad=[0, 1, "true", "false", 1.0, [], {}, [True]],
        xml=[("true", True), ("false", False), ("1", True), ("0", False), (" true\n", True)],
        xml_bad=["yes", "TRUE", "2", "t"],
        order=[False, True],
        filter_bad=["yes", "", "2", "True"],
        same=(True, True)),
}


def samples(kind: Field) -> Schema:
    """A collection of one kind: ``value`` required, filtered (if the kind
    may be) and sorted; ``spare`` optional and unique."""
    return Schema("sample", "samples", {"value": kind, "spare": kind, "label": text(20)},
                  optional=("spare",), unique=("spare",), sorts=("value",),
                  filters=("value",) if kind.filterable else ())


@pytest.fixture(params=list(KINDS))
def case(request) -> Case:
    return KINDS[request.param]


@pytest.fixture
def client(store_url, case):
    storage = open_store(store_url, (samples(case.kind),))
    yield Client(make_app(storage))
    storage.close()


def made(client: Client, document: dict) -> dict:
    response = client.post("/samples", json_body=document)
    assert response.status_code == 201, response.text
    return response.json


def xml_value(client: Client, path: str, name: str = "value") -> str:
    body = client.get(path, headers={"Accept": "application/xml"}).text
    start = body.index(f"<{name}>") + len(name) + 2
    return body[start:body.index(f"</{name}>")]


def test_a_value_of_the_kind_is_kept_and_answered_as_the_kind_says(client, case):
    for sent, answered, written in case.good:
        record = made(client, {"value": sent, "label": "json"})
        assert record["value"] == answered and type(record["value"]) is type(answered)
        got = client.get(f"/samples/{record['id']}").json
        assert got["value"] == answered and type(got["value"]) is type(answered)
        assert xml_value(client, f"/samples/{record['id']}") == written
    for sent_text, answered in case.xml:
        body = f"<sample><value>{sent_text}</value><label>xml</label></sample>"
        response = client.post("/samples", body=body, content_type="application/xml")
        assert response.status_code == 201, (sent_text, response.text)
        assert client.get(response.headers["Location"]).json["value"] == answered


@pytest.mark.parametrize("store_url", ["memory://"])
def test_anything_else_is_a_422_pointing_at_the_field(client, case):
    for sent in [*case.bad, None]:
        response = client.post("/samples", json_body={"value": sent, "label": "x"})
        errors = problem(response, 422)["errors"]
        assert [e["pointer"] for e in errors] == ["/value"], (sent, errors)
    for sent_text in case.xml_bad:
        body = f"<sample><value>{sent_text}</value><label>x</label></sample>"
        response = client.post("/samples", body=body, content_type="application/xml")
        assert [e["pointer"] for e in problem(response, 422)["errors"]] == ["/value"], sent_text
    # An optional field takes the same rule, and null is no value.
    for sent in case.bad:
        response = client.post("/samples", json_body={"value": case.order[0], "spare": sent,
                                                      "label": "x"})
        assert [e["pointer"] for e in problem(response, 422)["errors"]] == ["/spare"], sent
    assert "spare" not in made(client, {"value": case.order[0], "spare": None, "label": "x"})


def test_a_list_filters_sorts_and_keeps_unique_by_the_kind(client, case):
    values = [*case.order, *case.order, *case.order[::-1]]
    random.Random(7).shuffle(values)
    records = [made(client, {"value": v, "label": f"r{n}"}) for n, v in enumerate(values)]
    key = {repr(v): n for n, v in enumerate(case.order)}
    if case.kind.filterable:
        for v in case.order:
            page = client.get("/samples?value=" + quote(case.kind.to_text(v))).json
            assert [r["id"] for r in page] == [r["id"] for r in records if r["value"] == v]
        for text_ in case.filter_bad:
            assert "value" in problem(client.get("/samples?value=" + quote(text_)), 400)["detail"]
    for sort, reverse in (("value", False), ("-value", True)):
        expected = sorted(records, key=lambda r: (key[repr(r["value"])], r["id"]),
                          reverse=reverse)
        seen, url = [], f"/samples?sort={sort}&limit=2"
        while url:
            response = client.get(url)
            seen += response.json
            url = link_to(response.headers)
        assert [r["id"] for r in seen] == [r["id"] for r in expected], sort
    first, second = case.same
    holder = made(client, {"value": case.order[0], "spare": first, "label": "u1"})
    response = client.post("/samples", json_body={"value": case.order[0], "spare": second,
                                                  "label": "u2"})
    assert problem(response, 409)
    client.delete(f"/samples/{holder['id']}", headers={"If-Match": "*"})
    assert made(client, {"value": case.order[0], "spare": second, "label": "u3"})


@pytest.mark.parametrize("store_url", ["memory://"])
def test_openapi_and_the_pages_say_what_the_kind_takes(client, case):
    document = client.get("/openapi.json").json
    schemas = document["components"]["schemas"]
    sent = [s for name, s in schemas.items() if "value" in s.get("properties", {})]
    assert any(s["properties"]["value"] == case.kind.describe() for s in sent)
    page = client.get("/samples", headers={"Accept": "text/html"}).text
    if case.kind.options:
        assert '<select id="new-value" name="value" required' in page
    else:
        assert f'<input id="new-value" name="value" type="{case.kind.input_type}"' in page
