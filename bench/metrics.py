"""What metrics cost over HTTP: this tree's serve.py with ``--metrics-port``
and without, in turns.

    .venv/bin/python bench/metrics.py [--rounds N] [--seconds S]

Each round runs both servers (waitress, 4 threads, no access log, on core
0) one after the other, the first of them changing each round, under
``wrk -t1 -c8`` on core 1 (``overhttp.load``): GET of one user, a page of
100 and POST, over 1,000 users, on the memory store and on a SQLite file.
With metrics on, the metrics port is scraped once a second during the
load, as Prometheus would scrape it (a tenth as often, by default), so
the scrapes' own cost is in the figure too. Figures are medians of the
rounds, in requests per second, and the ratio of "off" over "on": the
time a request takes with metrics on, as a multiple of without.

``--gunicorn``: instead, gunicorn (``usersvc.wsgi:app``, two gthread
workers of 4 threads, on core 0) on a SQLite file, with
``USERSVC_METRICS_PORT`` and ``USERSVC_METRICS_DIR`` (every worker's
counts in files, added up at the scrape, scraped once a second) and
without, in turns, under the same load. The directory is in memory
(``/dev/shm``, as ``/run`` is on a server: docs/deploying.md), or with
``--metrics-dir-on-disk`` beside the SQLite file.

``--instructions``: instead, serve.py itself under valgrind's callgrind,
with metrics and without, serving 100 and then 300 requests (GET of one,
POST) on one keep-alive connection: instructions a request over HTTP,
waitress's own work included, repeatable where the timings above swing by
a fifth from round to round. In-process, ``bench/instructions.py
--metrics`` counts the same without the server.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import overhttp  # noqa: E402


def scraping(port: int, stop: threading.Event) -> threading.Thread:
    def scrape() -> None:
        while not stop.wait(1.0):
            urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read()
    thread = threading.Thread(target=scrape, daemon=True)
    thread.start()
    return thread


def measure(storage: str, metrics: bool, cwd: str, seconds: int) -> dict[str, float]:
    extra = ["--no-access-log", *(["--metrics-port", "0"] if metrics else [])]
    server = overhttp.usersvc(storage, cwd, *extra)
    try:
        port = metrics and re.search(r"metrics at http://[^:]+:(\d+)/metrics", server.line).group(1)
        return loaded(server.port, port and int(port), cwd, seconds)
    finally:
        server.stop()


def loaded(port: int, metrics_port: int | None, cwd: str, seconds: int) -> dict[str, float]:
    """Each operation's requests a second, on 1,000 users, the metrics port
    (if any) scraped once a second meanwhile."""
    overhttp.seed(port)
    stop = threading.Event()
    if metrics_port:
        scraper = scraping(metrics_port, stop)
    try:
        return {op: overhttp.load(port, method, path, seconds, str(Path(cwd) / "post.lua"))
                for op, (method, path) in overhttp.OPERATIONS.items()}
    finally:
        stop.set()
        if metrics_port:
            scraper.join()


def gunicorn_measure(metrics: bool, cwd: str, seconds: int,
                     on_disk: bool = False) -> dict[str, float]:
    port, metrics_port = overhttp.free_port(), None
    env = {**os.environ, "USERSVC_STORAGE": f"sqlite:///{cwd}/u.db"}
    if metrics:
        directory = (Path(cwd) if on_disk or not Path("/dev/shm").is_dir() else
                     Path(tempfile.mkdtemp(dir="/dev/shm"))) / "metrics"
        directory.mkdir()
        metrics_port = overhttp.free_port()
        env.update(USERSVC_METRICS_DIR=str(directory), USERSVC_METRICS_PORT=str(metrics_port))
    process = subprocess.Popen(overhttp._pin(0) + [
        str(Path(overhttp.PYTHON).with_name("gunicorn")), "--bind", f"127.0.0.1:{port}",
        "--workers", "2", "--worker-class", "gthread", "--threads", "4", "usersvc.wsgi:app"],
        cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1).read()
                break
            except OSError:
                threading.Event().wait(0.05)
        return loaded(port, metrics_port, cwd, seconds)
    finally:
        process.terminate()
        process.wait(timeout=30)
        if metrics and not on_disk and directory.parent != Path(cwd):
            shutil.rmtree(directory.parent)


def served_instructions(storage: str, metrics: bool, method: str, path: str, count: int,
                        cwd: str) -> int:
    """Instructions serve.py runs, under callgrind, from its start to its
    stop, serving 1,000 users and then ``count`` requests on one
    keep-alive connection (and, with metrics, one scrape)."""
    extra = ["--no-access-log", *(["--metrics-port", "0"] if metrics else [])]
    server = overhttp.Server(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                              overhttp.PYTHON, str(overhttp.ROOT / "serve.py"),
                              "--port", "{port}", "--storage", storage, *extra],
                             "usersvc serving", cwd, log=str(Path(cwd) / "valgrind.log"))
    try:
        overhttp.seed(server.port, 20)
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
        for i in range(count):
            body = (json.dumps({"name": "N", "email": f"i{i}@example.org"})
                    if method == "POST" else None)
            conn.request(method, path, body=body,
                         headers={"Content-Type": "application/json"} if body else {})
            conn.getresponse().read()
        conn.close()
        if metrics:
            port = re.search(r"metrics at http://[^:]+:(\d+)/metrics", server.line).group(1)
            urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=120).read()
    finally:
        server.process.terminate()
        server.process.wait(timeout=120)
        server.process.stdout.close()
    return int(re.search(r"Collected : (\d+)", (Path(cwd) / "valgrind.log").read_text()).group(1))


def instructions_over_http() -> None:
    os.environ["PYTHONHASHSEED"] = "0"      # the same dicts and sets in every run
    few, many = 100, 300
    print("| instructions a request over HTTP | metrics off | metrics on | ratio |")
    print("|---|---:|---:|---:|")
    for kind, url in {"memory": "memory://", "SQLite file": "sqlite:///u.db"}.items():
        for op, (method, path) in {"GET /users/1": ("GET", "/users/1"),
                                   "POST /users": ("POST", "/users")}.items():
            figures = []
            for metrics in (False, True):
                counts = []
                for count in (few, many):
                    with tempfile.TemporaryDirectory() as tmp:
                        counts.append(served_instructions(url, metrics, method, path, count, tmp))
                figures.append((counts[1] - counts[0]) / (many - few))
            print(f"| {kind}: {op} | {figures[0]:,.0f} | {figures[1]:,.0f} | "
                  f"{figures[1] / figures[0]:.3f} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=3)
    parser.add_argument("--gunicorn", action="store_true",
                        help="instead, gunicorn's workers, with metrics summed over them and "
                             "without")
    parser.add_argument("--metrics-dir-on-disk", action="store_true",
                        help="with --gunicorn: the metrics' directory beside the SQLite file")
    parser.add_argument("--instructions", action="store_true",
                        help="instead, count serve.py's instructions a request under callgrind")
    args = parser.parse_args()
    if args.instructions:
        instructions_over_http()
        return 0
    stores = {"memory": lambda tmp: "memory://", "SQLite file": lambda tmp: f"sqlite:///{tmp}/u.db"}
    if args.gunicorn:
        stores = {"gunicorn, SQLite file": stores["SQLite file"]}
    samples: dict[tuple[str, bool], list[dict[str, float]]] = {}
    for r in range(args.rounds):
        for kind, url in stores.items():
            for metrics in ((False, True) if r % 2 == 0 else (True, False)):
                with tempfile.TemporaryDirectory() as tmp:
                    samples.setdefault((kind, metrics), []).append(
                        gunicorn_measure(metrics, tmp, args.seconds, args.metrics_dir_on_disk)
                        if args.gunicorn
                        else measure(url(tmp), metrics, tmp, args.seconds))
    print("| requests per second | metrics off | metrics on | time ratio (on ÷ off) |")
    print("|---|---:|---:|---:|")
    for kind in stores:
        for op in overhttp.OPERATIONS:
            off = statistics.median(s[op] for s in samples[(kind, False)])
            on = statistics.median(s[op] for s in samples[(kind, True)])
            print(f"| {kind}: {op} | {off:,.0f} | {on:,.0f} | {off / on:.3f} |")
    if args.rounds > 1:
        print("\nEach round (off / on):")
        for kind in stores:
            for op in overhttp.OPERATIONS:
                print(f"- {kind}: {op}: " + ", ".join(
                    f"{a[op]:,.0f} / {b[op]:,.0f}"
                    for a, b in zip(samples[(kind, False)], samples[(kind, True)], strict=True)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
