"""Over HTTP: each server under waitress (4 threads; usersvc under granian
too: one worker, 4 blocking threads, ``serve.py --server granian``) pinned to one core,
the load generator on the other, one operation at a time, servers
interleaved round by round; requests per second, medians of the rounds.

The ceiling for each operation is waitress serving a fixed body of the same
size as usersvc's answer, doing no work at all.
"""
from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import nullcontext
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
PYTHON = sys.executable

# Every run its own e-mails: wrk's math.random is the same in every run.
POST_LUA = """
local n = 0
request = function()
  n = n + 1
  local body = string.format('{"name": "New", "email": "w%%s-%%d@example.org"}', "%s", n)
  return wrk.format("POST", "/users", {["Content-Type"] = "application/json"}, body)
end
"""

OPERATIONS = {"GET /users/1": ("GET", "/users/1"),
              "GET /users?limit=100": ("GET", "/users?limit=100"),
              "POST /users": ("POST", "/users")}


def _pin(core: int) -> list[str]:
    pinned = shutil.which("taskset") and (os.cpu_count() or 1) > 1
    return ["taskset", "-c", str(core)] if pinned else []


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, command: list[str], ready: str, cwd: str, log: str | None = None) -> None:
        self.port = free_port()
        self.log = log
        command = [c.replace("{port}", str(self.port)) for c in command]
        with open(log, "w") if log else nullcontext(subprocess.DEVNULL) as stderr:
            self.process = subprocess.Popen(_pin(0) + command, cwd=cwd, stdout=subprocess.PIPE,
                                            stderr=stderr, text=True)
        self.line = line = self.process.stdout.readline()      # the ready line
        if ready not in line:
            raise RuntimeError(f"{command} did not start: {line!r}")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=15)
        self.process.stdout.close()


def usersvc(storage: str, cwd: str, *extra: str, threads: int = 4,
            log: str | None = None) -> Server:
    return Server([PYTHON, str(ROOT / "serve.py"), "--port", "{port}", "--threads", str(threads),
                   "--storage", storage, *extra], "usersvc serving", cwd, log)


def sqlite_usersvc(cwd: str, name: str, threads: int = 4) -> Server:
    """usersvc on a SQLite file of 1,000 users written before it starts (so
    that its writer's figures, logged at exit, are the benchmark's writes
    alone), without the access log."""
    sys.path.insert(0, str(ROOT))
    from usersvc import USER
    from usersvc.storage import open_store
    store = open_store(f"sqlite:///{cwd}/{name}.db")
    store["users"].restore([USER.record(id=i, name=f"User {i}", email=f"user{i}@example.org",
                                        version=1) for i in range(1, 1001)])
    store.close()
    return usersvc(f"sqlite:///{cwd}/{name}.db", cwd, "--no-access-log", threads=threads,
                   log=f"{cwd}/{name}.log")


_WRITER = re.compile(r"SQLite writer for \S+: ([0-9,]+) writes in ([0-9,]+) commits "
                     r"\(([0-9.]+) writes a commit, ([0-9.]+) ms a commit\)")


def writer_figures(server: Server, seconds: float) -> dict[str, float]:
    """What the stopped server's SQLite writer logged: writes per commit,
    milliseconds per commit, and commits per second of load."""
    assert server.log is not None
    found = _WRITER.search(Path(server.log).read_text())
    if not found:
        return {}
    commits = int(found.group(2).replace(",", ""))
    return {"writes a commit": float(found.group(3)), "ms a commit": float(found.group(4)),
            "commits a second": commits / seconds}


def peer(kind: str, cwd: str, *args: str) -> Server:
    return Server([PYTHON, str(BENCH / "serve_peer.py"), kind, "{port}", *args], "ready", cwd)


