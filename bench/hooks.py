"""What calling the hooks a request meets costs: plain lists of callables
(as ``App`` keeps them) against pluggy's hookspecs and a ``PluginManager``
(issue 58; docs/decisions.md, "Hooks: a plain list of callables, not pluggy").

    .venv/bin/python bench/hooks.py [--rounds N] [--no-instructions]

1. **Requests through usersvc's app**, in-process, on a memory store of
   1,000 users: a GET of one user and a POST (no ``Idempotency-Key``), with
   no feature plugged (a bare ``App``, its cross-origin check taken out
   too: every hook list empty), with ``make_app``'s defaults, and with every
   feature that meets a request (CORS, tokens, metrics; the requests come
   from the allowed origin with a write token). "plain" is the app
   ``make_app`` builds; "pluggy" is the same app with its starters, checks
   and finishers registered, in the same order, as implementations of
   three hookspecs and called through a ``PluginManager`` (``PluggyApp``:
   ``App.__call__`` and ``App.handle`` with their three loops made hook
   calls; both answer each request alike, which is checked first).
2. **The hooks alone**: every hook point a request meets, each
   implementation a function that does nothing, called as a list and
   through pluggy: starters, checks (the first answer wins), finishers;
   for a POST with a key also the write hook, the store's step with its
   wrappers (plain: composed once, when the collection is added; pluggy:
   ``wrapper=True`` implementations around the step, called each time),
   and the observers of its commit. How many of each: ``SETS``.

Counted in instructions by valgrind's callgrind, as ``instructions.py``
counts: the difference between ``MANY`` and ``FEW`` requests over
``MANY - FEW``; here every figure comes from one process run with
``--separate-threads=yes``, the ``FEW`` and the ``MANY`` of each in a thread
of their own after a warm-up on the main thread (a thread's own start is
in both and cancels). And timed: the best of ``--rounds`` rounds, in µs,
plain and pluggy in turns. Under a minute on this machine. pluggy is not
usersvc's: it comes with pytest (the ``test`` extra).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from instructions import FEW, MANY  # noqa: E402
from paired import CHILD_HELPERS, ROOT  # noqa: E402

sys.path.insert(0, str(ROOT))
import pluggy  # noqa: E402

import usersvc.app  # noqa: E402
from usersvc import USER, App, Settings, make_app  # noqa: E402
from usersvc.app import _NEGOTIATED  # noqa: E402
from usersvc.failures import log_failure  # noqa: E402
from usersvc.problems import DOMAIN_ERRORS, Problem  # noqa: E402
from usersvc.representation import negotiate  # noqa: E402
from usersvc.request import Request, Response  # noqa: E402

HELPERS: dict[str, Any] = {}
exec(CHILD_HELPERS, HELPERS)        # environ(), timed(), users_store(), user()
environ, timed = HELPERS["environ"], HELPERS["timed"]

WARM = 50                           # requests on the main thread before counting
TOKEN = "s3cr3t-writer-0123456789"
ORIGIN = "https://app.example"

# How many implementations of each hook point a request meets. "default" is
# make_app's: the core's cross-origin check, the idempotency keys' write hook
# and (once waiting for changes is a feature, as issue 58 has it) one
# observer of commits; "all" adds CORS (a check, a finisher), tokens (a
# check) and metrics (a starter, a finisher, a store wrapper, an observer).
SETS = {
    "none": dict(starters=0, checks=0, finishers=0, write=0, wrappers=0, observers=0),
    "default": dict(starters=0, checks=1, finishers=0, write=1, wrappers=0, observers=1),
    "all": dict(starters=1, checks=3, finishers=2, write=1, wrappers=1, observers=2),
}

#: A case: its label, and ``prepare(n)``, which makes ``n`` of its requests
#: and gives ``send()``, which sends them and says what each took (µs).
Case = tuple[str, Callable[[int], Callable[[], float]]]

hookspec = pluggy.HookspecMarker("usersvc")
hookimpl = pluggy.HookimplMarker("usersvc")


class Hooks:
    """The hook points, as pluggy's hookspecs (a redesign's would say more)."""

    @hookspec
    def request_started(self, req):
        """A request comes in (metrics: its clock starts)."""

    @hookspec(firstresult=True)
    def check_request(self, req, found):
        """An answer, or a raised ``Problem``, before the body is read."""

    @hookspec
    def request_finished(self, req, response):
        """The answer is made: add headers, count it."""

    @hookspec(firstresult=True)
    def write_request(self, req, fmt, make, respond):
        """A write's answer made another way (idempotency keys); ``None``:
        the core makes it."""

    @hookspec(firstresult=True)
    def store_step(self, collection, operation, step):
        """A store's step (``step()``), wrapped by ``wrapper=True``
        implementations (metrics: timed)."""

    @hookspec
    def committed(self, seconds, count):
        """A commit is made (metrics; wake who waits for changes)."""


def plugin(name: str, function: Callable, **opts: Any) -> Any:
    """A plugin whose one implementation of hook ``name`` is ``function``
    (a function, a closure or a bound method, called as it is: no layer
    between pluggy and it)."""
    hookimpl(**opts)(getattr(function, "__func__", function))
    one = Plugin()
    setattr(one, name, function)
    return one


class Plugin:
    """A plugin: an object (equal only to itself, as pluggy needs)."""


def manager() -> pluggy.PluginManager:
    pm = pluggy.PluginManager("usersvc")
    pm.add_hookspecs(Hooks)
    return pm


# --- 1. Requests through usersvc's app -------------------------------------

class PluggyApp(App):
    """``App`` with its starters, checks and finishers called through
    pluggy (``self.hook``): ``__call__`` and ``handle`` are
    usersvc/app.py's, the three loops made hook calls."""

    hook: Any

    def __call__(self, environ: dict, start_response: Callable) -> Any:
        req = Request(environ)
        self.hook.request_started(req=req)
        try:
            response = self.handle(req)
        except Problem as problem:
            response = self.problem_response(req, problem)
        except DOMAIN_ERRORS as error:
            response = self.problem_response(req, Problem.from_error(error))
        except Exception:
            log_failure(req)
            response = self.problem_response(
                req, Problem(500, "The server could not complete the request."))
        self.hook.request_finished(req=req, response=response)
        return response(environ, start_response)

    def handle(self, req: Request) -> Response:
        path = req.path
        host = req.host
        if host is not None and not usersvc.app.good_host(host):     # (fast, swapped in)
            raise Problem(400, "The Host header is not a host name or address "
                               "with an optional port.")
        found = self.router.match(path)
        if found is not None:
            req.route = found[0].label
        answer = self.hook.check_request(req=req, found=found)
        if answer is not None:
            return answer
        req.read_body(self.max_body_size)
        if found is None:
            raise Problem(404, "There is nothing at this path.")
        route, params = found
        if req.method == "OPTIONS":
            return self._options(route)
        responder = route.responders.get(req.method)
        if responder is None:
            raise Problem(405, f"The method {req.method} is not allowed here.",
                          headers=[("Allow", route.allow)])
        fmt = (negotiate(req, route.offers)
               if req.method in _NEGOTIATED and route.offers is not None else None)
        return responder(req, fmt, **params)


