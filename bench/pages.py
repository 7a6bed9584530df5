"""What the HTML pages and the cross-origin check cost a JSON client.

    .venv/bin/python bench/pages.py [--base REV] [--rounds N]

1. JSON GET of one user, a JSON page of 100 and a JSON POST through the
   app, in-process, on a memory store of 1,000 users, with this tree and
   with an earlier one (default: the last commit before HTML was offered),
   paired as ``indexes.py`` pairs them: the earlier tree in a ``git
   worktree``, each round both trees in fresh processes, in turns.
2. In this tree, a JSON POST with the cross-origin check and with it
   replaced by a no-op, in the same process, in turns, for a request from
   curl (no ``Sec-Fetch-Site``, no ``Origin``) and from a same-origin page
   (both headers): the check's share of a POST.

Figures are medians of the rounds, in µs per request.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from paired import CHILD_HELPERS, child_json, paired  # noqa: E402

# The last commit before text/html was negotiated.
BEFORE_PAGES = "4e4c501"

CHILD = CHILD_HELPERS + r"""
import json, statistics, sys
sys.path.insert(0, sys.argv[1])
from usersvc import make_app

def fresh_app():
    store, users = users_store("memory://")
    users.restore([user(i, f"User {i} Lovelace-Byron", f"user{i}@example.org", 1)
                   for i in range(1, 1001)], last_id=1000)
    return make_app(store)

def posts(n, start, **headers):
    return [environ("POST", "/users", body=json.dumps(
        {"name": f"Ada {i} King", "email": f"new{i}@example.org"}).encode(), **headers)
        for i in range(start, start + n)]

app = fresh_app()
results = {
    "GET /users/1": timed(app, [environ("GET", "/users/1") for _ in range(20000)]),
    "GET /users?limit=100": timed(app, [environ("GET", "/users?limit=100") for _ in range(3000)]),
    "POST /users": timed(app, posts(3000, 0)),
}
if sys.argv[2] == "check":
    page = {"sec_fetch_site": "same-origin", "origin": "http://127.0.0.1:8080"}
    for label, headers in (("curl", {}), ("same-origin page", page)):
        on, off = [], []
        for r in range(6):
            app = fresh_app()
            real = list(app.checks)         # the core's cross-origin protection is the first
            for checked in ((True, False) if r % 2 == 0 else (False, True)):
                app.checks[:] = real if checked else real[1:]
                requests = posts(2000, 10000 * r + 5000 * checked, **headers)
                (on if checked else off).append(timed(app, requests))
        results[f"POST, {label}: check on"] = statistics.median(on)
        results[f"POST, {label}: check off"] = statistics.median(off)
print(json.dumps(results))
"""


def measure(tree: Path, check: bool) -> dict[str, float]:
    return child_json(CHILD, tree, "check" if check else "-")


def run(base: str, rounds: int) -> dict[str, dict[str, float]]:
    return paired(base, rounds, lambda name, tree, tmp: measure(tree, check=name == "now"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default=BEFORE_PAGES, help="the earlier revision")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    medians = run(args.base, args.rounds)
    now, before = medians["now"], medians["before"]
    print(f"| JSON, in-process, µs | {args.base} | this tree | ratio |")
    print("|---|---:|---:|---:|")
    for kind in before:
        print(f"| {kind} | {before[kind]:.2f} | {now[kind]:.2f} | {now[kind] / before[kind]:.3f} |")
    print()
    print("| POST /users, µs | check on | check off | the check's share |")
    print("|---|---:|---:|---:|")
    for label in ("curl", "same-origin page"):
        on, off = now[f"POST, {label}: check on"], now[f"POST, {label}: check off"]
        print(f"| from {label} | {on:.2f} | {off:.2f} | {(on - off) / on:+.1%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
