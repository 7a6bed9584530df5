"""Metrics from every worker in one scrape (``usersvc.features.metrics.shared``):
real gunicorn (sync and gthread, with and without ``--preload``) and uWSGI
(``--processes 2``), each with two workers, ``USERSVC_METRICS_PORT`` and
``USERSVC_METRICS_DIR``. Requests spread over the workers are counted
exactly once in one scrape; workers killed keep their counts and leave no
gauge behind; the names and labels are ``serve.py``'s."""
from __future__ import annotations

import contextlib
import functools
import http.client
import os
import signal
import subprocess
import threading
from pathlib import Path

import pytest
from helpers import DEADLINE, GUNICORN, Gunicorn, Served, call, free_port, race

pytest.importorskip("prometheus_client", reason="pip install -e '.[metrics]'")
from test_metrics import DURATION, operations, requests, samples  # noqa: E402

from usersvc.features.metrics.files import read  # noqa: E402

UWSGI = GUNICORN.with_name("uwsgi")
SETUPS = [("gunicorn", worker, preload) for worker in ("sync", "gthread")
          for preload in (False, True)] + [("uwsgi", "threads", True)]

pytestmark = pytest.mark.skipif(not GUNICORN.exists(), reason="gunicorn is not installed "
                                "(pip install -e '.[test]')")


class Uwsgi:
    """``uwsgi --processes 2 --threads 4`` on a free port, as deploying.md
    runs it (the app loaded in the master, then forked)."""

    def __init__(self, cwd: Path, storage: str, **env: str) -> None:
        self.log_path = cwd / "uwsgi.log"
        port = free_port()
        with open(self.log_path, "w") as log:
            self.process = subprocess.Popen(
                [str(UWSGI), "--http", f"127.0.0.1:{port}", "--module", "usersvc.wsgi:app",
                 "--master", "--processes", "2", "--threads", "4", "--die-on-term"],
                cwd=cwd, env={**os.environ, "USERSVC_STORAGE": storage, **env}, stdout=log,
                stderr=subprocess.STDOUT)
        self.address = ("127.0.0.1", port)
        until(lambda: _answers(self.address, "/healthz"), f"uWSGI did not start:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text()

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=30)


def until(condition, failure: str, tries: int = 300):
    """``condition()``'s first true value, asked every 50 ms (bounded)."""
    for _ in range(tries):
        found = condition()
        if found:
            return found
        threading.Event().wait(0.05)
    raise AssertionError(failure)


def _answers(address, path):
    try:
        return call(address, "GET", path)[0] == 200
    except OSError:
        return False


def scrape(port: int) -> dict:
    """One scrape of the metrics port, once some process serves it."""
    def scraped():
        try:
            status, _, body = call(("127.0.0.1", port), "GET", "/metrics")
        except OSError:
            return None
        return status == 200 and body.decode()
    return samples(until(scraped, f"nothing serves metrics on port {port}"))


def start(server: str, worker: str, preload: bool, cwd: Path, storage: str, **env: str):
    if server == "uwsgi":
        if not UWSGI.exists():
            pytest.skip("uwsgi is not installed (pip install -e '.[test]')")
        return Uwsgi(cwd, storage, **env)
    return Gunicorn(cwd, storage, worker, preload, **env)


def counted_by(directory: Path, route: str = "/users") -> dict[int, float]:
    """Each process's requests on ``route``, from its own files: {pid: count}."""
    counts = {pid: sum(sum(numbers[:-1])
                       for (metric, labels), numbers in series.items()
                       if metric == DURATION and labels[1] == route)
              for pid, series in read(str(directory))}
    return {pid: n for pid, n in counts.items() if n}


def _post_the_nth(served, first, i):
    return call(served.address, "POST", "/users",
                {"name": "N", "email": f"n{first + i}@example.org"})


def spread_creates(served, directory: Path) -> int:
    """20 users made at once, and more, 4 at once, until both workers have
    made some (which worker takes a connection is the kernel's choice: on
    a loaded machine one worker, awake already, may take dozens in a row;
    a pause between rounds lets the other's loop run): how many were
    made, each counted by its worker's own file."""
    sent = 0
    for _ in range(60):
        n = 20 if not sent else 4
        made = race(n, functools.partial(_post_the_nth, served, sent))
        assert [m[0] for m in made] == [201] * n
        sent += n
        by_process = counted_by(directory)
        assert sum(by_process.values()) == sent
        if len(by_process) == 2:
            return sent
        threading.Event().wait(0.05)
    raise AssertionError(f"one worker took every request: {by_process}")


