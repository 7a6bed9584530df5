"""Webhooks delivered by real server processes (issue 60: "nothing lost,
proven", "under every server"), to a real receiver in this process that
verifies every delivery with the ``standardwebhooks`` package
(test_webhooks' ``Receiver`` and ``verified``):

- a serve.py SIGKILLed while its deliveries fail, then started again on
  the same store (a SQLite file, PostgreSQL): every change of the feed
  delivered, with its ``webhook-id``, in order, none missing;
- two serve.py processes on one store: each change delivered once, by
  one of them;
- under waitress, granian (two workers), gunicorn (with and without
  ``--preload``) and uWSGI: deliveries signed and in order, and a SIGTERM
  with a delivery in flight (a receiver that hangs) ends the server,
  with no trace;
- and the secret in none of their output, from start to end.

Each server gets the feature and its options as a deployment would:
serve.py's ``--features``, ``--webhooks-*`` options, the WSGI servers'
``USERSVC_*`` variables. Nothing here is timed: every wait is for a
condition, with a deadline; retries are made short (``RETRIES``).
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import test_webhooks
from helpers import GRANIAN, GUNICORN, Gunicorn, Served, call, kill_group, until_it_catches
from test_webhooks import Delivery, Receiver, verified

#: The longest a wait for deliveries may last before the test fails. A
#: SIGKILLed server's leases run out first (``sender.SHORTEST_LEASE``,
#: 30 s): its successor takes its subscriptions only then.
DEADLINE = 90.0
#: Seconds before each retry: short, and long enough in all (about 8 s)
#: that a subscription failing while a server is killed and started again
#: is not disabled meanwhile.
RETRIES = "0.2,0.2,0.5,0.5,1,1,1,1,1,1,1"
#: An attempt's time-out: a receiver that hangs holds one this long.
TIMEOUT = "2"
UWSGI = GUNICORN.with_name("uwsgi")


# -- the receiver ---------------------------------------------------------------

receiver = test_webhooks.receiver      # (the fixture: a receiver, closed after)


def until_delivered(receiver: Receiver, check: Callable[[list[Delivery]], bool], what: str,
                    deadline: float = DEADLINE) -> list[Delivery]:
    """The receiver's deliveries once ``check`` holds of them (failing past ``deadline``)."""
    with receiver.changed:
        assert receiver.changed.wait_for(lambda: check(receiver.deliveries), deadline), (
            f"{what}; got {[d.id for d in receiver.deliveries]}")
        return list(receiver.deliveries)


def seq(delivery: Delivery) -> int:
    return int(delivery.payload["data"]["seq"])


def answered(entries: list[dict[str, Any]], acked: list[str] | None = None
             ) -> Callable[[list[Delivery]], bool]:
    """Whether every one of ``entries`` (the feed's) has been delivered:
    the receiver got an attempt at each (``acked``: and answered it 2xx,
    for a receiver that answers some with a failure)."""
    def check(deliveries: list[Delivery]) -> bool:
        delivered = {seq(d) for d in deliveries if acked is None or d.id in acked}
        return all(entry["seq"] in delivered for entry in entries)
    return check


def check_delivered(deliveries: list[Delivery], secret: str,
                    entries: list[dict[str, Any]]) -> None:
    """``deliveries`` are the feed's ``entries`` (``GET /users/changes``),
    as the contract says: each verified by the standard's verifier, none
    missing, in feed order (a retry, or a change delivered again after a
    crash, the same ``webhook-id`` and the same change)."""
    payloads = verified(deliveries, secret)
    seqs = [p["data"]["seq"] for p in payloads]
    assert seqs == sorted(seqs), f"in feed order: {seqs}"
    assert len({d.id.split(".", 2)[2] for d in deliveries}) == 1, "one history"
    by_id: dict[str, Any] = {}
    for delivery, payload in zip(deliveries, payloads, strict=True):
        assert delivery.id.startswith(f"users.{payload['data']['seq']}.")
        assert delivery.headers["content-type"] == "application/json"
        # Sent again: the same change (its "timestamp" is when its message
        # was made: a server started again makes it again).
        same = by_id.setdefault(delivery.id, payload)
        assert (same["type"], same["data"]) == (payload["type"], payload["data"]), delivery.id
    by_seq = {p["data"]["seq"]: p for p in payloads}
    for entry in entries:           # the feed, whole: none missing
        assert entry["seq"] in by_seq, f"change {entry['seq']} never delivered: {seqs}"
        payload = by_seq[entry["seq"]]
        assert payload["data"] == entry
        assert payload["type"] == ("user.deleted" if entry.get("deleted") else "user.changed")


