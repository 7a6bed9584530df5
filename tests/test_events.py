"""The change feed pushed as Server-Sent Events (usersvc/features/waiting/events.py), through
the WSGI app, on every store: what a stream says and in what order, where
it starts, how it ends, the waiting slots it shares with long-polls, and
beside batches, keyed retries and writers in threads. Each stream is read
in a thread of its own (``Listener``); every read has a deadline, so a
stream that hangs fails a test and never holds the suite. Real servers
and processes: test_events_server.py."""
from __future__ import annotations

import json
import logging
import threading

import pytest
from conftest import Client, problem
from helpers import Listener, seq_of, turned_away
from webob import Request

from usersvc import DEFAULT_FEATURES, make_app
from usersvc.features.waiting import events
from usersvc.request import REQUEST_ID_KEY

DEADLINE = 10       # seconds a writer may take: a hang, not a time


def history(app) -> str:
    """The history token of ``app``'s users' feed (``usersvc.places``)."""
    return app.records[0].history


def entries(client) -> list[dict]:
    """The feed's entries from the start, as GET gives them in JSON."""
    return client.get("/users/changes?after=0&limit=1000").json


@pytest.fixture
def app(storage):
    app = make_app(storage, stream_seconds=30)
    yield app
    app.stop_waiting()          # ends any stream a failed test left


@pytest.fixture
def client(app) -> Client:
    return Client(app)


def test_a_stream_says_retry_and_where_it_starts_then_each_change_as_the_feed_has_it(client):
    client.create("Ada", "ada@example.org")
    client.create("Bob", "bob@example.org")
    client.put("/users/1", json_body={"name": "Ada King", "email": "ada@example.org"})
    client.delete("/users/2")
    listener = Listener(client.app, "/users/changes?after=0")
    assert listener.status == "200 OK"
    assert listener.headers["Content-Type"] == "text/event-stream"
    assert listener.headers["Cache-Control"] == "no-store"
    assert listener.headers["X-Accel-Buffering"] == "no"
    assert "Content-Length" not in listener.headers
    assert listener.next() == {"retry": "2000", "id": f"0.{history(client.app)}"}   # no data
    found = listener.changes(2)
    assert found == [(e["seq"], "delete" if e.get("deleted") else "change", e)
                     for e in entries(client)]
    assert [kind for _, kind, _ in found] == ["change", "delete"]
    client.create("Cy", "cy@example.org")               # after the stream began
    client.delete("/users/1")
    assert listener.changes(2) == [(e["seq"], "delete" if e.get("deleted") else "change", e)
                                              for e in entries(client)[-2:]]
    client.app.stop_waiting()
    assert listener.end() == []


def test_without_after_a_stream_starts_at_the_end_and_says_so(client):
    client.create("Ada", "ada@example.org")
    position = entries(client)[-1]["seq"]
    listener = Listener(client.app)
    assert listener.next() == {"retry": "2000", "id": f"{position}.1.1.{history(client.app)}"}
    client.create("Bob", "bob@example.org")
    [(seq, kind, data)] = listener.changes(1)
    assert (seq, kind, data["user"]["name"]) == (position + 1, "change", "Bob")


def test_last_event_id_is_where_a_reconnecting_client_resumes_over_after(client):
    for n in range(4):
        client.create(f"U{n}", f"u{n}@example.org")
    listener = Listener(client.app, "/users/changes?after=0", headers={"Last-Event-ID": "2"})
    assert listener.next()["id"] == f"2.2.1.{history(client.app)}"     # the entry there named
    assert [seq for seq, _, _ in listener.changes(2)] == [3, 4]


def test_a_last_event_id_past_the_end_is_another_historys_and_resumes_from_the_start(client):
    """A client that followed a store which has since lost its history (a
    memory store restarted, a file put back from an older copy) comes back
    with a number the feed has not reached: it resumes from 0, with every
    record as it is, not with nothing until the feed passes its number."""
    client.create("Ada", "ada@example.org")
    client.create("Bob", "bob@example.org")
    client.delete("/users/1")
    end = entries(client)[-1]["seq"]
    listener = Listener(client.app, "/users/changes", headers={"Last-Event-ID": str(end + 1)})
    assert listener.next() == {"retry": "2000", "id": f"0.{history(client.app)}",
                               "event": "reset", "data": "{}"}
    assert listener.changes(2) == [(e["seq"], "delete" if e.get("deleted") else "change", e)
                                   for e in entries(client)]
    # At the end itself, it is this history's: only what comes next.
    listener = Listener(client.app, "/users/changes", headers={"Last-Event-ID": str(end)})
    assert listener.next() == {"retry": "2000", "id": f"{end}.1.d.{history(client.app)}"}
    client.create("Cy", "cy@example.org")
    assert [seq for seq, _, _ in listener.changes(1)] == [end + 1]


