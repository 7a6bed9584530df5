"""SQLRecords: one collection of a SQL store, the same code for SQLite and
PostgreSQL. Its statements are the collection's ``sql.Table``; the store it
belongs to (``SQLiteStorage``, ``PostgresStorage``) gives the connections:

- ``read(question, read)``: ``read(db)`` on a connection (SQLite answers a
  question again while nothing is committed);
- ``write(op)``: ``op(db)`` as one write, committed before it returns
  (SQLite: by its writer thread, in a group);
- ``transaction()``: a connection in a transaction, for a restore;
- ``violated(error)``: what a unique violation names (SQLite: the column,
  ``books.isbn__key``; PostgreSQL: the index, ``books_isbn_unique``);
- ``listen()``: before a request waits for changes from other processes;
- ``write_once(key, op)``: ``op(db)`` as one write, its answer kept with
  the key in the same transaction, or the answer kept before (``keys``).

Every write is one statement, whose text depends only on its shape: an
``INSERT ... RETURNING id``; an ``UPDATE`` or ``DELETE`` whose ``WHERE`` holds
the precondition, so that the check and the write are one atomic step (of
two writers naming the same version, exactly one matches). Only when no row
matched does a second read tell "gone" (404) from "changed" (412).
Uniqueness is the unique index's, and its error names the field (409).
"""
from __future__ import annotations

import builtins
import logging
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from . import Conflict, NotFound, Position, Precondition, StaleVersion, Watch, checked_id, ddl
from .feed import Change
from .keys import Key
from .opening import check_fresh_ids
from .sql import Table

T = TypeVar("T")
log = logging.getLogger("usersvc.storage")
LIST_DEFAULTS = dict(limit=100, sort="id", reverse=False, after=None, q=None)


