"""What the change feed costs, in every store.

    .venv/bin/python bench/feed.py [--base REV] [--rounds N] [--postgres URL] [--large N]

1. A POST through the app, in-process, with this tree and with an earlier
   one (default: the last commit before the feed), paired as
   ``indexes.py`` pairs them: each round both trees, in fresh processes, in
   turns; on the memory store, a SQLite file and (with ``--postgres``) a
   PostgreSQL database, each over 1,000 users. The ratio is what recording
   a position with every change costs a write.
2. A page of the feed (``GET /users/changes?after=P&limit=100``, 400
   distinct odd positions P spread over all, each read first from P - 1,
   so that the users' encodings are kept and only the store's read
   differs) at 1,000
   users and at ``--large`` (default 1,000,000), on each store: flat is
   O(log N).

Figures are medians of the rounds, in µs per request.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from paired import CHILD_HELPERS, ROOT, paired  # noqa: E402

# The last commit before the change feed.
BEFORE_FEED = "b9c9009"

CHILD = CHILD_HELPERS + r"""
import json, random, sys, tempfile, uuid
sys.path.insert(0, sys.argv[1])
from usersvc import make_app
job, postgres = sys.argv[2], sys.argv[3]

def opened(kind, tmp):
    if kind == "memory":
        return users_store("memory://"), None
    if kind == "SQLite file":
        return users_store(f"sqlite:///{tmp}/u.db"), None
    import psycopg
    schema = "bench_" + uuid.uuid4().hex[:10]
    admin = psycopg.connect(postgres, autocommit=True)
    admin.execute(f"CREATE SCHEMA {schema}")
    url = postgres + ("&" if "?" in postgres else "?") + f"options=-csearch_path%3D{schema}"
    return users_store(url), lambda: (admin.execute(f"DROP SCHEMA {schema} CASCADE"), admin.close())

def fill(users, n):
    for start in range(1, n + 1, 20000):
        users.restore([user(i, f"User {i}", f"user{i}@example.org", 1)
                       for i in range(start, min(n, start + 19999) + 1)])

kinds = ["memory", "SQLite file"] + (["PostgreSQL"] if postgres != "-" else [])
results = {}
for kind in kinds:
    with tempfile.TemporaryDirectory() as tmp:
        if job == "post":
            (store, users), drop = opened(kind, tmp)
            fill(users, 1000)
            app = make_app(store)
            count = {"memory": 3000, "SQLite file": 300, "PostgreSQL": 500}[kind]
            results[kind] = timed(app, [environ("POST", "/users", json.dumps(
                {"name": f"Ada {i} King", "email": f"new{i}@example.org"}).encode())
                for i in range(count)])
        else:
            for n in (1000, int(job)):
                (store, users), drop = opened(kind, tmp)
                fill(users, n)
                app = make_app(store)
                rng = random.Random(n)
                # Distinct even positions, then the odd ones after them: no
                # question asked twice, so no answer a connection kept is reused.
                spots = rng.sample(range(0, n - 101, 2), 400)
                # Warm the kept encodings with the pages from p, then time the
                # pages from p + 1: the same users (but one), other questions,
                # so the store reads each page and nothing is encoded anew.
                timed(app, [environ("GET", f"/users/changes?after={p}&limit=100") for p in spots])
                results[f"{kind} at {n:,}"] = timed(app, [
                    environ("GET", f"/users/changes?after={p + 1}&limit=100") for p in spots])
                store.close()
                if drop:
                    drop()
                if kind == "SQLite file":
                    import os
                    os.remove(f"{tmp}/u.db")
            continue
        store.close()
        if drop:
            drop()
print(json.dumps(results))
"""


def measure(tree: Path, job: str, postgres: str | None) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", CHILD, str(tree), job, postgres or "-"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default=BEFORE_FEED, help="the earlier revision")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--postgres",
                        help="a PostgreSQL URL (a schema per run is made and dropped)")
    parser.add_argument("--large", type=int, default=1_000_000)
    args = parser.parse_args()
    medians = paired(args.base, args.rounds,
                     lambda name, tree, tmp: measure(tree, "post", args.postgres))
    print(f"| POST /users, in-process, µs | {args.base} | this tree | cost ratio |")
    print("|---|---:|---:|---:|")
    for kind, now in medians["now"].items():
        before_figure = medians["before"][kind]
        print(f"| {kind} | {before_figure:,.1f} | {now:,.1f} | {now / before_figure:.2f} |")
    pages = [measure(ROOT, str(args.large), args.postgres) for _ in range(args.rounds)]
    page = {k: statistics.median(p[k] for p in pages) for k in pages[0]}
    print()
    print(f"| a feed page of 100, µs | at 1,000 | at {args.large:,} | ratio |")
    print("|---|---:|---:|---:|")
    for kind in ("memory", "SQLite file", "PostgreSQL"):
        small, large = page.get(f"{kind} at 1,000"), page.get(f"{kind} at {args.large:,}")
        if small is not None and large is not None:
            print(f"| {kind} | {small:.1f} | {large:.1f} | {large / small:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
