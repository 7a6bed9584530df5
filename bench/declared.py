"""What declaring collections once cost: this tree against the tree before
it, and books against users.

    .venv/bin/python bench/declared.py [--base REV] [--rounds N] [--http]

1. Users, in-process, paired with an earlier tree (default: the last commit
   before collections were declared once) as ``indexes.py`` pairs them:
   each round both trees, in fresh processes, in turns, over 1,000 users:
   GET of one, a page of 100, POST, PUT; on the memory store and on a
   SQLite file. The ratio is this tree's cost over the earlier one's.
2. Books against users, in this tree, in one process per round: the same
   four operations on each collection of one store (1,000 records each),
   in turns. Books have three fields (one an optional integer), a unique
   ISBN, a sorted and searched title: as much to index as a user.
3. ``--http``: each tree's ``serve.py`` (waitress, 4 threads, no access
   log) on core 0 under ``wrk -t1 -c8`` on core 1, as ``overhttp.py`` runs
   it: GET of one, a page of 100 and POST, in requests per second, on
   memory and on a SQLite file, and SQLite's rate over memory's for each
   tree.

Figures are medians of the rounds (µs per request in-process, requests per
second over HTTP).
"""
from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from paired import CHILD_HELPERS, ROOT, arguments, child_json, paired, stores_over_http  # noqa: E402

# The last commit before collections were declared once.
BEFORE_COLLECTIONS = "0f2030f"

OPERATIONS = ("GET one", "a page of 100", "POST", "PUT")

#: What both children share: how many requests of each operation, the
#: requests, and the bodies a user's POST and PUT send.
COMMON = r"""
COUNTS = {"memory": {"GET one": 3000, "a page of 100": 300, "POST": 3000, "PUT": 3000},
          "SQLite file": {"GET one": 3000, "a page of 100": 300, "POST": 200, "PUT": 200}}

def requests(plural, operation, count, make):
    if operation == "GET one":
        return [environ("GET", f"/{plural}/1") for _ in range(count)]
    if operation == "a page of 100":
        return [environ("GET", f"/{plural}?limit=100") for _ in range(count)]
    method, target = ("POST", f"/{plural}") if operation == "POST" else ("PUT", f"/{plural}/2")
    return [environ(method, target, json.dumps(make(operation, i)).encode()) for i in range(count)]

def a_user(operation, i):
    if operation == "POST":
        return {"name": f"Ada {i} King", "email": f"new{i}@example.org"}
    return {"name": f"Put {i}", "email": "user2@example.org"}
"""

CHILD = CHILD_HELPERS + r"""
import json, sys, tempfile
sys.path.insert(0, sys.argv[1])
from usersvc import make_app
""" + COMMON + r"""
results = {}
for kind in COUNTS:
    with tempfile.TemporaryDirectory() as tmp:
        store, users = users_store("memory://" if kind == "memory" else f"sqlite:///{tmp}/u.db")
        users.restore([user(i, f"User {i}", f"user{i}@example.org", 1) for i in range(1, 1001)])
        app = make_app(store)
        for operation, count in COUNTS[kind].items():
            results[f"{kind}: {operation}"] = timed(
                app, requests("users", operation, count, a_user))
        store.close()
print(json.dumps(results))
"""

BOOKS_CHILD = CHILD_HELPERS + r"""
import json, sys, tempfile
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, sys.argv[1] + "/examples")
from library import BOOKS
from usersvc import USER, make_app
from usersvc.storage import open_store
""" + COMMON + r"""
def a_book(operation, i):
    if operation == "POST":
        return {"title": f"Dune {i} Messiah", "isbn": f"new-{i}", "year": 1969}
    return {"title": f"Put {i}", "isbn": "isbn-2", "year": 1965}

results = {}
for round_no in range(int(sys.argv[2])):
    for kind in COUNTS:
        with tempfile.TemporaryDirectory() as tmp:
            store = open_store("memory://" if kind == "memory" else f"sqlite:///{tmp}/u.db",
                               (USER, BOOKS))
            store["users"].restore([USER.record._make((i, f"User {i}", f"user{i}@example.org", 1))
                                    for i in range(1, 1001)])
            store["books"].restore([BOOKS.record._make((i, f"Book {i}", f"isbn-{i}", 1965, 1))
                                    for i in range(1, 1001)])
            app = make_app(store, collections=(USER, BOOKS))
            for operation, count in COUNTS[kind].items():
                both = [("users", a_user), ("books", a_book)]
                for plural, make in (both if round_no % 2 == 0 else both[::-1]):
                    key = f"{kind}: {operation}"
                    results.setdefault(key, {}).setdefault(plural, []).append(
                        timed(app, requests(plural, operation, count, make)))
            store.close()
print(json.dumps(results))
"""


def in_process(tree: Path) -> dict[str, float]:
    return child_json(CHILD, tree)


def books_and_users(rounds: int) -> dict[str, dict[str, float]]:
    return {key: {plural: statistics.median(v) for plural, v in by.items()}
            for key, by in child_json(BOOKS_CHILD, ROOT, rounds).items()}


def over_http(tree: Path, storage: str, cwd: str) -> dict[str, float]:
    """Requests per second of each operation against ``tree``'s serve.py
    over 1,000 users."""
    import overhttp
    server = overhttp.Server([overhttp.PYTHON, str(tree / "serve.py"), "--port", "{port}",
                              "--threads", "4", "--storage", storage, "--no-access-log"],
                             "usersvc serving", cwd)
    try:
        overhttp.seed(server.port)
        return {op: overhttp.load(server.port, method, path, 3, str(Path(cwd) / "post.lua"))
                for op, (method, path) in overhttp.OPERATIONS.items()}
    finally:
        server.stop()


def main() -> int:
    args = arguments(__doc__, BEFORE_COLLECTIONS)

    def both(name: str, tree: Path, tmp: Path) -> dict[str, float]:
        figures = in_process(tree)
        if args.http:
            for kind, storage in stores_over_http(name, tmp):
                for op, rate in over_http(tree, storage, str(tmp)).items():
                    figures[f"{kind} over HTTP: {op}, req/s"] = rate
        return figures

    medians = paired(args.base, args.rounds, both)
    print(f"| users | {args.base} | this tree | cost ratio |")
    print("|---|---:|---:|---:|")
    for key in medians["now"]:
        now, before = medians["now"][key], medians["before"][key]
        rate = "req/s" in key       # a rate: the cost is its inverse
        print(f"| {key}{'' if rate else ' (µs, in-process)'} | {before:,.1f} | {now:,.1f} | "
              f"{(before / now if rate else now / before):.2f} |")
    if args.http:
        print("\n| SQLite ÷ memory over HTTP (req/s) | " + args.base + " | this tree |")
        print("|---|---:|---:|")
        for op in ("GET /users/1", "GET /users?limit=100", "POST /users"):
            ratios = [medians[t][f"SQLite file over HTTP: {op}, req/s"]
                      / medians[t][f"memory over HTTP: {op}, req/s"] for t in ("before", "now")]
            print(f"| {op} | {ratios[0]:.2f} | {ratios[1]:.2f} |")
    print("\n| this tree, in-process (µs) | users | books | books ÷ users |")
    print("|---|---:|---:|---:|")
    for key, by in books_and_users(args.rounds).items():
        print(f"| {key} | {by['users']:.1f} | {by['books']:.1f} "
              f"| {by['books'] / by['users']:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
