"""PostgresStorage: every collection in one PostgreSQL database, shared by
any number of processes (the ``postgres`` extra: psycopg 3, psycopg_pool).

- A pool of connections in autocommit: every write is one statement, its
  own transaction, committed before it is answered. ``If-Match`` is in the
  ``WHERE`` of one ``UPDATE``/``DELETE``; READ COMMITTED re-checks it after
  waiting for a concurrent writer, so of two naming one version, one wins.
- Uniqueness is a unique index on the ``__key`` Python case-folded (SQL's
  ``lower()`` folds less); ids come from an identity column.
- Opening brings the layout (``migrations``) and each collection
  (``evolution``) up to date under an advisory lock. The feed's positions
  come from a trigger, in commit order (``feed``).
- Lost connections, a server down or no free connection within
  ``timeout`` are ``StoreUnavailable`` (503); a full disk, an I/O error or
  a standby is ``WritesFailing`` (503), said once (``WriteHealth``).

The URL is libpq's plus ``pool_size`` (default 8), taken out before libpq
sees it: the most connections this process opens, at least its threads.
"""
from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple, TypeVar
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import psycopg
import psycopg.errors
from psycopg_pool import ConnectionPool, PoolTimeout

from ...schema import Schema
from ..errors import StoreUnavailable, WriteHealth
from ..feed import Listeners
from ..served import Collections, Step
from ..sql.bulk import LIST_DEFAULTS, Read, SQLBulk
from ..sql.collection import SQLRecords, Table
from ..sql.dialects import POSTGRES
from ..sql.evolution import evolve
from ..sql.layout import declared, opened, read_history
from ..stored import redact, references_of
from .migrations import migrate
from .notify import Listener

T = TypeVar("T")


DEFAULT_POOL_SIZE = 8

#: Errors for a cause outside the store that lasts until it is put right,
#: and what to tell a client: ``WritesFailing`` (HTTP 503).
FAILING = {psycopg.errors.DiskFull: "the disk is full",
           psycopg.errors.IoError: "the disk failed (an I/O error)",
           psycopg.errors.ReadOnlySqlTransaction: "the database is read-only"}

#: Any constant; two processes opening the same database take turns on it.
MIGRATION_LOCK = 0x7573657273766301


