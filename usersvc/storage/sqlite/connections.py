"""A SQLite file's connections: each thread's own for reads, which answers
a read again while nothing is committed (``Connections``), and one writer
thread that makes every write, in groups (``Writer``; docs/decisions.md,
"Storage": what group commit gained)."""
from __future__ import annotations

import os
import queue
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from concurrent.futures import TimeoutError as WaitedTooLong
from contextlib import contextmanager
from typing import Any, TypeVar

from ..errors import StoreUnavailable, WriteHealth
from .errors import is_lasting, needs_reopening, roll_back, unavailable

T = TypeVar("T")


class Connection(sqlite3.Connection):
    """A connection weakly referenced (closing the store reaches live
    threads'; an ended thread's is freed with it), ``in_use`` while used."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.in_use = threading.Lock()
        self.answers: dict[Any, Any] = {}      # its reads, kept: Connections.answers
        self.data_version = -1


class ThreadConnection:
    """One thread's connection, in its ``threading.local``: closed when it ends."""

    def __init__(self, db: Connection) -> None:
        self.db = db

    def __del__(self) -> None:
        with self.db.in_use:     # store.close() may be closing it right now
            self.db.close()


ANSWERS = 1_000     # how many answers a connection keeps while nothing is committed


class Connections:
    """A file's connections: each thread's own, opened when it first asks
    and closed when it ends; or, for a private in-memory database, one."""

    def __init__(self, path: str, busy_timeout: float, health: WriteHealth,
                 synchronous: str = "full") -> None:
        self.path, self.busy_timeout, self.health = path, busy_timeout, health
        self.synchronous = {"full": "FULL", "normal": "NORMAL"}[synchronous]
        self._fork_lock = threading.Lock()
        #: Called in a forked process once it has connections of its own
        #: (the store's look for other processes' commits, started again).
        self.forked: list[Callable[[], None]] = []
        self._start()
        self.one = self.connect() if path == ":memory:" else None

    def _start(self) -> None:
        """No connection yet, in this process."""
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._local = threading.local()
        self._all: weakref.WeakSet[Connection] = weakref.WeakSet()

    def _forked(self) -> None:
        """In a process forked from the one that opened them (workers after
        ``--preload``), SQLite must not use them: left alone, never closed
        (that would release the parent's locks); this process opens its own."""
        with self._fork_lock:               # the first requests of this process, at once
            if self._pid != os.getpid():
                self._inherited = (self._local, list(self._all))
                self._start()
                for told in self.forked:
                    told()

    def connect(self) -> Connection:
        db = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None,
                             check_same_thread=False, factory=Connection)
        db.execute(f"PRAGMA synchronous = {self.synchronous}")
        with self._lock:
            self._all.add(db)
        return db

    @contextmanager
    def session(self, writing: bool = False) -> Iterator[Connection]:
        """This thread's connection, or the in-memory database's one, held."""
        try:
            db = self.one
            if db is None:
                if self._pid != os.getpid():
                    self._forked()
                owner = getattr(self._local, "owner", None)
                if owner is None:
                    owner = self._local.owner = ThreadConnection(self.connect())
                db = owner.db
            with db.in_use:
                yield db
        except sqlite3.OperationalError as e:
            error = unavailable(e, self.health if writing else None)
            if error is None:
                raise
            if writing and needs_reopening(e) and self.one is None:
                self._local.owner = None        # closed; the next write opens another
            raise error from e

    def read(self, cache_as: Any, read: Callable[[Connection], T]) -> T:
        """``read(db)`` on this thread's connection, or what it answered
        last time to the same ``cache_as`` (a value naming the read), if
        nothing has been committed since (``answers``; ``None``: a read not
        to keep)."""
        with self.session() as db:
            if cache_as is None:
                return read(db)
            answers = self.answers(db)
            answer = answers.get(cache_as)
            if answer is None:
                answer = answers[cache_as] = read(db)
                if len(answers) > ANSWERS:
                    answers.clear()
            return answer

    def answers(self, db: Connection) -> dict[Any, Any]:
        """What this connection has read and may answer again: valid while
        ``PRAGMA data_version`` is unchanged, until another connection, in
        any process, commits. (A private in-memory database keeps nothing:
        its one connection does not count its own commits.)"""
        if self.one is not None:
            return {}
        version = db.execute("PRAGMA data_version").fetchone()[0]
        if version != db.data_version:
            db.answers.clear()
            db.data_version = version
        return db.answers

    def close(self) -> None:
        if self._pid != os.getpid():
            self._forked()      # the parent's connections are the parent's to close
        with self._lock:
            connections = list(self._all)
            self._all.clear()
        for db in connections:
            with db.in_use:
                db.close()


