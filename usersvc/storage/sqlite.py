"""SQLiteUserStore: users in one SQLite file, shared by threads and processes.

- Each thread has its own connection; a private in-memory database
  (``sqlite://``) has one connection, used under a lock.
- Writes run in ``BEGIN IMMEDIATE`` transactions: the write lock is taken
  before the first read, so a precondition check and the write it guards are
  one atomic step, across threads and across processes.
- WAL journal (readers never wait for the writer), a busy timeout (writers
  queue instead of failing), ``synchronous=FULL`` (a commit is on disk when
  ``create`` returns, so a 201 survives a crash or a power cut).
- ``id INTEGER PRIMARY KEY AUTOINCREMENT``: never an id again, even after
  the highest one is deleted. Schema and migrations: ``sqlite_schema``.
- A lock held by another writer past the busy timeout is ``StoreUnavailable``
  (HTTP 503): nothing was written, and the client may try again.
- Group commit: creates, updates and deletes on a file are made by one
  writer thread, in groups that share one sync to disk (``sqlite_writer``).
- A page reads ids and versions first, and builds only the users it has
  not built at that version before (``list``): a version, with its id,
  names one content for good (ids are never reused, not even by
  ``restore``). The change feed is ``feed.SQLChanges``.
"""
from __future__ import annotations

import builtins
import logging
import sqlite3
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar, cast

from . import (Conflict, EmailTaken, Position, Precondition, StaleVersion, StoreUnavailable,
               User, UserNotFound, check_fresh_ids, checked_id, email_key, sql)
from .feed import POLL_INTERVAL, SQLChanges, Watch
from .sqlite_schema import name_columns, prepare
from .sqlite_writer import Connection, ThreadConnection, Writer, busy

T = TypeVar("T")
log = logging.getLogger("usersvc.storage")

#: How many users a store keeps built for its pages (then it starts again).
KEPT = 100_000
#: How many answers each connection keeps while nothing is committed.
ANSWERS = 1_000
COLUMNS = "id, name, email, version"
SELECT_ONE = f"SELECT {COLUMNS} FROM users WHERE id = ?"
SELECT_SOME = f"SELECT {COLUMNS} FROM users WHERE id IN "
INSERT = """INSERT INTO users (name, email, email_key, name_key, name_words, version)
            VALUES (?, ?, ?, ?, ?, 1)"""
UPDATE = """UPDATE users SET name = ?, email = ?, email_key = ?, name_key = ?,
                             name_words = ?, version = ? WHERE id = ?"""
DELETE = "DELETE FROM users WHERE id = ?"
RESTORE = """INSERT INTO users (id, name, email, email_key, name_key, name_words, version)
             VALUES (?, ?, ?, ?, ?, ?, ?)"""
# AUTOINCREMENT's high-water mark: the largest id ever handed out.
LAST_ID = "SELECT coalesce(max(seq), 0) FROM sqlite_sequence WHERE name = 'users'"
RAISE_LAST_ID = "UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'users'"
LIST_DEFAULTS = dict(limit=100, sort="id", reverse=False, after=None, email=None, q=None)