def plugged(app: App) -> PluggyApp:
    """``app`` made a ``PluggyApp``: its starters, checks and finishers
    registered with a ``PluginManager``, called in the order the lists
    call them (pluggy calls the last registered first)."""
    pm = manager()
    for name, hooks in (("request_started", app.starters), ("check_request", app.checks),
                        ("request_finished", app.finishers)):
        for function in reversed(hooks):
            pm.register(plugin(name, function))
        hooks.clear()
    app.__class__ = PluggyApp
    app.hook = pm.hook
    return app


def new_app(features: str) -> App:
    """An app of ``features`` ("none", "default", "all") on a memory store
    of 1,000 users."""
    store, users = HELPERS["users_store"]("memory://")
    users.restore([HELPERS["user"](i, f"User {i}", f"user{i}@example.org", 1)
                   for i in range(1, 1001)], last_id=1000)
    if features == "none":
        app = App(Settings(store))
        app.checks.clear()                  # the core's cross-origin check, too
        app.add_collection(USER, users)
        return app
    if features == "default":
        return make_app(store)
    return make_app(store, tokens={TOKEN: "write"}, cors_origins=[ORIGIN], metrics=True)


def requests(features: str, operation: str, n: int, start: int) -> list[dict]:
    """``n`` environs of ``operation`` for an app of ``features`` (POSTs
    numbered from ``start``, each a new email)."""
    headers = ({"authorization": f"Bearer {TOKEN}", "origin": ORIGIN}
               if features == "all" else {})
    if operation == "GET":
        return [environ("GET", "/users/1", **headers) for _ in range(n)]
    return [environ("POST", "/users", json.dumps(
        {"name": "New", "email": f"new{i}@example.org"}).encode(), **headers)
        for i in range(start, start + n)]


def answered(app: App, env: dict) -> tuple[str, list]:
    said: list = []
    b"".join(app(env, lambda status, headers, exc_info=None: said.extend((status, headers))))
    return said[0], sorted(said[1])


def request_cases() -> list[Case]:
    """Requests through the app, each case's to an app of its own
    (``prepare(n)`` makes the next ``n`` environs)."""
    cases = []
    for features in SETS:
        for operation in ("GET", "POST"):
            a, b = new_app(features), plugged(new_app(features))
            alike = [answered(app, requests(features, operation, 1, 10**6)[0]) for app in (a, b)]
            assert alike[0] == alike[1], (features, operation, alike)
            assert alike[0][0][0] == "2", alike[0]
            for world, app in (("plain", a), ("pluggy", b)):
                cases.append((f"{features} {operation} {world}",
                              _sender(app, features, operation)))
    return cases


