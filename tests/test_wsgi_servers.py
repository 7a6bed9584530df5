"""usersvc under gunicorn, as a deployment runs it (usersvc/wsgi.py, and the
stores' fork safety): sync and gthread workers, each with and without
``--preload`` (the store opened in the master, then forked), on SQLite and
PostgreSQL. Each starts ``gunicorn usersvc.wsgi:app`` with two workers and
checks creates, a race of 8 (one winner), a long-poll beside a plain read,
and SIGTERM; and a bad setting is one line at start.
"""
from __future__ import annotations

import itertools
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from helpers import (
    GUNICORN,
    Gunicorn,
    StreamOverHTTP,
    call,
    clone_root,
    free_port,
    long_poll,
    race,
    seq_of,
    shared_url,
    until_it_catches,
)
from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parent.parent
SETUPS = [(worker, preload) for worker in ("sync", "gthread") for preload in (False, True)]

pytestmark = pytest.mark.skipif(not GUNICORN.exists(), reason="gunicorn is not installed "
                                "(pip install -e '.[test]')")


storage = pytest.fixture(params=["sqlite", "postgres"], name="storage")(shared_url)


@pytest.mark.parametrize("worker, preload", SETUPS,
                         ids=[f"{w}{'-preload' if p else ''}" for w, p in SETUPS])
def test_gunicorn_serves_writes_races_waits_and_stops(tmp_path, storage, worker, preload):
    server = Gunicorn(tmp_path, storage, worker, preload)
    try:
        at = server.address
        # Creates, in turn, over both workers: each answered, ids increasing.
        created = [call(at, "POST", "/users", {"name": f"User {i}", "email": f"u{i}@example.org"})
                   for i in range(12)]
        assert [status for status, _, _ in created] == [201] * 12
        ids = [json.loads(body)["id"] for _, _, body in created]
        assert ids == sorted(ids) and len(set(ids)) == 12

        # Eight writers with one ETag: one wins, seven are told it changed.
        status, headers, _ = call(at, "GET", f"/users/{ids[0]}")
        tag = headers["ETag"]
        answers = race(8, lambda i: call(at, "PUT", f"/users/{ids[0]}",
                                         {"name": f"Racer {i}", "email": "u0@example.org"},
                                         {"If-Match": tag})[0])
        assert sorted(answers) == [200] + [412] * 7
        same = race(8, lambda i: call(at, "POST", "/users",
                                      {"name": f"Twin {i}", "email": "twin@example.org"})[0])
        assert sorted(same) == [201] + [409] * 7

        # A long-poll beside a plain read.
        poll, polled = long_poll(at, 20)
        assert call(at, "GET", f"/users/{ids[1]}")[0] == 200        # not held up by the poll
        if worker == "gthread":     # threads: the poll waits for the change, and gets it
            assert poll.is_alive()
            assert call(at, "POST", "/users",
                        {"name": "Late", "email": "late@example.org"})[0] == 201
        poll.join(25)       # bounded: a poll that is never answered fails here
        assert not poll.is_alive()
        status, _, body = polled[0]
        entries = json.loads(body)
        if worker == "gthread":
            assert status == 200 and [e["user"]["email"] for e in entries] == ["late@example.org"]
        else:               # no threads: answered at once, as wait=0
            assert status == 200 and entries == []
    finally:
        assert server.stop() == 0
    log = server.log()
    assert "Traceback" not in log and "WORKER TIMEOUT" not in log, log
    assert "Shutting down: Master" in log


@pytest.mark.parametrize("worker, preload", [("sync", True), ("gthread", False), ("gthread", True)],
                         ids=["sync", "gthread", "gthread-preload"])
def test_a_stream_of_changes_under_gunicorn(tmp_path, worker, preload):
    """gthread workers hold a stream, sending each write as it is made, and
    end it at once on SIGTERM (gunicorn tells the app nothing: the worker's
    ``alive`` is watched), well inside the --graceful-timeout of 10 s that
    would end it otherwise; sync workers, one request at a time, hold none:
    the changes there are, then the end (the client comes back after its
    retry)."""
    server = Gunicorn(tmp_path, f"sqlite:///{tmp_path}/users.db", worker, preload)
    try:
        at = server.address
        assert call(at, "POST", "/users", {"name": "Ada", "email": "ada@example.org"})[0] == 201
        stream = StreamOverHTTP(at, "/users/changes?after=0")
        first = stream.next()
        assert first["retry"] == "2000" and seq_of(first["id"]) == 0 and "data" not in first
        assert [data["user"]["name"] for _, _, data in stream.changes(1)] == ["Ada"]
        if worker == "sync":
            stream.end()
        else:
            for name in ("Bob", "Cy"):
                assert call(at, "POST", "/users",
                            {"name": name, "email": f"{name.lower()}@example.org"})[0] == 201
                assert [data["user"]["name"] for _, _, data in stream.changes(1)] == [name]
            server.process.send_signal(signal.SIGTERM)
            stream.end(deadline=5)
            assert server.process.wait(timeout=5) == 0
    finally:
        assert server.stop() == 0
    assert "Traceback" not in server.log(), server.log()


