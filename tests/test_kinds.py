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

from usersvc import Schema, boolean, choice, date, datetime, make_app, number, text, url
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
    "number": Case(
        number(-1000, 1000),
        good=[(7, 7, "7"), (7.0, 7, "7"), (0.1, 0.1, "0.1"), (-2.5, -2.5, "-2.5"),
              (1e-7, 1e-7, "1e-07"), (1000, 1000, "1000"), (-0.0, 0, "0")],
        bad=[True, False, "7", "0.1", 1000.5, -1001, 10**400, [], {}],
        xml=[("7", 7), ("7.0", 7), (" 0.25 ", 0.25), ("-1e2", -100), ("1E-3", 0.001)],
        xml_bad=["seven", "0x10", "1,5", "Infinity", "NaN", "1e400", ".5", "+1", "1001"],
        order=[-1000, -2.5, 0, 0.1, 7, 7.5, 1000],
        same=(0.5, 0.5)),
    "date": Case(
        date,
        good=[("2026-12-01", "2026-12-01", "2026-12-01"),
              ("2024-02-29", "2024-02-29", "2024-02-29"),
              ("0001-01-01", "0001-01-01", "0001-01-01")],
        bad=["2026-02-29", "2026-13-01", "2026-12-1", "20261201", "2026-12-01T00:00:00Z",
             " 2026-12-01", "2026-12-01 ", "１９９９-01-01", 20261201, True, [], {}],
        xml=[("2026-12-01", "2026-12-01"), (" 2026-12-01\n", "2026-12-01")],
        xml_bad=["2026-02-30", "tomorrow", "2026/12/01"],
        order=["0001-01-01", "1999-12-31", "2026-02-28", "2026-12-01", "9999-12-31"],
        filter_bad=["2026-02-30", "today", ""],
        same=("2026-12-01", "2026-12-01")),
    "datetime": Case(
        datetime,
        good=[("2026-11-25T20:57:01Z", "2026-11-25T20:57:01Z", "2026-11-25T20:57:01Z"),
              ("2026-11-25T21:57:01.120+01:00", "2026-11-25T20:57:01.12Z",
               "2026-11-25T20:57:01.12Z"),
              ("2026-11-25t20:57:01.000000z", "2026-11-25T20:57:01Z", "2026-11-25T20:57:01Z"),
              ("2026-01-01T00:30:00.000001+05:45", "2025-12-31T18:45:00.000001Z",
               "2025-12-31T18:45:00.000001Z")],
        bad=["2026-11-25T20:57:01", "2026-11-25T20:57Z", "2026-11-25 20:57:01Z",
             "2026-11-25T20:57:01.1234567Z", "2026-11-25T24:00:00Z", "2026-11-25T20:57:60Z",
             "2026-02-30T00:00:00Z", "2026-11-25T20:57:01+24:00", "2026-11-25T20:57:01+01:60",
             "0001-01-01T00:30:00+01:00", "9999-12-31T23:59:59-00:01", 1764104221, True, {}],
        xml=[("2026-11-25T20:57:01Z", "2026-11-25T20:57:01Z"),
             (" 2026-11-25T15:57:01.5-05:00 ", "2026-11-25T20:57:01.5Z")],
        xml_bad=["now", "2026-11-25"],
        # by instant: 01.5 comes after 01, though "." sorts before "Z"
        order=["0001-01-01T00:00:00Z", "1969-12-31T23:59:59.999999Z", "1970-01-01T00:00:00Z",
               "2026-11-25T20:57:01Z", "2026-11-25T20:57:01.5Z", "2026-11-25T20:57:02Z",
               "9999-12-31T23:59:59.999999Z"],
        same=("2026-11-25T20:57:01Z", "2026-11-25T21:57:01.000+01:00")),
    "choice": Case(
        choice("low", "normal", "high"),
        good=[("low", "low", "low"), ("high", "high", "high")],
        bad=["Low", " low", "low ", "urgent", "", 0, True, ["low"], {}],
        xml=[("normal", "normal"), (" high\n", "high")],
        xml_bad=["HIGH", "medium", ""],
        order=["low", "normal", "high"],        # as declared, not alphabetically
        filter_bad=["urgent", "LOW", ""],
        same=("normal", "normal")),
    "url": Case(
        url,
        good=[("https://example.org/a?b=c#d", "https://example.org/a?b=c#d",
               "https://example.org/a?b=c#d"),
              ("HTTP://Example.org:8080", "HTTP://Example.org:8080", "HTTP://Example.org:8080"),
              ("http://[::1]/x", "http://[::1]/x", "http://[::1]/x"),
              ("https://例え.jp/パス", "https://例え.jp/パス", "https://例え.jp/パス"),
              ("https://e.org/" + "a" * 2034, "https://e.org/" + "a" * 2034,
               "https://e.org/" + "a" * 2034)],
        bad=["example.org", "/relative", "ftp://example.org/", "javascript:alert(1)",
             "https://", "https:///path", "https://exa mple.org/", "https://e.org/\n",
             " https://e.org/", "https://e.org:port/", "https://[::1/", "https://e.org/\ud800",
             "https://e.org/" + "a" * 2035, 1, True, {}],
        xml=[(" https://example.org/ ", "https://example.org/"),
             ("https://e.org/?a=1&amp;b=2", "https://e.org/?a=1&b=2")],
        xml_bad=["mailto:a@example.org", "https://"],
        order=["http://a.example/", "https://A.example/", "https://a.example/"],
        filter_bad=["example.org", ""],
        same=("https://example.org/", "https://example.org/")),
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
    # The feed tells each record as a GET does, in JSON and in XML.
    for change in client.get("/samples/changes").json:
        assert change["sample"] == client.get(f"/samples/{change['id']}").json
    feed = client.get("/samples/changes", headers={"Accept": "application/xml"}).text
    assert feed.count("<value>") == len(case.good) + len(case.xml)
    assert all(f"<value>{written}</value>" in feed for _, _, written in case.good)


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
    # The optional field may be left without a value: an empty input, or a
    # select's empty first option (an optional boolean's too: a checkbox
    # has no "none").
    if case.kind.options or case.kind.input_type == "checkbox":
        assert '<select id="new-spare" name="spare" data-type' in page
        select = page.split('id="new-spare"')[1].split("</select>")[0]
        assert '<option value="">(none)</option>' in select
    else:
        assert f'<input id="new-spare" name="spare" type="{case.kind.input_type}" value=""' in page