class Writer:
    """One thread that makes every write to a file, in groups (as datasette's
    ``Database._execute_writes``, with groups): the writes waiting in its
    queue, in one transaction, committed with one sync to disk, then each
    answered, so a 201 still means "on disk". While it waits for the disk,
    the next group queues up: the busier, the more writes share a sync. A
    write that fails in a group changed nothing (SQLite undoes a failed
    statement; a batch undoes its savepoint and hands its error back:
    ``SQLiteStorage.atomically``); ``_commit`` checks the rest."""

    def __init__(self, connect: Callable[[], Any], health: WriteHealth,
                 timeout: float) -> None:
        self._connect, self.health = connect, health
        self.timeout = timeout      # the longest a write waits to be committed
        self._closing = threading.Lock()    # no write queued after the stop
        self.closed = False
        #: Told of each commit, in every process: its seconds from BEGIN to
        #: the end of COMMIT, and its writes (``SQLiteStorage.observe_commits``,
        #: a store's capability, ``protocol.CommitsObservable``: any feature's).
        self.observers: list[Callable[[float, int], None]] = []
        self._start()

    def _start(self) -> None:
        """A connection, a queue and the thread, in this process (a forked
        one, a worker after ``--preload``, starts its own at its first write)."""
        self._pid = os.getpid()
        self.db = self._connect()
        self._reopen = False        # the last group found the file read-only
        self._queue: queue.SimpleQueue[tuple[Callable[..., Any], Future[Any]] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="usersvc-sqlite-writer", daemon=True)
        self._thread.start()
        # What the groups were, for the log (this process's, the writer's to add).
        self.commits, self.writes, self.seconds = 0, 0, 0.0

    def commit(self, op: Callable[[sqlite3.Connection], T]) -> T:
        """``op(db)`` run in the writer's next transaction, with the writes
        waiting beside it: its result once committed, or ``StoreUnavailable``
        after ``timeout`` seconds."""
        future: Future[T] = Future()
        with self._closing:
            if self.closed:
                raise StoreUnavailable("The store is closed.")
            if self._pid != os.getpid():
                self._inherited = self.db       # the parent's: left alone, never closed here
                self._start()
            self._queue.put((op, future))
        try:
            return future.result(timeout=self.timeout)
        except WaitedTooLong:
            if future.cancel():     # still queued: it will never run
                raise StoreUnavailable("The database took no write for "
                                       f"{self.timeout:g} s; nothing was written.") from None
            raise StoreUnavailable(f"The write was not committed within {self.timeout:g} s; "
                                   "it may be yet: read before writing again.") from None

    def stop(self) -> bool:
        """Finish the writes queued, then end the thread; whether there was
        one of this process's (a forked process that never wrote has none)."""
        with self._closing:
            self.closed = True
            if self._pid != os.getpid():
                return False
            self._queue.put(None)
        self._thread.join()
        return True

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
        # A write whose caller stopped waiting (``submit``'s timeout) is not made.
        group = [(op, future) for op, future in group if future.set_running_or_notify_cancel()]
        if not group:
            return
        outcomes: list[tuple[Future[Any], Any, BaseException | None]] = []
        started = time.perf_counter()
        try:
            if self._reopen:
                with self.db.in_use:
                    self.db.close()
                self.db = self._connect()
                self._reopen = False
            db = self.db
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
                                raise   # SQLite may have undone the group: none of it is kept
                            if db.total_changes != changes:
                                raise RuntimeError("a write failed after changing the database") from e
                            outcomes.append((future, None, e))
                    db.execute("COMMIT")
                    elapsed = time.perf_counter() - started
                    self.commits, self.writes = self.commits + 1, self.writes + len(group)
                    self.seconds += elapsed
                    for observe in self.observers:
                        observe(elapsed, len(group))
                except BaseException:
                    roll_back(db)
                    raise
        except Exception as e:      # nothing of the group was written
            error: BaseException = e
            if isinstance(e, sqlite3.Error):
                error = unavailable(e, self.health) or e
                self._reopen = needs_reopening(e)
            for _, future in group:
                future.set_exception(error)
            return
        self.health.worked()
        for future, result, failure in outcomes:
            if failure is None:
                future.set_result(result)
            else:
                future.set_exception(failure)