# -- the servers ------------------------------------------------------------------

class Server:
    """usersvc with the webhooks feature in a child process, as ``kind``
    runs it: ``waitress`` (serve.py), ``granian`` (serve.py --server
    granian --workers 2), ``gunicorn-<worker>[-preload]``, ``uwsgi``; on
    ``storage``; what it writes (stdout and stderr) kept to the end
    (``output``)."""

    count = 0

    def __init__(self, kind: str, cwd: Path, storage: str, retries: str = RETRIES) -> None:
        self.kind, self.cwd = kind, cwd
        Server.count += 1
        self.n = Server.count
        if kind in ("waitress", "granian"):
            args = ["--storage", storage, "--features", "default,webhooks",
                    "--webhooks-allow-private", "--webhooks-retries", retries,
                    "--webhooks-timeout", TIMEOUT]
            if kind == "granian":
                args += ["--server", "granian", "--workers", "2"]
            self.served: Served | None = Served(*args, cwd=cwd)
            self.process, self.address = self.served.process, self.served.address
            self.logs = [self.served.log_path]
            self.rest = ""          # its stdout after the ready line, read once it ended
            return
        self.served, self.rest = None, ""
        env = {"USERSVC_FEATURES": "default,webhooks", "USERSVC_WEBHOOKS_ALLOW_PRIVATE": "1",
               "USERSVC_WEBHOOKS_RETRIES": retries, "USERSVC_WEBHOOKS_TIMEOUT": TIMEOUT}
        if kind.startswith("gunicorn"):
            _, worker, *preload = kind.split("-")
            gunicorn = Gunicorn(cwd, storage, worker, bool(preload), **env)
            self.process, self.address, self.logs = (gunicorn.process, gunicorn.address,
                                                     [gunicorn.log_path])
        elif kind == "uwsgi":
            log_path = cwd / f"uwsgi-{self.n}.log"
            port = _free_port()
            with open(log_path, "w") as log:
                self.process = subprocess.Popen(
                    [str(UWSGI), "--http", f"127.0.0.1:{port}", "--module", "usersvc.wsgi:app",
                     "--master", "--processes", "2", "--threads", "4", "--die-on-term"],
                    cwd=cwd, env={**os.environ, "USERSVC_STORAGE": storage, **env},
                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            self.address, self.logs = ("127.0.0.1", port), [log_path]
            self._until_it_answers()
            until_it_catches(self.process.pid, signal.SIGTERM)
        else:
            raise ValueError(kind)

    def _until_it_answers(self) -> None:
        end = time.monotonic() + 60
        while time.monotonic() < end:
            with contextlib.suppress(OSError):
                if call(self.address, "GET", "/healthz")[0] == 200:
                    return
            if self.process.poll() is not None:
                break
            threading.Event().wait(0.05)
        self._kill()
        raise AssertionError(f"{self.kind} did not start:\n{self.output()}")

    def _kill(self) -> None:
        """SIGKILL to it and its workers: its group, when it has one of its
        own (gunicorn shares the tests' own: its workers end with it)."""
        if self.kind.startswith("gunicorn"):
            self.process.kill()
            self.process.wait()
        else:
            kill_group(self.process)

    def output(self) -> str:
        """All it wrote so far (all of it once it ended)."""
        return "".join(path.read_text() for path in self.logs) + self.rest

    def kill(self) -> None:
        """SIGKILL: it ends at once, as in a crash."""
        self.process.send_signal(signal.SIGKILL)
        self._ended(10)

    def stop(self, deadline: float = 20) -> int:
        """SIGTERM, and its exit status (failing if it has not ended
        within ``deadline`` seconds: a hang)."""
        if self.served is not None:
            self.served.terminate()
        else:
            self.process.send_signal(signal.SIGTERM)
        return self._ended(deadline)

    def _ended(self, deadline: float) -> int:
        try:
            status = self.process.wait(timeout=deadline)
        except subprocess.TimeoutExpired:
            self._kill()
            raise AssertionError(f"{self.kind} did not stop within {deadline} s:\n"
                                 f"{self.output()[-4000:]}") from None
        if self.served is not None and self.process.stdout is not None:
            self.rest = self.process.stdout.read()
            self.process.stdout.close()
        return status

    def end(self) -> None:
        """Nothing left running (a test that failed midway)."""
        if self.process.poll() is None:
            self._kill()
        if self.served is not None and self.process.stdout is not None:
            self.process.stdout.close()


def _free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextlib.contextmanager
def started(kind: str, cwd: Path, storage: str) -> Iterator[Server]:
    server = Server(kind, cwd, storage)
    try:
        yield server
    finally:
        server.end()


@pytest.fixture(params=["sqlite-file", "postgres"])
def shared_url(request: Any, tmp_path: Path) -> str:
    """A store several server processes open, one after another or at once."""
    if request.param == "postgres":
        return str(request.getfixturevalue("postgres_url"))
    return f"sqlite:///{tmp_path}/users.db"


# -- through the API ------------------------------------------------------------

def subscribe(at: Any, url: str) -> dict[str, Any]:
    status, _, body = call(at, "POST", "/webhooks", {"url": url})
    assert status == 201, body
    made: dict[str, Any] = json.loads(body)
    assert made["secret"].startswith("whsec_")
    return made


def state(at: Any, subscription: dict[str, Any]) -> dict[str, Any]:
    status, _, body = call(at, "GET", f"/webhooks/{subscription['id']}")
    assert status == 200, body
    shown: dict[str, Any] = json.loads(body)
    return shown


def feed(at: Any) -> list[dict[str, Any]]:
    status, _, body = call(at, "GET", "/users/changes?after=0&limit=1000")
    assert status == 200, body
    entries: list[dict[str, Any]] = json.loads(body)
    return entries


def changes(through: list[Any], first: int, creates: int, updates: int, deletes: int) -> None:
    """``creates`` users made (numbered from ``first``), then the first
    ``updates`` of them changed and the next ``deletes`` deleted, each
    write through the next of the servers at ``through``, in turn."""
    writes = iter(range(creates + updates + deletes))

    def at() -> Any:
        return through[next(writes) % len(through)]
    ids = []
    for n in range(first, first + creates):
        status, _, body = call(at(), "POST", "/users",
                               {"name": f"User {n}", "email": f"user{n}@example.org"})
        assert status == 201, body
        ids.append(json.loads(body)["id"])
    for n, user in zip(range(first, first + updates), ids, strict=False):
        status, _, body = call(at(), "PUT", f"/users/{user}",
                               {"name": f"Changed {n}", "email": f"user{n}@example.org"})
        assert status == 200, body
    for user in ids[updates:updates + deletes]:
        assert call(at(), "DELETE", f"/users/{user}")[0] == 204


def until_position(at: Any, subscription: dict[str, Any], last: int) -> None:
    """Until the subscription's position is ``last`` (its deliveries written)."""
    end = time.monotonic() + DEADLINE
    while (shown := state(at, subscription))["delivered"] != {"users": last}:
        assert time.monotonic() < end, f"the position never reached {last}: {shown}"
        threading.Event().wait(0.05)


def no_secret_in(servers: list[Server], secret: str) -> None:
    """The secret, and its base64 body, in nothing any server wrote."""
    for server in servers:
        text = server.output()
        assert text, f"{server.kind} wrote nothing: its output was not captured"
        for shown in (secret, secret.removeprefix("whsec_")):
            assert shown not in text, f"{server.kind} wrote the secret"


def stopped_cleanly(server: Server) -> None:
    assert server.stop() == 0, server.output()[-4000:]
    assert "Traceback" not in server.output(), server.output()


# -- nothing lost: SIGKILL while deliveries fail ---------------------------------------

def test_a_server_killed_while_deliveries_fail_loses_none(tmp_path, shared_url, receiver):
    """Five changes acknowledged, then the receiver answers 500; the
    server is SIGKILLed while it retries, started again on the same store,
    more changes made; once the receiver answers 2xx, every change of the
    feed has been delivered, in order, each with its webhook-id."""
    failing = threading.Event()
    failing.set()
    acked: list[str] = []           # the webhook-ids answered 2xx, in turn

    def answer(delivery: Delivery, before: int) -> tuple[int, dict[str, str]]:
        if delivery.id in acked or len(acked) < 5 or not failing.is_set():
            if delivery.id not in acked:
                acked.append(delivery.id)
            return 200, {}
        return 500, {}
    receiver.answer = answer
    first = Server("waitress", tmp_path, shared_url)
    servers = [first]
    try:
        subscription = subscribe(first.address, receiver.url())
        changes([first.address], 0, creates=10, updates=3, deletes=2)
        # Failing: an attempt refused, and tried again (the same message).
        until_delivered(receiver, lambda got: any(
            sum(d.id == other.id for other in got) >= 2 and d.id not in acked for d in got),
            "a change failing, and tried again")
        first.kill()
        assert first.process.returncode == -signal.SIGKILL
        second = Server("waitress", tmp_path, shared_url)
        servers.append(second)
        shown = state(second.address, subscription)
        assert shown["enabled"] and shown["failures"] >= 1, shown
        # The five acknowledged: kept (each written before the next was sent).
        assert shown["delivered"] == {"users": int(acked[4].split(".")[1])}, shown
        failing.clear()
        changes([second.address], 10, creates=3, updates=1, deletes=1)
        entries = feed(second.address)
        until_delivered(receiver, answered(entries, acked), "every change of the feed")
        until_position(second.address, subscription, entries[-1]["seq"])
        check_delivered(list(receiver.deliveries), subscription["secret"], entries)
        stopped_cleanly(second)
    finally:
        for server in servers:
            server.end()
    assert "webhook 1: users." in first.output()     # (its failures logged: searched too)
    no_secret_in(servers, subscription["secret"])


# -- several processes on one store: each change delivered by one ------------------

def test_two_servers_on_one_store_deliver_each_change_once(tmp_path, shared_url, receiver):
    """Writes through both; one subscription: each change delivered once
    (no crash, no lease lost: the contract allows no second delivery)."""
    with started("waitress", tmp_path, shared_url) as one, \
            started("waitress", tmp_path, shared_url) as other:
        subscription = subscribe(one.address, receiver.url())
        changes([one.address, other.address], 0, creates=12, updates=5, deletes=3)
        entries = feed(other.address)
        until_delivered(receiver, answered(entries), "every change of the feed")
        until_position(other.address, subscription, entries[-1]["seq"])
        deliveries = list(receiver.deliveries)
        check_delivered(deliveries, subscription["secret"], entries)
        ids = [d.id for d in deliveries]
        assert sorted({i for i in ids if ids.count(i) > 1}) == [], "delivered twice"
        stopped_cleanly(one)
        stopped_cleanly(other)
    no_secret_in([one, other], subscription["secret"])


# -- under every server ------------------------------------------------------------

def _installed(kind: str) -> bool:
    program = {"granian": GRANIAN, "uwsgi": UWSGI}.get(kind.split("-")[0], GUNICORN)
    return kind == "waitress" or program.exists()


#: Each server, and those that build the app in a master and fork their
#: workers from it (``--preload``, uWSGI): the sender starts in the
#: process that serves, never in the master (copied mid-write, its
#: threads left a worker's SQLite writes held).
SERVERS = ["waitress", "granian", "gunicorn-gthread", "gunicorn-gthread-preload",
           "gunicorn-sync-preload", "uwsgi"]


@pytest.mark.parametrize("kind", SERVERS)
def test_deliveries_under_each_server_and_a_sigterm_with_one_in_flight(tmp_path, kind,
                                                                       receiver):
    if not _installed(kind):
        pytest.skip(f"{kind.split('-')[0]} is not installed (pip install -e '.[test]')")
    hanging = threading.Event()
    receiver.answer = lambda delivery, before: None if hanging.is_set() else (200, {})
    with started(kind, tmp_path, f"sqlite:///{tmp_path}/users.db") as server:
        subscription = subscribe(server.address, receiver.url())
        changes([server.address], 0, creates=4, updates=1, deletes=1)
        entries = feed(server.address)
        deliveries = until_delivered(receiver, answered(entries),
                                     "every change of the feed")
        until_position(server.address, subscription, entries[-1]["seq"])
        check_delivered(deliveries, subscription["secret"], entries)
        ids = [d.id for d in deliveries]
        assert len(ids) == len(set(ids)), f"delivered twice: {ids}"
        # A receiver that hangs: a delivery in flight as the server is told to stop.
        hanging.set()
        changes([server.address], 10, creates=1, updates=0, deletes=0)
        until_delivered(receiver, lambda got: len(got) > len(deliveries), "an attempt in flight")
        stopped_cleanly(server)
    no_secret_in([server], subscription["secret"])
