"""What a SQL store does with many records at once: the reads that run
pages and counts (``queries``), the feed's and a restore (``SQLBulk``, a
``SQLRecords``'s ``bulk``).
"""
from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import Conflict
from ..feed import Change
from ..stored import check_fresh_ids

LIST_DEFAULTS = dict(limit=100, sort="id", reverse=False, after=None, q=None)

#: How a read runs, given by its records (``SQLRecords._read``): ``read(cache_as,
#: read)`` is ``read(db)``, on one of the store's connections, or in an atomic
#: step on its transaction's.
Read = Callable[[Any, Callable[[Any], Any]], Any]


class SQLBulk:
    """What one collection of a SQL store does with many records at once
    (its ``SQLRecords``'s ``bulk``, whose methods of ``RecordStore`` and
    ``ChangeFeed`` pass here, with how they read): pages, counts and the
    feed's reads, by the statements of its table's ``pages``
    (``PageQueries``), and a restore."""

    def __init__(self, storage: Any, table: Any, make: Callable[[Sequence[Any]], Any]) -> None:
        self.storage, self.table, self.pages = storage, table, table.pages
        self._make = make       # a row to a record (``collection.record_maker``)

    def list(self, read: Read, **arguments: Any) -> builtins.list[Any]:
        full = {**LIST_DEFAULTS, **arguments}
        return read((self.table.name, *full.items()), lambda db: self._page(db, full))

    def position_and_list(self, read: Read, **arguments: Any) -> tuple[int, builtins.list[Any]]:
        # Both on one connection, the position first.
        full = {**LIST_DEFAULTS, **arguments}
        return read(("position", self.table.name, *full.items()), lambda db: (
            int(db.execute(self.pages.position).fetchone()[0]), self._page(db, full)))

    def _page(self, db: Any, arguments: dict[str, Any]) -> builtins.list[Any]:
        return list(map(self._make, self._rows(db, arguments)))

    def _rows(self, db: Any, arguments: dict[str, Any], columns: tuple[str, ...] | None = None,
              first: builtins.list[Any] | None = None) -> builtins.list[Any]:
        """A page's rows (of ``columns``): in an optional sort's order, its
        values' walk (``first``, if already read) and, if that is short,
        the walk of its records without one (``PageQueries.rest``). A record
        that lost its value between the two is not taken twice, and the
        page is still as full as the records allow: the second walk reads
        as many more as the first found, and keeps those not taken."""
        rows = (db.execute(*self.pages.page(**arguments, columns=columns)).fetchall()
                if first is None else list(first))
        rest = self.pages.rest(arguments, len(rows))
        if rest is not None:
            taken = {row[0] for row in rows}
            more = [row for row in db.execute(*self.pages.page(**rest, columns=columns))
                    if row[0] not in taken]
            rows += more[:arguments["limit"] - len(rows)]
        return rows

    def count(self, read: Read, **filters: Any) -> int:
        query, params = self.pages.count(**filters)
        return int(read(None, lambda db: db.execute(query, params).fetchone()[0]))

    def last_id(self, read: Read) -> int:
        return int(read(None, lambda db: db.execute(self.pages.last_id).fetchone()[0]))

    def changes(self, read: Read, after: int, limit: int) -> builtins.list[Change]:
        rows = read((self.pages.changes, after, limit), lambda db: db.execute(
            self.pages.changes, (after, limit)).fetchall())
        return list(map(self._change, rows))

    def entry(self, read: Read, record_id: int) -> Change | None:
        rows = read(None, lambda db: db.execute(self.pages.entry, (record_id,)).fetchall())
        return next(map(self._change, rows), None)

    def _change(self, row: Sequence[Any]) -> Change:
        """A row of the changes table (``seq``, then a record's columns;
        a tombstone's version is null) as the feed's entry."""
        return Change(row[0], row[1], None if row[-1] is None else self._make(row[1:]))

    def position(self, read: Read) -> int:
        return int(read(self.pages.position, lambda db: db.execute(
            self.pages.position).fetchone()[0]))

    def restore(self, records: Sequence[Any], changes: Sequence[Change], last_id: int) -> None:
        """``Restores._restore``: in a transaction of its own, always."""
        table, pages = self.table, self.pages
        with self.storage.transaction() as db:
            check_fresh_ids([*records, *changes], int(db.execute(pages.last_id).fetchone()[0]))
            position = int(db.execute(pages.position).fetchone()[0])
            if changes and min(c.seq for c in changes) <= position:
                raise Conflict(f"Positions are never reused: this store's feed is at {position}.")
            absent = [None] * (len(table.schema.fields) + 1)    # a tombstone's fields and version
            try:
                db.cursor().executemany(pages.restore, [
                    (r.id, *table.row(r[1:-1]), r.version) for r in records])
                if changes:         # the triggers' positions, replaced by the ones given
                    db.cursor().executemany(pages.forget_change, [(r.id,) for r in records])
                    db.cursor().executemany(pages.restore_change, [
                        (c.seq, c.id, *(absent if c.record is None else
                                        (*_stored(table, c.record[1:-1]), c.record.version)))
                        for c in changes])
                    _raise_position(table, db, max(c.seq for c in changes))
            except self.storage.unique_violation as e:
                raise Conflict(f"The store already holds one of these records ({e}).") from None
            top = max([last_id, *(r.id for r in records), *(c.id for c in changes)])
            if top > 0:
                _raise_last_id(table, db, top)
        if self.storage.commits.listeners:
            self.storage.commits.announce(table.schema.plural)


def _stored(table: Any, values: Sequence[Any]) -> builtins.list[Any]:
    """The fields' values (in the schema's order) as their columns keep them."""
    return table.row(values)[:len(values)] if table.stored_as else list(values)


def _raise_position(table: Any, db: Any, seq: int) -> None:
    """Make ``seq`` the feed's high-water mark, if it is above it
    (SQLite's ``AUTOINCREMENT`` follows the largest ``seq`` inserted)."""
    if table.dialect.name == "postgres":
        db.execute(f"SELECT setval('{table.changes_table}_seq', %s) "
                   f"WHERE %s > (SELECT last_value FROM {table.changes_table}_seq)", (seq, seq))


def _raise_last_id(table: Any, db: Any, last_id: int) -> None:
    """Make ``last_id`` the high-water mark, if it is above it."""
    if table.dialect.name == "sqlite":   # its row exists once a record was inserted; else made
        db.execute(f"INSERT INTO sqlite_sequence (name, seq) SELECT '{table.name}', 0 WHERE "
                   f"NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = '{table.name}')")
        db.execute(f"UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = '{table.name}'",
                   (last_id,))
    else:
        db.execute(f"SELECT setval(pg_get_serial_sequence('{table.name}', 'id'), %s) "
                   f"WHERE %s > ({table.pages.last_id})", (last_id, last_id))
