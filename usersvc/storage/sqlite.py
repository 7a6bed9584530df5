"""SQLiteStorage: every collection in one SQLite file, shared by threads and
processes.

- Each thread has its own connection; a private in-memory database
  (``sqlite://``) has one connection, used under a lock (``Connections``),
  and each connection answers a read again while no connection in any
  process has committed since (``Connections.answered``).
- Every write is one statement (``records``), made by one writer thread
  in ``BEGIN IMMEDIATE`` transactions, in groups that share one sync to
  disk (``sqlite_writer``); the write lock is taken before the statement,
  so a precondition and the write it guards are one atomic step, across
  threads and across processes.
- WAL journal (readers never wait for the writer), a busy timeout (writers
  queue instead of failing), ``synchronous=FULL`` (a commit is on disk when
  ``create`` returns, so a 201 survives a crash or a power cut).
- ``id INTEGER PRIMARY KEY AUTOINCREMENT``: never an id again, even after
  the highest one is deleted. Tables, indexes, triggers and queries are
  generated from the schemas (``sql``); opening brings the file's layout
  (``sqlite_migrations``) and then each collection (``evolution``) up to
  date, under one write lock, so processes opening a file together do it once.
- A lock held by another writer past the busy timeout is ``StoreUnavailable``
  (HTTP 503): nothing was written, and the client may try again. A full
  disk, an I/O error or a file made read-only is ``WritesFailing`` (503 too)
  for every write of the group it struck, none of which is kept; the log
  says so once (``WriteHealth``), and the next write that works ends it.
- A page reads ids and versions first, and builds only the records it has
  not built at that version before (``sqlite_pages``). What a SQLite error
  means is ``sqlite_errors``'s.
"""
from __future__ import annotations

import logging
import os
import sqlite3
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from ..validation import Schema
from . import WriteHealth
from .evolution import declared, evolve
from .keys import Answer, Key, SQLKeys
from .sql import SQLITE, Table
from .sqlite_errors import needs_reopening, retrying, roll_back, unavailable
from .sqlite_migrations import migrate
from .sqlite_pages import SQLiteRecords
from .sqlite_writer import Writer

T = TypeVar("T")
log = logging.getLogger("usersvc.storage")

#: How often a waiting request asks a file for its position: other
#: processes may have committed, and SQLite cannot tell them.
POLL_INTERVAL = 0.2


class Connection(sqlite3.Connection):
    """A connection that can be weakly referenced, so that closing the store
    reaches the connections of threads that are still alive, and the
    connection of a thread that has ended is freed with it. ``in_use`` is
    held while a session uses it: SQLite must not close a connection that
    another thread is in the middle of using."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.in_use = threading.Lock()
        # Reads this connection answered, kept while PRAGMA data_version
        # says no other connection has committed since (Connections.answers).
        self.answers: dict[Any, Any] = {}
        self.data_version = -1


class ThreadConnection:
    """Holds one thread's connection in a ``threading.local``, and closes it
    when that thread ends and its locals are freed."""

    def __init__(self, db: Connection) -> None:
        self.db = db

    def __del__(self) -> None:
        with self.db.in_use:     # store.close() may be closing it right now
            self.db.close()


#: How many answers each connection keeps while nothing is committed.
ANSWERS = 1_000


class Connections:
    """A file's connections: each thread's own, opened when it first asks
    and closed when it ends; or, for a private in-memory database, one."""

    def __init__(self, path: str, busy_timeout: float, health: WriteHealth) -> None:
        self.path = path
        self.busy_timeout = busy_timeout
        self.health = health
        self._fork_lock = threading.Lock()
        self._start()
        self.one = self.connect() if path == ":memory:" else None

    def _start(self) -> None:
        """No connection yet, in this process."""
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._local = threading.local()
        self._all: weakref.WeakSet[Connection] = weakref.WeakSet()

    def _forked(self) -> None:
        """In a process forked from the one that opened them (a server's
        workers after ``--preload``), the connections are not this
        process's: SQLite must not use one across a fork. They are left
        alone, never closed here (closing would release locks that are the
        parent's), and this process opens its own."""
        with self._fork_lock:               # the first requests of this process, at once
            if self._pid != os.getpid():
                self._inherited = (self._local, list(self._all))
                self._start()

    def connect(self) -> Connection:
        db = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None,
                             check_same_thread=False, factory=Connection)
        db.execute("PRAGMA synchronous = FULL")
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

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """A write transaction: BEGIN IMMEDIATE ... COMMIT, or ROLLBACK."""
        with self.session(writing=True) as db:
            if db.in_transaction:       # a ROLLBACK that failed last time (an I/O error)
                db.execute("ROLLBACK")
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                roll_back(db)
                raise
            db.execute("COMMIT")
            db.answers.clear()          # its own commit does not change its data_version
        self.health.worked()

    def answered(self, question: Any, read: Callable[[Connection], T]) -> T:
        """``read(db)`` on this thread's connection, or what it answered
        last time, if nothing has been committed since (``answers``;
        ``question=None``: a read not to keep)."""
        with self.session() as db:
            if question is None:
                return read(db)
            answers = self.answers(db)
            answer = answers.get(question)
            if answer is None:
                answer = answers[question] = read(db)
                if len(answers) > ANSWERS:
                    answers.clear()
            return answer

    def answers(self, db: Connection) -> dict[Any, Any]:
        """What this connection has read and may answer again: valid while
        ``PRAGMA data_version`` is unchanged, which it is until another
        connection, in any process, commits. (A private in-memory database
        has one connection, whose own commits it does not count: it keeps
        nothing.)"""
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


