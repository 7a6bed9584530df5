"""Durable writes grouped: SQLite POSTs over HTTP, and what one commit (one
sync to disk) holds, as requests wait in more threads.

    .venv/bin/python bench/durable.py [--seconds 3] [--connections 8 32 64]

Each server runs as ``serve.py`` runs it (no access log, 1,000 users on a
SQLite file of its own, pinned to core 0) with ``wrk -t1`` POSTing on core
1 at each number of connections: waitress with its 4 threads, and granian
(one worker) with 64 blocking threads, so that as many writes as there are
connections can wait for the writer; each with ``synchronous=full`` (the
default) and ``?synchronous=normal``. The writer's figures come from the
metrics (``usersvc_sqlite_commit_writes``, ``..._duration_seconds``): writes
a commit and milliseconds a commit over the run. Prints one table. Needs wrk.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
from overhttp import POST_LUA, Server, free_port, scripted_load  # noqa: E402

PYTHON = sys.executable
ROOT = BENCH.parent

SERVERS = {"waitress, 4 threads": ["--threads", "4"],
           "granian, 64 threads": ["--server", "granian", "--threads", "64"]}


def scrape(port: int) -> dict[str, float]:
    """The writer's totals so far: commits, writes committed, seconds committing."""
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    found = {"count": 0.0, "writes": 0.0, "seconds": 0.0}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == "usersvc_sqlite_commit_writes_count":
                found["count"] += s.value
            elif s.name == "usersvc_sqlite_commit_writes_sum":
                found["writes"] += s.value
            elif s.name == "usersvc_sqlite_commit_duration_seconds_sum":
                found["seconds"] += s.value
    return found


def serve(cwd: str, name: str, url_query: str, extra: list[str]) -> tuple[Server, int]:
    sys.path.insert(0, str(ROOT))
    from usersvc import USER, open_store
    store = open_store(f"sqlite:///{cwd}/{name}.db")
    store["users"].restore([USER.record(id=i, name=f"User {i}", email=f"user{i}@example.org",
                                        version=1) for i in range(1, 1001)])
    store.close()
    metrics = free_port()
    return Server([PYTHON, str(ROOT / "serve.py"), "--port", "{port}", "--no-access-log",
                   "--storage", f"sqlite:///{cwd}/{name}.db{url_query}",
                   "--metrics-port", str(metrics), *extra], "usersvc serving", cwd), metrics


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=int, default=3)
    p.add_argument("--connections", type=int, nargs="+", default=[8, 32, 64])
    args = p.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as cwd:
        lua = Path(cwd) / "post.lua"
        for server_name, extra in SERVERS.items():
            for sync, query in (("full", ""), ("normal", "?synchronous=normal")):
                for connections in args.connections:
                    name = f"{len(rows)}"
                    server, metrics = serve(cwd, name, query, extra)
                    try:
                        time.sleep(1)           # (granian: every worker up)
                        before = scrape(metrics)
                        lua.write_text(POST_LUA % time.time_ns())
                        rate = scripted_load(server.port, str(lua), args.seconds, connections,
                                             "/users")
                        after = scrape(metrics)
                    finally:
                        server.stop()
                    commits = after["count"] - before["count"]
                    writes = after["writes"] - before["writes"]
                    seconds = after["seconds"] - before["seconds"]
                    rows.append((server_name, sync, connections, rate, writes / commits,
                                 1000 * seconds / commits))
    print("| server | synchronous | connections | POST/s | writes a commit | ms a commit |")
    print("|---|---|---:|---:|---:|---:|")
    for server_name, sync, connections, rate, per_commit, ms in rows:
        print(f"| {server_name} | {sync} | {connections} | {rate:,.0f} | {per_commit:.2f} "
              f"| {ms:.2f} |")


if __name__ == "__main__":
    main()
