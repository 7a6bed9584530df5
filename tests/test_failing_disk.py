"""A full or failing disk is answered, not crashed on (usersvc/storage:
``WritesFailing``, ``WriteHealth``; sqlite_connections.py, postgres.py).

Every write that a full disk, an I/O error or a read-only database stops is
a 503 problem with ``Retry-After``, and nothing of it is kept (nor of the
other writes of its group); reads go on; the log says so once, at ERROR,
and once more when a write works again; ``/healthz`` is 503 meanwhile; and
writes work again by themselves once the cause is gone.

The causes are real where the machine allows: SQLite's own size limit
(``PRAGMA max_page_count``, SQLITE_FULL) and ``query_only`` (SQLITE_READONLY)
on the writer's connection, a file the server may not write (its mode, or
for root its immutable flag), a tmpfs of 1 MiB that fills (as root; Linux
will not remount a filesystem read-only while a file on it is open for
writing), and a PostgreSQL session
in read-only mode, as a standby's are; a test double of PostgreSQL's
connection raises ``DiskFull`` and then stops.
"""
from __future__ import annotations

import logging
import os
import subprocess
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest
from conftest import Client, problem
from helpers import Served, call, race, writes_on

from usersvc import make_app
from usersvc.storage import open_store

FAILING_LOG = "usersvc.storage"


def post(client: Client, i: int):
    return client.post("/users", json_body={"name": f"User {i} " + "x" * 150,
                                            "email": f"user{i}@example.org"})


def fill(client: Client, limit: int = 5000) -> int:
    """POST until the store refuses: how many it took."""
    for i in range(limit):
        response = post(client, i)
        if response.status_int == 503:
            return i
        assert response.status_int == 201, response.text
    raise AssertionError(f"{limit} writes and the store is not full")


def refused(response, reason: str) -> dict:
    body = problem(response, 503)
    assert response.headers["Retry-After"] == "10"
    assert reason in body["detail"] and "Nothing was changed" in body["detail"]
    return body


def failing_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == FAILING_LOG
            and r.levelno >= logging.WARNING]


def count(client: Client) -> int:
    return int(client.get("/users?limit=1", headers={"Prefer": "count=exact"})
               .headers["X-Total-Count"])


# -- SQLite ---------------------------------------------------------------

@pytest.fixture
def sqlite(tmp_path):
    store = open_store(f"sqlite:///{tmp_path}/users.db")
    yield store, Client(make_app(store))
    store.close()


def test_a_full_sqlite_file_is_a_503_said_once_and_writes_come_back(sqlite, caplog):
    store, client = sqlite
    caplog.set_level(logging.INFO, logger=FAILING_LOG)
    # The file may not grow past it.
    writes_on(store.connections).execute("PRAGMA max_page_count = 16")
    created = fill(client)
    assert created > 0
    for i in range(20):                                         # ... and again, and again
        refused(post(client, 10_000 + i), "the disk is full")
    assert failing_lines(caplog) == [
        f"writes are failing: database or disk is full: {store.path}"]
    assert client.get("/users/1").status_int == 200             # reads go on
    assert count(client) == created                             # nothing of the refused kept
    health = client.get("/healthz")
    assert "writes are failing: the disk is full" in problem(health, 503)["detail"]

    writes_on(store.connections).execute("PRAGMA max_page_count = 1000000")  # space is freed
    assert post(client, 20_000).status_int == 201
    assert client.get("/healthz").status_int == 200
    assert failing_lines(caplog)[1:] == [f"writes work again: {store.path}"]
    assert count(client) == created + 1


def test_a_full_file_fails_every_write_of_the_group_it_strikes(sqlite):
    """Eight writers at once, near the limit: each write answered 201 is
    there, each answered 503 is not, whatever group it was in."""
    store, client = sqlite
    writes_on(store.connections).execute("PRAGMA max_page_count = 16")
    before = fill(client)
    writes_on(store.connections).execute("PRAGMA max_page_count = 17")       # room for a few more
    answers = [*race(8, lambda i: post(client, 30_000 + i)),
               *race(8, lambda i: post(client, 40_000 + i))]
    statuses = [a.status_int for a in answers]
    assert set(statuses) <= {201, 503} and 503 in statuses
    created = {a.json["email"] for a in answers if a.status_int == 201}
    tried = {f"user{n + i}@example.org" for n in (30_000, 40_000) for i in range(8)}
    listed = {u["email"] for u in client.get("/users?limit=1000").json}
    assert count(client) == before + len(created)
    assert listed & tried == created        # each 201 there, no 503 there