def _sender(app: App, features: str, operation: str) -> Callable[[int], Callable[[], float]]:
    made = [0]

    def prepare(n: int) -> Callable[[], float]:
        envs = requests(features, operation, n, made[0])
        made[0] += n
        return lambda: timed(app, envs)
    return prepare


# --- 2. The hooks alone ----------------------------------------------------

def started(req): return None                       # noqa: E704
def check(req, found): return None                  # noqa: E704
def finished(req, response): return None            # noqa: E704
def committed(seconds, count): return None          # noqa: E704
def step(): return None                             # noqa: E704


ANSWER = object()         # a write's answer


def keyed(req, fmt, make, respond):
    """The idempotency keys' write hook: the write made, with its key."""
    return make(req)


def wrap(inner):
    """A store wrapper, composed once (``App.records_wrappers``)."""
    def wrapped():
        return inner()
    return wrapped


def store_step(step):
    """The core's own step, at the heart of pluggy's wrappers."""
    return step()


def timed_step():
    """A store wrapper as pluggy has it, around each step."""
    return (yield)


class Listed:
    """A request's hooks as ``App`` keeps them: lists of callables."""

    def __init__(self, starters=0, checks=0, finishers=0, write=0, wrappers=0, observers=0):
        self.starters = [started] * starters
        self.checks = [check] * checks
        self.finishers = [finished] * finishers
        self.write_hook = keyed if write else None
        self.step = step
        for _ in range(wrappers):
            self.step = wrap(self.step)
        self.observers = [committed] * observers

    def get(self, req, found, response):
        for start in self.starters:
            start(req)
        for check_ in self.checks:
            if check_(req, found) is not None:
                break
        for finish in self.finishers:
            finish(req, response)

    def post(self, req, found, response):
        self.get(req, found, response)
        if self.write_hook is None:
            return self.make(req)
        return self.write_hook(req, None, self.make, None)

    def make(self, req):
        """The write's answer (``ANSWER``), once its step is committed."""
        self.step()
        for observe in self.observers:
            observe(0.001, 1)
        return ANSWER


class Plugged:
    """The same hooks as pluggy's implementations, called through a
    ``PluginManager``."""

    def __init__(self, starters=0, checks=0, finishers=0, write=0, wrappers=0, observers=0):
        pm = manager()
        pm.register(plugin("store_step", store_step))
        for name, function, n, opts in (
                ("request_started", started, starters, {}),
                ("check_request", check, checks, {}),
                ("request_finished", finished, finishers, {}),
                ("write_request", keyed, write, {}),
                ("store_step", timed_step, wrappers, {"wrapper": True}),
                ("committed", committed, observers, {})):
            for _ in range(n):
                pm.register(plugin(name, function, **opts))
        self.hook = pm.hook

    def get(self, req, found, response):
        hook = self.hook
        hook.request_started(req=req)
        hook.check_request(req=req, found=found)
        hook.request_finished(req=req, response=response)

    def post(self, req, found, response):
        self.get(req, found, response)
        answer = self.hook.write_request(req=req, fmt=None, make=self.make, respond=None)
        return self.make(req) if answer is None else answer

    def make(self, req):
        self.hook.store_step(collection="users", operation="create", step=step)
        self.hook.committed(seconds=0.001, count=1)
        return ANSWER


def hook_cases() -> list[Case]:
    """The hooks alone, as a list and through pluggy, for each of ``SETS``."""
    cases = []
    for features, counts in SETS.items():
        for operation in ("GET", "POST"):
            for world, kind in (("plain", Listed), ("pluggy", Plugged)):
                request = getattr(kind(**counts), operation.lower())
                cases.append((f"hooks {features} {operation} {world}", _caller(request)))
    return cases


def _caller(request: Callable) -> Callable[[int], Callable[[], float]]:
    req, found, response = object(), None, object()

    def prepare(n: int) -> Callable[[], float]:
        def call() -> float:
            start = time.perf_counter()
            for _ in range(n):
                request(req, found, response)
            return (time.perf_counter() - start) / n * 1e6
        return call
    return prepare


# --- The child's two ways, and the parent ----------------------------------

HOOK_FACTOR = 10        # the hooks alone are cheap: ten times the calls, counted or timed