@pytest.mark.parametrize("preload", [False, True], ids=["", "preload"])
def test_a_bad_setting_is_one_line_and_gunicorn_stops(tmp_path, preload):
    args = [str(GUNICORN), "--bind", "127.0.0.1:0", "--workers", "2",
            *(["--preload"] if preload else []), "usersvc.wsgi:app"]
    done = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "USERSVC_STORAGE": "memory://",
                               "USERSVC_MAX_BODY_SIZE": "lots"})
    # As docs/deploying.md says: 4, or without --preload 1 when two workers fail at once.
    assert done.returncode in ((4,) if preload else (4, 1))
    ours = [line for line in done.stderr.splitlines() if line.startswith("usersvc:")]
    assert ours[:1] == ["usersvc: USERSVC_MAX_BODY_SIZE must be a whole number of at least 1, "
                        "not 'lots'"]
    assert set(ours) == {ours[0]}          # the same line (once a worker, without --preload)
    # None of usersvc's code in a trace (gunicorn 27 may print one of its own
    # when two workers fail at once: HaltServer raised again while halting).
    assert "usersvc/" not in done.stderr and ("Traceback" not in done.stderr or not preload)
    assert "failed to load" in done.stderr.lower() or preload


# -- the commands the docs show, run as written ------------------------------

DOCS = [ROOT / "README.md", ROOT / "docs" / "deploying.md"]


def shown_commands(server: str) -> list[str]:
    """Every one-line ``server`` command in an indented block of the docs
    (after the commands that make its metrics' directory, if it has one);
    each is run as written from a clone's root (``clone_root``)."""
    pattern = re.compile(rf"^    ((?:rm -rf \S+ && mkdir \S+ && )?(?:[A-Z_]+=\S+ )*{server} .*)$")
    return [m.group(1) for doc in DOCS for line in doc.read_text().splitlines()
            if (m := pattern.match(line))]


@pytest.mark.parametrize("server", ["gunicorn", "uwsgi", "granian"])
def test_each_server_command_the_docs_show_serves(tmp_path, server):
    if shutil.which(server, path=str(GUNICORN.parent)) is None:
        pytest.skip(f"{server} is not installed (pip install {server})")
    commands = shown_commands(server)
    assert commands, f"the docs show no {server} command"
    assert any("USERSVC_COLLECTIONS=" in c for c in commands), \
        f"no {server} recipe with collections"
    clone_root(tmp_path)        # run where a reader runs them: a clone's root
    assert any("USERSVC_METRICS_PORT=" in c for c in commands), f"no {server} recipe with metrics"
    for command in commands:
        port, metrics_port = free_port(), free_port()
        assert "127.0.0.1:8080" in command or "--host 127.0.0.1 --port 8080" in command
        *first, command = command.split(" && ")
        for step in first:      # rm -rf metrics, mkdir metrics: as a shell would
            subprocess.run(step, shell=True, cwd=tmp_path, check=True)
        words = shlex.split(command.replace("127.0.0.1:8080", f"127.0.0.1:{port}")
                            .replace("--port 8080", f"--port {port}")
                            .replace("USERSVC_METRICS_PORT=9101",
                                     f"USERSVC_METRICS_PORT={metrics_port}"))
        settings = dict(w.split("=", 1) for w in itertools.takewhile(lambda w: "=" in w, words))
        argv = words[len(settings):]
        out = tmp_path / f"{server}-{port}.out"     # (granian's own lines: its workers started)
        with open(out, "w") as stdout:
            process = subprocess.Popen([str(GUNICORN.parent / argv[0]), *argv[1:]], cwd=tmp_path,
                                       env={**os.environ, **settings}, stdout=stdout,
                                       stderr=subprocess.PIPE, text=True)
        try:
            for _ in range(400):        # until it answers, every worker started (bounded)
                try:
                    if call(("127.0.0.1", port), "GET", "/healthz")[0] == 200 and (
                            server != "granian" or out.read_text().count("Started worker") == 2):
                        break
                except OSError:
                    pass
                threading.Event().wait(0.05)
            else:
                raise AssertionError(f"{command} did not start")
            status, _, body = call(("127.0.0.1", port), "POST", "/users",
                                   {"name": "Ada", "email": f"ada{port}@example.org"})
            assert status == 201
            assert call(("127.0.0.1", port), "GET", f"/users/{json.loads(body)['id']}")[0] == 200
            if "USERSVC_COLLECTIONS" in settings:     # the books, over both workers
                served_books(("127.0.0.1", port), port)
            if "USERSVC_METRICS_PORT" in settings:    # every request of every worker
                # The port is claimed by a worker's thread as it starts (metrics.shared):
                # it may come a moment after the app answers (seen once under granian).
                for _ in range(200):
                    try:
                        status, _, text = call(("127.0.0.1", metrics_port), "GET", "/metrics")
                        break
                    except OSError:
                        threading.Event().wait(0.05)
                else:
                    raise AssertionError(f"no worker of {command} serves /metrics")
                assert status == 200
                posts = {(s.labels["http_route"], s.value) for family in
                         text_string_to_metric_families(text.decode()) for s in family.samples
                         if s.name == "http_server_request_duration_seconds_count"
                         and s.labels["http_request_method"] == "POST"}
                assert posts == {("/users", 1), ("/books", 6)}
        finally:
            if server == "uwsgi":       # (it drops a SIGTERM that comes while it starts)
                until_it_catches(process.pid, signal.SIGTERM)
            process.send_signal(signal.SIGTERM)
            _, errors = process.communicate(timeout=30)
        assert process.returncode == 0, errors
        assert "Traceback" not in errors
    assert (tmp_path / "users.db").exists()     # USERSVC_STORAGE, in the working directory


