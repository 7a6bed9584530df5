"""Instructions per request, counted by valgrind's callgrind: the one cost
figure this shared machine repeats run after run (its timings swing by a
third), for in-process requests over 1,000 users.

    .venv/bin/python bench/instructions.py [--base REV]

Each operation runs in a child process under ``valgrind --tool=callgrind``
twice, with ``FEW`` and with ``MANY`` requests; the difference over
``MANY - FEW`` is what one request costs, start-up and the first requests'
warming left out (each run makes ``MANY`` requests and sends ``FEW`` or
``MANY`` of them: making a request's environ and body is not counted).
Operations: GET of one user, a page of 20, POST, PUT, and POST with an
``Idempotency-Key`` (a new key each), on the memory store and on a SQLite
file (its writer thread counted too). With ``--base``, the same in an
earlier tree (checked out with ``git worktree``), and the ratio; with
``--metrics``, this tree again with ``make_app(metrics=True)``, and the
ratio to it without (``--metrics-dir``: counted in files, as under
gunicorn with ``USERSVC_METRICS_DIR``); with ``--plain``, this tree again
with ``make_app(speedups=False)`` (every plain definition, no fast path:
``usersvc.fast``), and its ratio to the fast build (issue 59 bounds it at
1.5). ``--only OPERATION`` measures one. Needs valgrind
(Debian's ``valgrind``); about a minute an operation.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from paired import CHILD_HELPERS, ROOT  # noqa: E402

FEW, MANY = 100, 300
OPERATIONS = ("GET one", "a page", "POST", "PUT", "POST with a key")
STORES = ("memory", "SQLite file")

# Every run makes the same ``MANY`` requests (their environs and bodies) and
# sends the first ``count``: what making them costs is no request's.
CHILD = CHILD_HELPERS + f"MADE = {MANY}\n" + r"""
import json, sys, tempfile
sys.path.insert(0, sys.argv[1])
import os
from usersvc import Settings, build_app, make_app
kind, operation, count = sys.argv[2], sys.argv[3], int(sys.argv[4])
if os.path.isdir(os.path.join(sys.argv[1], "usersvc", "fast")):   # (none before issue 59)
    from usersvc import fast    # the build's definitions in place before the store is made
    fast.install(sys.argv[5:] != ["plain"])     # (its indexes take their load then)
with tempfile.TemporaryDirectory() as tmp:
    store, users = users_store("memory://" if kind == "memory" else f"sqlite:///{tmp}/u.db")
    users.restore([user(i, f"User {i}", f"user{i}@example.org", 1) for i in range(1, 1001)])
    if sys.argv[5:] == ["files"]:
        os.mkdir(f"{tmp}/metrics")
        app = build_app(Settings(store, metrics_dir=f"{tmp}/metrics"))
    elif sys.argv[5:] == ["plain"]:     # every plain definition, no fast path
        app = make_app(store, speedups=False)
    else:
        app = make_app(store, metrics=True) if sys.argv[5:] == ["metrics"] else make_app(store)
    envs = []
    for i in range(MADE):
        if operation == "GET one":
            envs.append(environ("GET", "/users/1"))
        elif operation == "a page":     # 20 users by id, from a different place each time
            envs.append(environ("GET", f"/users?limit=20&after={i % 900}"))
        elif operation == "PUT":
            envs.append(environ("PUT", "/users/2", json.dumps(
                {"name": f"Put {i}", "email": "user2@example.org"}).encode()))
        else:
            headers = {"idempotency_key": f"key-{i}"} if operation == "POST with a key" else {}
            envs.append(environ("POST", "/users", json.dumps(
                {"name": "New", "email": f"new{i}@example.org"}).encode(), **headers))
    timed(app, envs[:count])
    store.close()
"""


def instructions(tree: Path, kind: str, operation: str, count: int, metrics: str) -> int:
    # A fixed hash seed: the same dicts and sets, so the same count each run.
    run = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                          sys.executable, "-c", CHILD, str(tree), kind, operation, str(count),
                          *([metrics] if metrics else [])],
                         capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONHASHSEED": "0"})
    return int(re.search(r"Collected : (\d+)", run.stderr).group(1))


def per_request(tree: Path, kind: str, operation: str, metrics: str = "") -> float:
    return ((instructions(tree, kind, operation, MANY, metrics)
             - instructions(tree, kind, operation, FEW, metrics)) / (MANY - FEW))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", help="an earlier revision to compare with")
    parser.add_argument("--metrics", action="store_true",
                        help="this tree with metrics on, too")
    parser.add_argument("--metrics-dir", action="store_true",
                        help="with --metrics: counted in files (metrics_dir)")
    parser.add_argument("--plain", action="store_true",
                        help="this tree with speedups off, too (every plain definition)")
    parser.add_argument("--only", choices=OPERATIONS, help="this operation alone")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"this tree": ROOT}
        if args.base:
            trees = {args.base: Path(tmp) / "base", **trees}
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q",
                            str(trees[args.base]), args.base], check=True)
        columns = [*trees, *(["with metrics"] if args.metrics else []),
                   *(["plain"] if args.plain else [])]
        ratios = ((["ratio"] if args.base else []) + (["metrics ratio"] if args.metrics else [])
                  + (["plain ratio"] if args.plain else []))
        try:
            print(f"| instructions a request | {' | '.join(columns + ratios)} |")
            print("|---|" + "---:|" * (len(columns) + len(ratios)))
            for kind in STORES:
                for operation in [args.only] if args.only else OPERATIONS:
                    figures = []
                    for tree in trees.values():
                        try:
                            figures.append(per_request(tree, kind, operation))
                        except subprocess.CalledProcessError:   # a tree that cannot run it
                            figures.append(float("nan"))
                    if args.metrics:
                        figures.append(per_request(ROOT, kind, operation, metrics=(
                            "files" if args.metrics_dir else "metrics")))
                    if args.plain:
                        figures.append(per_request(ROOT, kind, operation, metrics="plain"))
                    ratio = [f"{figures[1] / figures[0]:.3f}"] if args.base else []
                    fast = figures[len(trees) - 1]      # this tree's, as built by default
                    if args.metrics:
                        ratio.append(f"{figures[len(trees)] / fast:.3f}")
                    if args.plain:
                        ratio.append(f"{figures[-1] / fast:.3f}")
                    print(f"| {kind}: {operation} | "
                          + " | ".join([f"{f:,.0f}" for f in figures] + ratio) + " |")
        finally:
            if args.base:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                                str(trees[args.base])], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
