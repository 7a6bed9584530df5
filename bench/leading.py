"""usersvc against what a user would pick instead, over HTTP, as issue 47's
budgets ask: usersvc on waitress and on granian (``serve.py --server
granian``: one worker, 4 blocking threads), FastAPI + pydantic on uvicorn
(``fastapi_peer.py``) and Falcon on granian and on waitress (``peers.py``),
each over 1,000 users in memory, without an access log.

    .venv/bin/python bench/leading.py [--rounds 3] [--seconds 3]

Each server is pinned to core 0, ``wrk -t1 -c8`` to core 1, one operation
at a time, the servers in turns (a different one first each round);
medians of the rounds, and the ratios the budgets name. Needs wrk, and
for the peers FastAPI, uvicorn[standard], email-validator and Falcon.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from overhttp import OPERATIONS, load, peer, seed, usersvc  # noqa: E402

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
    medians = {op: {n: statistics.median(v) for n, v in by.items()} for op, by in samples.items()}
    print("| requests a second | " + " | ".join(SERVERS) + " |")
    print("|---|" + "---:|" * len(SERVERS))
    for op, by in medians.items():
        print(f"| {op} | " + " | ".join(f"{by[n]:,.0f}" for n in SERVERS) + " |")
    print()
    for op, by in medians.items():
        print(f"{op}: usersvc on granian / FastAPI on uvicorn "
              f"{by['usersvc on granian'] / by['FastAPI on uvicorn']:.2f}; "
              f"on waitress / FastAPI {by['usersvc on waitress'] / by['FastAPI on uvicorn']:.2f}; "
              f"on granian / Falcon on granian "
              f"{by['usersvc on granian'] / by['Falcon on granian']:.2f}")


if __name__ == "__main__":
    main()
