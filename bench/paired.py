"""Paired runs: this tree against an earlier revision, for the benchmarks
that ask what a change cost (``indexes.py``, ``pages.py``, ``feed.py``).

The earlier tree is checked out with ``git worktree`` into a temporary
folder. Each round measures both trees, in turns (a different one first
each round), each in a fresh process; the figures are the medians of the
rounds. ``CHILD_HELPERS`` is what those processes share: a WSGI environ
for a request and a timer over a list of them.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

#: Python for a child process, before its own code: ``environ(method,
#: target, body=b"", **headers)``, ``timed(app, environs)`` (µs each), and,
#: the same in a tree from before collections were declared (when
#: ``open_store`` gave the users alone) and after, ``users_store(url)``:
#: ``(store, its users)``, and ``user(id, name, email, version)``.
CHILD_HELPERS = r"""
import gc, io, time
from wsgiref.util import setup_testing_defaults

def users_store(url):
    from usersvc.storage import open_store
    store = open_store(url)
    return store, (store["users"] if hasattr(store, "schemas") else store)

def user(*fields):
    import usersvc
    if hasattr(getattr(usersvc, "USER", None), "record"):
        return usersvc.USER.record._make(fields)
    from usersvc.storage import User        # before collections were declared once
    return User._make(fields)

def environ(method, target, body=b"", **headers):
    path, _, query = target.partition("?")
    env = {"REQUEST_METHOD": method, "PATH_INFO": path, "QUERY_STRING": query,
           "HTTP_HOST": "127.0.0.1:8080", "HTTP_ACCEPT": "application/json"}
    if body:
        env.update(CONTENT_TYPE="application/json", CONTENT_LENGTH=str(len(body)))
    env.update({"HTTP_" + k.upper(): v for k, v in headers.items()})
    setup_testing_defaults(env)
    env["wsgi.input"] = io.BytesIO(body)
    return env

def _ok(status, headers, exc_info=None):
    assert status[0] == "2", status

def timed(app, environs):
    gc.collect()
    start = time.perf_counter()
    for env in environs:
        b"".join(app(env, _ok))
    return (time.perf_counter() - start) / len(environs) * 1e6
"""


def arguments(doc: str, base: str) -> argparse.Namespace:
    """A paired bench's options: ``--base``, ``--rounds``, ``--http``."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--base", default=base, help="the earlier revision")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--http", action="store_true", help="also over HTTP, with wrk")
    return parser.parse_args()


def stores_over_http(name: str, tmp: Path) -> tuple[tuple[str, str], ...]:
    """The stores a paired run serves over HTTP: memory, and a new SQLite
    file in ``tmp`` for this round of the tree ``name``."""
    return (("memory", "memory://"),
            ("SQLite file", f"sqlite:///{tmp}/{name}{uuid.uuid4().hex}.db"))


def child_json(child: str, *args: object) -> Any:
    """What a child Python running ``child`` with ``args`` prints, as JSON."""
    out = subprocess.run([sys.executable, "-c", child, *map(str, args)], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def paired(base: str, rounds: int,
           measure: Callable[[str, Path, Path], dict[str, float]]) -> dict[str, dict[str, float]]:
    """``{"now": medians, "before": medians}``: ``measure(name, tree,
    scratch)`` for this tree ("now") and ``base``'s ("before"), round by
    round, in turns; ``scratch`` is a temporary folder for both."""
    with tempfile.TemporaryDirectory() as tmp:
        before = Path(tmp) / "before"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q",
                        str(before), base], check=True)
        try:
            samples: dict[str, list[dict[str, float]]] = {"now": [], "before": []}
            trees = [("now", ROOT), ("before", before)]
            for r in range(rounds):
                for name, tree in (trees if r % 2 == 0 else trees[::-1]):
                    samples[name].append(measure(name, tree, Path(tmp)))
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                            str(before)], check=True)
    return {name: {kind: statistics.median(s[kind] for s in runs) for kind in runs[0]}
            for name, runs in samples.items()}