def count(cases: list[Case]) -> None:
    """Each case: a warm-up here, then ``FEW`` in a thread and ``MANY`` in
    the next, every thread kept until the end (callgrind would give an
    ended thread's number to the next)."""
    end = threading.Event()
    threads = []
    for label, prepare in cases:
        factor = HOOK_FACTOR if label.startswith("hooks") else 1
        prepare(WARM * factor)()
        for n in (FEW, MANY):
            done, send = threading.Event(), prepare(n * factor)

            def run(send: Callable[[], float] = send, done: threading.Event = done) -> None:
                send()
                done.set()
                end.wait()
            threads.append(threading.Thread(target=run))
            threads[-1].start()
            done.wait()
    end.set()
    for thread in threads:
        thread.join()


def best_times(cases: list[Case],
               rounds: int) -> dict[str, float]:
    """The best of ``rounds`` for each case, plain and pluggy in turns
    (``cases`` comes in pairs)."""
    best = {label: float("inf") for label, _ in cases}
    pairs = list(zip(cases[::2], cases[1::2], strict=True))
    for r in range(rounds):
        for pair in pairs:
            for label, prepare in (pair if r % 2 == 0 else pair[::-1]):
                send = prepare(20000 if label.startswith("hooks") else 1000)
                best[label] = min(best[label], send())
    return best


def counted(cases: list[str]) -> dict[str, float]:
    """Instructions each case costs a request, from one callgrind run."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["valgrind", "--tool=callgrind", "--separate-threads=yes",
                        f"--callgrind-out-file={tmp}/cg.out", sys.executable, __file__,
                        "--child", "count"],
                       capture_output=True, text=True, check=True,
                       env={**os.environ, "PYTHONHASHSEED": "0"})
        totals = {}
        for out in Path(tmp).glob("cg.out-*"):
            thread = int(out.name.rsplit("-", 1)[1])
            total = re.search(r"^totals: (\d+)", out.read_text(), re.MULTILINE)
            totals[thread] = int(total.group(1))
    figures = {}
    for i, label in enumerate(cases):         # threads 2, 3 the first case's, and so on
        factor = HOOK_FACTOR if label.startswith("hooks") else 1
        figures[label] = (totals[3 + 2 * i] - totals[2 + 2 * i]) / ((MANY - FEW) * factor)
    return figures


def labels() -> list[str]:
    """The cases' labels, in the order ``cases`` makes them."""
    return [f"{prefix}{features} {operation} {world}" for prefix in ("", "hooks ")
            for features in SETS for operation in ("GET", "POST")
            for world in ("plain", "pluggy")]


def table(instructions: dict[str, float], times: dict[str, float]) -> str:
    """The figures as Markdown: each case, plain and pluggy and their
    ratio; then what pluggy adds to the hooks alone, as a share of the
    plain app's request of the same features and method."""
    nan = float("nan")
    lines = ["| per request | plain instr. | pluggy instr. | ratio "
             "| plain µs | pluggy µs | ratio |", "|---|---:|---:|---:|---:|---:|---:|"]
    shares = ["| features, method | instructions | time |", "|---|---:|---:|"]
    for prefix, title in (("", "request"), ("hooks ", "the hooks alone")):
        for features in SETS:
            for operation in ("GET", "POST"):
                key = f"{prefix}{features} {operation}"
                i0, i1 = (instructions.get(f"{key} {w}", nan) for w in ("plain", "pluggy"))
                t0, t1 = (times[f"{key} {w}"] for w in ("plain", "pluggy"))
                what = f"{title}: {features}, {operation}"
                if prefix and operation == "POST":
                    what += " with a key"
                lines.append(f"| {what} | {i0:,.0f} | {i1:,.0f} | {_ratio(i1, i0)} | "
                             f"{t0:.3f} | {t1:.3f} | {_ratio(t1, t0)} |")
                if prefix:
                    real = f"{features} {operation} plain"
                    shares.append(f"| {features}, {operation} | "
                                  f"{(i1 - i0) / instructions.get(real, nan):+.2%} | "
                                  f"{(t1 - t0) / times[real]:+.2%} |")
    said = ("What pluggy adds to the hooks alone, as a share of the plain app's request "
            "(same features and method):")
    return "\n".join([*lines, "", said, "", *shares])


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else "–"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--no-instructions", action="store_true",
                        help="time alone (no valgrind)")
    parser.add_argument("--child", choices=("count", "time"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        cases = request_cases() + hook_cases()
        assert [label for label, _ in cases] == labels()
        if args.child == "count":
            count(cases)
        else:
            print(json.dumps(best_times(cases, args.rounds)))
        return 0
    instructions: dict[str, float] = {}
    if not args.no_instructions:
        if shutil.which("valgrind") is None:
            print("valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
            return 2
        instructions = counted(labels())
    times = json.loads(subprocess.run([sys.executable, __file__, "--child", "time",
                                       "--rounds", str(args.rounds)],
                                      capture_output=True, text=True, check=True).stdout)
    print(f"pluggy {pluggy.__version__}, Python {sys.version.split()[0]}\n")
    print(table(instructions, times))
    return 0


if __name__ == "__main__":
    sys.exit(main())
