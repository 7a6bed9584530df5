"""Helpers for the tests that talk HTTP to a real server."""
from __future__ import annotations

import contextlib
import http.client
import itertools
import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import waitress
from prometheus_client.parser import text_string_to_metric_families
from waitress import wasyncore
from webob import Request

from usersvc.serving.limits import answer_errors_as_problems, server_limits
from usersvc.storage import Conflict

ROOT = Path(__file__).resolve().parent.parent
ADA = {"name": "Ada Lovelace", "email": "ada@example.org"}
ADA_XML = "<user><name>Ada Lovelace</name><email>ada@example.org</email></user>"
GUNICORN = Path(sys.executable).with_name("gunicorn")
GRANIAN = Path(sys.executable).with_name("granian")


def call(address, method, path, body=None, headers=None):
    """One request on a new connection: (status, headers, body)."""
    conn = http.client.HTTPConnection(*address, timeout=30)
    try:
        payload = json.dumps(body) if isinstance(body, dict) else body
        headers = dict(headers or {})
        if isinstance(body, dict):
            headers.setdefault("Content-Type", "application/json")
        conn.request(method, path, body=payload, headers=headers)
        response = conn.getresponse()
        return response.status, response.headers, response.read()
    finally:
        conn.close()


#: How long a raced action may take, at most, before the test fails as a
#: hang (a deadlock): far above what the slowest machine needs.
DEADLINE = 60.0


def writes_on(connections):
    """The connection a SQLite store's writes are made on: the fast
    build's writer's own (opened by its first write, made here), or the
    plain build's ``Connections.writes``."""
    connections.commit(lambda db: None)
    writer = getattr(connections, "writer", None)
    return connections.writes() if writer is None else writer.db


def race(n, action, deadline=DEADLINE):
    """``action(i)`` for i in range(n), on n threads released together (a
    barrier widens the race; never a sleep); the results in order, with an
    exception raised in place of its result. A thread still running after
    ``deadline`` seconds fails the test (it is left behind, a daemon: a
    hang fails a test and never hangs the suite)."""
    barrier = threading.Barrier(n)
    results = [None] * n

    def run(i):
        try:
            barrier.wait(deadline)
            results[i] = action(i)
        except Exception as e:   # collected, then asserted on
            results[i] = e

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(n)]
    for thread in threads:
        thread.start()
    end = time.monotonic() + deadline
    for thread in threads:
        thread.join(max(0.0, end - time.monotonic()))
    hung = sum(thread.is_alive() for thread in threads)
    if hung:
        pytest.fail(f"{hung} of {n} raced threads still running after {deadline} s: a hang",
                    pytrace=False)
    return results


