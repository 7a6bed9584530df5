"""SQLite's fast paths (``usersvc.fast``), beside the plain definitions
they replace, which are the reference (``tests/test_fast_paths.py``):

- ``read``, for ``Connections.read``: a connection answers a read again
  while nothing is committed (``PRAGMA data_version`` unchanged), one
  ``SELECT`` saved a read.
- ``commit``, for ``Connections.commit``: one writer thread per file makes
  every write, in groups (``Writer``; docs/decisions.md, "Storage": what
  group commit gained), where the plain one commits each on its own.
- ``atomically``, for ``SQLiteStorage.atomically``: a step with nothing to
  undo made once for the writer's connection.
- ``page``, for ``SQLBulk._page`` on SQLite: a page built from records
  kept by version.

What these keep on an object (a connection's answers, the writer, the
last step, a collection's records) is read as an attribute, and one not
yet set is an ``AttributeError``, never ``obj.__dict__.get(...)``: asking
for an object's ``__dict__`` makes CPython (3.11) move its attributes out
of their inline slots into a dict of their own, for good, and every
attribute read on it after, the plain code's too, takes the slower
lookup: 3,300 instructions a SQLite write, on the writer thread alone
(``bench/instructions.py``; issue 59).
"""
from __future__ import annotations

import logging
import os
import queue
import sqlite3
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, TimeoutError as WaitedTooLong
from typing import TYPE_CHECKING, Any, TypeVar

from ..storage.errors import StoreUnavailable
from ..storage.served import Step
from ..storage.sqlite.connections import Connections, roll_back
from ..storage.sqlite.errors import is_lasting, needs_reopening, unavailable
from ..storage.sqlite.opening import Connection
from . import plain

T = TypeVar("T")
log = logging.getLogger("usersvc.storage")

_page: Callable[[Any, Any, dict[str, Any]], list[Any]] = plain(
    "usersvc.storage.sql.bulk:SQLBulk._page")
_atomically = plain("usersvc.storage.sqlite.store:SQLiteStorage.atomically")


# -- answers kept while nothing is committed --------------------------------

ANSWERS = 1_000     # how many answers a connection keeps while nothing is committed


def read(self: Connections, cache_as: Any, read: Callable[[Connection], T]) -> T:
    """``Connections.read``: what this thread's connection answered last
    time to the same ``cache_as`` (a value naming the read), if nothing has
    been committed since; else ``read(db)``, kept (``None``: a read not to
    keep). A GET by id: one ``PRAGMA data_version`` in place of a ``SELECT``."""
    with self.session() as db:
        if cache_as is None or self.one is not None:
            # (a private in-memory database keeps nothing: its one
            # connection does not count its own commits)
            return read(db)
        answers = _answers(db)
        answer = answers.get(cache_as)
        if answer is None:
            answer = answers[cache_as] = read(db)
            if len(answers) > ANSWERS:
                answers.clear()
        return answer


def _answers(db: Any) -> dict[Any, Any]:
    """What ``db`` has read and may answer again: valid while ``PRAGMA
    data_version`` is unchanged, until another connection, in any process,
    commits (every write is made on another: ``Connections.writes``)."""
    version = db.execute("PRAGMA data_version").fetchone()[0]
    try:
        kept: tuple[int, dict[Any, Any]] | None = db.kept
    except AttributeError:      # (its first read: not yet an attribute, as the docstring says)
        kept = None
    if kept is None or kept[0] != version:
        kept = db.kept = (version, {})
    return kept[1]


# -- the writer thread: writes committed in groups ---------------------------

if TYPE_CHECKING:
    class _Connections(Connections):
        """``Connections`` as this module keeps its writer on them: ``writer``,
        set at the first write (``_writer``; until then, an ``AttributeError``)."""

        writer: Writer | None


def commit(self: _Connections, op: Callable[[sqlite3.Connection], T]) -> T:
    """``Connections.commit``: ``op(db)`` made by the file's writer thread,
    with the writes waiting beside it, in one transaction (a private
    in-memory database has no writer: the plain commit)."""
    try:
        writer = self.writer
    except AttributeError:      # (its first write: not yet an attribute, as the docstring says)
        writer = _writer(self)
    if writer is None:
        with self.transaction() as db:
            return op(db)
    return writer.commit(op)


def _writer(connections: _Connections) -> Writer | None:
    """The writer of ``connections``, made at its first write (in this
    process: a forked one starts its own), stopped when they close; a
    private in-memory database has none (``None``)."""
    connections._own()      # (forked: a write lock of this process's, not one held at the fork)
    with connections.writing:       # (two first writes at once make one)
        if connections.closed:
            raise StoreUnavailable("The store is closed.")
        writer = getattr(connections, "writer", None)
        if writer is None and connections.one is None:
            # A write waits for the lock (busy_timeout), then its group's sync.
            writer = Writer(connections, connections.busy_timeout + 5)
            connections.closing.append(writer.stop)
        connections.writer = writer
    return writer


