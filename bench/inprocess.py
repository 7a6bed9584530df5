"""In-process timing: each app called as a WSGI server would call it, with
the same requests, apps interleaved round by round so that drift on the
machine hits all alike; medians of the rounds, in microseconds per request.
"""
from __future__ import annotations

import gc
import io
import itertools
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from wsgiref.util import setup_testing_defaults

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from peers import PeerStore, bare_app, falcon_app, webob_app  # noqa: E402

from usersvc import make_app  # noqa: E402
from usersvc.storage import open_store  # noqa: E402

OPERATIONS = ["GET /users/1", "GET /users?limit=100", "POST /users", "PUT /users/2"]


def environ_for(method: str, target: str, body: bytes = b"") -> dict[str, Any]:
    path, _, query = target.partition("?")
    environ: dict[str, Any] = {"REQUEST_METHOD": method, "PATH_INFO": path, "QUERY_STRING": query,
                               "HTTP_HOST": "127.0.0.1:8080", "SERVER_NAME": "127.0.0.1",
                               "SERVER_PORT": "8080"}
    if body:
        environ["CONTENT_TYPE"] = "application/json"
        environ["CONTENT_LENGTH"] = str(len(body))
    setup_testing_defaults(environ)
    return environ


def _drain(result: Any) -> bytes:
    try:
        return b"".join(result)
    finally:
        close = getattr(result, "close", None)
        if close is not None:
            close()


def _start_response(status: str, headers: list, exc_info: Any = None) -> None:
    _start_response.status = status  # type: ignore[attr-defined]


def call(app: Callable, environ: dict[str, Any], body: bytes = b"") -> tuple[str, bytes]:
    env = dict(environ)
    env["wsgi.input"] = io.BytesIO(body)
    out = _drain(app(env, _start_response))
    return _start_response.status, out  # type: ignore[attr-defined]


def seeded_usersvc(n: int, store: Any = None) -> Any:
    store = store or open_store("memory://")
    store["users"].restore([_user(i) for i in range(1, n + 1)])
    return make_app(store), store["users"]


def _user(i: int) -> Any:
    from usersvc import USER
    return USER.record(id=i, name=f"User {i}", email=f"user{i}@example.org", version=1)


def apps(n: int = 1000, no_store_work: bool = False) -> dict[str, Callable]:
    peer = lambda: PeerStore(n)   # noqa: E731  (each app its own store)
    subjects = {"bare WSGI": bare_app(peer()), "Falcon": falcon_app(peer()),
                "WebOb": webob_app(peer()), "usersvc": seeded_usersvc(n)[0]}
    if no_store_work:
        subjects["usersvc, no store work"] = without_store_work(n)
    return subjects


def without_store_work(n: int) -> Callable:
    """usersvc whose store's create and update keep no index and no feed:
    each returns a new record at once. What is left of a POST or a PUT is
    the HTTP side's own cost (parsing, checking, encoding, headers)."""
    app, users = seeded_usersvc(n)
    template = users.get(1)
    made = itertools.count(10**9)

    def create(**fields: Any) -> Any:
        return template._replace(id=next(made), **fields)

    def update(record_id: int, precondition: Any = None, **fields: Any) -> Any:
        return template._replace(id=record_id, version=next(made), **fields)
    users.create, users.update = create, update
    return app


def timing(app: Callable, operation: str, count: int, offset: int) -> float:
    """Microseconds per request for ``count`` requests of ``operation``."""
    method, target = operation.split(" ")
    if method == "POST":
        bodies = [json.dumps({"name": "New", "email": f"new{offset + i}@example.org"}).encode()
                  for i in range(count)]
    elif method == "PUT":
        bodies = [json.dumps({"name": f"Put {i}", "email": "user2@example.org"}).encode()
                  for i in range(count)]
    else:
        bodies = [b""] * count
    environ = environ_for(method, target, bodies[0])
    inputs = [io.BytesIO(b) for b in bodies]
    envs = []
    for stream, body in zip(inputs, bodies, strict=True):
        env = dict(environ)
        env["wsgi.input"] = stream
        if body:
            env["CONTENT_LENGTH"] = str(len(body))
        envs.append(env)
    gc.collect()        # every sample starts from the same heap; the collector stays
    start = time.perf_counter()     # on, as in a server: its pauses are part of the cost
    for env in envs:
        result = app(env, _start_response)
        b"".join(result)
        if hasattr(result, "close"):
            result.close()
    return (time.perf_counter() - start) / count * 1e6


def check(app: Callable, operation: str) -> None:
    """Each app answers each operation as it should before it is timed."""
    method, target = operation.split(" ")
    email = f"check-{id(app)}@example.org" if method == "POST" else "user2@example.org"
    body = json.dumps({"name": "Check", "email": email}).encode() if method in ("POST", "PUT") \
        else b""
    status, out = call(app, environ_for(method, target, body), body)
    assert status.startswith(("200", "201")), (operation, status, out[:200])
    if "limit=100" in target:
        assert len(json.loads(out)) == 100


def run(rounds: int = 15, count: int = 2000,
        no_store_work: bool = False) -> dict[str, dict[str, float]]:
    """``{operation: {app: median µs}}``; ``no_store_work``: also usersvc
    with a store that does nothing (``without_store_work``)."""
    subjects = apps(no_store_work=no_store_work)
    for operation in OPERATIONS:
        for app in subjects.values():
            check(app, operation)
    samples: dict[str, dict[str, list[float]]] = {
        op: {name: [] for name in subjects} for op in OPERATIONS}
    offset = 0
    order = list(subjects.items())
    for round_no in range(rounds):
        for operation in OPERATIONS:
            n = count // 10 if "limit=100" in operation else count
            # A different app goes first each round: no app always follows the same one.
            shift = round_no % len(order)
            for name, app in order[shift:] + order[:shift]:
                samples[operation][name].append(timing(app, operation, n, offset))
                offset += n
    return {op: {name: statistics.median(v) for name, v in by_app.items()}
            for op, by_app in samples.items()}


if __name__ == "__main__":
    # inprocess.py [ROUNDS] [--no-store-work]
    arguments = [a for a in sys.argv[1:] if a != "--no-store-work"]
    results = run(rounds=int(arguments[0]) if arguments else 15,
                  no_store_work="--no-store-work" in sys.argv)
    for op, by_app in results.items():
        print(op, {k: round(v, 1) for k, v in by_app.items()},
              f"usersvc/Falcon = {by_app['usersvc'] / by_app['Falcon']:.2f}",
              *([f"no store work/Falcon = "
                 f"{by_app['usersvc, no store work'] / by_app['Falcon']:.2f}"]
                if "usersvc, no store work" in by_app else []))