@pytest.mark.parametrize("sent", ["x", "-1", "1.5", " 3", "²", "9" * 21, str(2**63)])
def test_a_last_event_id_that_is_not_a_position_is_400(client, sent):
    req = Request.blank("/users/changes", headers={"Accept": "text/event-stream",
                                                   "Last-Event-ID": sent})
    body = problem(client.send(req), 400)
    assert "Last-Event-ID" in body["detail"]


def test_bad_parameters_are_400_before_any_stream(client):
    for query in ("after=x", "fields=nope", "wait=99", "limit=0", "colour=red"):
        req = Request.blank(f"/users/changes?{query}", headers={"Accept": "text/event-stream"})
        problem(client.send(req), 400)


def test_fields_are_the_datas_too(client):
    client.create("Ada", "ada@example.org")
    listener = Listener(client.app, "/users/changes?after=0&fields=name")
    listener.next()
    [(_, _, data)] = listener.changes(1)
    assert data == {"seq": 1, "id": 1, "user": {"id": 1, "name": "Ada"}}


def test_only_a_client_that_asks_gets_a_stream(client):
    client.create("Ada", "ada@example.org")
    for accept in ("*/*", "application/json, text/event-stream;q=0.5", ""):
        answer = client.get("/users/changes", headers={"Accept": accept} if accept else {})
        assert answer.content_type == "application/json" and len(answer.json) == 1
    problem(client.get("/users", headers={"Accept": "text/event-stream"}), 406)


def test_head_says_the_headers_and_holds_nothing(storage):
    app = make_app(storage, max_waiting=1)
    head = Listener(app, method="HEAD")
    assert head.status == "200 OK" and head.headers["Content-Type"] == "text/event-stream"
    assert head.end() == []
    held = Listener(app)            # the one slot is free: HEAD held none
    assert held.next() == {"retry": "2000", "id": f"0.{history(app)}"}
    app.stop_waiting()
    held.end()


def test_a_stream_ends_after_its_seconds_and_a_client_resuming_misses_nothing(storage):
    app = make_app(storage, stream_seconds=1)
    client = Client(app)
    client.create("Ada", "ada@example.org")
    first = Listener(app, "/users/changes?after=0")
    first.next()
    [(last, _, _)] = first.changes(1)
    assert first.end() == []            # ended by itself, after a second
    client.create("Bob", "bob@example.org")           # while no one listens
    client.create("Cy", "cy@example.org")
    again = Listener(app, headers={"Last-Event-ID": str(last)})
    assert seq_of(again.next()["id"]) == last
    assert [d["user"]["name"] for _, _, d in again.changes(2)] == ["Bob", "Cy"]
    again.end()


def test_an_idle_stream_says_keep_alive(client, monkeypatch):
    monkeypatch.setattr(events, "KEEP_ALIVE", 0.05)
    listener = Listener(client.app)
    listener.next()
    assert listener.next() == {"": "keep-alive"}
    client.create("Ada", "ada@example.org")
    assert listener.changes(1)[0][2]["user"]["name"] == "Ada"
    client.app.stop_waiting()
    listener.end()


def test_streams_and_long_polls_share_the_slots_and_past_them_a_stream_is_told_to_retry(storage):
    app = make_app(storage, max_waiting=1, stream_seconds=30)
    client = Client(app)
    held = Listener(app)
    held.next()
    busy = Listener(app)                # 200, busy and a retry, the end: EventSource comes back
    assert busy.status == "200 OK"
    assert busy.end() == [turned_away(1)]
    problem(client.get("/users/changes?wait=5"), 503)   # a long-poll finds no slot either
    app.stop_waiting()
    held.end()


def test_a_stream_whose_client_has_gone_hands_its_slot_to_the_next(storage):
    """A WSGI app learns that a client has gone only when a write fails. A
    request that finds every slot taken nudges the streams holding them to
    write at once, and is turned away at once (it does not wait for a
    slot: it would hold a thread other requests need). One whose client
    is there goes on; one whose client has gone ends, and its slot goes to
    the next request that asks."""
    app = make_app(storage, max_waiting=1, stream_seconds=30)
    client = Client(app)
    try:
        first = Listener(app)
        assert first.next()["retry"] == "2000"
        assert Listener(app).end() == [turned_away(1)]             # its client is there,
        assert [first.next() for _ in range(events.PROBES)] == [{"": "keep-alive"}] * events.PROBES
        first.leave()                                              # and now it is not:
        assert Listener(app).end() == [turned_away(1)]             # nudged again,
        assert first.end() == []                                   # it ends,
        assert app.waiting.now == 0
        second = Listener(app)
        assert second.next()["retry"] == "2000"                    # and the next has its slot
        second.leave()                                             # a long-poll, the same
        problem(client.get("/users/changes?after=1000&wait=1"), 503)
        second.end()
        assert client.get("/users/changes?after=1000&wait=1").status_code == 200
        third = Listener(app)
        assert third.next()["retry"] == "2000"
        client.create("Ada", "ada@example.org")
        assert [kind for _, kind, _ in third.changes(1)] == ["change"]
    finally:
        app.stop_waiting()
        app.close()