@contextmanager
def read_only(path: Path):
    """``path`` made read-only, then writable again when the block ends: by
    its mode, or, for root (whom modes do not stop), by the immutable flag."""
    if os.geteuid() != 0:
        path.chmod(0o444)
        undo = lambda: path.chmod(0o644)       # noqa: E731
    else:
        made = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True)
        if made.returncode != 0:
            pytest.skip(f"cannot make a file read-only for root here: {made.stderr.strip()}")
        undo = lambda: subprocess.run(["chattr", "-i", str(path)], check=True)   # noqa: E731
    done = False

    def writable() -> None:
        nonlocal done
        if not done:
            undo()
            done = True
    try:
        yield writable
    finally:
        writable()


def test_a_read_only_sqlite_file_is_a_503_and_writes_come_back(tmp_path, caplog):
    """The server started on a file it may not write: it serves reads, and
    once the file is writable, writes, without a restart (SQLite keeps a
    connection that opened a read-only file read-only: the writer opens
    another)."""
    caplog.set_level(logging.INFO, logger=FAILING_LOG)
    path = tmp_path / "users.db"
    store = open_store(f"sqlite:///{path}")
    ada = Client(make_app(store)).create()
    store.close()
    with read_only(path) as writable:
        store = open_store(f"sqlite:///{path}")
        try:
            client = Client(make_app(store))
            assert client.get(f"/users/{ada['id']}").json == ada
            refused(post(client, 1), "the database is read-only")
            refused(client.put(f"/users/{ada['id']}",
                               json_body={"name": "Ada", "email": "a@example.org"}),
                    "the database is read-only")
            refused(client.delete(f"/users/{ada['id']}"), "the database is read-only")
            assert client.get(f"/users/{ada['id']}").json == ada      # unchanged, and read
            assert client.get("/healthz").status_int == 503
            writable()
            assert client.delete(f"/users/{ada['id']}").status_int == 204
            assert client.get("/healthz").status_int == 200
            assert post(client, 2).status_int == 201
        finally:
            store.close()
    assert failing_lines(caplog) == [
        f"writes are failing: attempt to write a readonly database: {path}",
        f"writes work again: {path}"]


def test_a_write_that_sqlite_refuses_as_read_only_changes_nothing(sqlite):
    """SQLITE_READONLY on the writer's connection (``query_only``): a 503,
    nothing kept; the writer then opens a new connection, which writes."""
    store, client = sqlite
    writes_on(store.connections).execute("PRAGMA query_only = ON")
    refused(post(client, 1), "the database is read-only")
    assert count(client) == 0
    assert post(client, 2).status_int == 201
    assert count(client) == 1


# -- a real filesystem that fills, and is made read-only ------------------

