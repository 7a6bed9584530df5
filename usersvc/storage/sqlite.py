"""SQLiteStorage: every collection in one SQLite file, shared by threads and
processes.

- Each thread has its own connection; a private in-memory database
  (``sqlite://``) has one connection, used under a lock (``Connections``).
- Writes run in ``BEGIN IMMEDIATE`` transactions: the write lock is taken
  before the first read, so a precondition check and the write it guards are
  one atomic step, across threads and across processes.
- WAL journal (readers never wait for the writer), a busy timeout (writers
  queue instead of failing), ``synchronous=FULL`` (a commit is on disk when
  ``create`` returns, so a 201 survives a crash or a power cut).
- ``id INTEGER PRIMARY KEY AUTOINCREMENT``: never an id again, even after
  the highest one is deleted. Tables, indexes, triggers and queries are
  generated from the schemas (``sql``); opening brings the file's layout
  (``sqlite_migrations``) and then each collection (``evolution``) up to
  date, under one write lock, so processes opening a file together do it once.
- A lock held by another writer past the busy timeout is ``StoreUnavailable``
  (HTTP 503): nothing was written, and the client may try again.
- Group commit: creates, updates and deletes on a file are made by one
  writer thread, in groups that share one sync to disk (``sqlite_writer``).
- A page reads ids and versions first, and builds only the records it has
  not built at that version before (``list``): a version, with its id,
  names one content for good (ids are never reused, not even by
  ``restore``). Each connection answers a read again while no connection
  in any process has committed since (``Connections.answered``).
"""
from __future__ import annotations

import builtins
import logging
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from ..validation import Schema
from . import (Conflict, NotFound, Position, Precondition, StaleVersion, check_fresh_ids,
               checked_id)
from .evolution import declared, evolve
from .feed import Change, Watch
from .sql import SQLITE, Table
from .sqlite_migrations import migrate, retrying
from .sqlite_writer import Connection, Connections, Writer

T = TypeVar("T")
log = logging.getLogger("usersvc.storage")

#: How many records a collection keeps built for its pages (then it starts again).
KEPT = 100_000
#: How often a waiting request asks a file for its position: other
#: processes may have committed, and SQLite cannot tell them.
POLL_INTERVAL = 0.2
LIST_DEFAULTS = dict(limit=100, sort="id", reverse=False, after=None, q=None)


class SQLiteStorage:
    def __init__(self, path: str, schemas: Iterable[Schema] | None, *,
                 busy_timeout: float = 10.0) -> None:
        """``schemas``: the collections to serve (``None``: those the file holds)."""
        self.path = path
        self.connections = Connections(path, busy_timeout)
        tables: list[Table] = []
        try:
            retrying(lambda: self._open(schemas, tables), busy_timeout)
        except BaseException:
            self.connections.close()
            raise
        # A file's writes share one connection and commit in groups.
        self.writer = Writer(self.connections.connect()) if self.connections.one is None else None
        self.schemas = tuple(t.schema for t in tables)
        self.collections = {t.name: SQLiteRecords(self, t) for t in tables}

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

    def stop_waiting(self) -> None:
        for records in self.collections.values():
            records.stop_waiting()

    def close(self) -> None:
        self.stop_waiting()
        if self.writer is not None:
            self.writer.stop()         # the writes already handed over are done first
            if self.writer.commits:
                log.info("SQLite writer for %s: %s", self.path, self.writer.summary())
        self.connections.close()