def workers_of(process: subprocess.Popen, directory: Path) -> set[int]:
    """The worker processes: those that count, but the master."""
    return {pid for pid, _ in read(str(directory)) if pid != process.pid and _running(pid)}


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("server, worker, preload", SETUPS,
                         ids=[f"{s}-{w}{'-preload' if p else ''}" for s, w, p in SETUPS])
def test_one_scrape_counts_every_worker_and_a_killed_worker_keeps_its_counts(
        tmp_path, server, worker, preload):
    directory = tmp_path / "metrics"
    directory.mkdir()
    port = free_port()
    served = start(server, worker, preload, tmp_path, f"sqlite:///{tmp_path}/users.db",
                   USERSVC_METRICS_DIR=str(directory), USERSVC_METRICS_PORT=str(port))
    try:
        # 20 requests at once or more, till both workers have some.
        sent = spread_creates(served, directory)
        found = scrape(port)
        assert requests(found, "POST", "/users", 201) == sent
        assert operations(found, "create") == sent
        assert found[("usersvc_sqlite_commit_writes_sum", frozenset())] == sent
        assert found[("usersvc_feed_waiting_requests_limit", frozenset())] == 2 * 2
        # A long-poll holds a request active (where a worker has threads to wait on).
        threaded = worker != "sync"
        waiting = threading.Thread(target=lambda: _ignore_errors(
            call, served.address, "GET", f"/users/changes?after={sent}&wait=25"), daemon=True)
        waiting.start()
        if threaded:
            until(lambda: scrape(port).get(("usersvc_feed_waiting_requests", frozenset())) == 1,
                  "the long-poll was not counted as waiting")
            assert _active(scrape(port), "GET") == 1
        else:       # (a worker without threads answers at once: answered before the kill,
            waiting.join(DEADLINE)      # not by the workers that come after it)
            assert not waiting.is_alive()
        # Every worker killed: the server starts others, the counts stay and
        # the killed workers' gauges go (the long-poll is no longer active).
        killed = workers_of(served.process, directory)
        assert len(killed) == 2
        for pid in killed:
            os.kill(pid, signal.SIGKILL)
        until(lambda: _answers(served.address, "/healthz")
              and workers_of(served.process, directory) - killed, "no worker came back")
        until(lambda: not workers_of(served.process, directory) & killed, "a worker lives on")
        found = scrape(port)
        assert requests(found, "POST", "/users", 201) == sent
        assert _active(found, "GET") == 0 and _active(found, "POST") == 0
        assert found[("usersvc_feed_waiting_requests", frozenset())] == 0
        assert call(served.address, "POST", "/users",
                    {"name": "N", "email": "after@example.org"})[0] == 201
        assert requests(scrape(port), "POST", "/users", 201) == sent + 1
    finally:
        assert served.stop() == 0, served.log()
    assert "Traceback" not in served.log()


def _active(found, method) -> float:
    return found.get(("http_server_active_requests",
                      frozenset({"http_request_method": method}.items())), 0)


def _ignore_errors(action, *args):
    with contextlib.suppress(OSError, http.client.HTTPException):     # its worker was killed
        action(*args)


def families(text_samples: dict) -> set[tuple[str, frozenset]]:
    """Every sample's name and label names, but the process's own metrics."""
    return {(name, frozenset(k for k, _ in labels)) for name, labels in text_samples
            if not name.startswith(("process_", "python_"))}


def test_the_names_and_labels_are_serve_pys(tmp_path):
    def exercise(address):
        assert call(address, "POST", "/users", {"name": "N", "email": "n@example.org"})[0] == 201
        assert call(address, "GET", "/users/1")[0] == 200
        assert call(address, "GET", "/users?limit=5")[0] == 200
        assert call(address, "GET", "/nowhere")[0] == 404

    (tmp_path / "one").mkdir()
    alone = Served("--storage", f"sqlite:///{tmp_path}/one/users.db", "--metrics-port", "0",
                   cwd=tmp_path / "one")
    try:
        exercise(alone.address)
        expected = samples(call(alone.metrics_address, "GET", "/metrics")[2].decode())
    finally:
        assert alone.stop() == 0
    directory = tmp_path / "metrics"
    directory.mkdir()
    port = free_port()
    served = Gunicorn(tmp_path, f"sqlite:///{tmp_path}/users.db", "gthread", True,
                      USERSVC_METRICS_DIR=str(directory), USERSVC_METRICS_PORT=str(port))
    try:
        exercise(served.address)
        found = scrape(port)
    finally:
        assert served.stop() == 0
    assert families(found) == families(expected)
    assert {labels for name, labels in found if name == "usersvc_build_info"} == \
        {labels for name, labels in expected if name == "usersvc_build_info"}


