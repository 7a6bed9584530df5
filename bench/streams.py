"""Streams of changes at scale: 200 streams open on one serve.py process,
a write made through another process on the same store, and how long it
takes to reach every stream; and the listening process's memory with
them open.

    .venv/bin/python bench/streams.py [--streams 200] [--writes 20] [--postgres URL]
    .venv/bin/python bench/streams.py --team [--streams 16] [--long-polls 16]
                                      [--turned-away 0] [--postgres URL]

``--team``: the live pages of a team on serve.py's defaults (4 threads,
32 waiting places): ``--streams`` streams and ``--long-polls`` long-polls
(``wait=30``, each asked again from its last position as soon as it is
answered; after a 503, again after its ``Retry-After``) at once,
``--turned-away`` more clients asking for a stream twice a second (past
the places: turned away, unless a long-poll's place is free between its
asks), and a plain ``GET /users/1`` every 20 ms on the same server,
while the writes come: the delay from each write to every stream and
long-poll, the GET's time, and the server's memory idle (and idle with
``--max-waiting 0``: the waiting places' threads' cost) and with
everything open.

The listening server is ``serve.py --max-waiting N`` (a stream holds one
of the ``N`` waiting places, each a thread); the writing one a plain
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
    listening = usersvc(storage, cwd, "--no-access-log", "--max-waiting", str(streams))
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


class LongPolls:
    """``n`` clients following /users/changes by long-polls, each on its own
    connection and thread: ``arrived[position]`` is when each got that change."""

    def __init__(self, port: int, n: int, after: int) -> None:
        self.arrived: dict[int, list[float]] = {}
        self.lock = threading.Lock()
        self.stopping = False
        self.asked = self.refused = 0
        self.threads = [threading.Thread(target=self._follow, args=(port, after), daemon=True)
                        for _ in range(n)]
        for thread in self.threads:
            thread.start()

    def _follow(self, port: int, after: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        while not self.stopping:
            conn.request("GET", f"/users/changes?after={after}&limit=1000&wait=30")
            with self.lock:
                self.asked += 1
            response = conn.getresponse()
            body = response.read()
            now = time.monotonic()
            if response.status == 503:          # no place free: as a client does, again later
                with self.lock:
                    self.refused += 1
                time.sleep(int(response.headers["Retry-After"]))
                continue
            assert response.status == 200, (response.status, body)
            found = json.loads(body)
            with self.lock:
                for entry in found:
                    self.arrived.setdefault(entry["seq"], []).append(now)
            after = found[-1]["seq"] if found else after
        conn.close()


def turned_away(port: int, stopping: threading.Event, counted: list[int]) -> None:
    """A page past the places: asks for a stream twice a second, turned away each time."""
    while not stopping.wait(0.5):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        conn.request("GET", "/users/changes", headers={"Accept": "text/event-stream"})
        body = conn.getresponse().read()
        conn.close()
        counted[0 if b"event: busy" in body else 1] += 1


def plain_gets(port: int, stopping: threading.Event, times: list[float]) -> None:
    """``GET /users/1`` every 20 ms on a kept connection: each one's time."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    while not stopping.wait(0.02):
        began = time.monotonic()
        conn.request("GET", "/users/1")
        response = conn.getresponse()
        response.read()
        times.append(time.monotonic() - began)
        assert response.status == 200, response.status
    conn.close()


def idle_rss(storage: str, cwd: str, *extra: str) -> int:
    """A serve.py's memory, started and idle (its threads started)."""
    server = usersvc(storage, cwd, "--no-access-log", *extra)
    try:
        post(server.port, -2)
        time.sleep(1)
        return rss_kib(server.process.pid)
    finally:
        server.stop()


