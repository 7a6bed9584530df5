"""What the webhooks feature costs a write, and how fast it delivers (issue
60, "Off the write path"; docs/decisions.md, "Webhooks: the feed is the
outbox").

    .venv/bin/python bench/webhooks.py [--subscriptions 1,10] [--postgres URL]
                                       [--only instructions|delivery] [--repeat 1]
                                       [--rate 200] [--seconds 10] [--backlog 3000]
                                       [--no-verify]

1. **Instructions** (valgrind's callgrind, as ``instructions.py`` counts:
   the difference between ``MANY`` and ``FEW`` POSTs over ``MANY - FEW``,
   each a run of its own): a user's POST in-process on 1,000 users, on the
   memory store and on a SQLite file, with ``make_app``'s default
   features but webhooks, and with them all and ``N`` subscriptions
   whose receiver (another process, not counted) answers 204. Counted with
   ``--separate-threads=yes``, each thread apart, told by its name: the
   requests' own thread (what a POST costs its worker: the target, within
   +3% of without), the SQLite writer (the POST's commit, and with
   subscriptions each delivery's position too: the writer is shared), and
   the feature's threads (the scheduler and a runner a subscription: the
   deliveries, off the write path) and the store's look for other
   processes' commits (SQLite, made for the first listener). With other
   threads at work the requests' count is not the same in every run
   (the interpreter's caches, its collections and its lock shared with
   them): ``--repeat N`` counts each N times and shows the median, with
   the lowest and highest ratio. Before the
   counted POSTs, 20 more, and a wait (on a thread not counted) until every
   subscription has delivered them; after, until every one has delivered
   all: each run's deliveries are all in it.
2. **Delivery** (timed): the app with the feature under waitress (4
   threads) in a process of its own, a receiver in another (a
   ``ThreadingHTTPServer`` that verifies every delivery with the
   ``standardwebhooks`` package, answering 204; ``--no-verify``: it does
   not, to see what verifying costs it), and this process writing: users
   POSTed at ``--rate`` a second for ``--seconds`` (over 4 keep-alive
   connections), with ``N`` subscriptions. The lag of a delivery is from
   its write's answer (201) here to its arrival at the receiver: median,
   p99, worst over every (write, subscription). Then the rate from a
   backlog: ``--backlog`` users written first, one subscription made from
   before them (``after``), and the deliveries a second until the last
   arrives; and the same with ``N`` subscriptions at once (the total).
   On memory, a SQLite file (``synchronous=FULL``) and, with
   ``--postgres``, PostgreSQL.

The machine is shared and noisy: the instruction counts repeat; the
times are one run's.
"""
from __future__ import annotations

import argparse
import contextlib
import http.client
import http.server
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from instructions import FEW, MANY  # noqa: E402
from paired import CHILD_HELPERS, ROOT  # noqa: E402

WARM = 20                   # POSTs before counting (and delivered before counting)
DEADLINE = 600.0            # the longest any wait for deliveries may last
CONNECTIONS = 4             # the writer's keep-alive connections


# -- the receiver: another process ---------------------------------------------

def receive(port_file: str, verify: bool) -> None:
    """A receiver on 127.0.0.1 (its port written to ``port_file``): every
    POST to ``/hook/K`` verified with subscription ``K``'s secret (given by
    a POST to ``/secret/K``) and noted (when it arrived, its change's id);
    ``GET /deliveries`` gives them all, ``GET /count`` how many."""
    from standardwebhooks import Webhook
    hooks: dict[str, Any] = {}
    noted: list[tuple[str, float, int]] = []
    lock = threading.Condition()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"       # (keep-alive, if the sender keeps connections)

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            arrived = time.time()
            kind, _, key = self.path.strip("/").partition("/")
            if kind == "secret":
                with lock:
                    hooks[key] = Webhook(body.decode())
                    lock.notify_all()
                return self.answer(204)
            if verify:
                with lock:      # (a delivery may come before its secret is told here)
                    lock.wait_for(lambda: key in hooks, 10)
                payload = hooks[key].verify(body, dict(self.headers))
            else:
                payload = json.loads(body)
            with lock:
                noted.append((key, arrived, payload["data"]["id"]))
            self.answer(204)

        def do_GET(self) -> None:
            with lock:
                value = noted if self.path == "/deliveries" else len(noted)
                body = json.dumps(value).encode()
            self.answer(200, body)

        def answer(self, status: int, body: bytes = b"") -> None:
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    Path(port_file).write_text(str(server.server_port))
    server.serve_forever()


