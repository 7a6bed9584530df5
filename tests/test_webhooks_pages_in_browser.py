"""The webhooks' pages as a person sees them (issue 60, "Seen"), in
Debian's Chromium (chromium.py) reading a real server (waitress, as
test_pages_in_browser.py serves) with the webhooks feature, private
targets allowed, and tokens on: from the service root to the list of
subscriptions, with a write token entered as on every page, each
subscription's URL, state and position as delivered to test_webhooks.py's
receiver (verifying with ``standardwebhooks``), then one subscription's
own page; and its secret in neither page's HTML.

The console must hold no Content Security Policy violation and no script
error after each test. Nothing here is timed: every wait has a deadline.
"""
from __future__ import annotations

import json

import chromium
import pytest
import test_webhooks
from helpers import call, serve, stop
from test_webhooks import FEATURES, READER, WRITER, verified

from usersvc import make_app

chromium.require()
from selenium.webdriver.common.by import By  # noqa: E402

browser = chromium.browser
receiver = test_webhooks.receiver
wait = chromium.wait
AUTH = {"Authorization": f"Bearer {WRITER}"}


@pytest.fixture
def service(receiver):
    """A server with webhooks (a retry a minute away: a failure stays in
    sight) and tokens, on 127.0.0.1; and its address."""
    app = make_app("memory://", features=FEATURES, webhooks_allow_private=True,
                   webhooks_retries="60", tokens={WRITER: "write", READER: "read"})
    server = serve(app)
    yield f"http://127.0.0.1:{server.effective_port}", ("127.0.0.1", server.effective_port)
    stop(server)
    app.close()


@pytest.fixture(autouse=True)
def clean_console(browser):
    browser.get_log("browser")          # what earlier tests left
    yield
    assert chromium.faults(browser) == []


def heading_is(text):
    return lambda b: b.find_element(By.TAG_NAME, "h1").text == text


def enter(browser, token):
    field = browser.find_element(By.CSS_SELECTOR, "form.token input[name=token]")
    field.clear()
    field.send_keys(token)
    browser.find_element(By.CSS_SELECTOR, "form.token p.actions button").click()


def subscribe(address, url, **more):
    status, _, body = call(address, "POST", "/webhooks", {"url": url, **more}, AUTH)
    assert status == 201, body
    return json.loads(body)


def state(address, made):
    status, _, body = call(address, "GET", f"/webhooks/{made['id']}", None, AUTH)
    assert status == 200, body
    return json.loads(body)


def test_a_person_sees_the_subscriptions_and_their_state(service, receiver, browser, tmp_path):
    base, address = service
    receiver.answer = lambda delivery, before: (
        (503, {}) if delivery.path == "/failing" else (410, {}) if delivery.path == "/gone"
        else (200, {}))
    good = subscribe(address, receiver.url("/orders-service/hook"))
    failing = subscribe(address, receiver.url("/failing"), collections=["users"])
    gone = subscribe(address, receiver.url("/gone"))
    for n in range(4):
        status, _, body = call(address, "POST", "/users",
                               {"name": f"User {n}", "email": f"user{n}@example.org"}, AUTH)
        assert status == 201, body
    got = receiver.wait_for(lambda got: sum(d.path == "/orders-service/hook" for d in got) == 4,
                            "the four changes delivered")
    payloads = verified([d for d in got if d.path == "/orders-service/hook"], good["secret"])
    assert [(p["type"], p["data"]["seq"]) for p in payloads] == [
        ("user.changed", seq) for seq in (1, 2, 3, 4)]
    test_webhooks.until(lambda: state(address, good)["delivered"] == {"users": 4}, "delivered")
    test_webhooks.until(lambda: state(address, failing)["failures"] == 1, "a failure")
    test_webhooks.until(lambda: not state(address, gone)["enabled"], "disabled by the 410")

    # From the root, with a read token: the list asks for a write token.
    browser.get(base + "/")
    assert browser.find_element(By.TAG_NAME, "h1").text == "401 Unauthorized"
    enter(browser, READER)
    wait(browser, heading_is("usersvc"))
    browser.save_screenshot(str(tmp_path / "root.png"))
    browser.find_element(By.LINK_TEXT, "Webhook subscriptions").click()
    wait(browser, heading_is("403 Forbidden"))
    assert "This token may read, not write." in browser.find_element(By.TAG_NAME, "main").text
    enter(browser, WRITER)
    wait(browser, heading_is("Webhook subscriptions"))
    assert browser.current_url == base + "/webhooks"

    # What a person reads: each subscription's URL, state and position.
    table = browser.find_element(By.CSS_SELECTOR, "table.webhooks")
    headings = [th.text for th in table.find_elements(By.CSS_SELECTOR, "thead th")]
    assert headings == ["Id", "URL", "Collections", "Enabled", "Delivered up to",
                        "Failures in a row", "Next attempt", "Last failure"]
    seen = {row.get_attribute("data-id"): [td.text for td in row.find_elements(By.TAG_NAME, "td")]
            for row in table.find_elements(By.CSS_SELECTOR, "tbody tr")}
    assert seen[str(good["id"])] == [
        str(good["id"]), receiver.url("/orders-service/hook"), "every collection", "yes",
        "users 4 · up to date", "0", "none", "none"]
    row = seen[str(failing["id"])]
    assert row[1:6] == [receiver.url("/failing"), "users", "yes", "users 0 · feed at 4", "1"]
    assert row[6].endswith(" UTC") and row[7].startswith("HTTP 503\n")
    assert seen[str(gone["id"])][3] == "no\nthe receiver answered 410 Gone"
    assert browser.find_element(By.CSS_SELECTOR, ".summary").text == "3 subscriptions."
    browser.save_screenshot(str(tmp_path / "webhooks.png"))
    listing = browser.page_source

    # One subscription's own page, fetched with the token as every page is.
    browser.find_element(By.LINK_TEXT, receiver.url("/failing")).click()
    wait(browser, heading_is(f"Webhook subscription {failing['id']}"))
    assert browser.current_url == f"{base}/webhooks/{failing['id']}"
    fields = dict(zip([dt.text for dt in browser.find_elements(By.CSS_SELECTOR, "dl dt")],
                      [dd.text for dd in browser.find_elements(By.CSS_SELECTOR, "dl dd")],
                      strict=True))
    assert fields["URL"] == receiver.url("/failing")
    assert fields["Failures in a row"] == "1"
    assert fields["Delivered up to"] == "users 0 · feed at 4"
    browser.save_screenshot(str(tmp_path / "webhook.png"))
    one = browser.page_source

    for made in (good, failing, gone):
        for text in (listing, one):
            assert made["secret"] not in text
            assert made["secret"].removeprefix("whsec_") not in text
    browser.find_element(By.LINK_TEXT, "All webhook subscriptions").click()
    wait(browser, heading_is("Webhook subscriptions"))
    browser.execute_script("sessionStorage.clear()")
    browser.get_log("browser")          # the 401 and the 403 are logged as failed loads
