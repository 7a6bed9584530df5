"""Group commit, two ways, on SQLite POST over HTTP: the writer thread fed
by a queue that usersvc uses (``usersvc.fast.sqlite.Writer``) against
the leader/follower scheme it replaced (here, ``LeaderFollower``), paired
round by round on the same machine.

    .venv/bin/python bench/group_commit.py [--rounds 5] [--seconds 3] [--threads 4 8]

Each scheme runs as ``serve.py`` (``--no-access-log``) on a SQLite file of
its own, pinned to core 0, with ``wrk -t1 -c8`` POSTing on core 1; the
schemes take turns, the first changing each round. Prints requests per
second (medians) and the ratio. Needs wrk.
"""
from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from usersvc.fast import sqlite as usersvc_sqlite  # noqa: E402
from usersvc.fast.sqlite import Writer  # noqa: E402
from usersvc.storage import StoreUnavailable  # noqa: E402
from usersvc.storage.sqlite.connections import Connection as _Connection  # noqa: E402

T = TypeVar("T")


LEAD = object()     # what a waiting write is told when it is to lead the next group


class Pending:
    """One write waiting for its group's commit (or for its turn to lead)."""

    __slots__ = ("done", "result", "error")

    def __init__(self) -> None:
        self.done = threading.Lock()
        self.done.acquire()             # released by the writer when it is settled
        self.result: Any = None
        self.error: BaseException | None = None

    def settle(self, result: Any, error: BaseException | None) -> None:
        self.result, self.error = result, error
        self.done.release()

    # As a Future is settled, so that Writer._commit can settle it.
    def set_result(self, result: Any) -> None:
        self.settle(result, None)

    def set_exception(self, error: BaseException) -> None:
        self.settle(None, error)

    def wait(self) -> Any:
        self.done.acquire()
        if self.error is not None:
            raise self.error
        return self.result


class LeaderFollower:
    """Group commit without a thread of its own (leader and followers): a
    write that finds no commit under way leads, in its own thread, and
    commits every write waiting by then, its own among them; writes that
    arrive meanwhile wait, and the first of them leads the next group. One
    writer alone pays nothing for it; many share each sync to disk.

    Under load (the last group had company) a leader first waits, at most
    ``gather`` seconds, for as many writes as the last group had: the
    others are still reading their requests, and the sync costs the same
    for one write as for four. A lone writer never waits.

    Every write makes at most one change, in its last statement, so one
    that fails in a group has changed nothing: SQLite undoes a failed
    statement by itself and the transaction goes on (no savepoints needed;
    ``_commit`` checks that nothing changed)."""

    def __init__(self, db: _Connection, gather: float = 0.0005) -> None:
        self.db = db
        self.gather = gather
        self.closed = False
        self._mutex = threading.Lock()
        self._joined = threading.Condition(self._mutex)    # a write came to wait
        self._waiting: list[tuple[Callable[..., Any], Pending]] = []
        self._leading = False
        self._last = 1          # how many writes the last group had

    def submit(self, op: Callable[[sqlite3.Connection], T]) -> T:
        if self.closed:
            raise StoreUnavailable("The store is closed.")
        pending = Pending()
        with self._mutex:
            self._waiting.append((op, pending))
            follow = self._leading
            self._leading = True
            if follow and len(self._waiting) == self._last:
                self._joined.notify()           # a gathering leader has its group
        if follow and pending.wait() is not LEAD:
            return cast(T, pending.result)     # a leader committed it
        with self._mutex:                       # lead: everything waiting, ours too
            if self._last > 1 and len(self._waiting) < self._last:
                self._joined.wait(self.gather)
            group, self._waiting = self._waiting, []
            self._last = len(group)
        try:
            self._commit(group)
        finally:
            with self._mutex:
                if self._waiting:               # pass the lead on to the next in line
                    self._waiting[0][1].settle(LEAD, None)
                else:
                    self._leading = False
        return cast(T, pending.wait())

    def stop(self) -> None:
        self.closed = True

    # The same transaction as usersvc's writer thread makes of a group.
    _commit = Writer._commit


def serve(scheme: str, argv: list[str]) -> int:
    """serve.py, with the given group-commit scheme in the SQLite store."""
    if scheme == "leader":
        usersvc_sqlite.Writer = LeaderFollower  # type: ignore[misc, assignment]
    from usersvc.serving import main
    return main(argv)


def main() -> int:
    import overhttp
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--seconds", type=int, default=3)
    p.add_argument("--threads", type=int, nargs="+", default=[4, 8])
    args = p.parse_args()
    names = {"thread": "writer thread + queue", "leader": "leader/follower"}
    with tempfile.TemporaryDirectory() as cwd:
        lua = str(Path(cwd) / "post.lua")
        for threads in args.threads:
            servers = {s: overhttp.Server(
                [overhttp.PYTHON, __file__, "serve", s, "--port", "{port}",
                 "--threads", str(threads), "--no-access-log",
                 "--storage", f"sqlite:///{cwd}/{s}-{threads}.db"],
                "usersvc serving", cwd) for s in names}
            samples: dict[str, list[float]] = {s: [] for s in names}
            try:
                for round_no in range(args.rounds):
                    order = list(servers) if round_no % 2 == 0 else list(reversed(servers))
                    for s in order:
                        samples[s].append(overhttp.load(servers[s].port, "POST", "/users",
                                                        args.seconds, lua))
            finally:
                for server in servers.values():
                    server.stop()
            medians = {s: statistics.median(v) for s, v in samples.items()}
            print(f"--threads {threads}: " + ", ".join(
                f"{names[s]} {medians[s]:,.0f} req/s ({', '.join(f'{x:,.0f}' for x in samples[s])})"
                for s in names) + f"; thread ÷ leader {medians['thread'] / medians['leader']:.2f}")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        sys.exit(serve(sys.argv[2], sys.argv[3:]))
    sys.exit(main())