@contextlib.contextmanager
def receiver(verify: bool = True) -> Iterator[Receiver]:
    with tempfile.TemporaryDirectory() as tmp:
        port_file = Path(tmp) / "port"
        process = subprocess.Popen([sys.executable, __file__, "--child", "receiver", str(port_file),
                                    "verify" if verify else "plain"])
        try:
            yield Receiver(int(wait_for_file(port_file, process)))
        finally:
            process.terminate()
            process.wait()


def wait_for_file(path: Path, process: subprocess.Popen[Any]) -> str:
    end = time.monotonic() + 60
    while not path.exists() or not path.read_text():
        if process.poll() is not None or time.monotonic() > end:
            raise RuntimeError(f"{process.args} did not start")
        time.sleep(0.02)
    return path.read_text()


class Receiver:
    """The receiving process, as seen from here."""

    def __init__(self, port: int) -> None:
        self.port = port

    def url(self, key: int) -> str:
        return f"http://127.0.0.1:{self.port}/hook/{key}"

    def ask(self, method: str, path: str, body: bytes = b"") -> Any:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            connection.request(method, path, body)
            answer = connection.getresponse().read()
            return json.loads(answer) if answer else None
        finally:
            connection.close()

    def secret(self, key: int, secret: str) -> None:
        self.ask("POST", f"/secret/{key}", secret.encode())

    def count(self) -> int:
        return int(self.ask("GET", "/count"))

    def deliveries(self) -> list[tuple[str, float, int]]:
        return [tuple(d) for d in self.ask("GET", "/deliveries")]  # type: ignore[misc]

    def wait_count(self, n: int) -> float:
        """When the receiver had ``n`` deliveries (looked every 10 ms)."""
        end = time.monotonic() + DEADLINE
        while self.count() < n:
            if time.monotonic() > end:
                raise RuntimeError(f"{self.count()} deliveries of {n}")
            time.sleep(0.01)
        return time.time()


# -- 1. instructions --------------------------------------------------------------

