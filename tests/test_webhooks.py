"""The webhooks feature (usersvc/features/webhooks/; issue 60): subscriptions
at /webhooks, each change of the feed POSTed to a real receiver
(http.server on 127.0.0.1, allowed by the private targets' option),
which verifies every delivery with the Standard Webhooks specification's
own package (``standardwebhooks``), never with an HMAC of its own: in
order, none skipped; retried after a 500, a time-out, a refused
connection, as ``Retry-After`` says; disabled by a 410; no redirect
followed; the secret shown once; private targets refused without the
option, at subscribe and at each attempt; durable across a restart, and
delivered once by two apps on one store.

Nothing here is timed: every wait is for a condition, with a deadline
(``DEADLINE``), and the retry schedule is made tiny (``0.05,0.1``).
"""
from __future__ import annotations

import base64
import contextlib
import http.server
import ipaddress
import json
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from email.utils import format_datetime
from typing import Any, NamedTuple

import pytest
from books import BOOKS
from conftest import Client, problem
from helpers import ADA, race, within
from standardwebhooks import Webhook

from usersvc import DEFAULT_FEATURES, USER, build_app, make_app, open_store
from usersvc.features.webhooks import Options, targets
from usersvc.serving.server import parse_args, parser
from usersvc.settings import SettingError, Settings

#: The longest any wait here may last before the test fails.
DEADLINE = 20.0
FEATURES = (*DEFAULT_FEATURES, "webhooks")
WRITER = "webhooks-writer-token-0123"
READER = "webhooks-reader-token-0123"


class Delivery(NamedTuple):
    """One POST the receiver got."""

    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def id(self) -> str:
        return self.headers["webhook-id"]

    @property
    def payload(self) -> Any:
        return json.loads(self.body)


#: How the receiver answers a delivery: ``(status, headers)``, given the
#: delivery and how many times it got that ``webhook-id`` before it; or
#: ``None``: hold the answer until released (a receiver that hangs).
Answer = Callable[[Delivery, int], "tuple[int, dict[str, str]] | None"]


class Receiver:
    """An HTTP server on 127.0.0.1 that keeps every delivery and answers as
    ``answer`` says (200 by default)."""

    def __init__(self) -> None:
        self.deliveries: list[Delivery] = []
        self.answer: Answer = lambda delivery, before: (200, {})
        self.changed = threading.Condition()
        self.released = threading.Event()       # what hangs answers once set
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                if len(body) < length:      # (an attempt abandoned mid-send, as the app
                    return                  # stops: no request came whole, none heard)
                delivery = Delivery(self.path, {k.lower(): v for k, v in self.headers.items()},
                                    body)
                with receiver.changed:
                    before = sum(1 for d in receiver.deliveries if d.id == delivery.id)
                    receiver.deliveries.append(delivery)
                    receiver.changed.notify_all()
                answer = receiver.answer(delivery, before)
                if answer is None:
                    receiver.released.wait(DEADLINE)
                    answer = (200, {})
                status, headers = answer
                with contextlib.suppress(OSError):      # (a sender that gave up: gone)
                    self.send_response(status)
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", "0")
                    self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str = "/hook") -> str:
        return f"http://127.0.0.1:{self.server.server_port}{path}"

    def wait_for(self, check: Callable[[list[Delivery]], bool], what: str) -> list[Delivery]:
        """The deliveries once ``check`` holds of them (failing past the deadline)."""
        with self.changed:
            assert self.changed.wait_for(lambda: check(self.deliveries), DEADLINE), (
                f"{what}; got {[d.id for d in self.deliveries]}")
            return list(self.deliveries)

    def close(self) -> None:
        self.released.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(DEADLINE)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    served = Receiver()
    yield served
    served.close()


@contextlib.contextmanager
def served(storage: Any, collections: Any = None, **settings: Any) -> Iterator[Client]:
    """An app with the webhooks feature (private targets allowed, a tiny
    schedule, unless told otherwise), stopped and closed after."""
    settings.setdefault("webhooks_allow_private", True)
    settings.setdefault("webhooks_retries", "0.05,0.1")
    settings.setdefault("features", FEATURES)
    own = {name: settings.pop(name) for name in list(settings) if name.startswith("webhooks_")}
    app = build_app(Settings(storage, **settings, own=own), collections)
    try:
        yield Client(app)
    finally:
        app.stop_waiting()
        app.close()


def until(check: Callable[[], bool], what: str) -> None:
    """Until ``check()`` holds, looked at every 20 ms, failing past the deadline."""
    end, pause = time.monotonic() + DEADLINE, threading.Event()
    while not check():
        assert time.monotonic() < end, what
        pause.wait(0.02)


def subscribe(client: Client, url: str, **more: Any) -> dict[str, Any]:
    response = client.post("/webhooks", json_body={"url": url, **more})
    assert response.status_code == 201, response.text
    assert response.headers["Location"].endswith(f"/webhooks/{response.json['id']}")
    assert response.headers["Cache-Control"] == "no-store"
    return dict(response.json)


def state(client: Client, subscription: dict[str, Any]) -> dict[str, Any]:
    response = client.get(f"/webhooks/{subscription['id']}")
    assert response.status_code == 200, response.text
    return dict(response.json)


