"""What Idempotency-Key costs: writes without it against the tree before
it, and writes with it against writes without it.

    .venv/bin/python bench/idempotency.py [--base REV] [--rounds N] [--http] [--postgres URL]

1. Without the header, paired with an earlier tree (default: the last
   commit before keys) as ``paired.py`` pairs them: POST and PATCH
   in-process over 1,000 users, on the memory store and a SQLite file (and
   with ``--postgres``, a PostgreSQL database's schema of its own); with
   ``--http``, each tree's ``serve.py`` on a SQLite file under ``wrk`` (as
   ``overhttp.py`` runs it): POST in requests per second.
2. With the header, in this tree: POST and PATCH in-process with a new key
   each against the same without one, in one process per round, in turns;
   with ``--http``, SQLite POST over HTTP with a new key each against
   without one, in turns, on one server.

Figures are medians of the rounds (µs per request in-process, requests per
second over HTTP).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from paired import CHILD_HELPERS, ROOT, child_json, paired  # noqa: E402

# The last commit before idempotency keys.
BEFORE_KEYS = "be7141e"

CHILD = CHILD_HELPERS + r"""
import json, sys, tempfile, uuid
sys.path.insert(0, sys.argv[1])
keyed = sys.argv[2] == "keyed"
postgres = sys.argv[3] if len(sys.argv) > 3 else ""
from usersvc import make_app
COUNTS = {"memory": 3000, "SQLite file": 300, **({"PostgreSQL": 300} if postgres else {})}

def url(kind, tmp):
    if kind == "memory":
        return "memory://"
    if kind == "SQLite file":
        return f"sqlite:///{tmp}/u.db"
    import psycopg
    schema = "bench_" + uuid.uuid4().hex[:12]
    with psycopg.connect(postgres, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    made.append(schema)
    return f"{postgres}{'&' if '?' in postgres else '?'}options=-csearch_path%3D{schema}"

made = []

results = {}
for kind, count in COUNTS.items():
    with tempfile.TemporaryDirectory() as tmp:
        store, users = users_store(url(kind, tmp))
        users.restore([user(i, f"User {i}", f"user{i}@example.org", 1) for i in range(1, 1001)])
        app = make_app(store)
        run = uuid.uuid4().hex[:8]
        for method in ("POST", "PATCH"):
            envs = []
            for i in range(count):
                body = ({"name": f"Ada {i}", "email": f"{run}-{i}@example.org"} if method == "POST"
                        else {"name": f"Patched {i}"})
                headers = {"idempotency_key": f"{run}-{method}-{i}"} if keyed else {}
                envs.append(environ(method, "/users" if method == "POST" else "/users/2",
                                    json.dumps(body).encode(), **headers))
            results[f"{kind}: {method}"] = timed(app, envs)
        store.close()
if made:
    import psycopg
    with psycopg.connect(postgres, autocommit=True) as admin:
        for schema in made:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")
print(json.dumps(results))
"""

KEYED_LUA = """
local n = 0
request = function()
  n = n + 1
  local body = string.format('{"name": "New", "email": "k%s-%%d@example.org"}', n)
  return wrk.format("POST", "/users", {["Content-Type"] = "application/json",
                    ["Idempotency-Key"] = string.format("%s-%%d", n)}, body)
end
"""


POSTGRES = ""     # --postgres URL: a server to make a schema on, each run


def in_process(tree: Path, keyed: bool = False) -> dict[str, float]:
    return child_json(CHILD, tree, "keyed" if keyed else "plain", POSTGRES)


def sqlite_server(tree: Path, cwd: str):
    import overhttp
    server = overhttp.Server([overhttp.PYTHON, str(tree / "serve.py"), "--port", "{port}",
                              "--threads", "4", "--no-access-log", "--storage",
                              f"sqlite:///{cwd}/{uuid.uuid4().hex}.db"], "usersvc serving", cwd)
    overhttp.seed(server.port)
    return server


def post_rate(port: int, cwd: str, keyed: bool) -> float:
    import overhttp
    if not keyed:
        return overhttp.load(port, "POST", "/users", 3, str(Path(cwd) / "post.lua"))
    lua = Path(cwd) / "keyed.lua"
    run = time.time_ns()
    lua.write_text(KEYED_LUA % (run, run))
    return overhttp.scripted_load(port, str(lua), path="/users")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default=BEFORE_KEYS, help="the earlier revision")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--http", action="store_true", help="also over HTTP, with wrk")
    parser.add_argument("--postgres", default="", metavar="URL",
                        help="also in-process on PostgreSQL (a schema made on it for each run)")
    args = parser.parse_args()
    global POSTGRES
    POSTGRES = args.postgres

    def both(name: str, tree: Path, tmp: Path) -> dict[str, float]:
        figures = in_process(tree)
        if args.http:
            server = sqlite_server(tree, str(tmp))
            try:
                figures["SQLite file over HTTP: POST, req/s"] = post_rate(
                    server.port, str(tmp), False)
            finally:
                server.stop()
        return figures

    medians = paired(args.base, args.rounds, both)
    print(f"| without the header | {args.base} | this tree | cost ratio |")
    print("|---|---:|---:|---:|")
    for key, now in medians["now"].items():
        before = medians["before"][key]
        ratio = before / now if "req/s" in key else now / before
        print(f"| {key} | {before:.1f} | {now:.1f} | {ratio:.2f} |")

    samples: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        server = sqlite_server(ROOT, tmp) if args.http else None
        try:
            for r in range(args.rounds):
                for keyed in ((False, True) if r % 2 == 0 else (True, False)):
                    label = "with a key" if keyed else "without"
                    figures = in_process(ROOT, keyed)
                    if server is not None:
                        figures["SQLite file over HTTP: POST, req/s"] = post_rate(
                            server.port, tmp, keyed)
                    for key, value in figures.items():
                        samples.setdefault(key, {}).setdefault(label, []).append(value)
        finally:
            if server is not None:
                server.stop()
    print()
    print("| this tree | without | with a key | cost ratio |")
    print("|---|---:|---:|---:|")
    for key, by in samples.items():
        without, keyed_ = statistics.median(by["without"]), statistics.median(by["with a key"])
        ratio = without / keyed_ if "req/s" in key else keyed_ / without
        print(f"| {key} | {without:.1f} | {keyed_:.1f} | {ratio:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