def split_url(url: str) -> tuple[str, int]:
    """``(libpq URL, pool size)``: usersvc's own ``pool_size`` taken out."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    sizes = [value for name, value in query if name == "pool_size"]
    rest = [(name, value) for name, value in query if name != "pool_size"]
    size = DEFAULT_POOL_SIZE
    if sizes:
        if len(sizes) > 1 or not sizes[0].isdigit() or int(sizes[0]) < 1:
            raise ValueError(f"pool_size must be one whole number of at least 1, in {url!r}")
        size = int(sizes[0])
    # libpq decodes %20, not "+", as a space (options=-c a=1 -c b=2).
    return urlunsplit(parts._replace(query=urlencode(rest, quote_via=quote))), size


class PoolUse(NamedTuple):
    """The connection pool now: connections it holds, lent out, at most,
    and requests waiting for one (for metrics)."""

    size: int
    in_use: int
    max: int
    waiting: int


class PostgresStorage(Collections):
    unique_violation = psycopg.errors.UniqueViolation
    dialect = POSTGRES      # what a step's ``db`` speaks (``protocol.Transactional``)

    def __init__(self, url: str, schemas: Iterable[Schema] | None, *,
                 pool_size: int | None = None, timeout: float = 10.0) -> None:
        """``schemas``: the collections to serve (``None``: those the database holds)."""
        conninfo, size = split_url(url)
        size = pool_size or size
        self.health = WriteHealth(redact(url))
        # One connection first, so that what will not change by waiting (no
        # such database, bad credentials, nothing listening) fails now, in
        # one line, rather than after the pool's timeout and its retries.
        try:
            psycopg.connect(conninfo, connect_timeout=max(1, round(timeout))).close()
        except psycopg.OperationalError as e:
            raise StoreUnavailable(" ".join(str(e).split())) from None
        def bounded(db: psycopg.Connection[Any]) -> None:
            """No statement runs longer than half as long again as the pool's
            wait (15 s by default: a lock another session holds, a stalled
            disk); then it is a 503, not a request that never ends."""
            db.execute(f"SET statement_timeout = {int(timeout * 1500)}")

        self._new_pool: Callable[[], ConnectionPool[Any]] = lambda: ConnectionPool(  # noqa: E731
            conninfo, min_size=1, max_size=size, timeout=timeout, open=False,
            kwargs={"autocommit": True}, configure=bounded, name="usersvc")
        self._pool = self._new_pool()
        self._pool.open()
        try:
            self._pool.wait(timeout=timeout)    # fail now, not at the first request
            with self._pool.connection() as db, db.transaction():
                db.execute("SET LOCAL statement_timeout = 0")     # a migration takes what it takes
                db.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
                migrate(db)
                self.history = read_history(db)
                tables = [Table(s, POSTGRES) for s in (declared(db, POSTGRES) if schemas is None
                                                       else schemas)]
                # Each ref's collection here, or none made:
                references_of([t.schema for t in tables])
                for table in tables if schemas is not None else ():  # as recorded: as it is
                    recorded = opened(db, table)    # made if new; as declared, left so
                    if recorded is not None:
                        evolve(db, table, recorded)
        except PoolTimeout as e:
            self._pool.close()
            raise StoreUnavailable(
                f"cannot connect to {redact(url)} within {timeout:g} s "
                "(the pool's warnings say why)") from e
        except BaseException:
            self._pool.close()
            raise
        self.schemas = tuple(t.schema for t in tables)
        self.commits = Listeners()          # told of every commit (``announce_commits``)
        self.collections = {t.name: PostgresRecords(self, t, self) for t in tables}
        self.serve()
        # Other processes' commits: their NOTIFY, heard from the first listener on.
        self._conninfo = conninfo
        self._listener = Listener(conninfo, self._heard)
        self._pid = os.getpid()
        self._fork_lock = threading.Lock()

    def _forked(self) -> None:
        """In a process forked from the one that opened the store (a
        server's workers after ``--preload``), the pool's connections are
        the parent's sockets and its threads are not running: this process
        opens its own pool and listener. The parent's are left alone (closing
        them here would end the parent's sessions)."""
        with self._fork_lock:               # the first requests of this process, at once
            if self._pid == os.getpid():
                return
            self._inherited = (self._pool, self._listener)
            self._pool = self._new_pool()
            self._pool.open()
            self._listener = Listener(self._conninfo, self._heard)
            self._pid = os.getpid()
            if self.commits.listeners:      # (the parent's thread is not here)
                self._listener.start()

    @contextmanager
    def connection(self, writing: bool = False) -> Iterator[psycopg.Connection[Any]]:
        if self._pid != os.getpid():
            self._forked()
        try:
            with self._pool.connection() as db:
                yield db
        except tuple(FAILING) as e:     # a standby, a full disk: said once, until a write works
            reason = next(r for kind, r in FAILING.items() if isinstance(e, kind))
            if not writing:
                raise StoreUnavailable(f"The database cannot be read now: {reason}.") from e
            raise self.health.failed(reason, " ".join(str(e).split())) from e
        except (psycopg.OperationalError, PoolTimeout) as e:
            raise StoreUnavailable("The database is unavailable; try again.") from e
        if writing and self.health.failing is not None:
            self.health.worked()

    def read(self, cache_as: Any, read: Callable[[psycopg.Connection[Any]], T]) -> T:
        """``read(db)`` on a pooled connection (``cache_as`` is SQLite's)."""
        with self.connection() as db:
            return read(db)

    def commit(self, op: Callable[[psycopg.Connection[Any]], T]) -> T:
        """``op``'s one statement, committed on its own (autocommit)."""
        with self.connection(writing=True) as db:
            return op(db)

    @contextmanager
    def transaction(self) -> Iterator[psycopg.Connection[Any]]:
        with self.connection(writing=True) as db, db.transaction():
            yield db

    def atomically(self, plurals: Iterable[str], run: Callable[[Step], T], *,
                   nothing_to_undo: bool = False) -> T:
        """``Storage.atomically``: one transaction, undone whole if ``run``
        raises (``nothing_to_undo`` changes nothing). The feeds' locks of
        the collections it writes and of those their references make it
        read are taken first, in the one order (``Collections.locked``;
        each write would take its own: ``ddl``), so that no two steps wait
        for each other, and no reference is checked against a collection
        another step is changing."""
        with self.transaction() as db:
            for plural in self.locked(plurals):
                db.execute("SELECT pg_advisory_xact_lock(%s::regclass::oid::bigint)",
                           (self.collections[plural].table.changes_table,))
            result = run(Step(self, db))     # (its attempts: always a savepoint)
        if self.commits.listeners:
            for plural in plurals:
                self.commits.announce(plural)
        return result

    @staticmethod
    def attempt(step: Step, part: Callable[..., T], args: tuple[Any, ...]) -> T:
        """``Step.attempt``: ``part(*args)`` in a savepoint, undone if it raises,
        even in a step with nothing to undo: a statement PostgreSQL refuses (a
        unique value taken) ends the transaction, and only undoing to a
        savepoint lets the step go on."""
        with step.db.transaction():
            return part(*args)

    def announce_commits(self, listener: Callable[[str | None], None]) -> Callable[[], None]:
        """``protocol.CommitsAnnounced``: this process's commits told by the thread
        that wrote; every process's, by the one that hears their NOTIFY (``notify``)."""
        if self._pid != os.getpid():
            self._forked()
        stop = self.commits.add(listener)
        self._listener.start()
        return stop

    def _heard(self, plural: str | None) -> None:
        """A NOTIFY for ``plural`` (``None``: listening again, every collection)."""
        for name in self.collections:
            if plural is None or plural == name:
                self.commits.announce(name)

    def pool_use(self) -> PoolUse:
        stats = self._pool.get_stats()
        return PoolUse(stats["pool_size"], stats["pool_size"] - stats["pool_available"],
                       stats["pool_max"], stats["requests_waiting"])

    def close(self) -> None:
        if self._pid != os.getpid():
            self.commits.close()
            # The parent's pool and listener (never used here) are the parent's to close.
            return
        self._listener.stop()           # (first: no listener is told anything after ``None``)
        self.commits.close()
        self._pool.close()


class PostgresBulk(SQLBulk):
    """Many records of a ``PostgresStorage``'s collection at once: a page
    carries the feed's position it was read at."""

    def position_and_list(self, read: Read, **arguments: Any) -> tuple[int, list[Any]]:
        # The position is read before any row the page takes: each row of the
        # page's first statement carries it, read once (an InitPlan) in that
        # statement's snapshot, and an optional sort's second statement (its
        # records without a value, when the values' walk is short) runs later.
        # A first statement that finds nothing has no row to carry it (an
        # empty page; in an optional sort's order, no value left to walk):
        # then the position first, on its own, and the page again. (Taking
        # it from the second statement's rows lost a record given a value
        # between the two: on no page, and its change before the position.)
        full, pages = {**LIST_DEFAULTS, **arguments}, self.pages
        columns = (*(f"u.{c}" for c in self.table.columns.split(", ")), f"({pages.position})")

        def position_and_page(db: psycopg.Connection[Any]) -> tuple[int, list[Any]]:
            first = db.execute(*pages.page(**full, columns=columns)).fetchall()
            if not first:       # (the position: an aggregate's one row)
                position = db.execute(pages.position).fetchone()[0]  # type: ignore[index]  # (an aggregate: one row)
                return int(position), self._page(db, full)
            rows = self._rows(db, full, columns, first)
            return int(first[0][-1]), [self._make(row[:-1]) for row in rows]
        return read(None, position_and_page)


class PostgresRecords(SQLRecords):
    """One collection of a ``PostgresStorage`` (many records at once: ``PostgresBulk``)."""

    bulk_type = PostgresBulk
