"""SQLiteUserStore: users in one SQLite file, shared by threads and processes.

- Each thread has its own connection; a private in-memory database
  (``sqlite://``) has one connection, used under a lock.
- Writes run in ``BEGIN IMMEDIATE`` transactions: the write lock is taken
  before the first read, so a precondition check and the write it guards are
  one atomic step, across threads and across processes.
- WAL journal (readers never wait for the writer), a busy timeout (writers
  queue instead of failing), ``synchronous=FULL`` (a commit is on disk when
  ``create`` returns, so a 201 survives a crash or a power cut).
- ``id INTEGER PRIMARY KEY AUTOINCREMENT``: SQLite then never hands out an id
  again, even after the highest one is deleted.
- The schema version lives in ``PRAGMA user_version``; ``MIGRATIONS[n]``
  takes a database from version n to n + 1. Every step a database lacks runs
  in one transaction with the version bumps: all of them, or none.
- A lock held by another writer past the busy timeout is ``StoreUnavailable``
  (HTTP 503): nothing was written, and the client may try again.
- Group commit: creates, updates and deletes on a file are made by one
  writer thread, in groups that share one sync to disk (``sqlite_writer``).
"""
from __future__ import annotations

import sqlite3
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TypeVar, cast

from . import (Conflict, EmailTaken, Precondition, SchemaTooNew, StaleVersion,
               StoreUnavailable, User, UserNotFound, checked_id, email_key)
from .sqlite_writer import Connection, Writer, busy

T = TypeVar("T")

#: Each entry upgrades the schema by one version: a list of statements.
MIGRATIONS: list[Sequence[str]] = [
    # 0 -> 1: the users table.
    [
        """CREATE TABLE users (
               id        INTEGER PRIMARY KEY AUTOINCREMENT,
               name      TEXT    NOT NULL,
               email     TEXT    NOT NULL,
               email_key TEXT    NOT NULL UNIQUE,  -- the case-folded e-mail
               version   INTEGER NOT NULL
           )""",
    ],
]

COLUMNS = "id, name, email, version"
SELECT_ONE = f"SELECT {COLUMNS} FROM users WHERE id = ?"
SELECT_PAGE = f"SELECT {COLUMNS} FROM users WHERE id > ? ORDER BY id LIMIT ?"
SELECT_BY_EMAIL = f"SELECT {COLUMNS} FROM users WHERE email_key = ? AND id > ?"
INSERT = "INSERT INTO users (name, email, email_key, version) VALUES (?, ?, ?, 1)"
UPDATE = "UPDATE users SET name = ?, email = ?, email_key = ?, version = ? WHERE id = ?"
DELETE = "DELETE FROM users WHERE id = ?"
RESTORE = "INSERT INTO users (id, name, email, email_key, version) VALUES (?, ?, ?, ?, ?)"
# AUTOINCREMENT's high-water mark: the largest id ever handed out.
LAST_ID = "SELECT coalesce(max(seq), 0) FROM sqlite_sequence WHERE name = 'users'"
RAISE_LAST_ID = "UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'users'"


class _ThreadConnection:
    """Holds one thread's connection in a ``threading.local``, and closes it
    when that thread ends and its locals are freed."""

    def __init__(self, db: Connection) -> None:
        self.db = db

    def __del__(self) -> None:
        with self.db.in_use:     # store.close() may be closing it right now
            self.db.close()


def migrate(db: sqlite3.Connection, migrations: Sequence[Sequence[str]] = MIGRATIONS) -> int:
    """Bring the schema up to ``len(migrations)``; returns the version found.

    The check and every step run under one write lock, so two processes that
    open a new file together migrate it once.
    """
    db.execute("BEGIN IMMEDIATE")
    try:
        found = db.execute("PRAGMA user_version").fetchone()[0]
        SchemaTooNew.check(found, len(migrations))
        for version in range(found, len(migrations)):
            for statement in migrations[version]:
                db.execute(statement)
            db.execute(f"PRAGMA user_version = {version + 1}")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
    return found


