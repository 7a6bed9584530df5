"""usersvc under granian (a Rust HTTP server; its WSGI interface), as
docs/deploying.md runs it: ``granian --interface wsgi --workers 2
--blocking-threads 4 --respawn-failed-workers usersvc.wsgi:app``, on SQLite
and PostgreSQL. Creates, races of 8 (one winner), a long-poll beside a plain
read, the body limit, usersvc's access log and request ids, every worker's
metrics in one scrape; SIGTERM (a long-poll waiting then is answered at once,
not at the end of its wait, and every write answered 201 is kept); a worker
that dies is replaced; a bad setting is one line at start. And
``serve.py --server granian``: the same, with serve.py's options.
"""
from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from helpers import (
    GRANIAN,
    ROOT,
    Granian,
    Served,
    call,
    free_port,
    long_poll,
    race,
    scraped,
    shared_url,
    until_waiting,
)

from usersvc import open_store

pytestmark = pytest.mark.skipif(not GRANIAN.exists(), reason="granian is not installed "
                                "(pip install -e '.[test]')")


storage = pytest.fixture(params=["sqlite", "postgres"], name="storage")(shared_url)


def test_granian_serves_writes_races_waits_and_stops(tmp_path, storage):
    (tmp_path / "metrics").mkdir()
    metrics = ("127.0.0.1", free_port())
    server = Granian(tmp_path, storage, USERSVC_METRICS_DIR=str(tmp_path / "metrics"),
                     USERSVC_METRICS_PORT=str(metrics[1]), USERSVC_ACCESS_LOG="1",
                     USERSVC_MAX_BODY_SIZE="4096")
    at, posts, kept = server.address, 0, []
    try:
        # Creates, in turn, over both workers: each answered, ids increasing.
        created = [call(at, "POST", "/users", {"name": f"User {i}", "email": f"u{i}@example.org"})
                   for i in range(12)]
        posts += 12
        assert [status for status, _, _ in created] == [201] * 12
        ids = [json.loads(body)["id"] for _, _, body in created]
        assert ids == sorted(ids) and len(set(ids)) == 12
        kept += ids

        # Eight writers with one ETag: one wins, seven are told it changed.
        tag = call(at, "GET", f"/users/{ids[0]}")[1]["ETag"]
        answers = race(8, lambda i: call(at, "PUT", f"/users/{ids[0]}",
                                         {"name": f"Racer {i}", "email": "u0@example.org"},
                                         {"If-Match": tag})[0])
        assert sorted(answers) == [200] + [412] * 7
        same = race(8, lambda i: call(at, "POST", "/users",
                                      {"name": f"Twin {i}", "email": "twin@example.org"}))
        posts += 8
        assert sorted(status for status, _, _ in same) == [201] + [409] * 7
        kept += [json.loads(body)["id"] for status, _, body in same if status == 201]

        # The body limit, and the request's id in usersvc's access line.
        status, _, body = call(at, "POST", "/users",
                               {"name": "x" * 5000, "email": "big@example.org"},
                               {"X-Request-ID": "granian-big-1"})
        posts += 1
        assert status == 413 and json.loads(body)["max_body_size"] == 4096
        assert call(at, "GET", "/healthz", headers={"X-Request-ID": "granian-7"})[1][
            "X-Request-ID"] == "granian-7"

        # A long-poll beside a plain read: the read is answered, the poll
        # gets the change made while it waits.
        poll, polled = long_poll(at, 20)
        assert call(at, "GET", f"/users/{ids[1]}")[0] == 200
        assert poll.is_alive()
        status, _, body = call(at, "POST", "/users", {"name": "Late", "email": "late@example.org"})
        posts += 1
        assert status == 201
        kept.append(json.loads(body)["id"])
        poll.join(25)       # bounded: a poll that is never answered fails here
        assert not poll.is_alive()
        assert [e["user"]["email"] for e in json.loads(polled[0][2])] == ["late@example.org"]

        # Every worker's requests, in one scrape.
        counts = {dict(labels)["http_response_status_code"]: value
                  for (name, labels), value in scraped(metrics).items()
                  if name == "http_server_request_duration_seconds_count"
                  and ("http_request_method", "POST") in labels}
        assert sum(counts.values()) == posts and counts["413"] == 1 and counts["409"] == 7

        # SIGTERM while a long-poll waits: it is answered at once (its
        # wait was 25 s; the poll is joined for 10), and the server exits.
        poll, polled = long_poll(at, 25)
        until_waiting(metrics)
        server.terminate()
        poll.join(10)
        assert not poll.is_alive(), "a waiting long-poll held the worker's exit"
        assert polled[0][0] == 200 and json.loads(polled[0][2]) == []
    finally:
        assert server.stop(timeout=20) == 0
    log = server.log()
    assert "Traceback" not in log, log
    assert "POST /users 413" in log and "granian-big-1" in log        # usersvc's access line
    # Every write answered 201 is kept.
    store = open_store(storage)
    try:
        users = store["users"]
        assert [users.get(i).id for i in kept] == kept
    finally:
        store.close()


