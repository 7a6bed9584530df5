"""What a task's write costs beside a user's, in instructions counted by
valgrind's callgrind (as ``instructions.py`` counts them): the task of
``examples/tasks.py``, with every field given (a reference to a user,
checked in the write's atomic step; timestamps from one clock read), and
a user, on one store holding both, 1,000 of each.

    .venv/bin/python bench/kinds.py [--http [--rounds N]]

Operations: POST (a task naming its owner, and one naming none), PATCH
(a task's ``done``; a user's name) and PUT, on the memory store and on a
SQLite file. Each runs in a child process twice, with ``FEW`` and ``MANY``
requests; the difference over ``MANY - FEW`` is one request's cost. The
budget (issue 34): a task's write at most 1.25 times a user's.

``--http``: the same POSTs over HTTP, as ``batch.py`` makes them: waitress
(``examples/tasks.py``, 4 threads, no access log) on one core, ``wrk`` on
the other, one connection and eight, a user's POST and a task's in turns
each round; the ratio of their rates (a user's over a task's: how many
times a task's write costs), medians of the rounds. Needs an idle machine.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import instructions as counted  # noqa: E402
from paired import CHILD_HELPERS  # noqa: E402

OPERATIONS = ("POST", "POST, no owner", "PATCH", "PUT")

CHILD = CHILD_HELPERS + f"MADE = {counted.MANY}\n" + r"""
import json, sys, tempfile
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, sys.argv[1] + "/examples")
from tasks import TASKS
from usersvc import USER, make_app
from usersvc.storage import open_store
kind, operation, count = sys.argv[2], sys.argv[3], int(sys.argv[4])
collection = sys.argv[5]
TASK = {"title": "Write the notes", "done": False, "estimate": 2.5, "due": "2026-12-01",
        "remind_at": "2026-11-30T09:00:00+01:00", "priority": "high",
        "link": "https://example.org/notes", "owner": 7}
with tempfile.TemporaryDirectory() as tmp:
    store = open_store("memory://" if kind == "memory" else f"sqlite:///{tmp}/t.db", (USER, TASKS))
    users, tasks = store["users"], store["tasks"]
    for i in range(1, 1001):
        users.create(name=f"User {i}", email=f"user{i}@example.org")
    for i in range(1, 1001):
        tasks.create(**{**TASK, "title": f"Task {i}"})
    app = make_app(store)
    envs = []
    for i in range(MADE):       # the same requests made in every run (instructions.py)
        if collection == "users":
            body = {"name": f"New {i}", "email": f"new{i}@example.org"}
            if operation == "PATCH":
                envs.append(environ("PATCH", "/users/2", json.dumps({"name": f"P {i}"}).encode()))
            elif operation == "PUT":
                envs.append(environ("PUT", "/users/2", json.dumps(
                    {"name": f"Put {i}", "email": "user2@example.org"}).encode()))
            else:
                envs.append(environ("POST", "/users", json.dumps(body).encode()))
        else:
            body = {**TASK, "title": f"New {i}"}
            if operation == "POST, no owner":
                del body["owner"]
            if operation == "PATCH":
                envs.append(environ("PATCH", "/tasks/2", json.dumps({"done": i % 2 == 0}).encode()))
            elif operation == "PUT":
                envs.append(environ("PUT", "/tasks/2", json.dumps(body).encode()))
            else:
                envs.append(environ("POST", "/tasks", json.dumps(body).encode()))
    for env in envs:        # a PATCH's media type: environ sets JSON's
        if env["REQUEST_METHOD"] == "PATCH":
            env["CONTENT_TYPE"] = "application/merge-patch+json"
    timed(app, envs[:count])
    store.close()
"""


def per_request(kind: str, operation: str, collection: str) -> float:
    counted.CHILD = CHILD
    few = counted.instructions(counted.ROOT, kind, operation, counted.FEW, collection)
    many = counted.instructions(counted.ROOT, kind, operation, counted.MANY, collection)
    return (many - few) / (counted.MANY - counted.FEW)


TASK_POST = """
local n = 0
request = function()
  n = n + 1
  local body = string.format('{"title": "Task %s-%%d", "done": false, "estimate": 2.5, '
    .. '"due": "2026-12-01", "remind_at": "2026-11-30T09:00:00+01:00", "priority": "high", '
    .. '"link": "https://example.org/notes", "owner": 1}', n)
  return wrk.format("POST", "/tasks", {["Content-Type"] = "application/json"}, body)
end
"""


def over_http(rounds: int, seconds: int) -> None:
    from batch import ONE as USER_POST  # a user's POST, each its own e-mail
    from overhttp import Server, scripted_load
    ratios: dict[tuple[str, int], list[float]] = {}
    with tempfile.TemporaryDirectory() as cwd:
        lua = Path(cwd) / "load.lua"
        servers = {}
        for name, url in (("memory", "memory://"), ("SQLite file", f"sqlite:///{cwd}/t.db")):
            servers[name] = Server([sys.executable, str(counted.ROOT / "examples" / "tasks.py"),
                                    "--port", "{port}", "--storage", url, "--no-access-log"],
                                   "usersvc serving", cwd)
        try:
            for server in servers.values():     # the owner every task names
                lua.write_text(USER_POST % "seed")
                scripted_load(server.port, str(lua), 1, 1)
            for round_no in range(rounds):
                for name, server in servers.items():
                    for connections in (1, 8):
                        tag = time.time_ns()
                        rates = []
                        for script in (USER_POST, TASK_POST):
                            lua.write_text(script % tag)
                            rates.append(scripted_load(server.port, str(lua), seconds,
                                                       connections))
                        ratios.setdefault((name, connections), []).append(rates[0] / rates[1])
                        print(f"round {round_no + 1}: {name}, {connections} connection(s): "
                              f"user {rates[0]:.0f}/s, task {rates[1]:.0f}/s", file=sys.stderr)
        finally:
            for server in servers.values():
                server.stop()
    print("| a task's POST / a user's, over HTTP | 1 connection | 8 connections |")
    print("|---|---:|---:|")
    for name in ("memory", "SQLite file"):
        print(f"| {name} | {statistics.median(ratios[name, 1]):.2f} | "
              f"{statistics.median(ratios[name, 8]):.2f} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--http", action="store_true", help="over HTTP, with wrk")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=3)
    args = parser.parse_args()
    if args.http:
        over_http(args.rounds, args.seconds)
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 2
    print("| instructions a request | a user | a task | task / user |")
    print("|---|---:|---:|---:|")
    for kind in counted.STORES:
        for operation in OPERATIONS:
            user = per_request(kind, "POST" if operation == "POST, no owner" else operation,
                               "users")
            task = per_request(kind, operation, "tasks")
            print(f"| {kind}: {operation} | {user:,.0f} | {task:,.0f} | {task / user:.3f} |",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