class SQLiteUserStore:
    def __init__(self, path: str, *, busy_timeout: float = 10.0) -> None:
        self.path = path
        self._busy_timeout = busy_timeout
        self._lock = threading.Lock()
        self._local = threading.local()
        self._connections: weakref.WeakSet[Connection] = weakref.WeakSet()
        # A private in-memory database lives in one connection, shared by
        # the threads in turn; a file gets a connection per thread.
        self._one = self._connect() if path == ":memory:" else None
        with self._session() as db:
            if self._one is None:
                db.execute("PRAGMA journal_mode = WAL")
            migrate(db)
        # A file's writes share one connection and commit in groups; a
        # private in-memory database has no disk to wait for.
        self._writer = Writer(self._connect()) if self._one is None else None

    # -- the protocol ---------------------------------------------------

    def get(self, user_id: int) -> User:
        with self._session() as db:
            return self._get(db, user_id)

    def list(self, *, after: int = 0, limit: int = 100,
             email: str | None = None) -> list[User]:
        with self._session() as db:
            if email is not None:
                rows = db.execute(SELECT_BY_EMAIL, (email_key(email), after))
            else:
                rows = db.execute(SELECT_PAGE, (after, limit))
            return [User(*row) for row in rows]

    def create(self, *, name: str, email: str) -> User:
        key = email_key(email)

        def insert(db: sqlite3.Connection) -> User:
            try:
                cursor = db.execute(INSERT, (name, email, key))
            except sqlite3.IntegrityError:
                raise EmailTaken(email) from None
            return User(cast(int, cursor.lastrowid), name, email, 1)
        return self._write(insert)

    def update(self, user_id: int, *, name: str | None = None,
               email: str | None = None,
               precondition: Precondition | None = None) -> User:
        def replace(db: sqlite3.Connection) -> User:
            old = self._checked(db, user_id, precondition)
            new = User(user_id, old.name if name is None else name,
                       old.email if email is None else email, old.version + 1)
            try:
                db.execute(UPDATE, (new.name, new.email, email_key(new.email),
                                    new.version, user_id))
            except sqlite3.IntegrityError:
                raise EmailTaken(new.email) from None
            return new
        return self._write(replace)

    def delete(self, user_id: int, *,
               precondition: Precondition | None = None) -> None:
        def remove(db: sqlite3.Connection) -> None:
            self._checked(db, user_id, precondition)
            db.execute(DELETE, (user_id,))
        self._write(remove)

    def last_id(self) -> int:
        with self._session() as db:
            return int(db.execute(LAST_ID).fetchone()[0])

    def restore(self, users: Sequence[User], *, last_id: int = 0) -> None:
        with self._transaction() as db:
            try:
                db.executemany(RESTORE, [(u.id, u.name, u.email, email_key(u.email), u.version)
                                         for u in users])
            except sqlite3.IntegrityError as e:
                raise Conflict(f"The store already holds one of these users ({e}).") from None
            if last_id > 0:
                # The row exists once any user was inserted; make one if not.
                db.execute("INSERT INTO sqlite_sequence (name, seq) SELECT 'users', 0"
                           " WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'users')")
                db.execute(RAISE_LAST_ID, (last_id,))

    def close(self) -> None:
        if self._writer is not None:
            self._writer.stop()         # the writes already handed over are done first
        with self._lock:
            connections = list(self._connections)
            self._connections.clear()
        for db in connections:
            with db.in_use:
                db.close()

    # -- connections and transactions -----------------------------------

    def _connect(self) -> Connection:
        db = sqlite3.connect(self.path, timeout=self._busy_timeout,
                             isolation_level=None, check_same_thread=False,
                             factory=Connection)
        db.execute("PRAGMA synchronous = FULL")
        with self._lock:
            self._connections.add(db)
        return db

    @contextmanager
    def _session(self) -> Iterator[sqlite3.Connection]:
        """This thread's connection, or the in-memory database's one, held."""
        db = self._one
        if db is None:
            owner = getattr(self._local, "owner", None)
            if owner is None:
                owner = self._local.owner = _ThreadConnection(self._connect())
            db = owner.db
        with db.in_use:
            try:
                yield db
            except sqlite3.OperationalError as e:
                if busy(e):    # another writer held the lock past the timeout
                    raise StoreUnavailable("The database is busy; try again.") from e
                raise

    def _write(self, op: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``op`` in a write transaction and return what it returns,
        once that is committed."""
        if self._writer is not None:
            return self._writer.submit(op)
        with self._transaction() as db:
            return op(db)

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction: BEGIN IMMEDIATE ... COMMIT, or ROLLBACK."""
        with self._session() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    # -- helpers --------------------------------------------------------

    def _get(self, db: sqlite3.Connection, user_id: int) -> User:
        row = db.execute(SELECT_ONE, (checked_id(user_id),)).fetchone()
        if row is None:
            raise UserNotFound(user_id)
        return User(*row)

    def _checked(self, db: sqlite3.Connection, user_id: int,
                 precondition: Precondition | None) -> User:
        user = self._get(db, user_id)
        if precondition is not None and not precondition.allows(user.version):
            raise StaleVersion(user_id)
        return user
