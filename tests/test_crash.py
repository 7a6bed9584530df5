"""Crash durability: a 201 means the user is on disk.

Creates stream from several threads; the server is killed with SIGKILL in
the middle (no chance to flush or close anything); a new server on the same
file must have every user that got a 201, with the values it was given,
and the file must pass ``PRAGMA integrity_check``. Several rounds on one
file, so a crash also lands on a database that has crashed before.

Then the same with an ``Idempotency-Key`` on every create: after the kill,
every request the clients sent (answered or not) is sent again with its
key, and each key ends with exactly one user, the acknowledged ones with
the answer they had.
"""
from __future__ import annotations

import http.client
import json
import signal
import sqlite3
import threading
import time

import pytest
from helpers import Served

ROUNDS = 3
THREADS = 6


def kill_under_writers(served, stream, acked, *shared):
    """``THREADS`` threads run ``stream(address, thread_no, *shared, acked,
    stop)``; once 150 writes are acknowledged the server gets SIGKILL, mid-
    stream, and the threads end (each when its connection fails)."""
    stop = threading.Event()
    threads = [threading.Thread(target=stream, args=(served.address, t, *shared, acked, stop))
               for t in range(THREADS)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 10
    while len(acked) < 150 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert served.stop(signal.SIGKILL) == -signal.SIGKILL
    stop.set()
    for t in threads:
        t.join(timeout=30)
    assert not any(t.is_alive() for t in threads)
    assert len(acked) >= 150


def every_user(conn) -> list[dict]:
    """Every user, page by page in id order."""
    users: list[dict] = []
    after = 0
    while True:
        conn.request("GET", f"/users?after={after}&limit=1000")
        page = json.loads(conn.getresponse().read())
        if not page:
            return users
        users += page
        after = page[-1]["id"]


def stream_creates(address, thread_no, round_no, acked, stop):
    """POST until the server dies; record each 201 as (id, name, email)."""
    conn = http.client.HTTPConnection(*address, timeout=10)
    try:
        _stream(conn, round_no, thread_no, acked, stop)
    finally:
        conn.close()


def _stream(conn, round_no, thread_no, acked, stop):
    n = 0
    while not stop.is_set():
        n += 1
        user = {"name": f"R{round_no} T{thread_no} #{n}",
                "email": f"r{round_no}-t{thread_no}-{n}@example.org"}
        try:
            conn.request("POST", "/users", body=json.dumps(user),
                         headers={"Content-Type": "application/json"})
            response = conn.getresponse()
            body = response.read()
        except (OSError, http.client.HTTPException):
            return                      # the server is gone: what was acknowledged is recorded
        if response.status == 201:
            acked.append((json.loads(body)["id"], user["name"], user["email"]))
        else:
            acked.append(("unexpected", response.status, body))


# ?synchronous=normal syncs less, and keeps every commit when the process
# dies (it may lose the last ones on a power cut: docs/deploying.md).
@pytest.mark.parametrize("url", ["sqlite:///users.db", "sqlite:///users.db?synchronous=normal"],
                         ids=["full", "normal"])
def test_every_acknowledged_create_survives_sigkill(tmp_path, url):
    acked_before: list = []
    for round_no in range(ROUNDS):
        served = Served("--storage", url, "--threads", "4", "--no-access-log", cwd=tmp_path)
        # What earlier rounds acknowledged is all there after their crash.
        for user_id, name, email in acked_before:
            conn = http.client.HTTPConnection(*served.address, timeout=10)
            conn.request("GET", f"/users/{user_id}")
            response = conn.getresponse()
            assert response.status == 200, (round_no, user_id)
            assert json.loads(response.read()) == {"id": user_id, "name": name, "email": email}
            conn.close()

        acked: list = []
        kill_under_writers(served, stream_creates, acked, round_no)
        assert all(a[0] != "unexpected" for a in acked), [
            a for a in acked if a[0] == "unexpected"][:3]
        ids = [a[0] for a in acked_before + acked]
        assert len(ids) == len(set(ids))                # ids are never handed out twice

        with sqlite3.connect(tmp_path / "users.db") as db:
            assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        acked_before += acked

    # The last round's acknowledged users, after its crash.
    served = Served("--storage", url, "--no-access-log", cwd=tmp_path)
    try:
        conn = http.client.HTTPConnection(*served.address, timeout=10)
        found = {u["id"]: (u["name"], u["email"]) for u in every_user(conn)}
        conn.close()
        for user_id, name, email in acked_before:
            assert found.get(user_id) == (name, email), user_id
    finally:
        assert served.stop() == 0


# -- retried with their Idempotency-Keys ------------------------------------

def stream_keyed_creates(address, thread_no, sent, acked, stop):
    """POST with a key each until the server dies; every request is in
    ``sent`` before it goes, every 201 in ``acked``."""
    conn = http.client.HTTPConnection(*address, timeout=10)
    n = 0
    try:
        while not stop.is_set():
            n += 1
            key = f"t{thread_no}-{n}"
            body = json.dumps({"name": f"K{thread_no} #{n}",
                               "email": f"k{thread_no}-{n}@example.org"})
            sent[key] = body
            try:
                conn.request("POST", "/users", body=body, headers={
                    "Content-Type": "application/json", "Idempotency-Key": key})
                response = conn.getresponse()
                answer = response.read()
            except (OSError, http.client.HTTPException):
                return
            acked[key] = (response.status, response.getheader("ETag"), answer)
    finally:
        conn.close()


def test_every_create_retried_with_its_key_after_sigkill_makes_one_user(tmp_path):
    served = Served("--storage", "sqlite:///users.db", "--threads", "4", "--no-access-log",
                    cwd=tmp_path)
    sent: dict = {}
    acked: dict = {}
    kill_under_writers(served, stream_keyed_creates, acked, sent)
    assert all(status == 201 for status, _, _ in acked.values())

    served = Served("--storage", "sqlite:///users.db", "--no-access-log", cwd=tmp_path)
    try:
        conn = http.client.HTTPConnection(*served.address, timeout=10)
        for key, body in sent.items():      # every request the clients sent, again with its key
            conn.request("POST", "/users", body=body, headers={
                "Content-Type": "application/json", "Idempotency-Key": key})
            response = conn.getresponse()
            answer = response.read()
            assert response.status == 201, (key, answer)
            if key in acked:                # acknowledged: the same answer, byte for byte
                assert (201, response.getheader("ETag"), answer) == acked[key], key
        users = every_user(conn)
        conn.close()
    finally:
        assert served.stop() == 0
    # Exactly one user per key, each as it was sent (and at its first version).
    assert sorted(u["email"] for u in users) == sorted(
        json.loads(b)["email"] for b in sent.values())
    by_email = {u["email"]: u for u in users}
    for _, etag, answer in acked.values():
        user = json.loads(answer)
        assert by_email[user["email"]] == user and etag == f'"{user["id"]}-1"'



# -- batches: each whole or absent -------------------------------------------

BATCH = 5


def stream_batches(address, thread_no, acked, stop):
    """POST batches of ``BATCH`` creates until the server dies; each 200 in
    ``acked`` as (thread, n)."""
    conn = http.client.HTTPConnection(*address, timeout=10)
    n = 0
    try:
        while not stop.is_set():
            n += 1
            requests = [{"method": "POST", "path": "/users", "body": {
                "name": f"B{thread_no} #{n} {i}", "email": f"b{thread_no}-{n}-{i}@example.org"}}
                for i in range(BATCH)]
            try:
                conn.request("POST", "/batch", body=json.dumps({"requests": requests}),
                             headers={"Content-Type": "application/json"})
                response = conn.getresponse()
                response.read()
            except (OSError, http.client.HTTPException):
                return
            acked.append((thread_no, n) if response.status == 200
                         else ("unexpected", response.status))
    finally:
        conn.close()


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_every_batch_is_whole_or_absent_after_sigkill(tmp_path, request, kind):
    url = "sqlite:///users.db" if kind == "sqlite" else request.getfixturevalue("postgres_url")
    served = Served("--storage", url, "--threads", "4", "--no-access-log", cwd=tmp_path)
    acked: list = []
    kill_under_writers(served, stream_batches, acked)
    assert all(a[0] != "unexpected" for a in acked), [a for a in acked if a[0] == "unexpected"][:3]

    served = Served("--storage", url, "--no-access-log", cwd=tmp_path)
    try:
        conn = http.client.HTTPConnection(*served.address, timeout=10)
        users = every_user(conn)
        conn.close()
    finally:
        assert served.stop() == 0
    found: dict = {}
    for user in users:
        thread_no, n, _ = user["email"][1:].split("@")[0].split("-")
        found.setdefault((int(thread_no), int(n)), []).append(user)
    assert {len(made) for made in found.values()} == {BATCH}     # every batch whole, or absent
    assert set(acked) <= set(found)                             # and every 200 there
    for made in found.values():         # its records consecutive, in the order sent
        ids = [u["id"] for u in made]
        assert ids == list(range(ids[0], ids[0] + BATCH))
        assert [u["name"][-1] for u in made] == [str(i) for i in range(BATCH)]