def team(storage: str, streams: int, polls: int, away: int, writes: int,
         cwd: str) -> dict[str, float]:
    """serve.py's defaults with ``streams`` streams and ``polls`` long-polls open."""
    none_waiting = idle_rss(storage, cwd, "--max-waiting", "0")
    listening = usersvc(storage, cwd, "--no-access-log")       # (serve.py's defaults)
    writing = usersvc(storage, cwd, "--no-access-log")
    stopping = threading.Event()
    try:
        post(writing.port, -1)
        time.sleep(1)
        before = rss_kib(listening.process.pid)
        conn = http.client.HTTPConnection("127.0.0.1", listening.port)
        conn.request("GET", "/users/changes?limit=1000")
        start = json.loads(conn.getresponse().read())[-1]["seq"]
        conn.close()
        reader = Streams(listening.port, streams)
        pollers = LongPolls(listening.port, polls, start)
        for _ in range(200):
            if reader.opened == streams and pollers.asked == polls:
                break
            time.sleep(0.05)
        assert reader.opened == streams, f"{reader.opened} of {streams} streams opened"
        counted, times = [0, 0], []
        helpers = [threading.Thread(target=turned_away, args=(listening.port, stopping, counted),
                                    daemon=True) for _ in range(away)]
        helpers.append(threading.Thread(target=plain_gets, args=(listening.port, stopping, times),
                                        daemon=True))
        for thread in helpers:
            thread.start()
        time.sleep(1)
        with_them = rss_kib(listening.process.pid)
        written = {}
        for n in range(writes):
            conn = http.client.HTTPConnection("127.0.0.1", writing.port)
            conn.request("GET", f"/users/changes?limit=1000&after={start}")
            found = json.loads(conn.getresponse().read())
            last = found[-1]["seq"] if found else start
            conn.close()
            _, done = post(writing.port, n)
            written[last + 1] = done
            time.sleep(0.25)
        time.sleep(1.5)
        stopping.set()
        for thread in helpers:
            thread.join()
        reader.close()
        pollers.stopping = True
        arrived = {p: reader.arrived.get(p, []) + pollers.arrived.get(p, []) for p in written}
        delays = sorted(arrival - written[p] for p, arrivals in arrived.items()
                        for arrival in arrivals)
        missing = writes * (streams + polls) - len(delays)
        assert missing == 0, f"{missing} of {writes * (streams + polls)} changes never arrived"
        times.sort()
        return {"median": statistics.median(delays), "p99": delays[int(len(delays) * 0.99) - 1],
                "worst": delays[-1], "get_median": statistics.median(times),
                "get_p99": times[int(len(times) * 0.99) - 1], "gets": len(times),
                "turned_away": counted[0], "placed": counted[1],
                "refused": pollers.refused, "none_waiting": none_waiting, "before": before,
                "with": with_them}
    finally:
        stopping.set()
        listening.stop()
        writing.stop()


def main_team(args: argparse.Namespace) -> int:
    print(f"| {args.streams} streams + {args.long_polls} long-polls + {args.turned_away} "
          "turned away, serve.py's defaults | write to every listener: median | p99 | worst "
          "| GET /users/1: median | p99 | streams turned away / placed, long-polls refused "
          "| memory idle, --max-waiting 0 | idle | with them |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as cwd:
        stores = {"SQLite file": f"sqlite:///{cwd}/users.db"}
        if args.postgres:
            stores["PostgreSQL"] = args.postgres
        for name, url in stores.items():
            with own_schema(url) as url:
                f = team(url, args.streams, args.long_polls, args.turned_away, args.writes, cwd)
            print(f"| {name} | {f['median'] * 1000:.0f} ms | {f['p99'] * 1000:.0f} ms | "
                  f"{f['worst'] * 1000:.0f} ms | {f['get_median'] * 1000:.1f} ms | "
                  f"{f['get_p99'] * 1000:.1f} ms | {f['turned_away']} / {f['placed']}, "
                  f"{f['refused']} | "
                  f"{f['none_waiting'] / 1024:.0f} MiB | {f['before'] / 1024:.0f} MiB | "
                  f"{f['with'] / 1024:.0f} MiB |")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=200)
    parser.add_argument("--writes", type=int, default=20)
    parser.add_argument("--postgres", default=os.environ.get("USERSVC_TEST_POSTGRES_URL"),
                        help="a PostgreSQL database to use too (in a schema made for the "
                             "run and dropped after it)")
    parser.add_argument("--team", action="store_true",
                        help="serve.py's defaults: --streams streams and --long-polls long-polls "
                             "(16 each unless given), past them clients turned away, "
                             "and plain GETs")
    parser.add_argument("--long-polls", type=int, default=16)
    parser.add_argument("--turned-away", type=int, default=0)
    args = parser.parse_args()
    if args.team:
        if "--streams" not in sys.argv:
            args.streams = 16
        return main_team(args)
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