class Writer:
    """One thread that makes every write to a file, in groups (as datasette's
    ``Database._execute_writes``, with groups): the writes waiting in its
    queue, in one transaction, committed with one sync to disk, then each
    answered, so a 201 still means "on disk". While it waits for the disk,
    the next group queues up: the busier, the more writes share a sync. A
    write that fails in a group changed nothing (SQLite undoes a failed
    statement; a step undoes its savepoint and hands its error back:
    ``atomically``); ``_commit`` checks the rest. It writes on a connection
    of its own, not the plain ``Connections.writes`` under their lock
    (3,000 instructions a write: bench/instructions.py): a plain
    ``transaction`` (a ``restore``) waits for SQLite's write lock, as
    another process does."""

    def __init__(self, connections: Connections, timeout: float) -> None:
        self.connections = connections
        self.timeout = timeout      # the longest a write waits to be committed
        self._closing = threading.Lock()    # no write queued after the stop
        self._forking = threading.Lock()    # a forked process's first writes, one at a time
        self.closed = False
        self._start()

    def _start(self) -> None:
        """A queue and the thread, in this process (a forked one, a worker
        after ``--preload``, starts its own at its first write)."""
        self.db: Connection | None = None   # opened by the first group (again after
                                            # one found the file read-only)
        self._queue: queue.SimpleQueue[tuple[Callable[..., Any], Future[Any]] | None] = (
            queue.SimpleQueue())
        self._thread = threading.Thread(target=self._run, name="usersvc-sqlite-writer", daemon=True)
        self._thread.start()
        # What the groups were, for the log (this process's, the writer's to add).
        self.commits, self.writes, self.seconds = 0, 0, 0.0
        self._pid = os.getpid()     # (last: a write that finds it ours finds the rest ready)

    def commit(self, op: Callable[[sqlite3.Connection], T]) -> T:
        """``op(db)`` run in the writer's next transaction, with the writes
        waiting beside it: its result once committed, or ``StoreUnavailable``
        after ``timeout`` seconds."""
        future: Future[T] = Future()
        if self._pid != os.getpid():
            self._forked()
        with self._closing:
            if self.closed:
                raise StoreUnavailable("The store is closed.")
            self._queue.put((op, future))
        try:
            return future.result(timeout=self.timeout)
        except WaitedTooLong:
            if future.cancel():     # still queued: it will never run
                raise StoreUnavailable("The database took no write for "
                                       f"{self.timeout:g} s; nothing was written.") from None
            raise StoreUnavailable(f"The write was not committed within {self.timeout:g} s; "
                                   "it may be yet: read before writing again.") from None

    def _forked(self) -> None:
        """In a forked process, at its first write: a thread and locks of
        its own (the parent's ``_closing`` may have been held at the fork,
        by a thread the child does not have; ``_forking`` never is: the
        process that made it never takes it)."""
        self.connections._own()      # (its connections, and their locks, this process's)
        with self._forking:
            if self._pid != os.getpid():
                self._closing = threading.Lock()
                self._start()

    def stop(self) -> None:
        """Finish the writes queued, then end the thread (a forked process
        that never wrote has none of its own), and log what the groups were."""
        if self._pid != os.getpid():
            self.closed = True
            return
        with self._closing:
            self.closed = True
            self._queue.put(None)
        self._thread.join()
        if self.db is not None:
            with self.db.in_use:
                self.db.close()
        if self.commits:
            log.info("SQLite writer for %s: %s", self.connections.path, self.summary())

    def summary(self) -> str:
        """One line for the log: how many writes shared a commit, what it took."""
        commits, writes = self.commits, self.writes
        return (f"{writes:,} writes in {commits:,} commits ({writes / commits:.2f} writes a "
                f"commit, {self.seconds / commits * 1000:.3f} ms a commit)")

    def _run(self) -> None:
        while (first := self._queue.get()) is not None:
            group = [first]
            while not self._queue.empty():      # everything else waiting, without waiting
                write = self._queue.get()
                if write is None:
                    self._commit(group)
                    return
                group.append(write)
            self._commit(group)

    def _commit(self, group: list[tuple[Callable[..., Any], Future[Any]]]) -> None:
        # A write whose caller stopped waiting (``commit``'s timeout) is not made.
        group = [(op, future) for op, future in group if future.set_running_or_notify_cancel()]
        if not group:
            return
        outcomes: list[tuple[Future[Any], Any, BaseException | None]] = []
        connections = self.connections
        started = time.perf_counter()
        try:
            # ``Connections.transaction``, made here without its context
            # manager: 20,000 instructions a write (bench/instructions.py).
            db = self.db
            if db is None:
                db = self.db = connections.opened.connect()
            with db.in_use:
                if db.in_transaction:   # a ROLLBACK that failed last time (an I/O error)
                    db.execute("ROLLBACK")
                db.execute("BEGIN IMMEDIATE")
                try:
                    for op, future in group:
                        changes = db.total_changes
                        try:
                            outcomes.append((future, op(db), None))
                        except Exception as e:      # this write's own failure
                            if is_lasting(e) or not db.in_transaction:
                                # (a full disk may strike after a trigger's change)
                                raise   # SQLite may have undone the group: none of it kept
                            if db.total_changes != changes:
                                raise RuntimeError("a write failed after changing "
                                                   "the database") from e
                            outcomes.append((future, None, e))
                    db.execute("COMMIT")
                except BaseException:
                    roll_back(db)
                    raise
        except Exception as e:      # nothing of the group was written
            error: BaseException = e
            if isinstance(e, sqlite3.OperationalError):     # as ``Connections.transaction``
                error = unavailable(e, connections.health) or e
                if needs_reopening(e) and self.db is not None:
                    with self.db.in_use:
                        self.db.close()
                    self.db = None
            for _, future in group:
                future.set_exception(error)
            return
        elapsed = time.perf_counter() - started
        for observe in connections.observers:
            observe(elapsed, len(group))
        if connections.health.failing is not None:
            connections.health.worked()
        self.commits, self.writes = self.commits + 1, self.writes + len(group)
        self.seconds += elapsed
        for future, result, failure in outcomes:
            if failure is None:
                future.set_result(result)
            else:
                future.set_exception(failure)


