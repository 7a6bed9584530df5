"""``fields=a,b`` (docs/api.md, "Asking"): a record, a page and the change
feed hold ``id`` and the named fields only, in JSON and XML, on every store;
a sparse representation has an ETag of its own, which ``If-None-Match``
and ``If-Match`` take as the whole record's version; a name that is not a
field is a 400; pages for people show whole records."""
from __future__ import annotations

import pytest
from conftest import opened
from every_kind import THINGS, thing_maker
from webob import Request

from usersvc import USER, make_app


@pytest.fixture
def app(store_url):
    for storage in opened(store_url, (USER, THINGS)):
        storage["users"].create(name="Ada Lovelace", email="ada@example.org")
        make = thing_maker()
        storage["things"].create(**make("First"), note="a note", owner=1)
        storage["things"].create(**make("Second"))
        yield make_app(storage)


def _call(app, target, method="GET", accept="application/json", body=None, **headers):
    req = Request.blank(target, method=method, headers={"Accept": accept, **headers})
    if body is not None:
        req.body, req.content_type = body.encode(), "application/json"
    return req.get_response(app)


def test_a_record_holds_its_id_and_the_fields_named_in_json_and_xml(app):
    whole = _call(app, "/things/1")
    sparse = _call(app, "/things/1?fields=note,title")
    assert sparse.status_int == 200
    assert sparse.json == {"id": 1, "title": "First", "note": "a note"}     # the record's order
    assert list(sparse.json) == ["id", "title", "note"]
    assert sparse.headers["ETag"] == '"1-1.title.note"' != whole.headers["ETag"]
    absent = _call(app, "/things/2?fields=note,code").json      # no note: left out
    assert absent == {"id": 2, "code": "c-2"}
    xml = _call(app, "/things/1?fields=owner", accept="application/xml")
    assert xml.body == b"<thing><id>1</id><owner>1</owner></thing>"
    assert xml.headers["ETag"] == '"1-1-xml.owner"'


def test_its_etag_names_the_version_as_the_whole_records_does(app):
    tag = _call(app, "/things/1?fields=title").headers["ETag"]
    assert _call(app, "/things/1?fields=title", **{"If-None-Match": tag}).status_int == 304
    assert _call(app, "/things/1", **{"If-None-Match": tag}).status_int == 200   # another one
    patched = _call(app, "/things/1", method="PATCH", body='{"title": "Changed"}',
                    **{"If-Match": tag, "Content-Type": "application/merge-patch+json"})
    assert patched.status_int == 200 and patched.json["title"] == "Changed"
    stale = _call(app, "/things/1", method="PATCH", body='{"title": "Again"}',
                  **{"If-Match": tag, "Content-Type": "application/merge-patch+json"})
    assert stale.status_int == 412


def test_a_page_and_the_feed_hold_the_fields_named_and_the_next_link_keeps_them(app):
    page = _call(app, "/things?fields=title&limit=1&sort=title")
    assert page.json == [{"id": 1, "title": "First"}]
    assert "fields=title" in page.headers["Link"]
    following = page.headers["Link"].split(">", 1)[0].lstrip("<").replace("http://localhost", "")
    assert _call(app, following).json == [{"id": 2, "title": "Second"}]
    assert page.headers["ETag"] != _call(app, "/things?limit=1&sort=title").headers["ETag"]
    feed = _call(app, "/things/changes?fields=code").json
    assert [entry["thing"] for entry in feed] == [{"id": 1, "code": "c-1"},
                                                  {"id": 2, "code": "c-2"}]
    xml = _call(app, "/things?fields=level&limit=1", accept="application/xml").body
    assert xml == b"<things><thing><id>1</id><level>normal</level></thing></things>"


@pytest.mark.parametrize("target", ["/things/1?fields=nope", "/things/1?fields=",
                                    "/things?fields=title,nope", "/things/changes?fields=id,x",
                                    "/things/1?fields=title&fields=code"])
def test_a_name_that_is_not_a_field_is_a_400(app, target):
    answer = _call(app, target)
    assert answer.status_int == 400 and "fields" in answer.json["detail"]


def test_pages_for_people_show_whole_records(app):
    page = _call(app, "/things/1?fields=title", accept="text/html")
    assert page.status_int == 200 and b"c-1" in page.body        # the code, not asked for
    assert page.headers["ETag"] == '"1-1-html"'


@pytest.mark.parametrize("method, target, body", [
    ("GET", "/things/1?feilds=title", None), ("HEAD", "/things/1?feilds=title", None),
    ("GET", "/things/1?fields=title&sort=id", None),
    ("PUT", "/things/1?fields=title", '{"title": "Changed", "code": "c-9", "count": 1, '
                                      '"done": true, "at": "2026-01-01T00:00:00Z", '
                                      '"level": "low"}'),
    ("PATCH", "/things/1?fields=title", '{"title": "Changed"}'),
    ("PATCH", "/things/1?dry_run=true", '{"title": "Changed"}'),
    ("DELETE", "/things/1?force=true", None),
    ("POST", "/things?fields=title", '{"title": "New", "code": "c-9", "count": 1, '
                                     '"done": true, "at": "2026-01-01T00:00:00Z", '
                                     '"level": "low"}')])
def test_a_parameter_a_record_does_not_take_is_a_400_naming_it_and_changes_nothing(
        app, method, target, body):
    """As on a page, a misspelt parameter is refused, not passed over: a
    record's read takes ``fields`` only, a write none (its answer is the
    whole record), and the refused write is not made."""
    before = _call(app, "/things?limit=10").json
    answer = _call(app, target, method=method, body=body)
    assert answer.status_int == 400, answer.body
    if method != "HEAD":
        unknown = target.split("?", 1)[1].split("&")[-1].split("=")[0]
        assert f"Unknown query parameter: {unknown}." in answer.json["detail"]
        assert f"{method} /things" in answer.json["detail"]
    assert _call(app, "/things?limit=10").json == before
