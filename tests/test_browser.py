"""Pages of other sites, in a real browser (Debian's Chromium, driven by
selenium through /usr/bin/chromedriver; nothing is downloaded).

usersvc runs under waitress on 127.0.0.1, allowing one origin by CORS.
Two small sites serve empty pages: the allowed front end
(``http://localhost:…``) and a hostile one (``http://127.0.0.1:…``, same
host, another port: same-site, another origin). Their scripts call usersvc
as any page would. The tests skip, saying why, where Chromium is missing;
``.ci/run`` installs it and requires them (``USERSVC_TEST_BROWSER_REQUIRED``).
"""
from __future__ import annotations

import json
import re

import chromium
import pytest
from helpers import call, link_to, serve, stop

from usersvc import make_app
from usersvc.listing import FEED_RELATION

chromium.require()


def blank_page(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/html; charset=utf-8")])
    return [b"<!doctype html><title>a page</title><p>a page"]


@pytest.fixture(scope="module")
def sites():
    front = serve(blank_page, "localhost")
    hostile = serve(blank_page)
    front_origin = f"http://localhost:{front.effective_port}"
    app = make_app("memory://", cors_origins=[front_origin], stream_seconds=1)
    service = serve(app)
    yield {"service": f"http://127.0.0.1:{service.effective_port}",
           "address": ("127.0.0.1", service.effective_port),
           "front": front_origin, "hostile": f"http://127.0.0.1:{hostile.effective_port}"}
    for server in (front, hostile, service):
        stop(server)
    app.close()


@pytest.fixture(scope="module")
def browser():
    driver = chromium.start()
    yield driver
    driver.quit()


def run(browser, page, script, *args):
    """Open ``page`` and run ``script`` there (its last argument is the
    callback), returning what it passes back."""
    browser.get(page + "/")
    return browser.execute_async_script(script, *args)


def users(sites):
    return json.loads(call(sites["address"], "GET", "/users")[2])


def test_writes_a_hostile_page_sends_without_asking_create_nothing(sites, browser):
    result = run(browser, sites["hostile"], """
        const [url, done] = arguments;
        const json = JSON.stringify({name: "Mallory", email: "mallory@example.org"});
        const attempts = [];
        const tryIt = async (name, f) => {
            try { await f(); attempts.push(name + ": sent"); }
            catch (e) { attempts.push(name + ": " + e.name); }
        };
        (async () => {
            await tryIt("no-cors Blob", () => fetch(url, {method: "POST", mode: "no-cors",
                                                           body: new Blob([json])}));
            await tryIt("no-cors text/plain", () => fetch(url, {method: "POST", mode: "no-cors",
                headers: {"Content-Type": "text/plain"}, body: json}));
            attempts.push("sendBeacon: " + navigator.sendBeacon(url, new Blob([json])));
            await tryIt("cors JSON", () => fetch(url, {method: "POST",
                headers: {"Content-Type": "application/json"}, body: json}));
            const frame = document.createElement("iframe");
            frame.name = "sink";
            document.body.append(frame);
            const form = document.createElement("form");
            Object.assign(form, {method: "POST", action: url, target: "sink",
                                 enctype: "text/plain"});
            const field = document.createElement("input");
            Object.assign(field, {name: '{"name": "Mallory", "email": "m@example.org", "x": "',
                                  value: '"}'});
            form.append(field);
            document.body.append(form);
            frame.onload = () => { attempts.push("form: loaded"); done(attempts); };
            form.submit();
        })();
    """, sites["service"] + "/users")
    assert "sendBeacon: true" in result and "form: loaded" in result       # all were sent
    assert "cors JSON: TypeError" in result          # and the one that asked first was refused
    assert users(sites) == []


def test_the_allowed_front_end_creates_reads_replaces_patches_and_deletes(sites, browser):
    steps = run(browser, sites["front"], """
        const [base, done] = arguments;
        const log = [];
        const json = (method, url, body, headers = {}) => fetch(base + url, {method,
            headers: {"Content-Type": "application/json", ...headers},
            body: body && JSON.stringify(body)});
        (async () => {
            let r = await json("POST", "/users", {name: "Ada Lovelace", email: "ada@example.org"});
            log.push(["create", r.status, r.headers.get("Location"), r.headers.get("ETag")]);
            const etag = r.headers.get("ETag");
            r = await fetch(base + "/users/1");
            log.push(["read", r.status, r.headers.get("ETag"), (await r.json()).name]);
            r = await json("PUT", "/users/1", {name: "Ada King", email: "ada@example.org"},
                           {"If-Match": etag});
            log.push(["replace", r.status, r.headers.get("ETag")]);
            r = await json("PUT", "/users/1", {name: "Stale", email: "ada@example.org"},
                           {"If-Match": etag});
            log.push(["stale", r.status, (await r.json()).title]);
            r = await fetch(base + "/users/1", {method: "PATCH", body: JSON.stringify({name: "A."}),
                headers: {"Content-Type": "application/merge-patch+json"}});
            log.push(["patch", r.status, (await r.json()).name]);
            await json("POST", "/users", {name: "Grace Hopper", email: "grace@example.org"});
            r = await fetch(base + "/users?limit=1", {headers: {"Prefer": "count=exact"}});
            log.push(["page", r.status, r.headers.get("Link"), r.headers.get("X-Total-Count")]);
            r = await fetch(base + "/users/2", {method: "DELETE", headers: {"If-Match": '"2-1"'}});
            log.push(["delete", r.status]);
            done(log);
        })().catch(e => done(["error", String(e)]));
    """, sites["service"])
    assert steps[0] == ["create", 201, sites["service"] + "/users/1", '"1-1"']
    assert steps[1] == ["read", 200, '"1-1"', "Ada Lovelace"]
    assert steps[2] == ["replace", 200, '"1-2"']
    assert steps[3] == ["stale", 412, "Precondition Failed"]
    assert steps[4] == ["patch", 200, "A."]
    assert steps[5][:2] == ["page", 200] and steps[5][3] == "2"
    # read from script:
    assert link_to(steps[5][2]) == f'{sites["service"]}/users?after=1&limit=1'
    assert re.fullmatch(re.escape(f'{sites["service"]}/users/changes?after=4.') + "[0-9a-f]{12}",
                        link_to(steps[5][2], FEED_RELATION))      # position 4, in its history
    assert steps[6] == ["delete", 204]
    assert [u["name"] for u in users(sites)] == ["A."]


def test_a_page_of_another_origin_cannot_read_the_answers(sites, browser):
    outcome = run(browser, sites["hostile"], """
        const [url, done] = arguments;
        fetch(url).then(r => done("read " + r.status), e => done(e.name));
    """, sites["service"] + "/users")
    assert outcome == "TypeError"


def test_the_allowed_front_ends_event_source_resumes_across_origins(sites, browser):
    """A stream ends (here after its one second) and the browser's own
    EventSource reconnects by itself with Last-Event-ID: from another
    origin, that is a request the service must allow, or the browser
    closes the source for good and the page hears nothing more."""
    outcome = run(browser, sites["front"], """
        const [base, done] = arguments;
        const seen = [], opened = [];
        const feed = new EventSource(base + "/users/changes");
        feed.onopen = () => opened.push(feed.readyState);
        feed.addEventListener("change", (e) => {
          seen.push([e.lastEventId, JSON.parse(e.data).user.name]);
          feed.close();
          done({seen, opened: opened.length, state: feed.readyState});
        });
        feed.onerror = () => {
          if (feed.readyState === EventSource.CLOSED) done({seen, opened: opened.length,
                                                             state: "closed by an error"});
        };
        // After the first stream has ended and the browser has come back:
        // a record made then must reach the page.
        setTimeout(() => fetch(base + "/users", {method: "POST",
            headers: {"Content-Type": "application/json"},
            body: JSON.stringify({name: "After", email: "after@example.org"})}), 3500);
    """, sites["service"])
    assert outcome["state"] == 2, outcome       # closed by the page, having heard the record
    assert outcome["opened"] >= 2, outcome      # it came back at least once, by itself
    assert [name for _, name in outcome["seen"]] == ["After"]
    assert [u["name"] for u in users(sites)].count("After") == 1


def test_the_allowed_front_end_resumes_a_stream_read_with_fetch(sites, browser):
    """A front end that reads the stream with fetch (the way to send a
    token with it: EventSource sends no header of its own) resumes with
    Last-Event-ID itself: the preflight must allow that header."""
    for n in range(2):
        assert call(sites["address"], "POST", "/users",
                    {"name": f"Fetched {n}", "email": f"fetched{n}@example.org"})[0] == 201
    last = json.loads(call(sites["address"], "GET", "/users/changes?after=0&limit=1000")[2])
    outcome = run(browser, sites["front"], """
        const [base, from, done] = arguments;
        fetch(base + "/users/changes", {headers: {"Accept": "text/event-stream",
                                                  "Last-Event-ID": String(from)}})
          .then(async (r) => {
            const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
            let text = "";
            while (!text.includes("event: change")) {
              const {value, done: ended} = await reader.read();
              if (ended) break;
              text += value;
            }
            reader.cancel();
            done([r.status, r.headers.get("Content-Type"), text]);
          }, (e) => done(["refused", e.name]));
    """, sites["service"], last[-2]["seq"])
    assert outcome[:2] == [200, "text/event-stream"], outcome
    assert f"\nid: {last[-1]['seq']}.{last[-1]['id']}.1." in outcome[2]     # its place
    assert "event: change" in outcome[2] and "event: reset" not in outcome[2]