def seed(port: int, n: int = 1000) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    for i in range(n):
        body = json.dumps({"name": f"User {i}", "email": f"user{i}@example.org"})
        conn.request("POST", "/users", body=body, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        response.read()
        assert response.status in (201, 409), response.status
    conn.close()


# Headers waitress writes itself, or the fixed app does.
_SERVER_HEADERS = {"content-length", "content-type", "date", "server", "connection"}


def sample(port: int, method: str, path: str) -> tuple[int, list[tuple[str, str]]]:
    """The size of usersvc's answer and the headers it sends (less those
    any waitress app sends)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    body = json.dumps({"name": "Size", "email": f"size{time.time_ns()}@example.org"}) \
        if method == "POST" else None
    conn.request(method, path, body=body,
                 headers={"Content-Type": "application/json"} if body else {})
    response = conn.getresponse()
    size = len(response.read())
    headers = [(k, v) for k, v in response.getheaders() if k.lower() not in _SERVER_HEADERS]
    conn.close()
    return size, headers


def load(port: int, method: str, path: str, seconds: int, lua: str) -> float:
    """Requests per second: wrk -t1 -c8 where it is installed, else a
    Python generator (8 keep-alive connections on threads: much slower
    than wrk, so it understates every server alike)."""
    if shutil.which("wrk"):
        args = _pin(1) + ["wrk", "-t1", "-c8", f"-d{seconds}s", f"http://127.0.0.1:{port}{path}"]
        if method == "POST":
            Path(lua).write_text(POST_LUA % time.time_ns())
            args[-1:-1] = ["-s", lua]
        out = subprocess.run(args, capture_output=True, text=True, timeout=seconds + 60).stdout
        match = re.search(r"Requests/sec:\s+([0-9.]+)", out)
        errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
        if not match or errors:
            raise RuntimeError(f"wrk: {out}")
        return float(match.group(1))
    return _python_load(port, method, path, seconds)


def scripted_load(port: int, lua: str, seconds: int = 3, connections: int = 8,
                  path: str = "/") -> float:
    """Requests per second of wrk -t1 running the Lua script in the file
    ``lua`` (its ``request`` makes each request); any non-2xx is an error."""
    out = subprocess.run(_pin(1) + ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "-s", lua,
                                    f"http://127.0.0.1:{port}{path}"],
                         capture_output=True, text=True, timeout=seconds + 60).stdout
    match = re.search(r"Requests/sec:\s+([0-9.]+)", out)
    if not match or "Non-2xx" in out:
        raise RuntimeError(f"wrk: {out}")
    return float(match.group(1))


def _python_load(port: int, method: str, path: str, seconds: float) -> float:
    deadline = time.monotonic() + seconds
    counts = [0] * 8

    def worker(i: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        n = 0
        while time.monotonic() < deadline:
            n += 1
            body = json.dumps({"name": "N", "email": f"p{i}-{n}-{time.time_ns()}@example.org"}) \
                if method == "POST" else None
            conn.request(method, path, body=body,
                         headers={"Content-Type": "application/json"} if body else {})
            conn.getresponse().read()
            counts[i] += 1
        conn.close()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(counts) / (time.monotonic() - start)


def run(rounds: int = 3, seconds: int = 3) -> dict[str, dict[str, float]]:
    """``{operation: {server: median req/s}}``, and ``"SQLite writer"``: the
    writes a commit, milliseconds a commit and commits a second of the two
    SQLite servers (4 and 8 threads) under the POST rounds."""
    with tempfile.TemporaryDirectory() as cwd:
        lua = str(Path(cwd) / "post.lua")
        servers = {"usersvc": usersvc("memory://", cwd),
                   "usersvc, no access log": usersvc("memory://", cwd, "--no-access-log"),
                   "usersvc on granian, no access log": usersvc(
                       "memory://", cwd, "--server", "granian", "--no-access-log"),
                   "usersvc on SQLite, no access log": sqlite_usersvc(cwd, "sqlite4"),
                   "usersvc on SQLite, 8 threads": sqlite_usersvc(cwd, "sqlite8", threads=8),
                   "Falcon": peer("falcon", cwd)}
        try:
            for name, server in servers.items():
                if name != "Falcon" and "SQLite" not in name:
                    seed(server.port)
            answers = {op: sample(servers["usersvc"].port, *mp) for op, mp in OPERATIONS.items()}
            status = {op: "201_Created" if mp[0] == "POST" else "200_OK"
                      for op, mp in OPERATIONS.items()}
            ceilings = {op: peer("fixed", cwd, str(answers[op][0]), status[op])
                        for op in OPERATIONS}
            with_headers = {op: peer("fixed", cwd, str(answers[op][0]), status[op],
                                     json.dumps(answers[op][1])) for op in OPERATIONS}
            samples: dict[str, dict[str, list[float]]] = {op: {} for op in OPERATIONS}
            for round_no in range(rounds):
                for op, (method, path) in OPERATIONS.items():
                    subjects = {"waitress, fixed body (ceiling)": ceilings[op],
                                "fixed body, usersvc's headers": with_headers[op], **servers}
                    if op != "POST /users":
                        subjects.pop("usersvc on SQLite, 8 threads")
                    order = list(subjects.items())
                    shift = round_no % len(order)
                    for name, server in order[shift:] + order[:shift]:
                        rate = load(server.port, method, path, seconds, lua)
                        samples[op].setdefault(name, []).append(rate)
        finally:
            for server in [*servers.values(), *locals().get("ceilings", {}).values(),
                           *locals().get("with_headers", {}).values()]:
                server.stop()
        medians = {op: {name: statistics.median(v) for name, v in by.items()}
                   for op, by in samples.items()}
        # Each SQLite server's writes were the POST rounds alone.
        medians["SQLite writer"] = {
            f"{threads} threads: {figure}": value
            for threads, name in ((4, "usersvc on SQLite, no access log"),
                                  (8, "usersvc on SQLite, 8 threads"))
            for figure, value in writer_figures(servers[name], rounds * seconds).items()}
    return medians


if __name__ == "__main__":
    for op, by in run(rounds=1, seconds=2).items():
        print(op, {k: round(v) for k, v in by.items()})
