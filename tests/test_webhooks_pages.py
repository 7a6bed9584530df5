"""The webhooks' pages (issue 60, "Seen"), through the WSGI app: with the
pages plugged in, a browser asking ``/webhooks`` or ``/webhooks/{id}``
gets each subscription and its state as a page, never its secret, and a
client asking for JSON gets what it got without the pages; the service
root links to the list; with tokens on, the pages ask for a ``write``
token. What a person sees of them in Chromium:
test_webhooks_pages_in_browser.py.

The receivers are test_webhooks.py's, verifying with ``standardwebhooks``.
Nothing here is timed: every wait is for a condition, with a deadline.
"""
from __future__ import annotations

import re

import test_webhooks
from conftest import Client, problem
from test_pages import BROWSER, loads, page
from test_webhooks import FEATURES, READER, WRITER, create, served, state, subscribe, until

from usersvc import DEFAULT_FEATURES, make_app

receiver = test_webhooks.receiver
HTML = {"Accept": "text/html"}


def secret_nowhere(secret: str, *texts: str) -> None:
    for text in texts:
        assert secret not in text and secret.removeprefix("whsec_") not in text


def rows(text: str) -> dict[str, list[str]]:
    """The list page's table: each row's cells as text, by the row's id."""
    found = {}
    for row_id, cells in re.findall(r'<tr data-id="(\d+)"[^>]*>(.*?)</tr>', text, re.S):
        found[row_id] = [re.sub(r"<[^>]+>", " ", cell).split()
                         for cell in re.findall(r"<td>(.*?)</td>", cells, re.S)]
    return {k: [" ".join(words) for words in v] for k, v in found.items()}


# -- through the WSGI app ----------------------------------------------------------

def test_a_browser_sees_each_subscription_and_its_state_never_its_secret(store_url, receiver):
    receiver.answer = lambda delivery, before: (
        (500, {}) if delivery.path == "/failing" else (410, {}) if delivery.path == "/gone"
        else (200, {}))
    with served(store_url, webhooks_retries="60") as client:
        good = subscribe(client, receiver.url("/good"))
        failing = subscribe(client, receiver.url("/failing"), collections=["users"])
        gone = subscribe(client, receiver.url("/gone"))
        for n in range(3):
            create(client, n)
        got = receiver.wait_for(lambda got: sum(d.path == "/good" for d in got) == 3,
                                "the three changes delivered")
        assert [p["data"]["id"] for p in test_webhooks.verified(
            [d for d in got if d.path == "/good"], good["secret"])] == [1, 2, 3]
        until(lambda: state(client, good)["delivered"] == {"users": 3}, "delivered")
        until(lambda: state(client, failing)["failures"] == 1, "a failure")
        until(lambda: not state(client, gone)["enabled"], "disabled by the 410")

        listing = page(client.get("/webhooks", headers={"Accept": BROWSER}))
        assert "<h1>Webhook subscriptions</h1>" in listing and "3 subscriptions." in listing
        seen = rows(listing)
        assert seen[str(good["id"])] == [
            str(good["id"]), receiver.url("/good"), "every collection", "yes",
            "users 3 · up to date", "0", "none", "none"]
        _, url, collections, enabled, delivered, failures, next_at, last = seen[
            str(failing["id"])]
        assert (url, collections, enabled, failures) == (receiver.url("/failing"), "users",
                                                         "yes", "1")
        assert delivered == "users 0 · feed at 3"
        shown = state(client, failing)
        assert next_at == shown["next_attempt"].replace("T", " ").partition(".")[0] + " UTC"
        assert last.startswith("HTTP 500 ") and last.endswith(" UTC")
        assert seen[str(gone["id"])][3] == "no the receiver answered 410 Gone"
        assert f'<a href="/webhooks/{good["id"]}">{receiver.url("/good")}</a>' in listing
        assert f'<tr data-id="{failing["id"]}" class="failing">' in listing
        assert f'<tr data-id="{gone["id"]}" class="disabled">' in listing

        text = page(client.get(f"/webhooks/{failing['id']}", headers={"Accept": BROWSER}))
        assert f"<h1>Webhook subscription {failing['id']}</h1>" in text
        assert '<a href="/webhooks">All webhook subscriptions</a>' in text
        assert f"<dt>URL</dt><dd>{receiver.url('/failing')}</dd>" in text
        assert "<dt>Failures in a row</dt><dd>1</dd>" in text
        assert f'<time datetime="{shown["next_attempt"]}">' in text
        assert "&quot;last_failure&quot;: {" in text       # its JSON, shown as text

        pages = [listing, text, page(client.get("/", headers=HTML)),
                 page(client.get("/webhooks/99", headers=HTML), 404)]
        for s in (good, failing, gone):
            secret_nowhere(s["secret"], *pages)
        for text in pages:
            assert loads(text).inline == []


