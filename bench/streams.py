"""Streams of changes at scale: 200 streams open on one serve.py process,
a write made through another process on the same store, and how long it
takes to reach every stream; and the listening process's memory with
them open.

    .venv/bin/python bench/streams.py [--streams 200] [--writes 20] [--postgres URL]

The listening server is ``serve.py --threads 2N`` (a stream holds one of
the ``N`` waiting places, half the threads); the writing one a plain
``serve.py`` on the same SQLite file, or PostgreSQL database. One client
thread reads every stream (non-blocking sockets, ``selectors``) and
notes when each event arrives; the writer POSTs a user every quarter of
a second. A write's delay to a stream is from its 201 to the event's
arrival there: the other process's commit seen (SQLite: the store's one
look every 0.2 s; PostgreSQL: NOTIFY), the wake-up, the read, the write to
every stream. Figures: the median, the 99th percentile and the worst over
every (write, stream), and the listener's resident memory (``VmRSS``)
before the streams and with them open. Needs an idle machine (its figures
are times).
"""
from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import selectors
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from overhttp import usersvc  # noqa: E402


@contextlib.contextmanager
def own_schema(url: str) -> Iterator[str]:
    """A PostgreSQL URL whose tables go to a schema made for the run (and
    dropped after it); any other URL as it is."""
    if not url.startswith("postgresql:"):
        yield url
        return
    import psycopg
    schema = f"bench_streams_{os.getpid()}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
        try:
            yield f"{url}{'&' if '?' in url else '?'}options=-csearch_path%3D{schema}"
        finally:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


class Streams:
    """``n`` streams of /users/changes on ``port``, read by one thread:
    ``arrived[position]`` is when each stream got that event."""

    def __init__(self, port: int, n: int) -> None:
        self.selector = selectors.DefaultSelector()
        self.arrived: dict[int, list[float]] = {}
        self.opened = 0
        for _ in range(n):
            sock = socket.create_connection(("127.0.0.1", port))
            sock.sendall(b"GET /users/changes HTTP/1.1\r\nHost: bench\r\n"
                         b"Accept: text/event-stream\r\n\r\n")
            sock.setblocking(False)
            self.selector.register(sock, selectors.EVENT_READ, [b""])
        self.stopping = False
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        while not self.stopping:
            for key, _ in self.selector.select(timeout=0.1):
                try:
                    data = key.fileobj.recv(65536)
                except BlockingIOError:
                    continue
                now = time.monotonic()
                if not data:
                    self.selector.unregister(key.fileobj)
                    continue
                buffer = key.data[0] + data
                *lines, key.data[0] = buffer.split(b"\n")
                for line in lines:
                    if line.startswith(b"retry:"):
                        self.opened += 1
                    elif line.startswith(b"id: ") and line[4:].strip().isdigit():
                        self.arrived.setdefault(int(line[4:]), []).append(now)

    def close(self) -> None:
        self.stopping = True
        self.thread.join()
        for key in list(self.selector.get_map().values()):
            key.fileobj.close()


def post(port: int, n: int) -> tuple[int, float]:
    conn = http.client.HTTPConnection("127.0.0.1", port)
    conn.request("POST", "/users", json.dumps({"name": f"W {n}", "email": f"w{n}@example.org"}),
                 {"Content-Type": "application/json"})
    response = conn.getresponse()
    response.read()
    done = time.monotonic()
    conn.close()
    assert response.status == 201, response.status
    return n, done


def run(storage: str, streams: int, writes: int, cwd: str) -> dict[str, float]:
    listening = usersvc(storage, cwd, "--no-access-log", threads=2 * streams)
    writing = usersvc(storage, cwd, "--no-access-log")
    try:
        post(writing.port, -1)          # the tables made, the first commit
        time.sleep(1)
        before = rss_kib(listening.process.pid)
        reader = Streams(listening.port, streams)
        for _ in range(200):
            if reader.opened == streams:
                break
            time.sleep(0.05)
        assert reader.opened == streams, f"{reader.opened} of {streams} streams opened"
        time.sleep(1)
        with_streams = rss_kib(listening.process.pid)
        written = {}
        for n in range(writes):
            conn = http.client.HTTPConnection("127.0.0.1", writing.port)
            conn.request("GET", "/users/changes?limit=1000")
            last = json.loads(conn.getresponse().read())[-1]["seq"]
            conn.close()
            _, done = post(writing.port, n)
            written[last + 1] = done
            time.sleep(0.25)
        time.sleep(1.5)
        reader.close()
        delays = [arrival - done for position, done in written.items()
                  for arrival in reader.arrived.get(position, [])]
        missing = writes * streams - len(delays)
        assert missing == 0, f"{missing} of {writes * streams} events never arrived"
        delays.sort()
        return {"median": statistics.median(delays), "p99": delays[int(len(delays) * 0.99) - 1],
                "worst": delays[-1], "before": before, "with": with_streams}
    finally:
        listening.stop()
        writing.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=200)
    parser.add_argument("--writes", type=int, default=20)
    parser.add_argument("--postgres", default=os.environ.get("USERSVC_TEST_POSTGRES_URL"),
                        help="a PostgreSQL database to use too (in a schema made for the "
                             "run and dropped after it)")
    args = parser.parse_args()
    print(f"| {args.streams} streams, a write from another process | to every stream: median "
          "| p99 | worst | listener's memory before | with the streams |")
    print("|---|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as cwd:
        stores = {"SQLite file": f"sqlite:///{cwd}/users.db"}
        if args.postgres:
            stores["PostgreSQL"] = args.postgres
        for name, url in stores.items():
            with own_schema(url) as url:
                found = run(url, args.streams, args.writes, cwd)
            print(f"| {name} | {found['median'] * 1000:.0f} ms | {found['p99'] * 1000:.0f} ms | "
                  f"{found['worst'] * 1000:.0f} ms | {found['before'] / 1024:.0f} MiB | "
                  f"{found['with'] / 1024:.0f} MiB |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
