"""Every order pages (docs/api.md, "Paging"): on a declaration with every
kind and timestamps, on every store, each declared sort's ``rel="next"``
links, followed both ways, with and without a filter, give each record
once, in the order the sort's keys say (ties by id; an optional sort's
records without a value last both ways, by id in the page's direction).
(``?sort=created`` and ``?sort=-updated`` once failed at page 2 on every
store: a stamp's cursor was refused as no stamp's key.)"""
from __future__ import annotations

import json
import re

import pytest
from conftest import STORES, Client, schema_of_its_own
from every_kind import THINGS, thing_maker

from usersvc import USER, Schema, listing, make_app
from usersvc.storage import open_store
from usersvc.storage.protocol import keyset

#: THINGS, with created and updated (sorts too).
STAMPED = Schema(THINGS.name, THINGS.plural,
                 {f: k for f, k in THINGS.fields.items()}, optional=THINGS.optional,
                 unique=THINGS.unique, filters=THINGS.filters, sorts=THINGS.sorts[1:],
                 words=THINGS.words, prefixes=THINGS.prefixes, timestamps=True)
_NEXT = re.compile(r'<http://localhost([^>]*)>; rel="next"')


@pytest.fixture(scope="module", params=STORES)
def store_url(request, tmp_path_factory):
    """Each store, once for the module: its tests only read."""
    if request.param == "{postgres}":
        with schema_of_its_own("usersvc_orders") as url:
            yield url
    else:
        yield request.param.format(tmp=tmp_path_factory.mktemp("orders"))


@pytest.fixture(scope="module")
def client(store_url):
    storage = open_store(store_url, (USER, STAMPED))
    client = Client(make_app(storage))
    fields = thing_maker()
    owner = client.post("/users", json_body={"name": "A", "email": "a@x.org"}).json["id"]
    for n in range(11):         # ties in every order but the unique ones; a change between
        some = {"due": f"2026-0{1 + n % 3}-01", "weight": n % 4 / 2} if n % 3 else {}
        thing = client.post("/things", json_body={**fields(f"t{n % 4}"), "owner": owner,
                                                  **some}).json
        if n % 3 == 0:
            client.patch(f"/things/{thing['id']}", json_body={"title": f"u{n % 2}"},
                         content_type="application/merge-patch+json")
    yield client
    storage.close()


def _walk(client, path):
    ids, pages = [], 0
    while path is not None:
        answer = client.get(path)
        assert answer.status_code == 200, (path, answer.text)
        ids += [thing["id"] for thing in answer.json]
        found = _NEXT.search(", ".join(answer.headers.getall("Link")))
        path, pages = found and found[1], pages + 1
        assert pages < 50
    return ids


@pytest.mark.parametrize("sort", STAMPED.sorts)
@pytest.mark.parametrize("reverse", [False, True], ids=["up", "down"])
@pytest.mark.parametrize("query", ["", "&done=true"], ids=["all", "filtered"])
def test_every_order_pages_both_ways_with_and_without_a_filter(client, sort, reverse, query):
    everything = [STAMPED.record(**{f: None for f in STAMPED.record._fields} | {
        k: v for k, v in t.items()}) for t in client.get("/things?limit=1000").json]
    if query:
        everything = [t for t in everything if t.done]
    # (an optional sort's things without a value last, both ways)
    expected = [t.id for t in sorted(everything, key=lambda t: (
        (getattr(t, sort) is None) != reverse, keyset(STAMPED, t, sort)), reverse=reverse)]
    walked = _walk(client, f"/things?sort={'-' * reverse}{sort}&limit=3{query}")
    assert walked == expected
    assert len(expected) > 3


@pytest.mark.parametrize("name", [*STAMPED.filters, "q"])
def test_a_nul_in_a_filter_or_a_search_finds_nothing_on_every_store(client, name):
    """No stored value holds NUL (PostgreSQL cannot even be sent one: it
    was a 500 there): a filter or search holding one finds nothing, or is
    a 400 where the kind reads its value, on every store alike."""
    answer = client.get(f"/things?{name}=a%00b")
    assert answer.status_code in (200, 400), answer.text
    if answer.status_code == 200:
        assert answer.json == []
    else:
        assert name in answer.json["detail"]


def test_a_cursor_holding_a_nul_is_refused_on_every_store(client):
    context = json.dumps(["things", "title", [], None]).encode()
    cursor = listing._write_cursor(["t\x00", 1], context)
    answer = client.get(f"/things?sort=title&cursor={cursor}")
    assert answer.status_code == 400 and "cursor" in answer.json["detail"]
    assert client.get(f"/things?sort=title&cursor={listing._write_cursor(['t', 1], context)}"
                      ).status_code == 200      # (the same cursor, without it: taken)


def test_a_cursor_past_the_values_is_only_an_optional_sorts(client):
    """A cursor holds ``[null, id]`` once a page in an optional sort's order
    has passed its values; in a required sort's order no record is without
    one, and such a cursor is refused, as one the service did not write."""
    for sort, taken in (("weight", True), ("title", False)):
        context = json.dumps(["things", sort, [], None]).encode()
        cursor = listing._write_cursor([None, 3], context)
        answer = client.get(f"/things?sort={sort}&cursor={cursor}")
        assert answer.status_code == (200 if taken else 400), answer.text
    without = [t["id"] for t in client.get("/things?sort=weight&limit=1000").json[-4:]]
    context = json.dumps(["things", "weight", [], None]).encode()
    cursor = listing._write_cursor([None, without[0]], context)
    page = client.get(f"/things?sort=weight&cursor={cursor}")
    assert [t["id"] for t in page.json] == without[1:]
    assert all("weight" not in t for t in page.json)