@pytest.mark.parametrize("failing", ["taking", "giving back"])
def test_a_watcher_that_fails_leaves_every_slot_free(storage, failing):
    """The waiting places' watchers (metrics written to a file, an mmap)
    may fail: the disk full. The request fails, and the slot it took is
    free again, on every path; it was kept for good."""
    app = make_app(storage, max_waiting=1, stream_seconds=30)
    client = Client(app)
    fails = [2 if failing == "taking" else 1]      # (a long-poll's, a stream's)

    def watcher(n: int, stream: bool) -> None:
        if (n > 0) == (failing == "taking") and fails[0]:
            fails[0] -= 1
            raise OSError(28, "No space left on device")
    app.waiting.watchers.append(watcher)
    try:
        assert client.get("/users/changes?after=1000&wait=1").status_code == 500
        if failing == "taking":         # a stream too
            asked = client.get("/users/changes", headers={"Accept": "text/event-stream"})
            problem(asked, 500)
        assert app.waiting.now == 0
        assert client.get("/users/changes?after=1000&wait=1").status_code == 200
        stream = Listener(app)
        assert stream.next()["retry"] == "2000"     # a stream, not busy: its slot is free
        app.stop_waiting()
        stream.end()
        assert app.waiting.now == 0
    finally:
        app.stop_waiting()
        app.close()


def test_a_server_without_threads_holds_no_stream(storage):
    app = make_app(storage, max_waiting=0)
    client = Client(app)
    client.create("Ada", "ada@example.org")
    listener = Listener(app, "/users/changes?after=0", threads=False)
    assert listener.next() == {"retry": "2000", "id": f"0.{history(app)}"}
    blocks = listener.end()
    assert [json.loads(b["data"])["user"]["name"] for b in blocks] == ["Ada"]


def test_stopping_the_server_ends_every_stream(client):
    listeners = [Listener(client.app) for _ in range(2)]
    for listener in listeners:
        listener.next()
    client.app.stop_waiting()
    for listener in listeners:
        assert listener.end() == []


def test_a_stream_ends_when_its_store_closes_under_it(storage):
    """An embedder's store closed without ``app.stop_waiting()``: the
    stream ends (the store tells its listeners that nothing will come),
    rather than ask it again and again until its seconds pass."""
    app = make_app(storage, stream_seconds=60)
    listener = Listener(app)
    listener.next()
    storage.close()
    assert listener.end() == []


def test_a_failed_batch_sends_nothing_and_a_stream_waits_on(client):
    client.create("Ada", "ada@example.org")
    listener = Listener(client.app)
    listener.next()
    failed = client.post("/batch", json_body={"requests": [
        {"method": "POST", "path": "/users", "body": {"name": "Bob", "email": "bob@example.org"}},
        {"method": "POST", "path": "/users", "body": {"name": "Eve", "email": "ada@example.org"}}]})
    assert failed.status_code == 409, failed.text
    done = client.post("/batch", json_body={"requests": [
        {"method": "POST", "path": "/users", "body": {"name": "Cy", "email": "cy@example.org"}},
        {"method": "DELETE", "path": "/users/1"}]})
    assert done.status_code == 200, done.text
    found = listener.changes(2)
    assert [(kind, d.get("user", {}).get("name")) for _, kind, d in found] == [
        ("change", "Cy"), ("delete", None)]
    assert [seq for seq, _, _ in found] == [e["seq"] for e in entries(client)]
    client.app.stop_waiting()
    assert listener.end() == []         # nothing of the failed batch, ever


def test_a_keyed_retry_is_one_change(client):
    listener = Listener(client.app)
    listener.next()
    for _ in range(3):
        answer = client.post("/users", json_body={"name": "Ada", "email": "ada@example.org"},
                             headers={"Idempotency-Key": "one-ada"})
        assert answer.status_code == 201
    client.create("Bob", "bob@example.org")
    assert [d["user"]["name"] for _, _, d in listener.changes(2)] == ["Ada", "Bob"]