def create(client: Client, n: int) -> dict[str, Any]:
    return client.create(f"User {n}", f"user{n}@example.org")


def verified(deliveries: list[Delivery], secret: str) -> list[Any]:
    """Each delivery's payload, as the standard's own verifier reads it."""
    webhook = Webhook(secret)
    return [webhook.verify(d.body, d.headers) for d in deliveries]


def feed(client: Client, plural: str = "users") -> list[dict[str, Any]]:
    return list(client.get(f"/{plural}/changes?after=0&limit=1000").json)


def at(text: str) -> float:
    """An RFC 3339 time the service gave, as Unix time."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


# -- delivered: signed, in order, none skipped ---------------------------------

def test_every_change_is_delivered_signed_in_order_none_skipped(store_url, receiver):
    with served(store_url) as client:
        subscription = subscribe(client, receiver.url())
        assert subscription["secret"].startswith("whsec_")
        assert subscription["delivered"] == {"users": 0} and subscription["enabled"]
        users = [create(client, n) for n in range(12)]
        for user in users[:4]:
            assert client.patch(f"/users/{user['id']}", json_body={"name": "Changed"}
                                ).status_code == 200
        for user in users[4:7]:
            assert client.delete(f"/users/{user['id']}").status_code == 204
        entries = feed(client)
        last = entries[-1]["seq"]
        deliveries = receiver.wait_for(
            lambda got: any(d.payload["data"]["seq"] == last for d in got),
            "every change delivered")
        history = client.get("/users/changes").headers["Link"].split("after=")[1].split(".")[-1]
        history = history.split("&")[0]
        payloads = verified(deliveries, subscription["secret"])
        seqs = [p["data"]["seq"] for p in payloads]
        assert seqs == sorted(set(seqs)), "in feed order, each once"
        by_seq = {p["data"]["seq"]: p for p in payloads}
        for entry in entries:          # the feed, whole: none skipped
            payload = by_seq[entry["seq"]]
            assert payload["data"] == entry
            assert payload["type"] == ("user.deleted" if entry.get("deleted") else "user.changed")
            datetime.fromisoformat(payload["timestamp"].replace("Z", "+00:00"))
        for d in deliveries:
            seq = d.payload["data"]["seq"]
            assert d.id == f"users.{seq}.{history}"
            assert d.headers["content-type"] == "application/json"
            assert d.path == "/hook"
        until(lambda: state(client, subscription)["delivered"] == {"users": last},
              "the position written")
        shown = state(client, subscription)
        assert (shown["failures"], shown["next_attempt"], shown["last_failure"]) == (0, None, None)


def test_a_delivery_signed_with_another_secret_or_altered_is_refused_by_the_verifier(receiver):
    with served("memory://") as client:
        subscription = subscribe(client, receiver.url())
        create(client, 1)
        (delivery,) = receiver.wait_for(lambda got: len(got) == 1, "one delivery")
    assert verified([delivery], subscription["secret"])[0]["data"]["id"] == 1
    other = "whsec_" + base64.b64encode(b"another secret of 32 bytes, long").decode()
    altered = delivery._replace(body=delivery.body.replace(b"User 1", b"User 2"))
    for secret, sent in ((other, delivery), (subscription["secret"], altered)):
        with pytest.raises(Exception, match="No matching signature"):
            Webhook(secret).verify(sent.body, sent.headers)


def test_each_collection_in_its_own_order_and_only_those_subscribed(receiver):
    collections = (USER, BOOKS)
    with served("memory://", collections) as client:
        books_only = subscribe(client, receiver.url("/books"), collections=["books"])
        every = subscribe(client, receiver.url("/every"))
        assert "collections" not in every and books_only["collections"] == ["books"]
        assert every["delivered"] == {"users": 0, "books": 0}
        for n in range(3):
            create(client, n)
            assert client.post("/books", json_body={"title": f"Book {n}", "isbn": f"isbn-{n}"}
                               ).status_code == 201
        deliveries = receiver.wait_for(
            lambda got: len([d for d in got if d.path == "/books"]) == 3
            and len([d for d in got if d.path == "/every"]) == 6, "every change delivered")
        # The books' subscription hears of books alone; the other of both, each in order.
        books = [d.payload for d in deliveries if d.path == "/books"]
        assert verified([d for d in deliveries if d.path == "/books"], books_only["secret"])
        assert [(p["type"], p["data"]["seq"]) for p in books] == [
            ("book.changed", 1), ("book.changed", 2), ("book.changed", 3)]
        both = verified([d for d in deliveries if d.path == "/every"], every["secret"])
        for kind in ("user", "book"):
            assert [p["data"]["seq"] for p in both if p["type"] == f"{kind}.changed"] == [1, 2, 3]
        # PATCH: collections null is every one; a collection newly covered starts at its end.
        changed = client.patch(f"/webhooks/{books_only['id']}", json_body={"collections": None},
                               content_type="application/merge-patch+json")
        assert changed.status_code == 200, changed.text
        assert "collections" not in changed.json
        assert changed.json["delivered"] == {"books": 3, "users": 3}
        create(client, 9)
        receiver.wait_for(lambda got: any(d.path == "/books" and d.payload["type"] == "user.changed"
                                          for d in got), "a user's change heard of now")


def test_a_subscription_starts_at_after_when_given(receiver):
    with served("memory://") as client:
        for n in range(3):
            create(client, n)
        subscription = subscribe(client, receiver.url(), after=1)
        assert subscription["delivered"] == {"users": 1}
        deliveries = receiver.wait_for(lambda got: len(got) == 2, "the two changes after 1")
        assert [p["data"]["seq"] for p in verified(deliveries, subscription["secret"])] == [2, 3]


# -- failures: retried, as the receiver says, or the subscription disabled -----

def test_a_500_is_retried_with_the_same_message_and_the_next_change_waits(receiver):
    receiver.answer = lambda delivery, before: (500, {}) if (
        delivery.payload["data"]["seq"] == 1 and before < 2) else (200, {})
    with served("memory://") as client:
        subscription = subscribe(client, receiver.url())
        create(client, 1)
        create(client, 2)
        deliveries = receiver.wait_for(lambda got: len(got) == 4, "three attempts, then the next")
        payloads = verified(deliveries, subscription["secret"])
        assert [p["data"]["seq"] for p in payloads] == [1, 1, 1, 2]
        assert len({d.id for d in deliveries[:3]}) == 1
        assert len({d.body for d in deliveries[:3]}) == 1       # the same message, re-signed
        until(lambda: state(client, subscription)["delivered"] == {"users": 2}, "delivered")
        shown = state(client, subscription)
        assert (shown["failures"], shown["enabled"]) == (0, True)
        assert shown["last_failure"]["status"] == 500


def test_a_receiver_that_does_not_answer_in_time_is_tried_again(receiver):
    receiver.answer = lambda delivery, before: None if before == 0 else (200, {})
    with served("memory://", webhooks_timeout=0.3) as client:
        subscription = subscribe(client, receiver.url())
        create(client, 1)
        deliveries = receiver.wait_for(lambda got: len(got) == 2, "the attempt again")
        assert deliveries[0].id == deliveries[1].id
        verified(deliveries, subscription["secret"])
        until(lambda: state(client, subscription)["delivered"] == {"users": 1}, "delivered")
        assert state(client, subscription)["last_failure"]["error"] == "timed out"


def test_a_refused_connection_is_retried_until_disabled_then_resumed_elsewhere(receiver):
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        nobody = f"http://127.0.0.1:{unused.getsockname()[1]}/hook"
    with served("memory://") as client:
        subscription = subscribe(client, nobody)
        create(client, 1)
        until(lambda: not state(client, subscription)["enabled"], "disabled")
        shown = state(client, subscription)
        assert shown["disabled_reason"] == ("3 attempts in a row failed, the last: "
                                            "connection refused")
        assert shown["last_failure"]["error"] == "connection refused"
        assert (shown["failures"], shown["delivered"]) == (3, {"users": 0})
        # On again, elsewhere: from the first change not delivered.
        create(client, 2)
        resumed = client.patch(f"/webhooks/{subscription['id']}",
                               json_body={"url": receiver.url(), "enabled": True})
        assert resumed.json["enabled"] and resumed.json["failures"] == 0
        deliveries = receiver.wait_for(lambda got: len(got) == 2, "both changes")
        assert [p["data"]["seq"] for p in verified(deliveries, subscription["secret"])] == [1, 2]


def test_retry_after_is_honoured(receiver):
    receiver.answer = lambda delivery, before: (503, {"Retry-After": "3600"})
    with served("memory://") as client:
        subscription = subscribe(client, receiver.url())
        create(client, 1)
        receiver.wait_for(lambda got: len(got) == 1, "the first attempt")
        until(lambda: state(client, subscription)["failures"] == 1, "the failure kept")
        shown = state(client, subscription)
        # The schedule says 0.05 s, the receiver an hour: the next attempt in an hour.
        assert shown["last_failure"]["status"] == 503
        waited = at(shown["next_attempt"]) - at(shown["last_failure"]["at"])
        assert 3600 - 0.002 <= waited <= 3600 + 0.002


def test_retry_after_is_read_as_seconds_or_a_date_at_most_a_day():
    now = 1_800_000_000.0
    assert targets.retry_after("120", now) == 120
    assert targets.retry_after("9999999", now) == 86400
    date = format_datetime(datetime.fromtimestamp(now + 90).astimezone(), usegmt=False)
    assert targets.retry_after(date, now) == 90
    assert targets.retry_after("soon", now) is None and targets.retry_after(None, now) is None


def test_410_disables_the_subscription_and_enabling_it_resumes_from_that_change(receiver):
    gone = threading.Event()
    gone.set()
    receiver.answer = lambda delivery, before: (410, {}) if gone.is_set() else (200, {})
    with served("memory://") as client:
        subscription = subscribe(client, receiver.url())
        create(client, 1)
        until(lambda: not state(client, subscription)["enabled"], "disabled")
        shown = state(client, subscription)
        assert shown["disabled_reason"] == "the receiver answered 410 Gone"
        assert shown["last_failure"]["status"] == 410 and shown["next_attempt"] is None
        assert len(receiver.deliveries) == 1
        create(client, 2)
        gone.clear()
        again = client.patch(f"/webhooks/{subscription['id']}", json_body={"enabled": True})
        assert again.json["enabled"] and again.json["disabled_reason"] is None
        deliveries = receiver.wait_for(lambda got: len(got) == 3, "resumed")
        assert deliveries[0].id == deliveries[1].id
        assert [p["data"]["seq"] for p in verified(deliveries, subscription["secret"])] == [1, 1, 2]


def test_a_patch_that_disables_lets_only_the_attempt_in_flight_land(store_url, receiver):
    """On every store: the subscription disabled by a PATCH while its
    receiver holds one attempt and the next change waits: once answered,
    the attempt in flight lands and nothing more is sent (its runner ends
    with nothing else attempted); enabled again, the rest follows."""
    hold = threading.Event()
    hold.set()
    receiver.answer = lambda delivery, before: None if hold.is_set() else (200, {})
    with served(store_url) as client:
        subscription = subscribe(client, receiver.url())
        create(client, 1)
        receiver.wait_for(lambda got: len(got) == 1, "the first attempt, held")
        create(client, 2)       # (waits behind it)
        off = client.patch(f"/webhooks/{subscription['id']}", json_body={"enabled": False})
        assert off.status_code == 200 and off.json["enabled"] is False
        hold.clear()
        receiver.released.set()         # (the held attempt answered 200)
        name = f"usersvc-webhook-{subscription['id']}"
        until(lambda: not [t for t in threading.enumerate() if t.name == name and t.is_alive()],
              "the runner ended")
        assert [d.payload["data"]["id"] for d in receiver.deliveries] == [1]
        client.patch(f"/webhooks/{subscription['id']}", json_body={"enabled": True})
        deliveries = receiver.wait_for(lambda got: got[-1].payload["data"]["id"] == 2, "resumed")
        ids = [p["data"]["id"] for p in verified(deliveries, subscription["secret"])]
        # (1 again: its 200 came after the PATCH, which no position of the
        # runner's is written over, on any store)
        assert ids == [1, 1, 2]


def test_a_redirect_is_a_failure_and_is_not_followed(receiver):
    receiver.answer = lambda delivery, before: (
        (302, {"Location": receiver.url("/elsewhere")}) if before < 2 else (200, {}))
    with served("memory://") as client:
        subscription = subscribe(client, receiver.url())
        create(client, 1)
        deliveries = receiver.wait_for(lambda got: len(got) == 3, "three attempts")
        # Had the sender followed the first 302, /elsewhere would have been
        # asked before the second attempt: attempts are made one at a time.
        assert [d.path for d in deliveries] == ["/hook"] * 3
        until(lambda: state(client, subscription)["delivered"] == {"users": 1}, "delivered")
        assert state(client, subscription)["last_failure"]["status"] == 302


#: Threads writing at once beside a receiver that hangs, and each one's writes.
WRITERS, WRITES = 4, 6


def test_a_receiver_that_hangs_holds_no_write_and_the_stop_abandons_it(store_url, receiver):
    """On every store: with an attempt hanging (the receiver holds the
    connection and never answers; the longest time-out, 300 s), writes from
    several threads at once (made, changed, deleted) each answer within
    the deadline, the attempt still hanging; the app's stop and its close
    each end within the deadline, and end the feature's threads."""
    held = threading.Event()

    def hangs(delivery: Delivery, before: int) -> None:
        held.wait(4 * DEADLINE)         # (until the test ends, however long the writes take)
        return None                     # (and the receiver's own hold after it)

    receiver.answer = hangs
    ours = {t for t in threading.enumerate() if t.name.startswith("usersvc-webhook")}
    with contextlib.ExitStack() as ending, served(store_url, webhooks_timeout=300) as client:
        ending.callback(held.set)
        subscription = subscribe(client, receiver.url())
        create(client, 0)
        receiver.wait_for(lambda got: len(got) == 1, "an attempt hanging")

        def writes(i: int) -> list[int]:
            statuses = []
            for n in range(WRITES):
                made = create(client, 1000 * (i + 1) + n)
                statuses.append(client.patch(f"/users/{made['id']}",
                                             json_body={"name": "Changed"}).status_code)
                if n % 2:
                    statuses.append(client.delete(f"/users/{made['id']}").status_code)
            return statuses

        # (race: each thread joined within the deadline, a hang failing the test)
        answers = race(WRITERS, writes, deadline=DEADLINE)
        assert answers == [[200, 200, 204] * (WRITES // 2)] * WRITERS, answers
        assert len(feed(client)) == 1 + WRITERS * WRITES       # (each written, kept)
        assert len(receiver.deliveries) == 1            # all of it beside the one attempt
        assert state(client, subscription)["delivered"] == {"users": 0}
        app = client.app
        within(DEADLINE, app.stop_waiting)
        within(DEADLINE, app.close)             # (served's own after them: harmless)
        assert not [t.name for t in threading.enumerate()
                    if t.name.startswith("usersvc-webhook") and t.is_alive() and t not in ours]


# -- the secret, shown once ---------------------------------------------------------

def test_the_secret_is_shown_in_the_post_s_answer_only(store_url, receiver, caplog):
    caplog.set_level(logging.DEBUG)
    receiver.answer = lambda delivery, before: (500, {}) if before == 0 else (200, {})
    with served(store_url, tokens={WRITER: "write"}, metrics=True) as client:
        auth = {"Authorization": f"Bearer {WRITER}"}
        response = client.post("/webhooks", json_body={"url": receiver.url()}, headers=auth)
        assert response.status_code == 201
        secret = response.json["secret"]
        key = base64.b64decode(secret.removeprefix("whsec_"), validate=True)
        assert 24 <= len(key) <= 64
        client.post("/users", json_body=ADA, headers=auth)
        receiver.wait_for(lambda got: len(got) == 2, "a failure, then the delivery")
        subscription = response.json["id"]
        until(lambda: client.get(f"/webhooks/{subscription}", headers=auth
                                 ).json["delivered"] == {"users": 1}, "delivered")
        html = {"Accept": "text/html", **auth}
        seen = [client.get(path, headers=auth) for path in (
            f"/webhooks/{subscription}", "/webhooks", "/users/changes", "/users", "/users/1",
            "/openapi.json", "/", "/healthz")]
        seen += [client.get(path, headers=html) for path in ("/users", "/users/1", "/")]
        seen.append(client.patch(f"/webhooks/{subscription}", json_body={"secret": secret},
                                 headers=auth))
        assert problem(seen[-1], 422)["errors"][0]["pointer"] == "/secret"
        registry = client.app.plugged["metrics"].registry
        from prometheus_client import generate_latest
        texts = [r.text for r in seen] + [generate_latest(registry).decode(), caplog.text]
        texts += [json.dumps(d.headers) + d.body.decode() for d in receiver.deliveries]
        for text in texts:
            assert secret not in text and secret.removeprefix("whsec_") not in text
        assert "webhook 1:" in caplog.text      # (the failure was logged: without it)


# -- targets: private ones refused, unless allowed --------------------------------

PRIVATE = ["http://127.0.0.1:8080/hook", "http://10.1.2.3/hook", "http://169.254.169.254/latest",
           "http://[::1]/hook", "http://localhost/hook", "http://192.168.0.7/",
           "http://[::ffff:10.0.0.1]/", "http://100.64.0.1/", "http://[fe80::1]/",
           "http://0.0.0.0/", "http://224.0.0.1/", "https://172.16.0.1:8443/hook"]


@pytest.mark.parametrize("url", PRIVATE)
def test_a_private_target_is_refused_without_the_option(url):
    with served("memory://", webhooks_allow_private=False) as client:
        refused = problem(client.post("/webhooks", json_body={"url": url}), 422)
        assert [e["pointer"] for e in refused["errors"]] == ["/url"]
        assert "cannot be a target" in refused["errors"][0]["detail"]
        assert client.get("/webhooks").json == []


@pytest.mark.parametrize("url, allowed", [("http://127.0.0.1:8080/", True),
                                          ("http://[::1]:8080/", True),
                                          ("http://10.1.2.3/", True),
                                          ("http://0.0.0.0/", False),
                                          ("http://224.0.0.1/", False)])
def test_the_option_allows_private_targets_but_never_unspecified_or_multicast(url, allowed):
    with served("memory://") as client:
        answer = client.post("/webhooks", json_body={"url": url})
        assert answer.status_code == (201 if allowed else 422), answer.text


def test_a_target_is_checked_again_at_each_attempt(receiver, monkeypatch):
    """A name that resolved to a public address at subscribe and to a
    loopback one now (DNS rebinding) is refused when it is sent to."""
    public = [ipaddress.ip_address("93.184.215.14")]
    answers = iter([public])
    monkeypatch.setattr(targets, "addresses_of", lambda host, port: next(
        answers, [ipaddress.ip_address("127.0.0.1")]))
    with served("memory://", webhooks_allow_private=False) as client:
        subscription = subscribe(client, "http://rebinding.example/hook")
        create(client, 1)
        until(lambda: state(client, subscription)["failures"] >= 1, "the attempt refused")
        assert state(client, subscription)["last_failure"]["error"] == (
            "refused: rebinding.example resolves to 127.0.0.1, which is a loopback address: "
            "a target must be a public address")
    assert receiver.deliveries == []


class Persistent:
    """A receiver that speaks HTTP/1.1 and keeps connections open (or, with
    ``drops``, closes each after its answer without saying so, as a server
    whose idle time-out is over): which connection (the client's port)
    brought each ``webhook-id``."""

    def __init__(self, drops: bool = False) -> None:
        self.got: list[tuple[int, str]] = []
        self.changed = threading.Condition()
        got, changed = self.got, self.changed

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with changed:
                    got.append((self.client_address[1], self.headers["webhook-id"]))
                    changed.notify_all()
                self.send_response(204)
                self.send_header("Content-Length", "0")
                self.end_headers()
                self.close_connection = drops

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}/hook"

    def wait_for(self, n: int) -> list[tuple[int, str]]:
        with self.changed:
            assert self.changed.wait_for(lambda: len(self.got) >= n, DEADLINE), self.got
            return list(self.got)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(DEADLINE)


def test_a_receiver_that_keeps_the_connection_open_gets_a_backlog_on_one():
    """Ten changes waiting, delivered one after the other: one TCP
    connection (HTTP/1.1's persistent connection), the address checked at
    each attempt all the same."""
    receiver = Persistent()
    try:
        with served("memory://") as client:
            for n in range(10):
                create(client, n)
            subscription = subscribe(client, receiver.url(), after=0)
            got = receiver.wait_for(10)
            assert [message_id.split(".")[1] for _, message_id in got] == [
                str(n) for n in range(1, 11)]
            assert len({port for port, _ in got}) == 1
            until(lambda: state(client, subscription)["delivered"] == {"users": 10}, "recorded")
    finally:
        receiver.close()


def test_a_connection_the_receiver_closed_meanwhile_is_made_again_not_a_failure():
    """A receiver that closes each connection after its answer without
    saying so: the next attempt finds the kept one closed and sends on a
    new one, in the same attempt (no failure recorded, nothing skipped)."""
    receiver = Persistent(drops=True)
    try:
        with served("memory://") as client:
            for n in range(5):
                create(client, n)
            subscription = subscribe(client, receiver.url(), after=0)
            got = receiver.wait_for(5)
            assert [message_id.split(".")[1] for _, message_id in got] == ["1", "2", "3", "4", "5"]
            assert len({port for port, _ in got}) == 5
            until(lambda: state(client, subscription)["delivered"] == {"users": 5}, "recorded")
            assert state(client, subscription)["failures"] == 0
            assert state(client, subscription)["last_failure"] is None
    finally:
        receiver.close()


def test_address_kinds():
    ip = ipaddress.ip_address
    assert targets.refusal(ip("93.184.215.14"), False) is None
    assert targets.refusal(ip("2606:4700::1111"), False) is None
    for address, said in [("127.0.0.1", "a loopback address"), ("10.0.0.1", "a private address"),
                          ("169.254.169.254", "a link-local address"),
                          ("::ffff:127.0.0.1", "a loopback address"),
                          ("2002:0a00:0001::", "a private address"),      # 6to4 of 10.0.0.1
                          ("240.0.0.1", "a reserved address"),
                          ("100.64.0.1", "not a public address"),
                          ("::", "an unspecified address"), ("ff02::1", "a multicast address")]:
        assert targets.refusal(ip(address), False) == said, address
    assert targets.refusal(ip("10.0.0.1"), True) is None
    assert targets.refusal(ip("0.0.0.0"), True) == "an unspecified address"


@pytest.mark.parametrize("body, pointer", [
    ({"url": "ftp://example.org/"}, "/url"), ({"url": "http://"}, "/url"),
    ({"url": "http://user:password@127.0.0.1/"}, "/url"), ({"url": 5}, "/url"),
    ({"url": "http://127.0.0.1/#here"}, "/url"), ({}, "/url"),
    ({"url": "http://127.0.0.1/", "secret": "whsec_mine"}, "/secret"),
    ({"url": "http://127.0.0.1/", "collections": ["books"]}, "/collections/0"),
    ({"url": "http://127.0.0.1/", "collections": []}, "/collections"),
    ({"url": "http://127.0.0.1/", "collections": ["users", "users"]}, "/collections/1"),
    ({"url": "http://127.0.0.1/", "after": -1}, "/after"),
    ({"url": "http://127.0.0.1/", "after": {"books": 0}}, "/after/books"),
    ({"url": "http://127.0.0.1/", "enabled": False}, "/enabled")])
def test_a_subscription_that_cannot_be_is_a_422_naming_the_member(body, pointer):
    with served("memory://") as client:
        refused = problem(client.post("/webhooks", json_body=body), 422)
        assert [e["pointer"] for e in refused["errors"]] == [pointer]
        assert client.get("/webhooks").json == []


def test_bodies_and_ids_the_routes_refuse():
    with served("memory://") as client:
        assert problem(client.post("/webhooks", body="url=x", content_type="text/plain"),
                       415)["status"] == 415
        assert problem(client.post("/webhooks", body="{", content_type="application/json"),
                       400)["detail"].startswith("The body is not valid JSON")
        assert problem(client.post("/webhooks", json_body=["x"]), 422)["errors"][0]["pointer"] == ""
        # Only UTF-8 is read: a body said to be another charset is refused, not misread.
        latin = client.post("/webhooks", body='{"url": "http://caf\xe9.example/"}'.encode("latin-1"),
                            content_type="application/json; charset=latin-1")
        assert problem(latin, 415)["detail"] == "A subscription is application/json, in UTF-8."
        assert problem(client.post("/webhooks", body=b'{"url": "\xff"}',
                                   content_type="application/json"), 400)["detail"] == (
            "The body is not valid UTF-8 (byte 9).")
        assert problem(client.post("/webhooks", body=b"", content_type="application/json"),
                       400)["detail"] == "The request needs a body."
        assert problem(client.get("/webhooks/9"), 404)["detail"] == (
            "There is no webhook subscription with this id.")
        assert problem(client.delete("/webhooks/9"), 404)["status"] == 404
        assert problem(client.patch("/webhooks/9", json_body={"enabled": False}), 404)
        subscription = subscribe(client, "http://127.0.0.1:9/")
        assert problem(client.patch(f"/webhooks/{subscription['id']}",
                                    json_body={"enabled": "yes"}), 422)["errors"] == [
            {"pointer": "/enabled", "detail": "must be true or false"}]
        off = client.patch(f"/webhooks/{subscription['id']}", json_body={"enabled": False})
        assert off.json["enabled"] is False
        assert client.delete(f"/webhooks/{subscription['id']}").status_code == 204
        assert client.get("/webhooks").json == []


def test_options_names_the_bodies_the_routes_read_json_only():
    """``OPTIONS`` says what a 415 would: JSON, and merge patches for
    ``PATCH`` (no XML: the collections' types are not the routes')."""
    with served("memory://") as client:
        collection = client.request("OPTIONS", "/webhooks")
        assert collection.headers["Accept-Post"] == "application/json"
        assert "Accept-Patch" not in collection.headers
        one = client.request("OPTIONS", "/webhooks/1")
        assert one.headers["Accept-Patch"] == "application/json, application/merge-patch+json"
        subscription = subscribe(client, "http://127.0.0.1:9/")
        refused = client.patch(f"/webhooks/{subscription['id']}", body="<x/>",
                               content_type="application/xml")
        assert refused.status_code == 415
        assert refused.headers["Accept-Patch"] == one.headers["Accept-Patch"]


# -- the feature, plugged in by name ------------------------------------------------

def test_webhooks_are_a_feature_named_webhooks_not_among_the_defaults(receiver):
    assert "webhooks" not in DEFAULT_FEATURES
    for features in (DEFAULT_FEATURES, ()):
        app = make_app("memory://", features=features)
        assert problem(Client(app).get("/webhooks"), 404)["status"] == 404
        app.close()
    app = make_app("memory://", features=FEATURES)
    try:
        client = Client(app)
        assert client.get("/webhooks").json == []
        # The default: private targets refused.
        assert problem(client.post("/webhooks", json_body={"url": receiver.url()}), 422)
    finally:
        app.stop_waiting()
        app.close()


def test_its_settings_are_refused_without_it_or_when_they_cannot_be_used():
    with pytest.raises(SettingError, match="webhooks_timeout is a setting of the webhooks "
                                           "feature, which is not among the features"):
        make_app("memory://", features=("pages",), webhooks_timeout=1)
    with pytest.raises(SettingError, match="webhooks_timeot is not a setting of usersvc's"):
        make_app("memory://", features=FEATURES, webhooks_timeot=1)
    # Named before the pages, it would have none of theirs: said, not served without.
    with pytest.raises(SettingError, match="features must name webhooks after pages"):
        make_app("memory://", features=("webhooks", *DEFAULT_FEATURES))
    for name, value, said in [("webhooks_timeout", 0, "more than 0 seconds"),
                              ("webhooks_retries", "5,soon", "seconds"),
                              ("webhooks_retries", [-1], "0 seconds or more"),
                              ("webhooks_allow_private", "perhaps", "true or false")]:
        with pytest.raises(SettingError, match=f"{name} cannot be used: .*{said}"):
            make_app("memory://", features=FEATURES, **{name: value})
    read = Settings("memory://", features=FEATURES, own={
        "webhooks_retries": "1, 2.5", "webhooks_timeout": "3", "webhooks_allow_private": "on"})
    assert read.own == {"webhooks_retries": (1.0, 2.5), "webhooks_timeout": 3.0,
                        "webhooks_allow_private": True}
    assert Options.of(read) == Options(True, (1.0, 2.5), 3.0)
    assert Options.of(Settings("memory://", features=FEATURES)) == Options()


def test_its_settings_are_a_server_s_options_and_variables_too():
    """Spelt as every setting is by its source: ``--webhooks-retries``,
    ``USERSVC_WEBHOOKS_RETRIES``; a switch without a value; each shown in
    ``--help`` with its default; a value refused in one line that names it."""
    args = parse_args(["--features", "default,webhooks", "--webhooks-allow-private",
                       "--webhooks-retries", "1,2", "--webhooks-timeout", "4"])
    assert Options.of(args.settings) == Options(True, (1.0, 2.0), 4.0)
    assert args.given["webhooks_allow_private"] == "1"      # (handed on as text: granian)
    assert Options.of(parse_args(["--features", "default,webhooks"]).settings) == Options()
    with pytest.raises(SettingError, match="^--webhooks-timeout cannot be used: must be more"):
        parse_args(["--features", "default,webhooks", "--webhooks-timeout", "0"])
    with pytest.raises(SettingError, match="^--webhooks-retries is a setting of the webhooks"):
        parse_args(["--features", "pages,openapi", "--webhooks-retries", "1"])
    help_text = " ".join(parser().format_help().split())
    assert "--webhooks-allow-private let webhooks deliver" in help_text
    assert "--webhooks-retries SECONDS,..." in help_text and "27.7 hours" in help_text
    assert "--webhooks-timeout SECONDS" in help_text and "(default: 10)" in help_text
    environ = {"USERSVC_FEATURES": "default,webhooks", "USERSVC_WEBHOOKS_ALLOW_PRIVATE": "1",
               "USERSVC_WEBHOOKS_RETRIES": "3", "USERSVC_WEBHOOKS_TIMEOUT": "2.5"}
    assert Options.of(Settings.from_environment(environ)) == Options(True, (3.0,), 2.5)
    with pytest.raises(SettingError, match="^USERSVC_WEBHOOKS_ALLOW_PRIVATE cannot be used"):
        Settings.from_environment({**environ, "USERSVC_WEBHOOKS_ALLOW_PRIVATE": "maybe"})


def test_a_store_with_nowhere_to_keep_subscriptions_is_refused():
    storage = open_store("memory://")
    try:
        with pytest.raises(ValueError, match="the webhooks feature needs a store"):
            make_app(storage["users"], features=FEATURES)
    finally:
        storage.close()


def test_nothing_is_written_nor_started_until_the_app_serves(tmp_path):
    """Built, an app on SQLite has made no table of the feature's and
    started no thread (a server's master builds it, serves nothing and
    forks); its first request starts the sender, a route's first use of
    the store makes the tables; a read-only store serves all the same."""
    import sqlite3
    path = tmp_path / "users.db"
    others = set(threading.enumerate())
    app = make_app(f"sqlite:///{path}", features=FEATURES)
    try:
        tables = {name for (name,) in sqlite3.connect(path).execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert not {"usersvc_webhooks", "usersvc_webhook_positions"} & tables
        assert not [t for t in set(threading.enumerate()) - others
                    if t.name == "usersvc-webhooks"]
        client = Client(app)
        assert client.get("/webhooks").json == []
        until(lambda: [t for t in set(threading.enumerate()) - others
                       if t.name == "usersvc-webhooks"], "the sender started")
    finally:
        app.stop_waiting()
        app.close()


def test_every_webhooks_route_needs_a_write_token():
    with served("memory://", tokens={WRITER: "write", READER: "read"}) as client:
        for path in ("/webhooks", "/webhooks/1"):
            assert problem(client.get(path), 401)["status"] == 401
            assert problem(client.get(path, headers={"Authorization": f"Bearer {READER}"}),
                           403)["detail"] == "This token may read, not write."
        assert client.get("/webhooks", headers={"Authorization": f"Bearer {WRITER}"}).json == []
        assert client.get("/users", headers={"Authorization": f"Bearer {READER}"}
                          ).status_code == 200


# -- durable: a restart, and several processes on one store ---------------------------

@pytest.fixture(params=["sqlite-file", "postgres"])
def shared_url(request, tmp_path) -> str:
    """A store several apps open at once, as several processes would."""
    if request.param == "postgres":
        return str(request.getfixturevalue("postgres_url"))
    return f"sqlite:///{tmp_path}/users.db"


def test_a_restart_resumes_where_the_subscription_was(shared_url, receiver):
    receiver.answer = lambda delivery, before: (
        (200, {}) if delivery.payload["data"]["seq"] <= 2 else (500, {}))
    with served(shared_url) as first:
        subscription = subscribe(first, receiver.url())
        for n in range(4):
            create(first, n)
        until(lambda: not state(first, subscription)["enabled"], "disabled at the third")
    receiver.answer = lambda delivery, before: (200, {})
    with served(shared_url) as second:
        shown = state(second, subscription)
        assert (shown["delivered"], shown["failures"]) == ({"users": 2}, 3)
        assert shown["disabled_reason"] == "3 attempts in a row failed, the last: HTTP 500"
        assert "secret" not in shown and "secret" not in second.get("/webhooks").json[0]
        second.patch(f"/webhooks/{subscription['id']}", json_body={"enabled": True})
        deliveries = receiver.wait_for(lambda got: len(got) == 2 + 3 + 2, "the rest delivered")
    seqs = [p["data"]["seq"] for p in verified(deliveries, subscription["secret"])]
    assert seqs == [1, 2, 3, 3, 3, 3, 4]
    assert len({d.id for d in deliveries[2:6]}) == 1        # the third, the same message


def test_a_patch_through_another_process_is_not_undone_by_the_deliverer(shared_url, receiver):
    """Two apps on one store, the first delivering to a receiver that
    fails (a retry every 0.3 s): the subscription disabled through the
    second stays disabled (the first's failures, written as its runner
    saw the subscription before, write nothing over a PATCH), and the
    first's runner ends within a look."""
    receiver.answer = lambda delivery, before: (500, {})
    retries = ",".join(["0.3"] * 100)      # (30 s: longer than the deadline)
    with served(shared_url, webhooks_retries=retries) as one, \
            served(shared_url, webhooks_retries=retries) as other:
        subscription = subscribe(one, receiver.url())
        create(one, 1)
        receiver.wait_for(lambda got: len(got) >= 3, "failing, again and again")
        off = other.patch(f"/webhooks/{subscription['id']}", json_body={"enabled": False})
        assert off.status_code == 200 and off.json["enabled"] is False
        name = f"usersvc-webhook-{subscription['id']}"
        until(lambda: not [t for t in threading.enumerate() if t.name == name and t.is_alive()],
              "every runner of it ended")
        for client in (one, other):
            assert state(client, subscription)["enabled"] is False


def test_two_apps_on_one_store_deliver_each_change_once(shared_url, receiver):
    with served(shared_url) as one, served(shared_url) as other:
        subscription = subscribe(one, receiver.url())
        for n in range(10):
            create(one if n % 2 else other, n)
        receiver.wait_for(lambda got: len(got) >= 10, "ten changes")
        until(lambda: state(other, subscription)["delivered"] == {"users": 10}, "all delivered")
        one.app.stop_waiting()          # its leases given back: the other takes over
        for n in range(10, 15):
            create(other, n)
        deliveries = receiver.wait_for(lambda got: len(got) >= 15, "five more")
        until(lambda: state(other, subscription)["delivered"] == {"users": 15}, "all delivered")
    payloads = verified(deliveries, subscription["secret"])
    assert [p["data"]["seq"] for p in payloads] == list(range(1, 16))     # each once, in order