class SQLRecords:
    keeps_keys = True

    def __init__(self, storage: Any, table: Table, interval: float | None) -> None:
        self.storage, self.table, self.schema = storage, table, table.schema
        self._make = self.schema.record._make
        #: Requests waiting for changes; other processes' commits are seen
        #: every ``interval`` seconds, or sooner when the store is told.
        self.watch = Watch(self.position, interval)

    @property
    def writes_failing(self) -> str | None:
        """Why the store's writes are failing now (a full disk...), or ``None``."""
        return self.storage.health.failing

    # -- reads ------------------------------------------------------------

    def get(self, record_id: int) -> Any:
        checked_id(self.schema, record_id)
        record = self.storage.read((self.table.name, record_id), lambda db: next(
            map(self._make, db.execute(self.table.select_one, (record_id,))), None))
        if record is None:
            raise NotFound(self.schema, record_id)
        return record

    def list(self, *, limit: int = 100, sort: str = "id", reverse: bool = False,
             after: Position | None = None, q: str | None = None,
             **filters: str) -> builtins.list[Any]:
        arguments: dict[str, Any] = dict(limit=limit, sort=sort, reverse=reverse, after=after,
                                         q=q, **filters)
        return self.storage.read((self.table.name, *arguments.items()),
                                 lambda db: self._page(db, arguments))

    def position_and_list(self, **arguments: Any) -> tuple[int, builtins.list[Any]]:
        # Both on one connection, the position first.
        full = {**LIST_DEFAULTS, **arguments}
        return self.storage.read(("position", self.table.name, *full.items()), lambda db: (
            int(db.execute(self.table.position).fetchone()[0]), self._page(db, full)))

    def _page(self, db: Any, arguments: dict[str, Any]) -> builtins.list[Any]:
        return list(map(self._make, db.execute(*self.table.page(**arguments))))

    def count(self, *, q: str | None = None, **filters: str) -> int:
        query, params = self.table.count(q=q, **filters)
        return int(self.storage.read(None, lambda db: db.execute(query, params).fetchone()[0]))

    def last_id(self) -> int:
        return int(self.storage.read(None, lambda db: db.execute(self.table.last_id).fetchone()[0]))

    def changes(self, *, after: int = 0, limit: int = 100) -> builtins.list[Change]:
        rows = self.storage.read((self.table.changes, after, limit), lambda db: db.execute(
            self.table.changes, (after, limit)).fetchall())
        return [Change(row[0], row[1], None if row[-1] is None else self._make(row[1:]))
                for row in rows]

    def position(self) -> int:
        return int(self.storage.read(self.table.position, lambda db: db.execute(
            self.table.position).fetchone()[0]))

    # -- writes -----------------------------------------------------------

    def create(self, *, key: Key | None = None, **fields: Any) -> Any:
        values = self.schema.values(fields)
        row = self.table.row(values)

        def insert(db: Any) -> Any:
            # Every row read: a RETURNING statement is not done until then.
            (record_id,), = self._unique(db, self.table.insert, row, fields).fetchall()
            return self._make((record_id, *values, 1))
        return self._write(insert, key)

    def update(self, record_id: int, *, precondition: Precondition | None = None,
               key: Key | None = None, **fields: Any) -> Any:
        checked_id(self.schema, record_id)
        self.schema.check_names(fields)
        query, params = self.table.update(fields, record_id, precondition)

        def change(db: Any) -> Any:
            rows = self._unique(db, query, params, fields).fetchall()
            if not rows:
                raise self._why_not(db, record_id)
            return self._make(rows[0])
        return self._write(change, key)

    def delete(self, record_id: int, *, precondition: Precondition | None = None) -> None:
        checked_id(self.schema, record_id)
        query, params = self.table.delete(record_id, precondition)

        def remove(db: Any) -> None:
            if db.execute(query, params).rowcount == 0:
                raise self._why_not(db, record_id)
        self._write(remove)

    def restore(self, records: Sequence[Any], *, last_id: int = 0) -> None:
        self._restore(records, (), last_id)

    def restore_changes(self, changes: Sequence[Change], *, last_id: int = 0) -> None:
        self._restore([c.record for c in changes if c.record is not None], changes, last_id)

    def _restore(self, records: Sequence[Any], changes: Sequence[Change], last_id: int) -> None:
        table = self.table
        with self.storage.transaction() as db:
            check_fresh_ids([*records, *changes], int(db.execute(table.last_id).fetchone()[0]))
            position = int(db.execute(table.position).fetchone()[0])
            if changes and min(c.seq for c in changes) <= position:
                raise Conflict(f"Positions are never reused: this store's feed is at {position}.")
            absent = [None] * (len(self.schema.fields) + 1)     # a tombstone's fields and version
            try:
                db.cursor().executemany(table.restore, [
                    (r.id, *table.row(r[1:-1]), r.version) for r in records])
                if changes:         # the triggers' positions, replaced by the ones given
                    db.cursor().executemany(table.forget_change, [(r.id,) for r in records])
                    db.cursor().executemany(table.restore_change, [
                        (c.seq, c.id, *(absent if c.record is None else c.record[1:]))
                        for c in changes])
                    ddl.raise_position(table, db, max(c.seq for c in changes))
            except self.storage.unique_violation as e:
                raise Conflict(f"The store already holds one of these records ({e}).") from None
            top = max([last_id, *(r.id for r in records), *(c.id for c in changes)])
            if top > 0:
                ddl.raise_last_id(table, db, top)
        self.watch.notify()

    # -- the change feed: waiting ---------------------------------------

    def wait(self, after: int, timeout: float) -> None:
        self.storage.listen()
        self.watch.wait(after, timeout)

    def stop_waiting(self) -> None:
        self.watch.close()

    # -- helpers --------------------------------------------------------

    def _write(self, op: Callable[[Any], T], key: Key | None = None) -> Any:
        if key is None:
            done = self.storage.write(op)
        else:
            done = self.storage.write_once(key, op)
            if self.storage.keys.purges.due():
                self._purge_keys()
        self.watch.notify()
        return done

    def _purge_keys(self) -> None:
        """A step of the expired keys' sweep, after a keyed write: its
        failure is not the write's (the next step tries again)."""
        try:
            self.storage.write(self.storage.keys.purged)
        except Exception:
            log.warning("could not purge expired idempotency keys (the next sweep will)",
                        exc_info=True)

    def _unique(self, db: Any, query: str, params: Sequence[Any], fields: dict[str, Any]) -> Any:
        """``db.execute(query, params)``; a unique index's refusal as the
        ``Conflict`` of the field it names."""
        try:
            return db.execute(query, params)
        except self.storage.unique_violation as e:
            named = self.storage.violated(e)
            for field in self.schema.unique:
                column = f"{field}__key" if field in self.table.keys else field
                if named in (f"{self.table.name}.{column}", f"{self.table.name}_{field}_unique"):
                    raise Conflict.taken(self.schema, field, fields.get(field)) from None
            raise

    def _why_not(self, db: Any, record_id: int) -> Exception:
        """No row matched a conditional write: gone, or changed?"""
        if db.execute(self.table.exists, (record_id,)).fetchone() is None:
            return NotFound(self.schema, record_id)
        return StaleVersion(record_id)