class SQLiteUserStore(SQLChanges):
    _dialect = sql.SQLITE

    def __init__(self, path: str, *, busy_timeout: float = 10.0) -> None:
        self.path = path
        self._busy_timeout = busy_timeout
        self._lock = threading.Lock()
        self._local = threading.local()
        self._connections: weakref.WeakSet[Connection] = weakref.WeakSet()
        # A private in-memory database is one connection, used in turn.
        self._one = self._connect() if path == ":memory:" else None
        # Users built for pages, by id, for a page to take again (at most KEPT).
        self._kept: dict[int, User] = {}
        self._prepare()
        # A file's writes share one connection and commit in groups.
        self._writer = Writer(self._connect()) if self._one is None else None
        # Other processes' commits are seen by polling; a private database has none.
        self._watch = Watch(self.position, POLL_INTERVAL if self._one is None else None)

    def _prepare(self) -> None:
        """WAL mode (for a file) and the current schema (``prepare``)."""
        prepare(self._session, wal=self._one is None, busy_timeout=self._busy_timeout)

    # -- the protocol ---------------------------------------------------

    def get(self, user_id: int) -> User:
        return self._answered(user_id, lambda db: self._get(db, user_id))

    def list(self, *, limit: int = 100, sort: str = "id", reverse: bool = False,
             after: Position | None = None, email: str | None = None,
             q: str | None = None) -> list[User]:
        arguments: dict[str, Any] = dict(limit=limit, sort=sort, reverse=reverse, after=after,
                                         email=email, q=q)
        return self._answered(tuple(arguments.items()), lambda db: self._page(db, arguments))

    def position_and_list(self, **arguments: Any) -> tuple[int, builtins.list[User]]:
        # Both on one connection, after one look at data_version (3 µs).
        full = {**LIST_DEFAULTS, **arguments}
        return self._answered(("position", *full.items()), lambda db: (
            int(db.execute(sql.SQLITE.position).fetchone()[0]), self._page(db, full)))

    def _page(self, db: Connection, arguments: dict[str, Any]) -> builtins.list[User]:
        """A page, read ids and versions first: a version names a user's
        fields, so a user already built at that version is taken as it is,
        and only the others are read (cheaper than reading and building all)."""
        kept = self._kept
        keys = db.execute(*sql.page(sql.SQLITE, columns=sql.KEYS, **arguments)).fetchall()
        found = {user_id: user for user_id, version in keys
                 if (user := kept.get(user_id)) is not None and user.version == version}
        wanted = [user_id for user_id, _ in keys if user_id not in found]
        if wanted:
            found.update((row[0], User(*row)) for row in db.execute(
                f"{SELECT_SOME}({', '.join('?' * len(wanted))})", wanted))
            if any(user_id not in found or found[user_id].version != version
                   for user_id, version in keys):
                # Written between the two reads: read the page whole.
                return [User(*row) for row in db.execute(*sql.page(sql.SQLITE, **arguments))]
            if len(kept) + len(wanted) > KEPT:
                kept.clear()
            kept.update((user_id, found[user_id]) for user_id in wanted)
        return [found[user_id] for user_id, _ in keys]

    def count(self, *, email: str | None = None, q: str | None = None) -> int:
        query, params = sql.count(sql.SQLITE, email=email, q=q)
        with self._session() as db:
            return int(db.execute(query, params).fetchone()[0])

    def create(self, *, name: str, email: str) -> User:
        row = (name, email, email_key(email), *name_columns(name))

        def insert(db: sqlite3.Connection) -> User:
            try:
                cursor = db.execute(INSERT, row)
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
                                    *name_columns(new.name), new.version, user_id))
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
            check_fresh_ids(users, int(db.execute(LAST_ID).fetchone()[0]))
            try:
                db.executemany(RESTORE, [(u.id, u.name, u.email, email_key(u.email),
                                          *name_columns(u.name), u.version) for u in users])
            except sqlite3.IntegrityError as e:
                raise Conflict(f"The store already holds one of these users ({e}).") from None
            if last_id > 0:     # the row exists once a user was inserted; make one if not
                db.execute("INSERT INTO sqlite_sequence (name, seq) SELECT 'users', 0"
                           " WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'users')")
                db.execute(RAISE_LAST_ID, (last_id,))
        self._watch.notify()

    def close(self) -> None:
        self._watch.close()
        if self._writer is not None:
            self._writer.stop()         # the writes already handed over are done first
            if self._writer.commits:
                log.info("SQLite writer for %s: %s", self.path, self._writer.summary())
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
    def _session(self) -> Iterator[Connection]:
        """This thread's connection, or the in-memory database's one, held."""
        db = self._one
        if db is None:
            owner = getattr(self._local, "owner", None)
            if owner is None:
                owner = self._local.owner = ThreadConnection(self._connect())
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
            done = self._writer.submit(op)
        else:
            with self._transaction() as db:
                done = op(db)
        self._watch.notify()
        return done

    def _read(self, query: str, params: tuple[Any, ...]) -> list[Any]:
        return self._answered((query, params), lambda db: db.execute(query, params).fetchall())

    @contextmanager
    def _transaction(self) -> Iterator[Connection]:
        """A write transaction: BEGIN IMMEDIATE ... COMMIT, or ROLLBACK."""
        with self._session() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
            db.answers.clear()          # its own commit does not change its data_version

    def _answered(self, question: Any, read: Callable[[Connection], T]) -> T:
        """``read(db)`` on this thread's connection, or what it answered
        last time, if nothing has been committed since (``_answers``)."""
        with self._session() as db:
            answers = self._answers(db)
            answer = answers.get(question)
            if answer is None:
                answer = answers[question] = read(db)
                if len(answers) > ANSWERS:
                    answers.clear()
            return answer

    def _answers(self, db: Connection) -> dict[Any, Any]:
        """What this connection has read and may answer again: valid while
        ``PRAGMA data_version`` is unchanged, which it is until another
        connection, in any process, commits. (A private in-memory database
        has one connection, whose own commits it does not count: it keeps
        nothing.)"""
        if self._one is not None:
            return {}
        version = db.execute("PRAGMA data_version").fetchone()[0]
        if version != db.data_version:
            db.answers.clear()
            db.data_version = version
        return db.answers

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