COUNT_CHILD = CHILD_HELPERS + r"""
import json, sys, tempfile, threading
names = []                          # every thread started, in order (callgrind's numbers)
_start = threading.Thread.start
def start(self):
    names.append(self.name)
    _start(self)
threading.Thread.start = start
sys.path.insert(0, sys.argv[1])
from usersvc import DEFAULT_FEATURES, Settings, build_app
WITHOUT = tuple(f for f in DEFAULT_FEATURES if f != "webhooks")
kind, count, subscriptions, receiver = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
DEADLINE = 600.0

def wait_delivered(app, ids, last):
    import time
    end = time.monotonic() + DEADLINE
    for i in ids:
        while True:
            got = b"".join(app(environ("GET", f"/webhooks/{i}"), _ok))
            if json.loads(got)["delivered"]["users"] >= last:
                break
            if time.monotonic() > end:
                raise SystemExit(f"webhook {i} did not deliver up to {last}")
            time.sleep(0.05)

with tempfile.TemporaryDirectory() as tmp:
    store, users = users_store("memory://" if kind == "memory" else f"sqlite:///{tmp}/u.db")
    users.restore([user(i, f"User {i}", f"user{i}@example.org", 1) for i in range(1, 1001)])
    if subscriptions < 0:           # the feature not plugged
        app = build_app(Settings(store, features=WITHOUT))
    else:
        app = build_app(Settings(store, features=(*WITHOUT, "webhooks"),
                                 own={"webhooks_allow_private": True}))
    ids, first = [], 0
    for k in range(max(subscriptions, 0)):
        made = json.loads(b"".join(app(environ("POST", "/webhooks", json.dumps(
            {"url": receiver + str(k), "collections": ["users"]}).encode()), _ok)))
        ids.append(made["id"])
        first = made["delivered"]["users"]
    envs = [environ("POST", "/users", json.dumps(
        {"name": "New", "email": f"new{i}@example.org"}).encode()) for i in range(WARM + MADE)]
    # Waits on a thread of their own (not counted): for the warm POSTs'
    # deliveries before counting, for the counted ones' after.
    asked, answered, last = threading.Event(), threading.Event(), [0]
    def waiter():
        for _ in range(2):
            asked.wait()
            asked.clear()
            wait_delivered(app, ids, last[0])
            answered.set()
    waiting = threading.Thread(target=waiter, name="bench-waiter")
    waiting.start()
    timed(app, envs[:WARM])
    last[0] = first + WARM
    asked.set()
    answered.wait()
    answered.clear()
    timed(app, envs[WARM:WARM + count])
    last[0] = first + WARM + count
    asked.set()
    answered.wait()
    waiting.join()
    app.stop_waiting()
    app.close()
    store.close()
print(json.dumps(names))
"""


