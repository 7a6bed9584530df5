"""A SQLite file's connections (``Connections``): each thread's own for
reads, opened when it first asks and closed when it ends, and one for
writes, held by one write at a time (``transaction``). A private in-memory
database (``sqlite://``) has one connection for both. What a SQLite error
means (busy, a full disk...) is ``errors``'s, asked only when one is raised.
(The fast build's reads and writes: ``usersvc.fast.sqlite``.)
"""
from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any, TypeVar

from ..errors import StoreUnavailable, WriteHealth
from .errors import needs_reopening, unavailable
from .opening import Connection, ProcessConnections, ThreadConnection

T = TypeVar("T")


class Connections:
    """A file's connections, opened by this process (``opened``; a forked one opens its own)."""

    def __init__(self, path: str, busy_timeout: float, health: WriteHealth,
                 synchronous: str = "full") -> None:
        self.path, self.busy_timeout, self.health = path, busy_timeout, health
        self.synchronous = {"full": "FULL", "normal": "NORMAL"}[synchronous]
        self.opened = ProcessConnections(path, busy_timeout, self.synchronous)
        self.writing = threading.Lock()     # one write transaction at a time, in this process
        self._fork_lock = threading.Lock()
        self.closed = False
        #: Told: in a forked process, once it has connections of its own
        #: (the store's look for others' commits); first when they close (the
        #: fast build's writer); of each commit, its seconds from BEGIN to the
        #: end of COMMIT and its writes (``SQLiteStorage.observe_commits``).
        self.forked: list[Callable[[], None]] = []
        self.closing: list[Callable[[], None]] = []
        self.observers: list[Callable[[float, int], None]] = []
        self.one = self.opened.connect() if path == ":memory:" else None

    def _own(self) -> ProcessConnections:
        """This process's connections. In a process forked from the one that
        opened them (workers after ``--preload``), SQLite must not use those:
        left alone, never closed (that would release the parent's locks);
        this process opens its own, and a write lock of its own."""
        if self.opened.pid != os.getpid():
            with self._fork_lock:               # the first requests of this process, at once
                if self.opened.pid != os.getpid():
                    self._inherited = (self.opened, list(self.opened.all))
                    self.opened = ProcessConnections(self.path, self.busy_timeout,
                                                     self.synchronous)
                    self.writing = threading.Lock()
                    for told in self.forked:
                        told()
        return self.opened

    @contextmanager
    def session(self) -> Iterator[Connection]:
        """This thread's connection for reads, or the in-memory database's one, held."""
        try:
            db = self.one
            if db is None:
                opened = self._own()
                owner = getattr(opened.local, "owner", None)
                if owner is None:
                    owner = opened.local.owner = ThreadConnection(opened.connect())
                db = owner.db
            with db.in_use:
                yield db
        except sqlite3.OperationalError as e:   # busy, or a file that cannot be read now
            raise unavailable(e, None) or e     # noqa: B904 (``unavailable`` gives its cause)

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
        write, and again after one found the file read-only."""
        opened = self._own()
        if opened.writes is None:
            opened.writes = self.one or opened.connect()
        return opened.writes

    @contextmanager
    def transaction(self, writes: int = 1) -> Iterator[Connection]:
        """A write transaction (of ``writes`` writes, told to the observers)
        on the connection for writes, held under the write lock: ``BEGIN
        IMMEDIATE`` (SQLite's write lock, for every process) ... ``COMMIT``,
        or ``ROLLBACK`` if the block raises. A lock not had within the busy
        timeout is ``StoreUnavailable``; a full disk, an I/O error or a
        read-only file ``WritesFailing``, said to the store's health."""
        self._own()         # (in a forked process: a lock held at the fork is the parent's)
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
            if needs_reopening(e) and self.one is None:     # read-only for good (SQLite's rule):
                self.opened.close_writes()                  # the next write opens another
            raise unavailable(e, self.health) or e  # noqa: B904 (as above: its cause given)
        finally:
            writing.release()
        if self.health.failing is not None:     # (told only when writes were failing)
            self.health.worked()

    def close(self) -> None:
        for close in self.closing:
            close()
        self.closed = True
        self._own().close()     # (in a forked process: the parent's are the parent's to close)


def roll_back(db: sqlite3.Connection) -> None:
    """Undo the transaction, if SQLite has not already: an I/O error may
    fail the ROLLBACK too, and then the next transaction tries it again."""
    if db.in_transaction:
        with suppress(sqlite3.Error):
            db.execute("ROLLBACK")