class SQLiteRecords:
    """One collection of a ``SQLiteStorage``."""

    def __init__(self, storage: SQLiteStorage, table: Table) -> None:
        self.storage, self.table, self.schema = storage, table, table.schema
        self._connections = storage.connections
        self._make = self.schema.record._make
        # Records built for pages, by id, for a page to take again (at most KEPT).
        self._kept: dict[int, Any] = {}
        # Other processes' commits are seen by polling; a private database has none.
        self._watch = Watch(self.position, POLL_INTERVAL if storage.writer is not None else None)

    # -- reads ------------------------------------------------------------

    def get(self, record_id: int) -> Any:
        return self._connections.answered((self.table.name, record_id),
                                          lambda db: self._get(db, record_id))

    def list(self, *, limit: int = 100, sort: str = "id", reverse: bool = False,
             after: Position | None = None, q: str | None = None,
             **filters: str) -> builtins.list[Any]:
        arguments: dict[str, Any] = dict(limit=limit, sort=sort, reverse=reverse, after=after,
                                         q=q, **filters)
        return self._connections.answered((self.table.name, *arguments.items()),
                                          lambda db: self._page(db, arguments))

    def position_and_list(self, **arguments: Any) -> tuple[int, builtins.list[Any]]:
        # Both on one connection, after one look at data_version (3 µs).
        full = {**LIST_DEFAULTS, **arguments}
        return self._connections.answered(("position", self.table.name, *full.items()), lambda db: (
            int(db.execute(self.table.position).fetchone()[0]), self._page(db, full)))

    def _page(self, db: Connection, arguments: dict[str, Any]) -> builtins.list[Any]:
        """A page, read ids and versions first: a version names a record's
        fields, so a record already built at that version is taken as it is,
        and only the others are read (cheaper than reading and building all)."""
        kept = self._kept
        keys = db.execute(*self.table.page(columns="u.id, u.version", **arguments)).fetchall()
        found = {record_id: record for record_id, version in keys
                 if (record := kept.get(record_id)) is not None and record.version == version}
        wanted = [record_id for record_id, _ in keys if record_id not in found]
        if wanted:
            found.update((row[0], self._make(row)) for row in db.execute(
                f"{self.table.select_some}({', '.join('?' * len(wanted))})", wanted))
            if any(record_id not in found or found[record_id].version != version
                   for record_id, version in keys):
                # Written between the two reads: read the page whole.
                return list(map(self._make, db.execute(*self.table.page(**arguments))))
            if len(kept) + len(wanted) > KEPT:
                kept.clear()
            kept.update((record_id, found[record_id]) for record_id in wanted)
        return [found[record_id] for record_id, _ in keys]

    def count(self, *, q: str | None = None, **filters: str) -> int:
        query, params = self.table.count(q=q, **filters)
        with self._connections.session() as db:
            return int(db.execute(query, params).fetchone()[0])

    def last_id(self) -> int:
        with self._connections.session() as db:
            return self._last_id(db)

    def changes(self, *, after: int = 0, limit: int = 100) -> builtins.list[Change]:
        rows = self._connections.answered(
            (self.table.changes, after, limit),
            lambda db: db.execute(self.table.changes, (after, limit)).fetchall())
        return [Change(row[0], row[1], None if row[-1] is None else self._make(row[1:]))
                for row in rows]

    def position(self) -> int:
        return int(self._connections.answered(
            self.table.position, lambda db: db.execute(self.table.position).fetchone()[0]))

    # -- writes -----------------------------------------------------------

    def create(self, **fields: Any) -> Any:
        values = self.schema.values(fields)
        row = self.table.row(values)

        def insert(db: sqlite3.Connection) -> Any:
            try:
                cursor = db.execute(self.table.insert, row)
            except sqlite3.IntegrityError as e:
                raise self._conflict(e, values) from None
            return self._make((cursor.lastrowid, *values, 1))
        return self._write(insert)

    def update(self, record_id: int, *, precondition: Precondition | None = None,
               **fields: Any) -> Any:
        def replace(db: sqlite3.Connection) -> Any:
            old = self._checked(db, record_id, precondition)
            values = self.schema.values(fields, old)
            try:
                db.execute(self.table.update,
                           (*self.table.row(values), old.version + 1, record_id))
            except sqlite3.IntegrityError as e:
                raise self._conflict(e, values) from None
            return self._make((record_id, *values, old.version + 1))
        return self._write(replace)

    def delete(self, record_id: int, *, precondition: Precondition | None = None) -> None:
        def remove(db: sqlite3.Connection) -> None:
            self._checked(db, record_id, precondition)
            db.execute(self.table.delete, (record_id,))
        self._write(remove)

    def restore(self, records: Sequence[Any], *, last_id: int = 0) -> None:
        table = self.table
        with self._connections.transaction() as db:
            check_fresh_ids(records, self._last_id(db))
            try:
                db.executemany(table.restore, [
                    (r.id, *table.row(r[1:-1]), r.version) for r in records])
            except sqlite3.IntegrityError as e:
                raise Conflict(f"The store already holds one of these records ({e}).") from None
            if last_id > 0:     # the row exists once a record was inserted; make one if not
                db.execute("INSERT INTO sqlite_sequence (name, seq) SELECT ?, 0 WHERE NOT "
                           "EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = ?)",
                           (table.name, table.name))
                db.execute("UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = ?",
                           (last_id, table.name))
        self._watch.notify()

    # -- the change feed: waiting ---------------------------------------

    def wait(self, after: int, timeout: float) -> None:
        self._watch.wait(after, timeout)

    def stop_waiting(self) -> None:
        self._watch.close()

    # -- helpers --------------------------------------------------------

    def _write(self, op: Callable[[sqlite3.Connection], T]) -> T:
        done = self.storage.write(op)
        self._watch.notify()
        return done

    def _last_id(self, db: sqlite3.Connection) -> int:
        # AUTOINCREMENT's high-water mark: the largest id ever handed out.
        row = db.execute("SELECT seq FROM sqlite_sequence WHERE name = ?",
                         (self.table.name,)).fetchone()
        return 0 if row is None else int(row[0])

    def _get(self, db: sqlite3.Connection, record_id: int) -> Any:
        row = db.execute(self.table.select_one, (checked_id(self.schema, record_id),)).fetchone()
        if row is None:
            raise NotFound(self.schema, record_id)
        return self._make(row)

    def _checked(self, db: sqlite3.Connection, record_id: int,
                 precondition: Precondition | None) -> Any:
        record = self._get(db, record_id)
        if precondition is not None and not precondition.allows(record.version):
            raise StaleVersion(record_id)
        return record

    def _conflict(self, error: sqlite3.IntegrityError, values: Sequence[Any]) -> Exception:
        """The unique field an IntegrityError names ("UNIQUE constraint
        failed: users.email__key"), as a ``Conflict``."""
        for field, value in zip(self.schema.fields, values):
            if field in self.schema.unique:
                column = f"{field}__key" if field in self.table.keys else field
                if str(error).endswith(f"{self.table.name}.{column}"):
                    return Conflict.taken(self.schema, field, value)
        return error