class SQLiteStorage:
    unique_violation = sqlite3.IntegrityError

    def __init__(self, path: str, schemas: Iterable[Schema] | None, *,
                 busy_timeout: float = 10.0) -> None:
        """``schemas``: the collections to serve (``None``: those the file holds)."""
        self.path = path
        self.health = WriteHealth(path)
        self.connections = Connections(path, busy_timeout, self.health)
        tables: list[Table] = []
        try:
            retrying(lambda: self._open(schemas, tables), busy_timeout)
        except BaseException:
            self.connections.close()
            raise
        # A file's writes share one connection and commit in groups.
        # A write waits for the lock (busy_timeout) and then its group's sync.
        self.writer = (Writer(self.connections.connect, self.health, busy_timeout + 5)
                       if self.connections.one is None else None)
        self.schemas = tuple(t.schema for t in tables)
        interval = POLL_INTERVAL if self.writer is not None else None   # a private database: none
        self.collections = {t.name: SQLiteRecords(self, t, interval) for t in tables}
        self.read = self.connections.answered
        self.transaction = self.connections.transaction
        self.keys = SQLKeys("?")

    def _open(self, schemas: Iterable[Schema] | None, tables: list[Table]) -> None:
        """WAL mode (for a file), the layout, and every collection."""
        if self.connections.one is None:
            with self.connections.session() as db:
                db.execute("PRAGMA journal_mode = WAL")
        with self.connections.transaction() as db:
            migrate(db)
            tables[:] = [Table(s, SQLITE) for s in (declared(db, SQLITE) if schemas is None else schemas)]
            for table in tables:
                evolve(db, table)

    def __getitem__(self, plural: str) -> SQLiteRecords:
        return self.collections[plural]

    def write(self, op: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``op`` in a write transaction and return what it returns,
        once that is committed."""
        if self.writer is not None:
            return self.writer.submit(op)
        with self.connections.transaction() as db:
            return op(db)

    def write_once(self, key: Key, op: Callable[[sqlite3.Connection], Any]) -> Answer:
        """``op``'s answer, kept with ``key`` in its transaction; or the one
        kept before. (The writer makes one write at a time, in every process.)"""
        return self.write(lambda db: self.keys.once(db, key, lambda: op(db)))

    @staticmethod
    def violated(error: sqlite3.IntegrityError) -> str:
        """"UNIQUE constraint failed: books.isbn__key": the column."""
        return str(error).rpartition(" ")[2]

    def observe_commits(self, observer: Callable[[float, int], None]) -> bool:
        """Tell ``observer`` of each commit of the file's writer: its
        seconds, BEGIN to the end of COMMIT, and how many writes it made;
        whether it will (a private in-memory database has no writer)."""
        if self.writer is not None:
            self.writer.observers.append(observer)
        return self.writer is not None

    def listen(self) -> None:
        """Other processes' commits are seen by polling."""

    def stop_waiting(self) -> None:
        for records in self.collections.values():
            records.stop_waiting()

    def close(self) -> None:
        self.stop_waiting()
        if self.writer is not None:
            # The writes already handed over are done first; a forked process
            # that never wrote has no writer of its own, nor figures to log.
            if self.writer.stop() and self.writer.commits:
                log.info("SQLite writer for %s: %s", self.path, self.writer.summary())
        self.connections.close()