def test_json_is_what_it_was_without_the_pages(receiver):
    answers = []
    for features in (FEATURES, tuple(f for f in FEATURES if f != "pages")):
        with served("memory://", features=features) as client:
            made = subscribe(client, receiver.url())
            create(client, 1)
            until(lambda: state(client, made)["delivered"] == {"users": 1},  # noqa: B023
                  "delivered")
            got = [client.get(path, headers=headers)
                   for path in ("/webhooks", f"/webhooks/{made['id']}")
                   for headers in ({}, {"Accept": "*/*"}, {"Accept": "application/json"})]
            for response in got:
                assert response.content_type == "application/json"
                assert response.headers["Cache-Control"] == "no-store"
            answers.append([response.json for response in got])
            if "pages" not in features:     # a browser's Accept: JSON, as */* says
                assert client.get("/webhooks", headers={"Accept": BROWSER}).json == got[0].json
                assert problem(client.get("/webhooks", headers=HTML), 406)["available"] == [
                    "application/json"]
            else:
                assert client.get("/webhooks", headers=HTML).content_type == "text/html"
                assert problem(client.get("/webhooks", headers={"Accept": "image/png"}),
                               406)["available"] == ["application/json", "text/html"]
    with_pages, without = answers
    for a, b in zip(with_pages, without, strict=True):
        for value in (a if isinstance(a, list) else [a]) + (b if isinstance(b, list) else [b]):
            value.pop("created")        # (the one member the two apps' differ in)
        assert a == b


def test_the_root_page_links_to_the_list_when_the_feature_is_plugged():
    with served("memory://") as client:
        root = page(client.get("/", headers=HTML))
        assert '<li><a href="/webhooks">Webhook subscriptions</a></li>' in root
        listing = page(client.get("/webhooks", headers=HTML))
        assert "No subscriptions yet." in listing and "<tbody>\n</tbody>" in listing
    app = make_app("memory://", features=[n for n in DEFAULT_FEATURES if n != "webhooks"])
    try:
        assert "/webhooks" not in page(Client(app).get("/", headers=HTML))
    finally:
        app.close()


def test_a_url_is_text_on_the_pages(receiver):
    hostile = receiver.url('/hook?<script>alert(1)</script>&"x"=\'y\'')
    with served("memory://") as client:
        made = subscribe(client, hostile)
        for path in ("/webhooks", f"/webhooks/{made['id']}"):
            text = page(client.get(path, headers=HTML))
            assert "<script>alert" not in text
            assert ("/hook?&lt;script&gt;alert(1)&lt;/script&gt;&amp;&quot;x&quot;=&#x27;y&#x27;"
                    in text)


def test_with_tokens_the_pages_ask_for_a_write_token():
    with served("memory://", tokens={WRITER: "write", READER: "read"}) as client:
        for path in ("/webhooks", "/webhooks/1"):
            text = page(client.get(path, headers=HTML), 401)
            assert '<form class="token" data-action="token">' in text
            text = page(client.get(path, headers={"Authorization": f"Bearer {READER}", **HTML}),
                        403)
            assert "This token may read, not write." in text
            assert '<form class="token" data-action="token">' in text     # enter another
        text = page(client.get("/webhooks", headers={"Authorization": f"Bearer {WRITER}", **HTML}))
        assert "No subscriptions yet." in text