def test_a_worker_that_dies_is_replaced(tmp_path):
    server = Granian(tmp_path, f"sqlite:///{tmp_path}/users.db")
    try:
        first = server.workers()
        assert len(first) == 2
        os.kill(first[0], signal.SIGKILL)
        for _ in range(400):        # until a new worker has started (bounded)
            if len(set(server.workers()) - set(first)) == 1 and server.log().count(
                    "Started worker") >= 3:
                break
            threading.Event().wait(0.05)
        else:
            raise AssertionError(f"no worker replaced the one that died:\n{server.log()}")
        made = [call(server.address, "POST", "/users",
                     {"name": f"After {i}", "email": f"after{i}@example.org"})[0]
                for i in range(6)]
        assert made == [201] * 6
    finally:
        assert server.stop() == 0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="tgkill and /proc: Linux's")
def test_a_worker_stops_when_another_of_its_threads_takes_the_signal(tmp_path):
    """The kernel hands a signal sent to a process to any of its threads,
    and Python runs the handler (granian's) in the main thread, which a
    worker keeps asleep until its server has stopped. Here SIGTERM goes to
    another thread of a worker (tgkill), as the kernel chose when Ctrl-C's
    SIGINT and granian's SIGTERM reached a worker together: the worker
    stops all the same (usersvc.wsgi wakes its main thread), rather than
    sleep until granian kills it."""
    server = Granian(tmp_path, f"sqlite:///{tmp_path}/users.db")
    try:
        worker = server.workers()[0]
        other = min(int(tid) for tid in os.listdir(f"/proc/{worker}/task") if int(tid) != worker)
        libc = ctypes.CDLL(None, use_errno=True)
        assert libc.tgkill(worker, other, signal.SIGTERM) == 0, os.strerror(ctypes.get_errno())
        for _ in range(200):            # until it has exited (bounded: 10 s)
            status = Path(f"/proc/{worker}/status")
            if not status.exists() or "\nState:\tZ" in status.read_text():
                break
            threading.Event().wait(0.05)
        else:
            raise AssertionError(f"the worker did not stop within 10 s:\n{server.log()}")
        for _ in range(400):            # until its replacement has started (bounded): one
            if server.log().count("Started worker") >= 3:   # told while starting may miss it
                break
            threading.Event().wait(0.05)
    finally:
        assert server.stop() == 0, server.log()


def test_a_bad_setting_is_one_line_and_granian_stops(tmp_path):
    done = subprocess.run(
        [str(GRANIAN), "--interface", "wsgi", "--host", "127.0.0.1", "--port", str(free_port()),
         "--workers", "2", "--respawn-failed-workers", "usersvc.wsgi:app"],
        cwd=tmp_path, capture_output=True, text=True, timeout=90,
        env={**os.environ, "USERSVC_STORAGE": f"sqlite:///{tmp_path}/users.db",
             "USERSVC_MAX_BODY_SIZE": "lots"})
    assert done.returncode != 0
    ours = {line for line in (done.stdout + done.stderr).splitlines()
            if line.startswith("usersvc:")}
    assert ours == {"usersvc: USERSVC_MAX_BODY_SIZE must be a whole number of at least 1, "
                    "not 'lots'"}
    assert "usersvc/" not in done.stderr and "Traceback" not in done.stderr


