"""Flat cost as the collection grows: get, create, delete, a page of 100 by
id and by name, and a search, through the app, at a small and a large number
of users, on the memory store and on a SQLite file; and what a user costs in
bytes (tracemalloc for the memory store, the file's size for SQLite).

The page by name is the second one (the first page's ``rel="next"``
cursor); the search is ``q=rare``, which ten users match at every size.
"""
from __future__ import annotations

import gc
import io
import json
import os
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from inprocess import _start_response, environ_for  # noqa: E402

from usersvc import USER, make_app  # noqa: E402
from usersvc.storage import open_store  # noqa: E402

User = USER.record

BATCH = 20_000


RARE = 10       # users named "... Rare", at every size


def fill(store: Any, n: int) -> None:
    every = n // RARE
    for start in range(1, n + 1, BATCH):
        store.restore([User(id=i, name=f"User {i}" + (" Rare" if i % every == 0 else ""),
                            email=f"user{i}@example.org", version=1)
                       for i in range(start, min(n, start + BATCH - 1) + 1)])


def next_link(app: Any, target: str) -> str:
    """The target of a page's rel="next" link."""
    headers: list[tuple[str, str]] = []
    env = environ_for("GET", target)
    env["wsgi.input"] = io.BytesIO()
    b"".join(app(env, lambda status, h, exc_info=None: headers.extend(h)))
    link = dict(headers)["Link"]
    return "/users?" + link[1:link.index(">")].split("?", 1)[1]


def per_request(app: Any, requests: list[tuple[str, str, bytes]]) -> float:
    envs = []
    for method, target, body in requests:
        env = environ_for(method, target, body)
        env["wsgi.input"] = io.BytesIO(body)
        envs.append(env)
    gc.collect()
    start = time.perf_counter()
    for env in envs:
        result = app(env, _start_response)
        b"".join(result)
        assert _start_response.status[:3] in ("200", "201", "204"), _start_response.status  # type: ignore[attr-defined]
    return (time.perf_counter() - start) / len(envs) * 1e6


def measure(app: Any, n: int, count: int, rounds: int, tag: str) -> dict[str, float]:
    samples: dict[str, list[float]] = {"get": [], "page of 100": [], "create": [], "delete": [],
                                       "page of 100 by name": [], "search (10 found)": []}
    mid = n // 2
    by_name = next_link(app, "/users?sort=name&limit=100")
    for r in range(rounds):
        samples["get"].append(per_request(app, [("GET", f"/users/{mid + i % 100}", b"")
                                                for i in range(count)]))
        page = ("GET", f"/users?after={mid}&limit=100", b"")
        samples["page of 100"].append(per_request(app, [page] * max(1, count // 10)))
        samples["page of 100 by name"].append(per_request(app, [("GET", by_name, b"")]
                                                          * max(1, count // 10)))
        samples["search (10 found)"].append(per_request(app, [("GET", "/users?q=rare", b"")]
                                                        * max(1, count // 10)))
        bodies = [json.dumps({"name": "New", "email": f"{tag}-{r}-{i}@example.org"}).encode()
                  for i in range(count)]
        samples["create"].append(per_request(app, [("POST", "/users", b) for b in bodies]))
        # ... and deletes the users it created: ids follow the n filled in.
        first = n + r * count + 1
        samples["delete"].append(per_request(app, [("DELETE", f"/users/{first + i}", b"")
                                                   for i in range(count)]))
    return {op: statistics.median(v) for op, v in samples.items()}


def memory_bytes_per_user(n: int) -> float:
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    store = open_store("memory://")
    fill(store["users"], n)
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del store
    return (after - before) / n


def run(small: int = 1_000, large: int = 1_000_000, rounds: int = 3) -> dict[str, Any]:
    results: dict[str, Any] = {"sizes": (small, large)}
    for kind in ("memory", "SQLite file"):
        for n in (small, large):
            with tempfile.TemporaryDirectory() as tmp:
                store: Any = open_store("memory://" if kind == "memory"
                                        else f"sqlite:///{tmp}/users.db")
                fill(store["users"], n)
                app = make_app(store)
                # SQLite commits each write to disk: fewer of them, same medians.
                count = 1000 if kind == "memory" else 100
                results[kind, n] = measure(app, n, count, rounds, f"{kind[0]}{n}")
                if kind != "memory":
                    store.close()
                    results["sqlite bytes per user", n] = os.path.getsize(f"{tmp}/users.db") / n
    results["memory bytes per user"] = memory_bytes_per_user(small if large > 200_000 else large)
    return results


if __name__ == "__main__":
    print(run(large=int(sys.argv[1]) if len(sys.argv) > 1 else 100_000, rounds=1))