def test_streams_see_every_record_of_writers_in_threads_once_in_order(client):
    """As the feed promises: positions only rising, none twice, and each
    record as it is now by its last event (a change replaced before a
    stream read it is not sent: the record's latest is)."""
    listeners = [Listener(client.app) for _ in range(2)]
    for listener in listeners:
        listener.next()

    def write(n: int) -> None:
        for i in range(10):
            made = client.create(f"W{n}-{i}", f"w{n}-{i}@example.org")
            if i % 3 == 0:
                client.put(f"/users/{made['id']}", json_body={"name": f"W{n}-{i}!",
                                                             "email": made["email"]})
    writers = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(DEADLINE * 3)
        assert not writer.is_alive()
    feed = entries(client)
    assert len(feed) == 40
    for listener in listeners:
        found = []
        while not found or found[-1][0] < feed[-1]["seq"]:
            found += listener.changes(1)
        seqs = [seq for seq, _, _ in found]
        assert seqs == sorted(set(seqs)) and 40 <= len(seqs) <= 56
        latest = {d["id"]: d for _, _, d in found}      # each record as its last event says
        assert sorted(latest.values(), key=lambda d: d["seq"]) == feed


class FailingChanges:
    """A feature that wraps each collection's records so that the
    ``fails``-th call of ``changes()`` raises (a database gone mid-stream);
    every other call, and everything else, is the records' own."""

    name = "failing-changes"

    def __init__(self, fails: int) -> None:
        self.fails, self.calls = fails, 0

    def plug(self, app, storage, plugged):
        app.records_wrappers.append(lambda plural, records: _Failing(records, self))
        return self


class _Failing:
    def __init__(self, records, counter: FailingChanges) -> None:
        self._records, self._counter = records, counter

    def __getattr__(self, name):
        return getattr(self._records, name)

    def changes(self, **arguments):
        self._counter.calls += 1
        if self._counter.calls == self._counter.fails:
            raise RuntimeError("the database went away")
        return self._records.changes(**arguments)


def failures(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "usersvc" and r.levelno >= logging.ERROR]


@pytest.mark.parametrize("metrics", [False, True], ids=["plain", "metrics"])
def test_a_stream_whose_store_fails_ends_logged_as_any_failure_and_the_next_is_served(
        storage, caplog, metrics):
    """A streamed body is made after the app has returned its answer: an
    error then is the app's to log, as it logs every request that fails
    (its method, target and request id, the traceback), once; the stream
    ends (its headers are sent), its waiting place is handed back, and the
    next request, stream or not, is served. Metrics counted it as a 200."""
    if metrics:
        pytest.importorskip("prometheus_client")
    failing = FailingChanges(fails=2)       # the stream's first read, then its second fails
    app = make_app(storage, max_waiting=1, stream_seconds=30, metrics=metrics,
                   features=DEFAULT_FEATURES + (failing,))
    client = Client(app)
    try:
        listener = Listener(app, "/users/changes?after=0", environ={REQUEST_ID_KEY: "req-7"})
        assert listener.next() == {"retry": "2000", "id": f"0.{history(app)}"}
        # Its first read is made after that first block is sent: until it is
        # (found nothing), a write would be read by it, not by the one that
        # fails (seen on a loaded machine: the stream then waited for more).
        for _ in range(200):
            if failing.calls:
                break
            threading.Event().wait(0.02)
        assert failing.calls == 1
        client.create("Ada", "ada@example.org")         # wakes it: its next read fails
        assert listener.end() == []
        [logged] = failures(caplog)
        assert logged.getMessage() == ("GET '/users/changes?after=0' failed while its body "
                                       "was sent (request req-7)")
        assert logged.exc_info[0] is RuntimeError
        assert (app.waiting.now, app.waiting.streams) == (0, 0)
        again = Listener(app, "/users/changes?after=0")      # the one place is free again
        assert again.next()["retry"] == "2000"
        assert [d["user"]["name"] for _, _, d in again.changes(1)] == ["Ada"]
        app.stop_waiting()
        assert again.end() == []
        assert [e["user"]["name"] for e in entries(client)] == ["Ada"]
        assert len(failures(caplog)) == 1
        if metrics:
            requests = app.plugged["metrics"].requests()
            assert requests[("GET", "/users/changes", 200)].buckets[-1] == 3
    finally:
        app.stop_waiting()
        app.close()


def test_a_stream_whose_waiting_place_fails_to_be_handed_back_is_logged_and_ends(storage, caplog):
    """What a stream holds is freed in its body's ``close``, which the app
    calls once; a failure there (a watcher of the waiting places writing
    metrics to a full disk) is logged as the request's, not thrown at the
    server, and the place is free."""
    app = make_app(storage, max_waiting=1, stream_seconds=30)

    def watcher(n: int, stream: bool) -> None:
        if n < 0 and stream:
            raise OSError(28, "No space left on device")
    app.waiting.watchers.append(watcher)
    try:
        listener = Listener(app, environ={REQUEST_ID_KEY: "req-8"})
        listener.next()
        app.stop_waiting()
        assert listener.end() == []
        [logged] = failures(caplog)
        assert logged.getMessage() == ("GET '/users/changes' failed as its body was closed "
                                       "(request req-8)")
        assert logged.exc_info[0] is OSError
        assert app.waiting.now == 0
    finally:
        app.close()
