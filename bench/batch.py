"""What a batch costs over HTTP: ``POST /batch`` of 10 creates against one
``POST /users``, on the memory store and on a SQLite file, each server under
waitress (4 threads) pinned to one core and wrk on the other, the two
operations interleaved round by round on the same server.

    .venv/bin/python bench/batch.py [--rounds 5] [--seconds 3] [--size 10]

The figure is the ratio of the time one batch takes to the time one create
takes (requests per second of creates over those of batches), median of the
rounds, with one connection (each request alone: its latency) and with
eight (the server busy: what it can do). The issue's budget: at most 4x on
SQLite (one commit for the batch), at most 10x in memory.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from overhttp import scripted_load, sqlite_usersvc, usersvc  # noqa: E402

# Every run its own e-mails: wrk's math.random is the same in every run.
ONE = """
local n = 0
request = function()
  n = n + 1
  local body = string.format('{"name": "One", "email": "o%s-%%d@example.org"}', n)
  return wrk.format("POST", "/users", {["Content-Type"] = "application/json"}, body)
end
"""
BATCH = """
local n = 0
request = function()
  n = n + 1
  local parts = {}
  for i = 1, %d do
    parts[i] = string.format('{"method": "POST", "path": "/users", "body": '
      .. '{"name": "Batched", "email": "b%s-%%d-%%d@example.org"}}', n, i)
  end
  local body = '{"requests": [' .. table.concat(parts, ", ") .. ']}'
  return wrk.format("POST", "/batch", {["Content-Type"] = "application/json"}, body)
end
"""


def rate(port: int, script: str, seconds: int, connections: int, lua: Path) -> float:
    lua.write_text(script)
    return scripted_load(port, str(lua), seconds, connections)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=3)
    parser.add_argument("--size", type=int, default=10, help="creates a batch (default: 10)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cwd:
        lua = Path(cwd) / "load.lua"
        servers = {"memory": usersvc("memory://", cwd, "--no-access-log"),
                   "SQLite file": sqlite_usersvc(cwd, "batch")}
        ratios: dict[tuple[str, int], list[float]] = {}
        try:
            for round_no in range(args.rounds):
                for name, server in servers.items():
                    for connections in (1, 8):
                        tag = f"{time.time_ns()}"
                        one = rate(server.port, ONE % tag, args.seconds, connections, lua)
                        batch = rate(server.port, BATCH % (args.size, tag), args.seconds,
                                     connections, lua)
                        ratios.setdefault((name, connections), []).append(one / batch)
                        print(f"round {round_no + 1}: {name}, {connections} connection(s): "
                              f"{one:.0f} creates/s, {batch:.0f} batches/s "
                              f"({one / batch:.2f})", file=sys.stderr)
        finally:
            for server in servers.values():
                server.stop()
    print(f"| a batch of {args.size} creates / one create | 1 connection | 8 connections |")
    print("|---|---:|---:|")
    for name in servers:
        print(f"| {name} | " + " | ".join(f"{statistics.median(ratios[name, c]):.2f}"
                                          for c in (1, 8)) + " |")
    print(f"\n(median of {args.rounds} rounds of {args.seconds} s each)")


if __name__ == "__main__":
    main()
