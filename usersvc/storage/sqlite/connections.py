"""A SQLite file's connections (``Connections``): each thread's own for
reads, opened when it first asks and closed when it ends, and one for
writes, held by one write at a time (``commit``): from ``BEGIN IMMEDIATE``
to ``COMMIT``, under the store's write lock in this process, and under
SQLite's write lock, waited for up to the busy timeout, between processes.
A private in-memory database (``sqlite://``) has one connection for both.

What a SQLite error means (busy, a full disk...) is ``errors``'s, asked
only when one is raised. (The fast build answers a read again while
nothing is committed, and makes the writes in groups, one thread
committing those that wait with one sync to disk: ``usersvc.fast.sqlite``.)
"""
from __future__ import annotations

import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from ..errors import StoreUnavailable
from ..health import WriteHealth
from .errors import needs_reopening, unavailable

T = TypeVar("T")


class Connection(sqlite3.Connection):
    """A connection weakly referenced (closing the store reaches live
    threads'; an ended thread's is freed with it), ``in_use`` while used."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.in_use = threading.Lock()


class ThreadConnection:
    """One thread's connection, in its ``threading.local``: closed when it ends."""

    def __init__(self, db: Connection) -> None:
        self.db = db

    def __del__(self) -> None:
        with self.db.in_use:     # store.close() may be closing it right now
            self.db.close()


class Connections:
    """A file's connections: each thread's own for reads, opened when it
    first asks and closed when it ends, and one for writes (``transaction``);
    or, for a private in-memory database, one."""

    def __init__(self, path: str, busy_timeout: float, health: WriteHealth,
                 synchronous: str = "full") -> None:
        self.path, self.busy_timeout, self.health = path, busy_timeout, health
        self.synchronous = {"full": "FULL", "normal": "NORMAL"}[synchronous]
        self._fork_lock = threading.Lock()
        #: Called in a forked process once it has connections of its own
        #: (the store's look for other processes' commits, started again).
        self.forked: list[Callable[[], None]] = []
        #: Called first when the connections close (the fast build's writer
        #: thread, which finishes the writes handed to it: ``usersvc.fast``).
        self.closing: list[Callable[[], None]] = []
        #: Told of each commit: its seconds from BEGIN to the end of COMMIT,
        #: and its writes (``SQLiteStorage.observe_commits``).
        self.observers: list[Callable[[float, int], None]] = []
        self.closed = False
        self._start()
        self.one = self.connect() if path == ":memory:" else None

    def _start(self) -> None:
        """No connection yet, in this process."""
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._local = threading.local()
        self._all: weakref.WeakSet[Connection] = weakref.WeakSet()
        self._writes: Connection | None = None      # opened by the first write
        self.writing = threading.Lock()     # one write transaction at a time, in this process

    def _forked(self) -> None:
        """In a process forked from the one that opened them (workers after
        ``--preload``), SQLite must not use them: left alone, never closed
        (that would release the parent's locks); this process opens its own."""
        with self._fork_lock:               # the first requests of this process, at once
            if self._pid != os.getpid():
                self._inherited = (self._local, list(self._all), self._writes)
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
    def session(self) -> Iterator[Connection]:
        """This thread's connection for reads, or the in-memory database's one, held."""
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
            error = unavailable(e, None)    # busy, or a file that cannot be read now
            if error is None:
                raise
            raise error from e

    def read(self, cache_as: Any, read: Callable[[Connection], T]) -> T:
        """``read(db)`` on this thread's connection. (``cache_as`` names the
        read, for the fast build, which answers it again while nothing is
        committed; ``None``: a read not to keep.)"""
        with self.session() as db:
            return read(db)

    def commit(self, op: Callable[[Connection], T]) -> T:
        """``op(db)`` in a write transaction of its own, committed (on
        disk: ``synchronous=FULL``) before it returns; nothing of it kept
        if it raises."""
        with self.transaction() as db:
            return op(db)

    def writes(self) -> Connection:
        """The connection this process writes on: opened by the first
        write, and again after one found the file read-only (``failed``)."""
        if self._pid != os.getpid():
            self._forked()
        if self._writes is None:
            self._writes = self.one or self.connect()
        return self._writes

    @contextmanager
    def transaction(self, writes: int = 1) -> Iterator[Connection]:
        """A write transaction (of ``writes`` writes, told to the observers)
        on the connection for writes, held under the write lock: ``BEGIN
        IMMEDIATE`` (SQLite's write lock, for every process) ... ``COMMIT``,
        or ``ROLLBACK`` if the block raises. A lock not had within the busy
        timeout is ``StoreUnavailable``; a full disk, an I/O error or a
        read-only file ``WritesFailing``, said to the store's health."""
        if self._pid != os.getpid():
            self._forked()          # (a lock held at the fork is the parent's)
        writing = self.writing
        if not writing.acquire(timeout=self.busy_timeout):
            raise StoreUnavailable("The database is busy; try again.")
        try:
            if self.closed:
                raise StoreUnavailable("The store is closed.")
            db = self.writes()
            with db.in_use:
                started = time.perf_counter()
                if db.in_transaction:       # a ROLLBACK that failed last time (an I/O error)
                    db.execute("ROLLBACK")
                db.execute("BEGIN IMMEDIATE")
                try:
                    yield db
                except BaseException:
                    roll_back(db)
                    raise
                db.execute("COMMIT")
                for observe in self.observers:
                    observe(time.perf_counter() - started, writes)
        except sqlite3.OperationalError as e:
            error = self.failed(e)
            if error is None:
                raise
            raise error from e
        finally:
            writing.release()
        if self.health.failing is not None:     # (told only when writes were failing)
            self.health.worked()

    def failed(self, error: sqlite3.OperationalError) -> StoreUnavailable | None:
        """What a write's error means to a client (``errors.unavailable``:
        busy, or a lasting cause, said to the store's health), or ``None``.
        A connection that found the file read-only stays so (SQLite's
        rule): closed, for the next write to open another."""
        db = self._writes
        if needs_reopening(error) and db is not None and db is not self.one:
            self._writes = None
            with db.in_use:
                db.close()
        return unavailable(error, self.health)

    def close(self) -> None:
        for close in self.closing:
            close()
        self.closed = True
        if self._pid != os.getpid():
            self._forked()      # the parent's connections are the parent's to close
        with self._lock:
            connections = list(self._all)
            self._all.clear()
        for db in connections:
            with db.in_use:
                db.close()


def roll_back(db: sqlite3.Connection) -> None:
    """Undo the transaction, if SQLite has not already: an I/O error may
    fail the ROLLBACK too, and then the next transaction tries it again."""
    if db.in_transaction:
        try:
            db.execute("ROLLBACK")
        except sqlite3.Error:
            pass
