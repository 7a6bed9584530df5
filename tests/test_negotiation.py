"""Negotiation (representation/__init__.py: ``negotiate``): the answer's format from Accept,
with q-values (docs/api.md, "Representations"), or 406 before anything changes."""
from __future__ import annotations

import pytest
from conftest import BEFORE_THE_STORE, judged_before_the_store, problem, snapshot
from helpers import ADA
from hypothesis import given, strategies as st

from usersvc.representation import DEFAULT, PROBLEMS, best_offer

pytestmark = pytest.mark.core       # runs on the plain core too (conftest.SERVED)

XML = "application/xml; charset=utf-8"


store_url = pytest.fixture(params=BEFORE_THE_STORE, name="store_url")(judged_before_the_store)


@pytest.mark.parametrize("accept, expected", [
    (None, "application/json"),
    ("*/*", "application/json"),
    ("application/*", "application/json"),
    ("application/json", "application/json"),
    ("application/xml", "application/xml; charset=utf-8"),
    ("text/xml", "application/xml; charset=utf-8"),
    ("application/json, application/xml", "application/json"),          # tie: JSON
    ("application/xml, application/json", "application/json"),          # tie: JSON
    ("application/json;q=0.5, application/xml", "application/xml; charset=utf-8"),
    ("application/xml;q=0.9, */*;q=0.1", "application/xml; charset=utf-8"),
    ("*/*;q=0.1, application/json;q=0", "application/xml; charset=utf-8"),
    ("text/*", "application/xml; charset=utf-8"),
    ("text/html, application/xml;q=0.2", ("text/html; charset=utf-8", XML)),
    ("text/html;q=0.5, application/xml;q=0.2", ("text/html; charset=utf-8", XML)),
    ("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",  # a browser's
     ("text/html; charset=utf-8", XML)),
    ("application/xml, text/html", "application/xml; charset=utf-8"),   # tie: XML, then HTML
    ("application/xml; charset=utf-8", "application/xml; charset=utf-8"),
    ('application/xml; charset="UTF-8"', "application/xml; charset=utf-8"),
    ("application/json; charset=UTF-8", "application/json"),
    ("application/json;charset=utf8, application/xml", "application/json"),
    ("application/json; version=2, text/xml;q=0.1", "application/xml; charset=utf-8"),
    ("", "application/json"),
    ("no such thing", "application/json"),       # not a valid header: ignored
])
def test_accept_chooses_the_format_by_q_values(client, features, accept, expected):
    """(A pair: with the pages, HTML; on the plain core, what is left.)"""
    if isinstance(expected, tuple):
        expected = expected[0] if "pages" in features else expected[1]
    client.create()
    headers = {"Accept": accept} if accept is not None else {}
    for path in ("/users", "/users/1"):
        response = client.get(path, headers=headers)
        assert response.status_code == 200
        assert response.headers["Content-Type"] == expected
        assert response.headers["Vary"] == ("Accept, Prefer" if path == "/users" else "Accept")


@pytest.mark.parametrize("accept", ["application/xhtml+xml", "image/png", "application/json;q=0",
                                    "application/json; charset=latin-1",
                                    "application/json; version=2",
                                    "application/json;q=0, application/xml;q=0, text/xml;q=0"])
def test_an_unacceptable_accept_is_406_listing_the_types(client, features, accept):
    body = problem(client.get("/users", headers={"Accept": accept}), 406)
    html = ["text/html"] if "pages" in features else []
    assert body["available"] == ["application/json", "application/xml", "text/xml", *html]


def test_a_post_that_gets_406_creates_nothing(client):
    response = client.post("/users", json_body=ADA, headers={"Accept": "image/png"})
    problem(response, 406)
    assert snapshot(client) == []


def test_a_put_that_gets_406_changes_nothing(client):
    client.create()
    problem(client.put("/users/1", json_body={"name": "X", "email": "x@example.org"},
                       headers={"Accept": "image/png"}), 406)
    assert client.get("/users/1").json["name"] == ADA["name"]




def _webobs_best_offer(header, offers):
    """How ``best_offer`` read ``Accept`` before it did so itself: WebOb's
    ``acceptable_offers``, the reference it is held to."""
    from webob.acceptparse import create_accept_header

    from usersvc.representation import _UTF8_PARAMETER
    if not header or header.isspace():
        return 0
    offered = list(offers.types)
    accept = create_accept_header(_UTF8_PARAMETER.sub("charset=utf-8", header.strip()))
    acceptable = accept.acceptable_offers(offered)
    return offered.index(acceptable[0][0]) if acceptable else None


ACCEPT_PARTS = st.sampled_from([
    "application/json", "application/xml", "text/xml;charset=UTF-8", "text/*;q=0.5", "*/*",
    "*/*;q=0", "text/html", "application/problem+json;q=0.9", "application/*", "image/png",
    "application/json;q=0", "nonsense", ";;", "application/xml; q=1.0", "text/html;q=0.1",
    " ", "APPLICATION/JSON;Q=0.8", 'application/json;charset="utf-8"', "text/xml;level=1",
    "application/json;charset=latin-1", "application/xml;q=0.500;ext=1", "*/*;q=1.0001",
    'text/xml;charset = "UTF8"', "application/json ;q=0.3", "q=1", "text/html;q=0.3"])


@pytest.mark.parametrize("offers", [DEFAULT, PROBLEMS], ids=["default", "problems"])
@given(header=st.lists(ACCEPT_PARTS, max_size=5).map(lambda parts: ", ".join(parts))
       | st.text(max_size=20))
def test_best_offer_reads_accept_as_webob_does(offers, header):
    """``best_offer`` reads RFC 9110's weights itself (WebOb's took 16 µs
    for ``application/json``), with WebOb's grammar: the same choice as
    WebOb's ``acceptable_offers``, for any header."""
    assert best_offer(header, offers) == _webobs_best_offer(header, offers)