@contextmanager
def tiny_filesystem(where: Path):
    """A tmpfs of 1 MiB at ``where`` (needs root: mounting)."""
    where.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(where)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {mounted.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_a_real_disk_that_fills(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger=FAILING_LOG)
    with tiny_filesystem(tmp_path / "disk") as disk:
        filler = disk / "filler"
        filler.write_bytes(b"\0" * 300_000)                      # what the operator frees later
        store = open_store(f"sqlite:///{disk}/users.db")
        try:
            client = Client(make_app(store))
            created = fill(client)
            refused(post(client, 50_000), "the disk is full")
            assert client.get("/users/1").status_int == 200
            assert count(client) == created
            filler.unlink()                                      # space freed: no restart
            assert post(client, 50_001).status_int == 201
            assert count(client) == created + 1
        finally:
            store.close()
    assert failing_lines(caplog) == [
        f"writes are failing: database or disk is full: {disk}/users.db",
        f"writes work again: {disk}/users.db"]


def test_serve_py_logs_one_line_an_episode_and_no_traceback(tmp_path):
    """As an operator sees it: serve.py's stderr over 30 refused writes."""
    with tiny_filesystem(tmp_path / "disk") as disk:
        (disk / "filler").write_bytes(b"\0" * 300_000)
        served = Served("--storage", f"sqlite:///{disk}/users.db", "--no-access-log", cwd=tmp_path)
        try:
            statuses = []
            while statuses.count(503) < 30:
                assert len(statuses) < 5000, "the disk never filled"
                i = len(statuses)
                statuses.append(call(served.address, "POST", "/users", {
                    "name": f"User {i} " + "x" * 150, "email": f"u{i}@example.org"})[0])
            assert set(statuses) == {201, 503}
            assert call(served.address, "GET", "/users/1")[0] == 200
            (disk / "filler").unlink()
            assert call(served.address, "POST", "/users", {
                "name": "Back", "email": "back@example.org"})[0] == 201
        finally:
            assert served.stop() == 0
        log = served.log()
    assert "Traceback" not in log
    assert log.count("writes are failing: database or disk is full") == 1
    assert log.count("writes work again") == 1


def test_serve_py_started_on_a_full_disk_says_the_disk_is_full_in_one_line(tmp_path):
    """SQLite cannot grow the shared-memory file a WAL database needs
    beside it (SQLITE_IOERR_SHMSIZE): a full disk, not a failing one."""
    import sys

    from helpers import ROOT
    with tiny_filesystem(tmp_path / "disk") as disk:
        store = open_store(f"sqlite:///{disk}/users.db")
        store["users"].create(name="Ada", email="ada@example.org")
        store.close()
        with open(disk / "filler", "wb", buffering=0) as filler:    # every block left
            try:
                while True:
                    filler.write(b"\0" * 4096)
            except OSError:
                pass
        started = subprocess.run([sys.executable, str(ROOT / "serve.py"), "--port", "0",
                                  "--storage", f"sqlite:///{disk}/users.db"],
                                 capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert started.returncode == 2
    assert started.stderr == (f"usersvc: cannot open storage sqlite:///{disk}/users.db: "
                              "The database cannot be read now: the disk is full.\n")


# -- PostgreSQL -------------------------------------------------------------

def read_only_sessions(url: str) -> str:
    """``url`` (with its search_path option) whose sessions are read-only,
    as a standby's are."""
    return url + "%20-cdefault_transaction_read_only%3Don"


def test_a_read_only_postgresql_session_is_a_503_and_nothing_is_written(postgres_url, caplog):
    caplog.set_level(logging.INFO, logger=FAILING_LOG)
    writable = open_store(postgres_url)
    writable["users"].create(name="Ada", email="ada@example.org")
    standby = open_store(read_only_sessions(postgres_url))
    try:
        client = Client(make_app(standby))
        assert client.get("/users/1").status_int == 200
        refused(post(client, 1), "the database is read-only")
        refused(client.patch("/users/1", json_body={"name": "Bea"}), "the database is read-only")
        assert client.get("/healthz").status_int == 503
        assert writable["users"].count() == 1 and writable["users"].get(1).name == "Ada"
        assert len(failing_lines(caplog)) == 1
        assert failing_lines(caplog)[0].startswith(
            "writes are failing: cannot execute INSERT in a read-only transaction")
    finally:
        standby.close()
        writable.close()


class FullDisk:
    """A PostgreSQL connection pool's double: each connection's statements
    raise ``DiskFull`` while ``full`` is set, as a server whose disk
    filled does (SQLSTATE 53100), and go through once it is cleared."""

    def __init__(self, pool) -> None:
        self.pool, self.full = pool, True

    @contextmanager
    def connection(self, *args, **kwargs):
        with self.pool.connection(*args, **kwargs) as db:
            yield self if self.full else db

    def execute(self, *args, **kwargs):
        raise psycopg.errors.DiskFull('could not extend file "base/16384/16385": '
                                      "No space left on device")

    def __getattr__(self, name):
        return getattr(self.pool, name)


def test_a_full_postgresql_disk_is_a_503_and_writes_come_back(postgres_url, caplog):
    caplog.set_level(logging.INFO, logger=FAILING_LOG)
    store = open_store(postgres_url)
    real = store._pool
    store._pool = double = FullDisk(real)
    try:
        client = Client(make_app(store))
        for i in range(5):
            refused(post(client, i), "the disk is full")
        assert client.get("/healthz").status_int == 503
        double.full = False
        assert post(client, 99).status_int == 201
        assert client.get("/healthz").status_int == 200
        assert count(client) == 1
        assert failing_lines(caplog) == [
            'writes are failing: could not extend file "base/16384/16385": No space left on '
            f"device: {store.health.name}",
            f"writes work again: {store.health.name}"]
    finally:
        store._pool = real
        store.close()