def test_postgres_pools_are_added_up_over_the_workers(tmp_path, postgres_url):
    directory = tmp_path / "metrics"
    directory.mkdir()
    port = free_port()
    storage = postgres_url + ("&" if "?" in postgres_url else "?") + "pool_size=3"
    served = Gunicorn(tmp_path, storage, "gthread", False,
                      USERSVC_METRICS_DIR=str(directory), USERSVC_METRICS_PORT=str(port))
    try:
        spread_creates(served, directory)
        # Each worker tells its pool's figures each second; at rest, none in use.
        found = until(lambda: (found := scrape(port))[(
            "usersvc_postgres_pool_connections_in_use", frozenset())] == 0 and found,
            "connections stayed in use")
        assert found[("usersvc_postgres_pool_connections_max", frozenset())] == 2 * 3
        assert 2 <= found[("usersvc_postgres_pool_connections", frozenset())] <= 2 * 3
        assert found[("usersvc_postgres_pool_requests_waiting", frozenset())] == 0
        assert "usersvc_sqlite_commit" not in str(found)
    finally:
        assert served.stop() == 0


@pytest.mark.parametrize("environment, said", [
    ({"USERSVC_METRICS_PORT": "9101"},
     "usersvc: USERSVC_METRICS_PORT needs USERSVC_METRICS_DIR: a directory, empty when the "
     "server starts, where the workers count together"),
    ({"USERSVC_METRICS_PORT": "9101", "USERSVC_METRICS_DIR": "/nowhere/metrics"},
     "usersvc: USERSVC_METRICS_DIR must be a directory usersvc can write to, not "
     "'/nowhere/metrics'"),
    ({"USERSVC_METRICS_PORT": "0", "USERSVC_METRICS_DIR": "."},
     "usersvc: USERSVC_METRICS_PORT must be from 1 to 65535 under a WSGI server (every "
     "worker serves the same port), not 0"),
    ({"USERSVC_METRICS_PORT": "lots"},
     "usersvc: USERSVC_METRICS_PORT must be a whole number of at least 0, not 'lots'"),
    ({"USERSVC_METRICS_HOST": "0.0.0.0"},
     "usersvc: USERSVC_METRICS_HOST needs USERSVC_METRICS_PORT (the port metrics are served "
     "on)"),
    ({"USERSVC_METRICS_DIR": "."},
     "usersvc: USERSVC_METRICS_DIR needs USERSVC_METRICS_PORT (the port metrics are served "
     "on)"),
], ids=["no directory", "no such directory", "port 0", "not a port", "host alone",
        "directory alone"])
def test_metrics_that_cannot_be_served_are_one_line_and_gunicorn_stops(tmp_path, environment,
                                                                       said):
    done = subprocess.run([str(GUNICORN), "--bind", "127.0.0.1:0", "--workers", "2", "--preload",
                           "usersvc.wsgi:app"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60, env={**os.environ, "USERSVC_STORAGE": "memory://",
                                           **environment})
    assert done.returncode == 4
    assert [line for line in done.stderr.splitlines() if line.startswith("usersvc:")] == [said]
    assert "Traceback" not in done.stderr



def test_metrics_open_to_every_address_are_warned_of(tmp_path):
    directory = tmp_path / "metrics"
    directory.mkdir()
    port = free_port()
    served = Gunicorn(tmp_path, f"sqlite:///{tmp_path}/users.db", "sync", True,
                      USERSVC_METRICS_DIR=str(directory), USERSVC_METRICS_PORT=str(port),
                      USERSVC_METRICS_HOST="0.0.0.0")
    try:
        assert call(served.address, "GET", "/users")[0] == 200
        assert requests(scrape(port), "GET", "/users", 200) == 1
    finally:
        assert served.stop() == 0
    assert served.log().count("serving metrics on 0.0.0.0: anyone who can reach this address "
                              "can read them") == 1
