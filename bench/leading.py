"""usersvc against what a user would pick instead, over HTTP, as issue 47's
budgets ask: usersvc on waitress and on granian (``serve.py --server
granian``: one worker, 4 blocking threads), FastAPI + pydantic on uvicorn
(``fastapi_peer.py``) and Falcon on granian and on waitress (``peers.py``),
each over 1,000 users in memory, without an access log; and a task's POST
(every field of ``examples/tasks.py``, naming user 1), usersvc's against
FastAPI's task of the same fields and rules (``fastapi_peer.py``); and a
user's POST to a SQLite file, usersvc's (every 201 synced) against FastAPI +
SQLModel's (WAL, ``synchronous=NORMAL``: ``sqlmodel_peer.py``).

    .venv/bin/python bench/leading.py [--rounds 3] [--seconds 3]

Each server is pinned to core 0, ``wrk -t1 -c8`` to core 1, one operation
at a time, the servers in turns (a different one first each round);
medians of the rounds, and the ratios the budgets name. Needs wrk, and
for the peers FastAPI, SQLModel, uvicorn[standard], email-validator and Falcon.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from overhttp import OPERATIONS, Server, load, peer, scripted_load, seed, usersvc  # noqa: E402

PYTHON = sys.executable
ROOT = Path(__file__).resolve().parent.parent

# A task with every field, naming user 1, as bench/kinds.py's.
TASK_LUA = """
request = function()
  return wrk.format("POST", "/tasks", {["Content-Type"] = "application/json"},
    '{"title": "Write", "done": false, "estimate": 2.5, "due": "2026-12-01", '
    .. '"remind_at": "2026-11-30T09:00:00+01:00", "priority": "high", '
    .. '"link": "https://example.org/x", "owner": 1}')
end
"""


def tasks_usersvc(cwd: str, *extra: str) -> Server:
    """examples/tasks.py's users and tasks, as serve.py serves them."""
    return Server([PYTHON, str(ROOT / "serve.py"), "--port", "{port}", "--storage", "memory://",
                   "--collections", "examples.tasks:TASKS", "--no-access-log", *extra],
                  "usersvc serving", str(ROOT))

SERVERS = ("usersvc on waitress", "usersvc on granian", "FastAPI on uvicorn",
           "Falcon on granian", "Falcon on waitress")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=int, default=3)
    args = p.parse_args()
    samples: dict[str, dict[str, list[float]]] = {op: {} for op in OPERATIONS}
    with tempfile.TemporaryDirectory() as cwd:
        lua = str(Path(cwd) / "post.lua")
        servers = {"usersvc on waitress": usersvc("memory://", cwd, "--no-access-log"),
                   "usersvc on granian": usersvc("memory://", cwd, "--server", "granian",
                                                 "--no-access-log"),
                   "FastAPI on uvicorn": peer("fastapi", cwd),
                   "Falcon on granian": peer("falcon-granian", cwd),
                   "Falcon on waitress": peer("falcon", cwd)}
        try:
            for name in ("usersvc on waitress", "usersvc on granian"):
                seed(servers[name].port)
            for round_no in range(args.rounds):
                for op, (method, path) in OPERATIONS.items():
                    order = list(servers.items())
                    shift = round_no % len(order)
                    for name, server in order[shift:] + order[:shift]:
                        samples[op].setdefault(name, []).append(
                            load(server.port, method, path, args.seconds, lua))
        finally:
            for server in servers.values():
                server.stop()
        # A task's POST: usersvc (users and tasks declared) against FastAPI's task.
        task_lua = Path(cwd) / "task.lua"
        task_lua.write_text(TASK_LUA)
        task_servers = {"usersvc on waitress": tasks_usersvc(cwd),
                        "usersvc on granian": tasks_usersvc(cwd, "--server", "granian"),
                        "FastAPI on uvicorn": peer("fastapi", cwd)}
        try:
            seed(task_servers["usersvc on waitress"].port, 1)
            seed(task_servers["usersvc on granian"].port, 1)
            for round_no in range(args.rounds):
                order = list(task_servers.items())
                shift = round_no % len(order)
                for name, server in order[shift:] + order[:shift]:
                    samples.setdefault("POST /tasks", {}).setdefault(name, []).append(
                        scripted_load(server.port, str(task_lua), args.seconds))
        finally:
            for server in task_servers.values():
                server.stop()
        # A user's POST to a SQLite file (every 201 synced: synchronous=full)
        # against FastAPI + SQLModel (WAL, synchronous=NORMAL: fewer syncs).
        sqlite_servers = {
            "usersvc on waitress": usersvc(f"sqlite:///{cwd}/w.db", cwd, "--no-access-log"),
            "usersvc on granian": usersvc(f"sqlite:///{cwd}/g.db", cwd, "--server", "granian",
                                          "--no-access-log"),
            "FastAPI + SQLModel on uvicorn": peer("sqlmodel", cwd, f"{cwd}/sqlmodel.db")}
        try:
            for round_no in range(args.rounds):
                order = list(sqlite_servers.items())
                shift = round_no % len(order)
                for name, server in order[shift:] + order[:shift]:
                    samples.setdefault("POST /users, SQLite", {}).setdefault(name, []).append(
                        load(server.port, "POST", "/users", args.seconds, lua))
        finally:
            for server in sqlite_servers.values():
                server.stop()
    medians = {op: {n: statistics.median(v) for n, v in by.items()} for op, by in samples.items()}
    sqlite = medians.pop("POST /users, SQLite")
    print("| requests a second | " + " | ".join(SERVERS) + " |")
    print("|---|" + "---:|" * len(SERVERS))
    for op, by in medians.items():
        print(f"| {op} | " + " | ".join(f"{by[n]:,.0f}" if n in by else "" for n in SERVERS) + " |")
    print()
    print("| POST /users to a SQLite file | " + " | ".join(sqlite) + " |")
    print("|---|" + "---:|" * len(sqlite))
    print("| requests a second | " + " | ".join(f"{v:,.0f}" for v in sqlite.values()) + " |")
    for name in ("usersvc on waitress", "usersvc on granian"):
        fastapi = sqlite["FastAPI + SQLModel on uvicorn"]
        print(f"{name}: SQLite / memory {sqlite[name] / medians['POST /users'][name]:.2f}; "
              f"SQLite / FastAPI + SQLModel {sqlite[name] / fastapi:.2f}")
    print()
    for op, by in medians.items():
        print(f"{op}: usersvc on granian / FastAPI on uvicorn "
              f"{by['usersvc on granian'] / by['FastAPI on uvicorn']:.2f}; "
              f"on waitress / FastAPI {by['usersvc on waitress'] / by['FastAPI on uvicorn']:.2f}"
              + (f"; on granian / Falcon on granian "
                 f"{by['usersvc on granian'] / by['Falcon on granian']:.2f}"
                 if "Falcon on granian" in by else ""))


if __name__ == "__main__":
    main()
