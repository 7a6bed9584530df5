"""PostgresUserStore: users in PostgreSQL, shared by any number of processes.

Needs the ``postgres`` extra: ``pip install -e '.[postgres]'`` in usersvc's folder (psycopg 3
and psycopg_pool).

- A pool of connections (``psycopg_pool``), each in autocommit: every write
  is one statement, so it is its own transaction, and a 201 is committed
  (PostgreSQL's default ``synchronous_commit``) before it is answered.
- ``If-Match`` is a single conditional ``UPDATE``/``DELETE``: the version
  check is in its ``WHERE``. Under READ COMMITTED, PostgreSQL re-checks that
  ``WHERE`` against the newest row after waiting for a concurrent writer, so
  of two writers naming the same version exactly one matches. Only when no
  row matched does a second query tell "gone" (404) from "changed" (412).
- E-mail uniqueness is a unique index on ``email_key``, the address
  case-folded by Python (``str.casefold``, as the other stores do; SQL's
  ``lower()`` folds less: ß stays ß).
- Ids come from an identity column: a sequence never hands a value out
  twice, whatever is deleted or rolled back.
- The schema and its migrations are ``postgres_schema``'s; the change
  feed is ``feed.SQLChanges`` over ``user_changes``, whose positions a
  trigger hands out in commit order.
- Lost connections, a server that is down and a pool with no free
  connection within ``timeout`` seconds are ``StoreUnavailable`` (HTTP 503);
  the pool replaces broken connections on its own.

Every value reaches the server as a bound parameter; the SQL text is
constant.

The URL is libpq's (``postgresql://user@host:5432/dbname?sslmode=...``) plus
one parameter of usersvc's own, taken out before libpq sees it:
``pool_size`` (default 8), the most connections this process opens. Give
each server process at least as many as it has threads.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
import psycopg.errors
from psycopg_pool import ConnectionPool, PoolTimeout

from . import (Conflict, EmailTaken, Position, Precondition, StaleVersion, StoreUnavailable,
               User, UserNotFound, check_fresh_ids, checked_id, email_key, redact, sql)
from .feed import SQLChanges, Watch
from .postgres_notify import Listener
from .postgres_schema import migrate


DEFAULT_POOL_SIZE = 8
#: Seconds between a waiting request's own looks at the position.
LISTEN_FALLBACK = 0.5

COLUMNS = "id, name, email, version"
SELECT_ONE = f"SELECT {COLUMNS} FROM users WHERE id = %s"
EXISTS = "SELECT 1 FROM users WHERE id = %s"
INSERT = f"""INSERT INTO users (name, email, email_key, name_key, name_words, version)
             VALUES (%s, %s, %s, %s, %s, 1) RETURNING {COLUMNS}"""
# coalesce: a field given as NULL keeps its value (PATCH of the other one).
UPDATE = f"""UPDATE users SET name = coalesce(%(name)s, name),
                              email = coalesce(%(email)s, email),
                              email_key = coalesce(%(key)s, email_key),
                              name_key = coalesce(%(name_key)s, name_key),
                              name_words = coalesce(%(name_words)s, name_words),
                              version = version + 1
             WHERE id = %(id)s{{condition}} RETURNING {COLUMNS}"""
DELETE = "DELETE FROM users WHERE id = %(id)s{condition}"
RESTORE = """INSERT INTO users (id, name, email, email_key, name_key, name_words, version)
             OVERRIDING SYSTEM VALUE VALUES (%s, %s, %s, %s, %s, %s, %s)"""
# The identity column's sequence: the highest id handed out, deleted or not.
LAST_ID = "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM users_id_seq"
RAISE_LAST_ID = f"SELECT setval('users_id_seq', %s) WHERE %s > ({LAST_ID})"


def _condition(precondition: Precondition | None) -> str:
    """The WHERE clause that ``Precondition.allows`` is, over ``version``.

    Only the shape of the precondition picks the text; the versions are
    parameters (``%(match)s``, ``%(none_match)s``).
    """
    if precondition is None:
        return ""
    clause = ""
    if precondition.match is not None:
        clause += " AND version = ANY(%(match)s)" if precondition.match else " AND false"
    if precondition.none_match is None:
        clause += " AND false"
    elif precondition.none_match:
        clause += " AND version <> ALL(%(none_match)s)"
    return clause


def _parameters(user_id: int, precondition: Precondition | None) -> dict[str, Any]:
    params: dict[str, Any] = {"id": user_id}
    if precondition is not None:
        # Only non-empty lists: an empty one has no element type to send.
        if precondition.match:
            params["match"] = sorted(precondition.match)
        if precondition.none_match:
            params["none_match"] = sorted(precondition.none_match)
    return params


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
    return urlunsplit(parts._replace(query=urlencode(rest))), size


class PostgresUserStore(SQLChanges):
    _dialect = sql.POSTGRES

    def __init__(self, url: str, *, pool_size: int | None = None,
                 timeout: float = 10.0) -> None:
        conninfo, size = split_url(url)
        size = pool_size or size
        # One connection first, so that what will not change by waiting (no
        # such database, bad credentials, nothing listening) fails now, in
        # one line, rather than after the pool's timeout and its retries.
        try:
            psycopg.connect(conninfo, connect_timeout=max(1, round(timeout))).close()
        except psycopg.OperationalError as e:
            raise StoreUnavailable(" ".join(str(e).split())) from None
        self._pool = ConnectionPool(
            conninfo, min_size=1, max_size=size, timeout=timeout, open=False,
            kwargs={"autocommit": True}, name="usersvc")
        self._pool.open()
        try:
            self._pool.wait(timeout=timeout)    # fail now, not at the first request
            with self._pool.connection() as db:
                migrate(db)
        except PoolTimeout as e:
            self._pool.close()
            raise StoreUnavailable(
                f"cannot connect to {redact(url)} within {timeout:g} s "
                "(the pool's warnings say why)") from e
        except BaseException:
            self._pool.close()
            raise
        # Other processes' commits wake the waiters by NOTIFY; asking for the
        # position every LISTEN_FALLBACK seconds covers a lost listener.
        self._watch = Watch(self.position, LISTEN_FALLBACK)
        self._listener = Listener(conninfo, self._watch.notify)

    # -- the protocol ---------------------------------------------------

    def get(self, user_id: int) -> User:
        checked_id(user_id)
        with self._connection() as db:
            row = db.execute(SELECT_ONE, (user_id,)).fetchone()
        if row is None:
            raise UserNotFound(user_id)
        return User(*row)

    def list(self, *, limit: int = 100, sort: str = "id", reverse: bool = False,
             after: Position | None = None, email: str | None = None,
             q: str | None = None) -> list[User]:
        query, params = sql.page(sql.POSTGRES, limit=limit, sort=sort, reverse=reverse,
                                 after=after, email=email, q=q)
        with self._connection() as db:
            rows = db.execute(query, params).fetchall()
        return [User(*row) for row in rows]

    def position_and_list(self, **arguments: Any) -> tuple[int, list[User]]:
        # One statement: each row of the page also carries the position, read
        # once (an InitPlan) in the page's own snapshot. An empty page has no
        # row to carry it: then the position first, and the page again.
        query, params = sql.page(sql.POSTGRES, **{"limit": 100, **arguments},
                                 columns=f"{sql.COLUMNS}, ({sql.POSTGRES.position})")
        with self._connection() as db:
            rows = db.execute(query, params).fetchall()
        if not rows:
            return self.position(), self.list(**arguments)
        return int(rows[0][4]), [User(*row[:4]) for row in rows]

    def count(self, *, email: str | None = None, q: str | None = None) -> int:
        query, params = sql.count(sql.POSTGRES, email=email, q=q)
        with self._connection() as db:
            row = db.execute(query, params).fetchone()
        assert row is not None
        return int(row[0])

    def create(self, *, name: str, email: str) -> User:
        with self._connection() as db:
            try:
                row = db.execute(INSERT, (name, email, email_key(email), name.casefold(),
                                          sql.name_words(name))).fetchone()
            except psycopg.errors.UniqueViolation:
                raise EmailTaken(email) from None
        assert row is not None
        self._watch.notify()
        return User(*row)

    def update(self, user_id: int, *, name: str | None = None,
               email: str | None = None,
               precondition: Precondition | None = None) -> User:
        checked_id(user_id)
        params = _parameters(user_id, precondition)
        params.update(name=name, email=email, key=None if email is None else email_key(email),
                      name_key=None if name is None else name.casefold(),
                      name_words=None if name is None else sql.name_words(name))
        with self._connection() as db:
            try:
                row = db.execute(UPDATE.format(condition=_condition(precondition)),
                                 params).fetchone()
            except psycopg.errors.UniqueViolation:
                raise EmailTaken(email or "") from None
            if row is None:
                raise self._why_not(db, user_id)
        self._watch.notify()
        return User(*row)

    def delete(self, user_id: int, *,
               precondition: Precondition | None = None) -> None:
        checked_id(user_id)
        with self._connection() as db:
            cursor = db.execute(DELETE.format(condition=_condition(precondition)),
                                _parameters(user_id, precondition))
            if cursor.rowcount == 0:
                raise self._why_not(db, user_id)
        self._watch.notify()

    def last_id(self) -> int:
        with self._connection() as db:
            row = db.execute(LAST_ID).fetchone()
        assert row is not None
        return int(row[0])

    def restore(self, users: Sequence[User], *, last_id: int = 0) -> None:
        with self._connection() as db:
            try:
                with db.transaction():
                    row = db.execute(LAST_ID).fetchone()
                    check_fresh_ids(users, int(row[0]) if row else 0)
                    with db.cursor() as cursor:
                        cursor.executemany(RESTORE, [
                            (u.id, u.name, u.email, email_key(u.email), u.name.casefold(),
                             sql.name_words(u.name), u.version)
                            for u in users])
                    top = max([last_id, *(u.id for u in users)])
                    if top > 0:
                        db.execute(RAISE_LAST_ID, (top, top))
            except psycopg.errors.UniqueViolation as e:
                raise Conflict(f"The store already holds one of these users: {e.diag.message_detail}") from None
        self._watch.notify()

    def wait(self, after: int, timeout: float) -> None:
        self._listener.start()
        self._watch.wait(after, timeout)

    def close(self) -> None:
        self._watch.close()
        self._listener.stop()
        self._pool.close()

    def _read(self, query: str, params: tuple[Any, ...]) -> list[Any]:
        with self._connection() as db:
            return db.execute(query, params).fetchall()

    # -- helpers --------------------------------------------------------

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        try:
            with self._pool.connection() as db:
                yield db
        except (psycopg.OperationalError, PoolTimeout) as e:
            raise StoreUnavailable("The database is unavailable; try again.") from e

    @staticmethod
    def _why_not(db: psycopg.Connection[Any], user_id: int) -> Exception:
        """No row matched a conditional write: gone, or changed?"""
        if db.execute(EXISTS, (user_id,)).fetchone() is None:
            return UserNotFound(user_id)
        return StaleVersion(user_id)