def kill_group(process: subprocess.Popen) -> None:
    """Kill a server that did not stop, and every process it started (its
    workers): the test fails, and nothing is left running."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


#: Python, then ``exec`` of the rest of the command with SIGINT and SIGQUIT
#: at their defaults, as a terminal starts a program: a suite run by a
#: non-interactive shell in the background (``pytest ... &``) has them
#: ignored (POSIX), and a child would inherit that: Ctrl-C's SIGINT could
#: not stop it (seen: test_serve_py_stops_on_sigint, only in such runs).
AS_A_TERMINAL_STARTS_IT = [sys.executable, "-c", (
    "import os, signal, sys; "
    "[signal.signal(s, signal.SIG_DFL) for s in (signal.SIGINT, signal.SIGQUIT)]; "
    "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])")]


class Served:
    """serve.py (or another ``script`` that serves as it does) in a child
    process, with the URL it printed; its stderr (the logs) goes to a file,
    read by ``log()``."""

    count = itertools.count()

    def __init__(self, *args, cwd, port=0, script=ROOT / "serve.py"):
        self.log_path = Path(cwd) / f"serve-{next(self.count)}.log"
        with open(self.log_path, "w") as log:      # (the child keeps its own copy)
            self.process = subprocess.Popen(
                [*AS_A_TERMINAL_STARTS_IT, str(script), "--port", str(port), *args],
                cwd=cwd, stdout=subprocess.PIPE, stderr=log, text=True,
                start_new_session=True,     # (its own group: a server that hangs is killed whole)
                env={**os.environ, "PYTHONFAULTHANDLER": "1"})      # (stopped_hung's stacks)
        self.line = self.process.stdout.readline()
        match = re.match(r"usersvc serving http://127\.0\.0\.1:(\d+)(/\S*) with storage (\S+)"
                         r"(?: and metrics at http://\S+:(\d+)/metrics)?$", self.line)
        if not match:
            self.process.wait(timeout=15)
            self._close()
            raise AssertionError((self.line, self.log()))
        self.address = ("127.0.0.1", int(match.group(1)))
        self.prefix, self.storage = match.group(2), match.group(3)
        #: Where --metrics-port serves /metrics, if it was given.
        self.metrics_address = match.group(4) and ("127.0.0.1", int(match.group(4)))

    def log(self) -> str:
        return self.log_path.read_text()

    signalled = False

    def terminate(self, sig=signal.SIGTERM) -> None:
        """Tell the server to stop (once: a second SIGTERM may find its
        handler gone, and end it before it is done)."""
        if not self.signalled:
            self.signalled = True
            self.process.send_signal(sig)

    def stop(self, sig=signal.SIGTERM):
        self.terminate(sig)
        try:
            return self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the server did not stop within 15 s of {sig!r}; where each "
                                 f"of its threads was:\n{self.stopped_hung()}") from None
        finally:
            self._close()

    def stopped_hung(self) -> str:
        """Kill a server that hangs, its threads' stacks first (SIGABRT:
        Python's fault handler writes them to the log), and its log's end,
        after the signals it ignores and catches (Linux's /proc)."""
        status = Path(f"/proc/{self.process.pid}/status")
        masks = ([line for line in status.read_text().splitlines()
                  if line.startswith(("SigIgn", "SigCgt", "SigBlk"))] if status.exists() else [])
        self.process.send_signal(signal.SIGABRT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)
        kill_group(self.process)
        return f"{masks}\n{self.log()[-6000:]}"

    def _close(self):
        self.process.stdout.close()


def page_shapes(name_at, email_at, email, q):
    """Every shape of page a store asks its database for, for query-plan
    tests: each order, both ways, from the start and from a position; the
    e-mail filter; the search ``q`` in every order and with the filter."""
    return [
        *[dict(sort=sort, reverse=reverse, **start)
          for sort, at in [("id", 5), ("name", name_at), ("email", email_at)]
          for reverse in (False, True) for start in ({}, {"after": at})],
        dict(email=email),
        dict(email=email, after=5),
        *[dict(q=q, sort=sort, reverse=reverse) for sort in ("id", "name", "email")
          for reverse in (False, True)],
        dict(q=q, sort="name", after=name_at),
        dict(q=q, email=email),
    ]


#: Users as the release before sorting and search stored them (schema
#: version 1: name, email, email_key, version).
RELEASE_1_USERS = [("Ada Lovelace", "Ada@example.org", "ada@example.org"),
                   ("Émile Zola-Ada", "ez@example.org", "ez@example.org"),
                   ("bob", "bob@example.org", "bob@example.org")]


def check_sorted_and_searched_after_migration(store):
    """``RELEASE_1_USERS``, migrated, are found by name order and by search,
    and a rename moves the search index with it."""
    assert [u.name for u in store.list(sort="name")] == ["Ada Lovelace", "bob", "Émile Zola-Ada"]
    assert [u.id for u in store.list(q="ADA")] == [1, 2]
    assert store.count(q="zol") == 1 and store.count(q="ez@") == 1
    store.update(2, name="Émile")
    assert [u.id for u in store.list(q="ada")] == [1]


#: A SQLite file made by usersvc 0.1.0 (``data/make_release_0_1_0.py``; its
#: PostgreSQL dump beside it, ``.sql``).
RELEASE_0_1_0 = Path(__file__).parent / "data" / "release-0.1.0.db"


def check_release_0_1_0(store):
    """The users of ``RELEASE_0_1_0``, opened by this release: every user at
    its version (its ETags still valid), the id high-water mark above the
    deleted ids, the feed's positions and tombstones, the indexes and the
    search (folded now); and the next change takes the next position."""
    assert [(u.id, u.name, u.email, u.version) for u in store.list()] == [
        (1, "Ada King", "Ada@Example.org", 2), (2, "Émile Zola-Ada", "ez@example.org", 1),
        (4, "Grace B. Hopper", "GRACE@example.org", 3), (5, "Ünïcødé Name", "u@example.org", 1)]
    assert store.last_id() == 6 and store.position() == 11
    assert [(c.seq, c.id, c.record and c.record.version) for c in store.changes()] == [
        (2, 2, 1), (5, 5, 1), (8, 4, 3), (9, 3, None), (10, 6, None), (11, 1, 2)]
    assert [u.id for u in store.list(sort="name")] == [1, 4, 2, 5]
    assert [u.id for u in store.list(sort="email", reverse=True)] == [5, 4, 2, 1]
    assert [u.id for u in store.list(q="ADA")] == [1, 2] and store.count(q="grace@") == 1
    # Indexed again, once, folded (docs/api.md, "Searching"): 0.1.0 kept "ünïcødé".
    assert [u.id for u in store.list(q="unicode")] == [5] and store.count(q="emile") == 1
    assert [u.id for u in store.list(email="grace@EXAMPLE.org")] == [4]
    with pytest.raises(Conflict):
        store.create(name="Again", email="ada@example.ORG")
    created = store.create(name="New", email="new@example.org")    # PostgreSQL's refused
    assert created.id >= 7                                          # insert spent id 7
    assert [(c.seq, c.id) for c in store.changes(after=11)] == [(12, created.id)]


def load_release_dump(url):
    """Load ``RELEASE_0_1_0``'s PostgreSQL dump into the schema ``url`` names."""
    import psycopg

    from usersvc.storage.postgres.store import split_url
    with open(RELEASE_0_1_0.with_suffix(".sql"), encoding="utf-8") as dump:
        text = dump.read().replace("usersvc_release_0_1_0.", "")
    with psycopg.connect(split_url(url)[0], autocommit=True) as db:
        for statement in _statements(text):
            db.execute(statement)


def _statements(dump):
    """A plain pg_dump's statements: no psql commands, no schema of its own
    (the test's search path takes them), split at each ";" that ends a line
    outside a $$ body."""
    statements, current, in_body = [], [], False
    for line in dump.splitlines():
        if line.startswith(("\\", "--")) or "CREATE SCHEMA" in line or not line.strip():
            continue
        if "set_config('search_path'" in line:
            continue
        current.append(line)
        in_body ^= line.count("$$") % 2 == 1
        if not in_body and line.rstrip().endswith(";"):
            statements.append("\n".join(current))
            current = []
    return statements



_LINK = re.compile(r'<([^>]*)>\s*;\s*rel="([^"]*)"')


def link_to(headers, rel="next"):
    """The URL of the link with relation ``rel`` (RFC 8288) in a response's
    ``Link`` headers (WebOb's, http.client's or httpx's headers, or one
    header value), or ``None``. A page links to the next page and to the
    change feed: a client picks the link by its relation, never by place."""
    if isinstance(headers, str):
        values = [headers]
    elif hasattr(headers, "getall"):            # WebOb
        values = headers.getall("Link")
    elif hasattr(headers, "get_all"):           # http.client
        values = headers.get_all("Link") or []
    else:                                       # httpx
        values = headers.get_list("Link")
    found = {relation: url for value in values for url, relation in _LINK.findall(value)}
    return found.get(rel)


def check_positions_after_migration(store):
    """``RELEASE_1_USERS``, migrated to the change feed, have positions in
    id order, and the next change takes the next one."""
    assert [(c.seq, c.id) for c in store.changes(after=0)] == [(1, 1), (2, 2), (3, 3)]
    assert store.position() == 3
    store.update(2)         # the same fields, a new version: a change all the same
    assert [(c.seq, c.id) for c in store.changes(after=0)] == [(1, 1), (3, 3), (4, 2)]


def shared_url(request, tmp_path) -> str:
    """A store several server processes share, by a ``params=["sqlite",
    "postgres"]`` fixture's param: a SQLite file, or a PostgreSQL schema of
    the test's own. A module's ``storage`` fixture: ``storage =
    pytest.fixture(params=["sqlite", "postgres"], name="storage")(shared_url)``."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/users.db"
    return request.getfixturevalue("postgres_url")


def long_poll(at, wait: int) -> tuple[threading.Thread, list]:
    """A thread, started, that asks for the users' changes after the last
    position, waiting up to ``wait`` seconds; and the list its answer lands in."""
    _, _, feed = call(at, "GET", "/users/changes?limit=1000")
    entries = json.loads(feed)
    last = entries[-1]["seq"] if entries else 0
    answered: list = []
    thread = threading.Thread(target=lambda: answered.append(
        call(at, "GET", f"/users/changes?after={last}&wait={wait}")))
    thread.start()
    return thread, answered


def clone_root(folder: Path) -> Path:
    """``folder`` made to look like a fresh clone's root, where the docs'
    commands are run as written: each of the repository's top-level files
    and folders linked there (``examples/``, ``usersvc/``, ``serve.py``...),
    and none of what a run leaves (``users.db``, ``metrics``: written to
    ``folder``, not to the repository)."""
    for entry in ROOT.iterdir():
        if not entry.name.startswith(".") and not entry.name.endswith(".egg-info") and (
                entry.name not in ("users.db", "library.db", "tasks.db", "metrics", "build")):
            (folder / entry.name).symlink_to(entry)
    return folder


def scraped(address) -> dict[tuple[str, tuple], float]:
    """Every sample of one scrape, by name and labels."""
    status, _, text = call(address, "GET", "/metrics")
    assert status == 200
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text.decode()) for s in family.samples}


def until_waiting(address, count: int = 1) -> None:
    """Until the metrics at ``address`` (``--metrics-port``) say ``count``
    requests wait for changes, streams among them (bounded)."""
    for _ in range(200):
        if sum(v for (name, _), v in scraped(address).items()
               if name == "usersvc_feed_waiting_requests") == count:
            return
        threading.Event().wait(0.05)
    raise AssertionError(f"{count} requests never waited")


def until_it_catches(pid: int, signum: int, deadline: float = 30) -> None:
    """Until process ``pid`` has a handler for ``signum`` (Linux: its
    /proc status's SigCgt; elsewhere at once). uWSGI's master ignores
    SIGTERM and SIGINT while it starts (loading the app, spawning its
    workers) and catches them only once it has started: a stop sent before
    that is dropped, and on a loaded machine the window is long enough for
    a test's SIGTERM to land in it (issue 57, item 23)."""
    status = Path(f"/proc/{pid}/status")
    if not status.exists():
        return
    bit = 1 << (signum - 1)
    for _ in range(int(deadline / 0.02)):
        caught = next(line for line in status.read_text().splitlines()
                      if line.startswith("SigCgt:"))
        if int(caught.split()[1], 16) & bit:
            return
        threading.Event().wait(0.02)
    raise AssertionError(f"process {pid} never caught signal {signum}")


#: serve.py, as a command to ``run``.
SERVE = [sys.executable, str(ROOT / "serve.py")]


def run(command, cwd, *args):
    """``command`` with ``args`` run to its end in ``cwd``, its output kept."""
    # The timeout guards against a hang; nothing here is timed.
    return subprocess.run([*command, *args], cwd=cwd, capture_output=True, text=True, timeout=60)


def one_line(result, says):
    """Exit status 2, and stderr one line that says ``says``, no trace."""
    lines = result.stderr.splitlines()
    assert result.returncode == 2, result
    assert len(lines) == 1 and says in lines[0], result.stderr
    assert "Traceback" not in result.stderr


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Gunicorn:
    """``gunicorn usersvc.wsgi:app`` on a free port, its log in a file."""

    def __init__(self, cwd: Path, storage: str, worker: str, preload: bool, **env: str) -> None:
        self.log_path = cwd / f"gunicorn-{worker}-{preload}.log"
        args = [str(GUNICORN), "--bind", "127.0.0.1:0", "--workers", "2", "--worker-class", worker,
                "--timeout", "20", "--graceful-timeout", "10", "--log-level", "info",
                *(["--threads", "4"] if worker == "gthread" else []),
                *(["--preload"] if preload else []), "usersvc.wsgi:app"]
        environ = {**os.environ, "USERSVC_STORAGE": storage, **env}
        with open(self.log_path, "w") as log:
            self.process = subprocess.Popen(args, cwd=cwd, env=environ, stdout=log,
                                            stderr=subprocess.STDOUT)
        self.address = ("127.0.0.1", self._port())

    def _port(self) -> int:
        """The port, once a worker has booted (read from the log, bounded)."""
        for _ in range(600):
            text = self.log()
            found = re.search(r"Listening at: http://127\.0\.0\.1:(\d+)", text)
            if found and "Booting worker" in text:
                port = int(found.group(1))
                try:
                    if call(("127.0.0.1", port), "GET", "/healthz")[0] == 200:
                        return port
                except OSError:
                    pass
            if self.process.poll() is not None:
                raise AssertionError(f"gunicorn exited at start:\n{text}")
            threading.Event().wait(0.05)
        raise AssertionError(f"gunicorn did not start:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text()

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=30)


class Granian:
    """``granian --interface wsgi usersvc.wsgi:app`` (two workers, four
    blocking threads each, failed workers respawned, as docs/deploying.md
    runs it) on a free port, its log in a file."""

    def __init__(self, cwd: Path, storage: str, *extra: str, **env: str) -> None:
        self.log_path = cwd / "granian.log"
        port = free_port()
        args = [str(GRANIAN), "--interface", "wsgi", "--host", "127.0.0.1", "--port", str(port),
                "--workers", "2", "--blocking-threads", "4", "--respawn-failed-workers",
                "--workers-kill-timeout", "10", *extra, "usersvc.wsgi:app"]
        environ = {**os.environ, "USERSVC_STORAGE": storage, **env}
        with open(self.log_path, "w") as log:
            self.process = subprocess.Popen(args, cwd=cwd, env=environ, stdout=log,
                                            stderr=subprocess.STDOUT, start_new_session=True)
        self.address = ("127.0.0.1", port)
        for _ in range(600):        # until both workers answer (bounded)
            if self.log().count("Started worker") >= 2:
                try:
                    if call(self.address, "GET", "/healthz")[0] == 200:
                        return
                except OSError:
                    pass
            if self.process.poll() is not None:
                raise AssertionError(f"granian exited at start:\n{self.log()}")
            threading.Event().wait(0.05)
        kill_group(self.process)
        raise AssertionError(f"granian did not start:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text()

    def workers(self) -> list[int]:
        """The process ids of the workers running now (the last spawned of each)."""
        spawned = dict(re.findall(r"Spawning (worker-\d+) with PID: (\d+)", self.log()))
        return [int(pid) for pid in spawned.values()]

    signalled = False

    def terminate(self) -> None:
        """SIGTERM, once (a second may end granian before it is done)."""
        if not self.signalled:
            self.signalled = True
            self.process.send_signal(signal.SIGTERM)

    def stop(self, timeout: float = 30) -> int:
        self.terminate()
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(self.process)
            raise


def serve(app, host="127.0.0.1", threads=4, port=0):
    """``app`` under waitress on ``port`` (0: a free one), in a thread of
    this process, as serve.py serves it (its limits); ``stop`` stops it."""
    server = answer_errors_as_problems(waitress.create_server(
        app, host=host, port=port, threads=threads, **server_limits(getattr(app, "schemas", ()))))
    server.served = app             # (waitress keeps it wrapped: ``stop`` ends its streams)
    server.thread = threading.Thread(target=server.run, daemon=True)
    server.thread.start()
    return server


def stop(server) -> None:
    """What serve.py's exit does: the app's waiting requests and streams
    answered, every task done, then every connection closed with the
    server, and its loop ended. A browser's keep-alive connection left
    open would take its next request to a server with no threads (a page
    reconnecting after a restart waited for ever).

    The closing is done by waitress's loop thread (sockets closed under
    its select would fail there), asked through its trigger, a pipe, with
    the trigger's lock held across both the thunk's append and the byte's
    write: ``pull_trigger`` takes it for the append alone, and a loop
    already woken by a task's pull could run the thunk, closing the pipe,
    before the write, which then failed (EBADF) or, the number reused
    meanwhile, wrote its byte to whatever the process had opened under it
    (a PostgreSQL connection once: "invalid frontend message type 120")."""
    if hasattr(server.served, "stop_waiting"):
        server.served.stop_waiting()
    server.task_dispatcher.shutdown(timeout=10)
    trigger = server.trigger
    with trigger.lock:
        trigger.thunks.append(lambda: wasyncore.close_all(server._map))
        trigger._physical_pull()
    server.thread.join(timeout=10)
    assert not server.thread.is_alive(), "waitress's loop did not end"


def within(deadline, call):
    """``call()``'s result; a call still running after ``deadline`` seconds
    fails the test (a hang fails it; it never hangs the suite)."""
    done: list = []
    thread = threading.Thread(target=lambda: done.append(call()), daemon=True)
    thread.start()
    thread.join(deadline)
    if thread.is_alive():
        pytest.fail(f"a request did not answer within {deadline} s", pytrace=False)
    assert done, "the request raised (see the thread's traceback above)"
    return done[0]


#: Seconds any block of a stream may take to come: a hang, not a time.
STREAM_DEADLINE = 10


class _Stream:
    """A stream of the change feed (Server-Sent Events) read in a thread
    from ``chunks`` (bytes, as they come), each block (up to a blank line)
    parsed into its fields: ``{"id": "3", "event": "change", "data":
    "..."}``, a comment as ``{"": "keep-alive"}``."""

    def _start(self, chunks) -> None:
        self.blocks: queue.Queue = queue.Queue()
        self.ended = threading.Event()
        self.thread = threading.Thread(target=self._read, args=(chunks,), daemon=True)
        self.thread.start()

    def _read(self, chunks) -> None:
        buffer = b""
        try:
            for chunk in chunks:
                buffer += chunk
                while b"\n\n" in buffer:
                    block, buffer = buffer.split(b"\n\n", 1)
                    self.blocks.put(_parsed(block.decode()))
            assert buffer == b"", buffer         # every block ends with a blank line
        except (OSError, http.client.HTTPException):    # (the connection shut: ``close``)
            pass
        finally:
            self.ended.set()

    def next(self) -> dict:
        try:
            return self.blocks.get(timeout=STREAM_DEADLINE)
        except queue.Empty:
            pytest.fail(f"no event within {STREAM_DEADLINE} s", pytrace=False)

    def changes(self, n: int) -> list[tuple[int, str, dict]]:
        """The next ``n`` events (keep-alives passed over): (position, event, data)."""
        found = []
        while len(found) < n:
            block = self.next()
            if "data" in block:
                found.append((seq_of(block["id"]), block["event"], json.loads(block["data"])))
        return found

    def _ended(self, deadline: float) -> list[dict]:
        """Every block left once the stream has ended (within ``deadline``)."""
        if not self.ended.wait(deadline):
            pytest.fail(f"the stream did not end within {deadline} s", pytrace=False)
        self.thread.join(deadline)
        rest = []
        while not self.blocks.empty():
            rest.append(self.blocks.get())
        return rest


def seq_of(place: str) -> int:
    """The position a place names (an event's id, a link's after: ``usersvc.places``)."""
    return int(place.split(".")[0])


def _parsed(block: str) -> dict:
    fields: dict = {}
    for line in block.split("\n"):
        name, _, value = line.partition(":")
        fields[name] = value[1:] if value.startswith(" ") else value
    return fields


class Listener(_Stream):
    """A stream from ``app``, in process (``target``, with ``Accept:
    text/event-stream``), as a WSGI server reads a body."""

    def __init__(self, app, target: str = "/users/changes", headers=None,
                 threads: bool = True, method: str = "GET", environ=None) -> None:
        req = Request.blank(target, method=method,
                            headers={"Accept": "text/event-stream", **(headers or {})})
        req.environ["wsgi.multithread"] = threads
        req.environ.update(environ or {})
        self.status, self.headers = "", {}

        def start_response(status, headers, exc_info=None):
            self.status, self.headers = status, dict(headers)
        self.body = app(req.environ, start_response)
        self.left = threading.Event()
        self._start(self._written())

    def _written(self):
        """The body's chunks as a server writes them; once the client has
        left (``leave``), the next write fails and the server closes the body."""
        for chunk in self.body:
            if self.left.is_set():
                self.body.close()
                return
            yield chunk

    def leave(self) -> None:
        """The client goes away without a word: the stream's next write fails."""
        self.left.set()

    def end(self) -> list[dict]:
        """Every block until the stream ends (within the deadline); then closed,
        as a server closes a body."""
        rest = self._ended(STREAM_DEADLINE)
        getattr(self.body, "close", lambda: None)()
        return rest


def turned_away(most: int) -> dict:
    """The block a stream turned away is sent (every one of the ``most``
    waiting places taken), then the end: come back after the retry."""
    detail = (f"{most} requests are already waiting for changes, as many as may wait at "
              f"once. Come back after the retry." if most else
              "This server lets no request wait for changes (its max_waiting is 0). "
              "Read the feed without waiting to follow it.")
    return {"retry": "2000", "event": "busy",
            "data": json.dumps({"detail": detail, "places": most})}


class StreamOverHTTP(_Stream):
    """``GET path`` with ``Accept: text/event-stream`` on a connection of its own."""

    def __init__(self, address, path: str = "/users/changes", headers=None) -> None:
        self.conn = http.client.HTTPConnection(*address, timeout=60)
        self.conn.request("GET", path, headers={"Accept": "text/event-stream", **(headers or {})})
        self.sock = self.conn.sock      # (the connection lets go of it when told it will close)
        self.response = self.conn.getresponse()
        self._start(iter(lambda: self.response.read1(65536), b""))

    def end(self, deadline: float = STREAM_DEADLINE) -> None:
        self._ended(deadline)
        self.conn.close()

    def close(self) -> None:
        """The client goes away: its side of the connection shut, its reader ended."""
        self.sock.shutdown(socket.SHUT_RDWR)
        self.end()


def placed(address, path: str = "/users/changes") -> StreamOverHTTP:
    """A stream that has a waiting place (its first block read: ``retry:``
    and where it starts), asked for again while it is turned
    away (``turned_away``), as a page does after the retry (here a moment
    later): the place of a client that has gone comes back to the next
    request that asks once the stream holding it has been nudged to write."""
    deadline = time.monotonic() + STREAM_DEADLINE
    while True:
        stream = StreamOverHTTP(address, path)
        first = stream.next()
        if first.get("event") != "busy":
            return stream
        stream.end()
        if time.monotonic() > deadline:
            pytest.fail(f"no waiting place within {STREAM_DEADLINE} s", pytrace=False)
        threading.Event().wait(0.05)