def counted(kind: str, count: int, subscriptions: int, url: str) -> dict[str, int]:
    """Instructions of one run (``count`` POSTs counted), summed by what
    ran them: ``requests`` (the main thread), ``writer``, ``webhooks``,
    ``poll``, ``other``."""
    with tempfile.TemporaryDirectory() as tmp:
        run = subprocess.run(
            ["valgrind", "--tool=callgrind", "--separate-threads=yes",
             f"--callgrind-out-file={tmp}/cg.out", sys.executable, "-c",
             f"MADE, WARM = {MANY}, {WARM}\n" + COUNT_CHILD,
             str(ROOT), kind, str(count), str(subscriptions), url],
            capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
        if run.returncode != 0:
            raise RuntimeError(run.stderr[-3000:])
        names = ["main", *json.loads(run.stdout.strip().splitlines()[-1])]
        totals: dict[str, int] = {}
        for out in Path(tmp).glob("cg.out-*"):
            thread = int(out.name.rsplit("-", 1)[1])
            total = re.search(r"^totals: (\d+)", out.read_text(), re.MULTILINE)
            name = names[thread - 1] if thread <= len(names) else "?"
            part = ("requests" if name == "main" else "writer" if name == "usersvc-sqlite-writer"
                    else "webhooks" if name.startswith("usersvc-webhook")
                    else "poll" if name == "usersvc-poll" else "other")
            totals[part] = totals.get(part, 0) + int(total.group(1)) if total else 0
        return totals


def instructions(args: argparse.Namespace) -> None:
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed (apt-get install valgrind)")
    parts = ("requests", "writer", "webhooks", "poll")
    print("Instructions a POST (callgrind; each thread apart; "
          f"({MANY} - {FEW} POSTs) / {MANY - FEW}):\n")
    print("| store | webhooks | " + " | ".join(parts) + " | requests' ratio | lowest, highest |")
    print("|---|---|" + "---:|" * (len(parts) + 2))
    with receiver(verify=False) as hooks:
        url = f"http://127.0.0.1:{hooks.port}/hook/"
        for kind in ("memory", "SQLite file"):
            base = None
            for n in (-1, *args.subscriptions):
                runs = []
                for _ in range(args.repeat):
                    many, few = (counted(kind, c, n, url) for c in (MANY, FEW))
                    runs.append({part: (many.get(part, 0) - few.get(part, 0)) / (MANY - FEW)
                                 for part in parts})
                each = {part: statistics.median(run[part] for run in runs) for part in parts}
                base = base or each["requests"]
                said = "not plugged" if n < 0 else f"{n} subscription{'s' * (n != 1)}"
                ratios = sorted(run["requests"] / base for run in runs)
                print(f"| {kind} | {said} | "
                      + " | ".join(f"{each[p]:,.0f}" for p in parts)
                      + f" | {each['requests'] / base:.3f} | {ratios[0]:.3f}, {ratios[-1]:.3f} |",
                      flush=True)


# -- 2. delivery ------------------------------------------------------------------

def serve(url: str, port_file: str) -> None:
    """The app with the feature under waitress (4 threads) on 127.0.0.1,
    its port written to ``port_file``; until SIGTERM."""
    sys.path.insert(0, str(ROOT))
    import logging

    import waitress
    logging.getLogger("waitress.queue").setLevel(logging.ERROR)    # ("Task queue depth")

    from usersvc import DEFAULT_FEATURES, Settings, build_app
    from usersvc.storage import open_store
    store = open_store(url)
    app = build_app(Settings(store, features=(*DEFAULT_FEATURES, "webhooks"),
                             own={"webhooks_allow_private": True}))
    server = waitress.create_server(app, host="127.0.0.1", port=0, threads=4)
    signal.signal(signal.SIGTERM, lambda *_: server.close())
    Path(port_file).write_text(str(server.effective_port))  # type: ignore[union-attr]
    with contextlib.suppress(OSError):      # (closed by the signal)
        server.run()
    app.stop_waiting()
    app.close()
    store.close()


@contextlib.contextmanager
def server(url: str) -> Iterator[int]:
    with tempfile.TemporaryDirectory() as tmp:
        port_file = Path(tmp) / "port"
        process = subprocess.Popen([sys.executable, __file__, "--child", "server", url,
                                    str(port_file)])
        try:
            yield int(wait_for_file(port_file, process))
        finally:
            process.terminate()
            process.wait(30)


def call(connection: http.client.HTTPConnection, method: str, path: str,
         document: Any = None) -> tuple[int, Any]:
    body = json.dumps(document).encode() if document is not None else None
    connection.request(method, path, body, {"Content-Type": "application/json",
                                            "Accept": "application/json"})
    response = connection.getresponse()
    answer = response.read()
    return response.status, (json.loads(answer) if answer else None)


def subscribe(port: int, hooks: Receiver, key: int,
              after: int | None = None) -> tuple[int, int]:
    """A subscription to the receiver's ``/hook/key``, its secret told to
    the receiver; its id and where it starts."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    document: dict[str, Any] = {"url": hooks.url(key), "collections": ["users"]}
    if after is not None:
        document["after"] = after
    status, made = call(connection, "POST", "/webhooks", document)
    connection.close()
    if status != 201:
        raise RuntimeError(f"subscribing: {status} {made}")
    hooks.secret(key, made["secret"])
    return int(made["id"]), int(made["delivered"]["users"])


def unsubscribe(port: int, subscription_id: int) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    call(connection, "DELETE", f"/webhooks/{subscription_id}")
    connection.close()


def write(port: int, rate: float, seconds: float, first: int) -> dict[int, float]:
    """Users POSTed at ``rate`` a second for ``seconds`` (``rate`` 0: as
    fast as ``CONNECTIONS`` connections go, ``seconds`` of them being the
    count), over ``CONNECTIONS`` connections; when each was answered, by id."""
    answered: dict[int, float] = {}
    start = time.monotonic() + 0.1
    total = int(rate * seconds) if rate else int(seconds)

    def run(lane: int) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        for i in range(lane, total, CONNECTIONS):
            if rate:
                pause = start + i / rate - time.monotonic()
                if pause > 0:
                    time.sleep(pause)
            status, made = call(connection, "POST", "/users",
                                {"name": "New", "email": f"w{first + i}@example.org"})
            answered[made["id"]] = time.time()
            if status != 201:
                raise RuntimeError(f"POST: {status} {made}")
        connection.close()
    threads = [threading.Thread(target=run, args=(lane,)) for lane in range(CONNECTIONS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answered


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def delivery(args: argparse.Namespace) -> None:
    stores = [("memory", lambda tmp: "memory://"),
              ("SQLite file", lambda tmp: f"sqlite:///{tmp}/u.db")]
    if args.postgres:
        stores.append(("PostgreSQL", lambda tmp: args.postgres))
    print(f"\nDelivery ({'verified' if args.verify else 'not verified'} at the receiver; "
          f"{args.rate:g} writes a second for {args.seconds:g} s; backlog {args.backlog}):\n")
    print("| store | subscriptions | writes a second | lag median | lag p99 | lag worst "
          "| deliveries a second (backlog) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, url_of in stores:
        for n in args.subscriptions:
            with tempfile.TemporaryDirectory() as tmp, receiver(args.verify) as hooks, \
                    own_schema(url_of(tmp)) as url, server(url) as port:
                # The lag at a steady rate of writes.
                steady = [subscribe(port, hooks, key)[0] for key in range(n)]
                answered = write(port, args.rate, args.seconds, 0)
                rate = (len(answered) - 1) / (max(answered.values()) - min(answered.values()))
                hooks.wait_count(n * len(answered))
                lags = [arrived - answered[i] for _, arrived, i in hooks.deliveries()
                        if i in answered]
                # The rate from a backlog: written first, then subscribed to from before it.
                for made in steady:
                    unsubscribe(port, made)
                so_far = hooks.count()
                made, start = subscribe(port, hooks, 1000)
                unsubscribe(port, made)
                write(port, 0, args.backlog, len(answered))
                began_wall = time.time()
                for key in range(n):
                    subscribe(port, hooks, 100 + key, after=start)
                hooks.wait_count(so_far + n * args.backlog)
                ended = max(arrived for key, arrived, _ in hooks.deliveries()
                            if 100 <= int(key) < 1000)
                drained = n * args.backlog / (ended - began_wall)
                print(f"| {name} | {n} | {rate:,.0f} | {statistics.median(lags) * 1000:,.1f} ms "
                      f"| {quantile(lags, 0.99) * 1000:,.1f} ms | {max(lags) * 1000:,.1f} ms "
                      f"| {drained:,.0f} |", flush=True)


@contextlib.contextmanager
def own_schema(url: str) -> Iterator[str]:
    """A PostgreSQL URL whose tables go to a schema made for the run (and
    dropped after it); any other URL as it is."""
    if not url.startswith("postgresql:"):
        yield url
        return
    from streams import own_schema as streams_own_schema
    with streams_own_schema(url) as made:
        yield made


def main() -> int:
    if sys.argv[1:2] == ["--child"]:
        if sys.argv[2] == "receiver":
            receive(sys.argv[3], sys.argv[4] == "verify")
        else:
            serve(sys.argv[3], sys.argv[4])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--subscriptions", default="1,10",
                        type=lambda s: [int(n) for n in s.split(",")],
                        help="how many subscriptions, each figure (default 1,10)")
    parser.add_argument("--only", choices=("instructions", "delivery"))
    parser.add_argument("--repeat", type=lambda s: max(1, int(s)), default=1,
                        help="count each figure of instructions this many times (the median)")
    parser.add_argument("--rate", type=float, default=200.0, help="writes a second")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--backlog", type=int, default=3000)
    parser.add_argument("--postgres", help="a PostgreSQL URL to measure delivery on too")
    parser.add_argument("--no-verify", dest="verify", action="store_false",
                        help="the receiver does not verify signatures")
    args = parser.parse_args()
    if args.only != "delivery":
        instructions(args)
    if args.only != "instructions":
        delivery(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