# -- serve.py --server granian --------------------------------------------------

def test_serve_py_runs_granian_with_its_own_options(tmp_path, storage):
    metrics_port = free_port()
    server = Served("--server", "granian", "--workers", "2", "--threads", "4",
                    "--storage", storage, "--max-body-size", "4096",
                    "--metrics-port", str(metrics_port), cwd=tmp_path)
    at = server.address
    try:
        assert server.metrics_address == ("127.0.0.1", metrics_port)
        made = [call(at, "POST", "/users", {"name": f"U {i}", "email": f"s{i}@example.org"})
                for i in range(10)]
        assert [status for status, _, _ in made] == [201] * 10
        assert call(at, "POST", "/users",
                    {"name": "x" * 5000, "email": "big@example.org"})[0] == 413
        counts = sum(value for (name, labels), value in scraped(server.metrics_address).items()
                     if name == "http_server_request_duration_seconds_count"
                     and ("http_request_method", "POST") in labels)
        assert counts == 11                 # both workers', in one scrape
        poll, polled = long_poll(at, 25)
        until_waiting(server.metrics_address)
        server.terminate()
        poll.join(10)
        assert not poll.is_alive(), "a waiting long-poll held the worker's exit"
        assert polled[0][0] == 200
    finally:
        assert server.stop() == 0
    log = server.log()
    assert "Traceback" not in log and "POST /users 201" in log, log   # usersvc's access lines
    assert not list(tmp_path.glob("usersvc-metrics-*"))


def test_memory_is_said_to_be_split_only_where_there_are_several_workers(tmp_path):
    """serve.py runs memory:// under granian with one worker only: its
    worker does not warn of several; granian's own command may run two,
    and each warns."""
    warning = "several worker processes each has its own records"
    served = Served("--server", "granian", "--storage", "memory://", cwd=tmp_path)
    try:
        assert call(served.address, "GET", "/users")[0] == 200      # (its worker has loaded)
    finally:
        assert served.stop() == 0
    assert "Started worker-1" in served.log() and warning not in served.log(), served.log()
    server = Granian(tmp_path, "memory://")
    assert server.stop() == 0
    assert server.log().count(warning) == 2, server.log()


@pytest.mark.parametrize("args, says", [
    (["--workers", "2"],
     "--workers must be at least 1, and more than 1 only with --server granian"),
    (["--server", "granian", "--workers", "2", "--storage", "memory://"],
     "memory:// keeps the records in one process: with --workers 2 each would have its own"),
    (["--server", "granian", "--trusted-proxy", "127.0.0.1"], "--trusted-proxy is waitress's"),
    (["--server", "granian", "--max-body-size", "lots"], "--max-body-size must be a whole number"),
])
def test_serve_py_under_granian_refuses_in_one_line(tmp_path, args, says):
    done = subprocess.run([sys.executable, str(ROOT / "serve.py"), "--port", "0", *args],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.strip().splitlines()    # (an option's mistake: argparse's usage first)
    assert says in lines[-1] and all(line.startswith(("usage:", " ")) for line in lines[:-1])


def test_a_scripts_own_collections_are_named_for_granians_workers(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "tasks.py"), "--port", "0",
                           "--server", "granian", "--storage", f"sqlite:///{tmp_path}/t.db"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip() == ("usersvc: --server granian: each worker imports the "
                                   "collections it serves: name them with --collections "
                                   "MODULE:NAME")


def test_serve_py_under_granian_warns_when_it_listens_beyond_this_machine_without_tokens(tmp_path):
    process = subprocess.Popen([sys.executable, str(ROOT / "serve.py"), "--server", "granian",
                                "--host", "0.0.0.0", "--port", "0",
                                "--storage", f"sqlite:///{tmp_path}/users.db"],
                               cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)
    try:
        assert process.stdout.readline().startswith("usersvc serving http://0.0.0.0:")
    finally:
        process.send_signal(signal.SIGTERM)
        _, errors = process.communicate(timeout=20)
    assert process.returncode == 0
    assert "WARNING usersvc: listening on 0.0.0.0 without --tokens-file" in errors
