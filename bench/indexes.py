"""What the listing indexes cost a write: POST /users through the app, on the
memory store and on a SQLite file, with this tree's usersvc and with an
earlier one's (default: the release before sorting and search), paired.

    .venv/bin/python bench/indexes.py [--base REV] [--rounds N] [--http]

The earlier tree is checked out with ``git worktree`` into a temporary
folder. Each round runs both trees, in turns (a different one first each
round), each in a fresh process over a store of 1,000 users; the figure is
the median of the rounds, in µs per request, and the ratio is this tree's
over the earlier one's. In-process, a POST is all usersvc and no HTTP, so
this is the strictest view of the ratio. ``--http`` adds what a client
sees: each tree's ``serve.py`` (waitress, 4 threads, no access log) on
core 0 under ``wrk -t1 -c8`` on core 1, as ``overhttp.py`` runs it, in
requests per second.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The last commit before GET /users learnt to sort and search.
BEFORE_SEARCH = "9f50243"

CHILD = r"""
import gc, io, json, sys, tempfile, time
from wsgiref.util import setup_testing_defaults
sys.path.insert(0, sys.argv[1])
from usersvc import make_app
from usersvc.storage import User, open_store

def environ(body):
    env = {"REQUEST_METHOD": "POST", "PATH_INFO": "/users", "QUERY_STRING": "",
           "CONTENT_TYPE": "application/json", "CONTENT_LENGTH": str(len(body)),
           "HTTP_HOST": "127.0.0.1:8080"}
    setup_testing_defaults(env)
    env["wsgi.input"] = io.BytesIO(body)
    return env

def start_response(status, headers, exc_info=None):
    assert status.startswith("201"), status

results = {}
for kind, count in (("memory", 3000), ("SQLite file", 200)):
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store("memory://" if kind == "memory" else f"sqlite:///{tmp}/u.db")
        store.restore([User(i, f"User {i} Lovelace-Byron", f"user{i}@example.org", 1)
                       for i in range(1, 1001)], last_id=1000)
        app = make_app(store)
        envs = [environ(json.dumps({"name": f"Ada {i} King-Noel", "email": f"new{i}@example.org"}).encode())
                for i in range(count)]
        gc.collect()
        start = time.perf_counter()
        for env in envs:
            b"".join(app(env, start_response))
        results[kind] = (time.perf_counter() - start) / count * 1e6
        store.close()
print(json.dumps(results))
"""


def measure(tree: Path) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", CHILD, str(tree)], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def over_http(tree: Path, storage: str, cwd: str) -> float:
    """POST /users per second against ``tree``'s serve.py over 1,000 users."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import overhttp
    server = overhttp.Server([overhttp.PYTHON, str(tree / "serve.py"), "--port", "{port}",
                              "--threads", "4", "--storage", storage, "--no-access-log"],
                             "usersvc serving", cwd)
    try:
        overhttp.seed(server.port)
        return overhttp.load(server.port, "POST", "/users", 3, str(Path(cwd) / "post.lua"))
    finally:
        server.stop()


def run(base: str = BEFORE_SEARCH, rounds: int = 5,
        http: bool = False) -> dict[str, dict[str, float]]:
    with tempfile.TemporaryDirectory() as tmp:
        before = Path(tmp) / "before"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q",
                        str(before), base], check=True)
        try:
            samples: dict[str, list[dict[str, float]]] = {"now": [], "before": []}
            trees = [("now", ROOT), ("before", before)]
            for r in range(rounds):
                for name, tree in (trees if r % 2 == 0 else trees[::-1]):
                    figures = measure(tree)
                    if http:
                        for kind, storage in (("memory", "memory://"),
                                              ("SQLite file", f"sqlite:///{tmp}/{name}{r}.db")):
                            figures[f"{kind} over HTTP, req/s"] = over_http(tree, storage, tmp)
                    samples[name].append(figures)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                            str(before)], check=True)
    return {name: {kind: statistics.median(s[kind] for s in runs) for kind in runs[0]}
            for name, runs in samples.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default=BEFORE_SEARCH, help="the earlier revision")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--http", action="store_true", help="also over HTTP, with wrk")
    args = parser.parse_args()
    medians = run(args.base, args.rounds, args.http)
    print(f"| POST /users | {args.base} | this tree | cost ratio |")
    print("|---|---:|---:|---:|")
    for kind in medians["now"]:
        now, before = medians["now"][kind], medians["before"][kind]
        rate = "req/s" in kind      # a rate: the cost is its inverse
        unit = "" if rate else " (µs, in-process)"
        print(f"| {kind}{unit} | {before:,.1f} | {now:,.1f} | "
              f"{(before / now if rate else now / before):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
