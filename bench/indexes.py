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

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from paired import CHILD_HELPERS, arguments, child_json, paired, stores_over_http  # noqa: E402

# The last commit before GET /users learnt to sort and search.
BEFORE_SEARCH = "9f50243"

CHILD = CHILD_HELPERS + r"""
import json, sys, tempfile
sys.path.insert(0, sys.argv[1])
from usersvc import make_app

results = {}
for kind, count in (("memory", 3000), ("SQLite file", 200)):
    with tempfile.TemporaryDirectory() as tmp:
        store, users = users_store("memory://" if kind == "memory" else f"sqlite:///{tmp}/u.db")
        users.restore([user(i, f"User {i} Lovelace-Byron", f"user{i}@example.org", 1)
                       for i in range(1, 1001)], last_id=1000)
        results[kind] = timed(make_app(store), [environ("POST", "/users", json.dumps(
            {"name": f"Ada {i} King-Noel", "email": f"new{i}@example.org"}).encode())
            for i in range(count)])
        store.close()
print(json.dumps(results))
"""


def measure(tree: Path) -> dict[str, float]:
    return child_json(CHILD, tree)


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
    def both(name: str, tree: Path, tmp: Path) -> dict[str, float]:
        figures = measure(tree)
        if http:
            for kind, storage in stores_over_http(name, tmp):
                figures[f"{kind} over HTTP, req/s"] = over_http(tree, storage, str(tmp))
        return figures
    return paired(base, rounds, both)


def main() -> int:
    args = arguments(__doc__, BEFORE_SEARCH)
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