def served_books(at, tag):
    """The declared books are served: writes, their pages, feed and OpenAPI."""
    made = [call(at, "POST", "/books", {"title": f"Book {i}", "isbn": f"{tag}-{i}"})
            for i in range(6)]
    assert [status for status, _, _ in made] == [201] * 6
    first = json.loads(made[0][2])["id"]
    status, headers, page = call(at, "GET", f"/books/{first}", headers={"Accept": "text/html"})
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert b"Book 0" in page
    status, _, feed = call(at, "GET", "/books/changes?limit=1000")
    assert status == 200 and [e["book"]["isbn"] for e in json.loads(feed)][-6:] == \
        [f"{tag}-{i}" for i in range(6)]
    status, _, document = call(at, "GET", "/openapi.json")
    assert status == 200 and "/books/changes" in json.loads(document)["paths"]


@pytest.mark.parametrize("preload", [False, True], ids=["", "preload"])
def test_collections_that_cannot_be_had_are_one_line_and_gunicorn_stops(tmp_path, preload):
    shutil.copy(ROOT / "examples" / "library.py", tmp_path / "library.py")
    args = [str(GUNICORN), "--bind", "127.0.0.1:0", "--workers", "2",
            *(["--preload"] if preload else []), "usersvc.wsgi:app"]
    done = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "USERSVC_STORAGE": "memory://",
                               "USERSVC_COLLECTIONS": "library:NOVELS"})
    assert done.returncode in ((4,) if preload else (4, 1))
    ours = {line for line in done.stderr.splitlines() if line.startswith("usersvc:")}
    assert ours == {"usersvc: USERSVC_COLLECTIONS cannot be used: library has no NOVELS"}
    assert "usersvc/" not in done.stderr


def test_the_mod_wsgi_script_the_docs_show_gives_the_app(tmp_path):
    text = (ROOT / "docs" / "deploying.md").read_text()
    script = re.search(r"```python\n(.*?from usersvc\.wsgi import app as application\n)```",
                       text, re.S).group(1)
    script = script.replace("/srv/usersvc/users.db", f"{tmp_path}/users.db")
    check = script + (
        "from webob import Request\n"
        "print(Request.blank('/healthz').get_response(application).status_int)\n")
    done = subprocess.run([sys.executable, "-c", check], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60,
                          env={k: v for k, v in os.environ.items() if not k.startswith("USERSVC_")})
    assert done.stdout.strip() == "200", done.stderr
    assert (tmp_path / "users.db").exists()


def test_memory_under_a_wsgi_server_warns_that_each_worker_has_its_own(tmp_path):
    done = subprocess.run([sys.executable, "-c", "import usersvc.wsgi"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "USERSVC_STORAGE": "memory://"})
    assert done.returncode == 0, done.stderr
    assert "WARNING usersvc: memory:// keeps the records in this process" in done.stderr
    assert "each has its own records and hands out the same ids" in done.stderr
