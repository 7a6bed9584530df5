"""PostgresStorage: every collection in one PostgreSQL database, shared by
any number of processes.

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
  The statement sets only the fields given (its text depends on which).
- Uniqueness is a unique index on each unique field's ``__key``, the value
  case-folded by Python (``str.casefold``, as the other stores do; SQL's
  ``lower()`` folds less: ß stays ß).
- Ids come from an identity column: a sequence never hands a value out
  twice, whatever is deleted or rolled back.
- Tables, indexes, triggers and queries are generated from the schemas
  (``sql``); opening brings the database's layout (``postgres_migrations``)
  and each collection (``evolution``) up to date, holding an advisory lock
  so that processes opening it together take turns. The change feed's
  positions are handed out by a trigger in commit order (``feed``).
- Lost connections, a server that is down and a pool with no free
  connection within ``timeout`` seconds are ``StoreUnavailable`` (HTTP 503);
  the pool replaces broken connections on its own.

Every value reaches the server as a bound parameter.

The URL is libpq's (``postgresql://user@host:5432/dbname?sslmode=...``) plus
one parameter of usersvc's own, taken out before libpq sees it:
``pool_size`` (default 8), the most connections this process opens. Give
each server process at least as many as it has threads.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
import psycopg.errors
from psycopg_pool import ConnectionPool, PoolTimeout

from ..validation import Schema
from . import (Conflict, NotFound, Position, Precondition, StaleVersion, StoreUnavailable,
               check_fresh_ids, checked_id, redact)
from .evolution import declared, evolve
from .feed import Change, Watch
from .postgres_migrations import migrate
from .postgres_notify import Listener
from .sql import POSTGRES, Table


DEFAULT_POOL_SIZE = 8
#: Seconds between a waiting request's own looks at the position.
LISTEN_FALLBACK = 0.5

#: Any constant; two processes opening the same database take turns on it.
MIGRATION_LOCK = 0x7573657273766301


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


class PostgresStorage:
    def __init__(self, url: str, schemas: Iterable[Schema] | None, *,
                 pool_size: int | None = None, timeout: float = 10.0) -> None:
        """``schemas``: the collections to serve (``None``: those the database holds)."""
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
            with self._pool.connection() as db, db.transaction():
                db.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
                migrate(db)
                tables = [Table(s, POSTGRES) for s in (declared(db, POSTGRES) if schemas is None else schemas)]
                self.schemas = tuple(t.schema for t in tables)
                for table in tables:
                    evolve(db, table)
                self.collections = {t.name: PostgresRecords(self, t, db) for t in tables}
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
        self._listener = Listener(conninfo, self._wake)

    def __getitem__(self, plural: str) -> PostgresRecords:
        return self.collections[plural]

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        try:
            with self._pool.connection() as db:
                yield db
        except (psycopg.OperationalError, PoolTimeout) as e:
            raise StoreUnavailable("The database is unavailable; try again.") from e

    def listen(self) -> None:
        self._listener.start()

    def _wake(self, plural: str | None) -> None:
        for name, records in self.collections.items():
            if plural is None or plural == name:
                records.watch.notify()

    def stop_waiting(self) -> None:
        for records in self.collections.values():
            records.watch.close()

    def close(self) -> None:
        self.stop_waiting()
        self._listener.stop()
        self._pool.close()


class PostgresRecords:
    """One collection of a ``PostgresStorage``."""

    def __init__(self, storage: PostgresStorage, table: Table, db: psycopg.Connection[Any]) -> None:
        self.storage, self.table, self.schema = storage, table, table.schema
        self._make = self.schema.record._make
        self._connection = storage.connection
        # The identity column's sequence: the highest id handed out, deleted or not.
        row = db.execute("SELECT pg_get_serial_sequence(%s, 'id')", (table.name,)).fetchone()
        assert row is not None
        self._last_id = f"SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM {row[0]}"
        self._raise_last_id = f"SELECT setval('{row[0]}', %s) WHERE %s > ({self._last_id})"
        self.watch = Watch(self.position, LISTEN_FALLBACK)
        self._updates: dict[tuple[tuple[str, ...], str], str] = {}   # UPDATE by its shape

    # -- reads ------------------------------------------------------------

    def get(self, record_id: int) -> Any:
        checked_id(self.schema, record_id)
        with self._connection() as db:
            row = db.execute(self.table.select_one, (record_id,)).fetchone()
        if row is None:
            raise NotFound(self.schema, record_id)
        return self._make(row)

    def list(self, *, limit: int = 100, sort: str = "id", reverse: bool = False,
             after: Position | None = None, q: str | None = None,
             **filters: str) -> list[Any]:
        query, params = self.table.page(limit=limit, sort=sort, reverse=reverse, after=after,
                                        q=q, **filters)
        with self._connection() as db:
            return list(map(self._make, db.execute(query, params)))

    def position_and_list(self, **arguments: Any) -> tuple[int, list[Any]]:
        # One statement: each row of the page also carries the position, read
        # once (an InitPlan) in the page's own snapshot. An empty page has no
        # row to carry it: then the position first, and the page again.
        columns = ", ".join(f"u.{c}" for c in self.table.columns.split(", "))
        query, params = self.table.page(**{"limit": 100, **arguments},
                                        columns=f"{columns}, ({self.table.position})")
        with self._connection() as db:
            rows = db.execute(query, params).fetchall()
        if not rows:
            return self.position(), self.list(**arguments)
        return int(rows[0][-1]), [self._make(row[:-1]) for row in rows]

    def count(self, *, q: str | None = None, **filters: str) -> int:
        query, params = self.table.count(q=q, **filters)
        with self._connection() as db:
            row = db.execute(query, params).fetchone()
        assert row is not None
        return int(row[0])

    def last_id(self) -> int:
        with self._connection() as db:
            row = db.execute(self._last_id).fetchone()
        assert row is not None
        return int(row[0])

    def changes(self, *, after: int = 0, limit: int = 100) -> list[Change]:
        with self._connection() as db:
            rows = db.execute(self.table.changes, (after, limit)).fetchall()
        return [Change(row[0], row[1], None if row[-1] is None else self._make(row[1:]))
                for row in rows]

    def position(self) -> int:
        with self._connection() as db:
            row = db.execute(self.table.position).fetchone()
        assert row is not None
        return int(row[0])

    # -- writes -----------------------------------------------------------

    def create(self, **fields: Any) -> Any:
        values = self.schema.values(fields)
        with self._connection() as db:
            try:
                row = db.execute(self.table.insert + " RETURNING id",
                                 self.table.row(values)).fetchone()
            except psycopg.errors.UniqueViolation as e:
                raise self._conflict(e, dict(zip(self.schema.fields, values))) from None
        assert row is not None
        self.watch.notify()
        return self._make((row[0], *values, 1))

    def update(self, record_id: int, *, precondition: Precondition | None = None,
               **fields: Any) -> Any:
        checked_id(self.schema, record_id)
        self.schema.check_names(fields)
        params = _parameters(record_id, precondition)
        for field, value in fields.items():
            params[field] = value
            params.update(self._derived(field, value))
        shape = (tuple(fields), _condition(precondition))
        query = self._updates.get(shape) or self._updates.setdefault(shape, _update(self.table, *shape))
        with self._connection() as db:
            try:
                row = db.execute(query, params).fetchone()
            except psycopg.errors.UniqueViolation as e:
                raise self._conflict(e, fields) from None
            if row is None:
                raise self._why_not(db, record_id)
        self.watch.notify()
        return self._make(row)

    def delete(self, record_id: int, *, precondition: Precondition | None = None) -> None:
        checked_id(self.schema, record_id)
        with self._connection() as db:
            cursor = db.execute(f"{self.table.delete.replace('%s', '%(id)s')}"
                                f"{_condition(precondition)}",
                                _parameters(record_id, precondition))
            if cursor.rowcount == 0:
                raise self._why_not(db, record_id)
        self.watch.notify()

    def restore(self, records: Sequence[Any], *, last_id: int = 0) -> None:
        table = self.table
        with self._connection() as db:
            try:
                with db.transaction():
                    row = db.execute(self._last_id).fetchone()
                    check_fresh_ids(records, int(row[0]) if row else 0)
                    with db.cursor() as cursor:
                        cursor.executemany(table.restore, [
                            (r.id, *table.row(r[1:-1]), r.version) for r in records])
                    top = max([last_id, *(r.id for r in records)])
                    if top > 0:
                        db.execute(self._raise_last_id, (top, top))
            except psycopg.errors.UniqueViolation as e:
                raise Conflict("The store already holds one of these records: "
                               f"{e.diag.message_detail}") from None
        self.watch.notify()

    # -- the change feed: waiting ---------------------------------------

    def wait(self, after: int, timeout: float) -> None:
        self.storage.listen()
        self.watch.wait(after, timeout)

    def stop_waiting(self) -> None:
        self.watch.close()

    # -- helpers --------------------------------------------------------

    def _derived(self, field: str, value: Any) -> dict[str, Any]:
        """The key and words columns a field's new value sets."""
        derived = {}
        if field in self.table.keys:
            derived[f"{field}__key"] = None if value is None else value.casefold()
        if field in self.schema.words:
            derived[f"{field}__words"] = POSTGRES.words_value(value)
        return derived

    def _conflict(self, error: psycopg.errors.UniqueViolation, fields: dict[str, Any]) -> Exception:
        """The unique field whose index refused the write, as a ``Conflict``."""
        for field in self.schema.unique:
            if error.diag.constraint_name == f"{self.table.name}_{field}_unique":
                return Conflict.taken(self.schema, field, fields.get(field))
        return error

    def _why_not(self, db: psycopg.Connection[Any], record_id: int) -> Exception:
        """No row matched a conditional write: gone, or changed?"""
        if db.execute(f"SELECT 1 FROM {self.table.name} WHERE id = %s",
                      (record_id,)).fetchone() is None:
            return NotFound(self.schema, record_id)
        return StaleVersion(record_id)


def _update(table: Table, fields: tuple[str, ...], condition: str) -> str:
    """A conditional UPDATE that sets these fields (and their key and words
    columns) and the next version, and returns the record."""
    sets = [f"{f} = %({f})s" for f in fields]
    sets += [f"{c} = %({c})s" for f in fields
             for c in ([f"{f}__key"] if f in table.keys else [])
             + ([f"{f}__words"] if f in table.schema.words else [])]
    sets.append("version = version + 1")
    return (f"UPDATE {table.name} SET {', '.join(sets)} WHERE id = %(id)s{condition} "
            f"RETURNING {table.columns}")