def atomically(self: Any, plurals: Any, run: Callable[[Step], T], *,
               nothing_to_undo: bool = False) -> Any:
    """``SQLiteStorage.atomically``, a step with ``nothing_to_undo`` made
    once for the writer's connection (a view that keeps nothing of its
    own: 1,000 instructions a step), and taking no tuple back; any other
    step as the plain one makes it. (The writer checks that a write that
    failed changed nothing, or fails its group: ``Writer._commit``.)"""
    if not nothing_to_undo:
        return _atomically(self, plurals, run)
    result = self.connections.commit(lambda db: run(_step_on(self, db)))
    for plural in plurals:
        if self.commits.listeners:
            self.commits.announce(plural)
    return result


def _step_on(storage: Any, db: Connection) -> Step:
    """A step with nothing to undo on ``db``: the same for every step on
    one connection (the writer's)."""
    try:
        last: Step | None = storage.last_step
    except AttributeError:      # (its first step: not yet an attribute, as the docstring says)
        last = None
    if last is None or last.db is not db:
        last = storage.last_step = Step(storage, db, (), True)
    return last


# -- pages from records kept by version --------------------------------------

#: How many records a collection keeps built for its pages (then it starts again).
KEPT = 100_000


def page(self: Any, db: Any, arguments: dict[str, Any]) -> list[Any]:
    """``SQLBulk._page`` on SQLite: a page read ids and versions first. A
    version, with its id, names one content for good (ids are never
    reused, not even by ``restore``): a record already built at that
    version is taken as it is, and only the others are read (cheaper than
    reading and building all). PostgreSQL's pages are the plain ones."""
    if self.table.dialect.name != "sqlite":
        return _page(self, db, arguments)
    try:
        kept = self.kept
    except AttributeError:      # (its first page: not yet an attribute, as the docstring says)
        kept = self.kept = {}       # (records built for pages, by id: at most KEPT)
    keys = self._rows(db, arguments, ("u.id", "u.version"))
    found = {record_id: record for record_id, version in keys
             if (record := kept.get(record_id)) is not None and record.version == version}
    wanted = [record_id for record_id, _ in keys if record_id not in found]
    if wanted:
        found.update((row[0], self._make(row)) for row in db.execute(
            f"{self.pages.select_some}({', '.join('?' * len(wanted))})", wanted))
        if any(record_id not in found or found[record_id].version != version
               for record_id, version in keys):
            # Written between the two reads: read the page whole.
            return _page(self, db, arguments)
        if len(kept) + len(wanted) > KEPT:
            kept.clear()
        kept.update((record_id, found[record_id]) for record_id in wanted)
    return [found[record_id] for record_id, _ in keys]
