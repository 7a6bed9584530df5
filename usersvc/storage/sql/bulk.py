"""What a SQL store does with many records at once: the reads that run
pages and counts (``queries``), the feed's and a restore (``SQLBulk``,
part of ``sql.SQLRecords``).
"""
from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import Conflict
from ..protocol import Position
from ..feed import Change
from ..stored import Restores, check_fresh_ids

LIST_DEFAULTS = dict(limit=100, sort="id", reverse=False, after=None, q=None)


class SQLBulk(Restores):
    """``RecordStore.list``, ``count``, ``restore`` and the feed's reads (an
    ``SQLRecords``'s)."""

    def list(self, *, limit: int = 100, sort: str = "id", reverse: bool = False,
             after: Position | None = None, q: str | None = None,
             **filters: Any) -> builtins.list[Any]:
        arguments: dict[str, Any] = dict(limit=limit, sort=sort, reverse=reverse, after=after,
                                         q=q, **filters)
        return self._read((self.table.name, *arguments.items()),
                                 lambda db: self._page(db, arguments))

    def position_and_list(self, **arguments: Any) -> tuple[int, builtins.list[Any]]:
        # Both on one connection, the position first.
        full = {**LIST_DEFAULTS, **arguments}
        return self._read(("position", self.table.name, *full.items()), lambda db: (
            int(db.execute(self.table.position).fetchone()[0]), self._page(db, full)))

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
        rows = (db.execute(*self.table.page(**arguments, columns=columns)).fetchall()
                if first is None else list(first))
        rest = self.table.rest(arguments, len(rows))
        if rest is not None:
            taken = {row[0] for row in rows}
            more = [row for row in db.execute(*self.table.page(**rest, columns=columns))
                    if row[0] not in taken]
            rows += more[:arguments["limit"] - len(rows)]
        return rows

    def count(self, *, q: str | None = None, where: Sequence[Any] = (), **filters: Any) -> int:
        query, params = self.table.count(q=q, where=where, **filters)
        return int(self._read(None, lambda db: db.execute(query, params).fetchone()[0]))

    def last_id(self) -> int:
        return int(self._read(None, lambda db: db.execute(self.table.last_id).fetchone()[0]))

    def changes(self, *, after: int = 0, limit: int = 100) -> builtins.list[Change]:
        rows = self._read((self.table.changes, after, limit), lambda db: db.execute(
            self.table.changes, (after, limit)).fetchall())
        return list(map(self._change, rows))

    def entry(self, record_id: int) -> Change | None:
        rows = self._read(None, lambda db: db.execute(self.table.entry, (record_id,)).fetchall())
        return next(map(self._change, rows), None)

    @property
    def history(self) -> str:
        return str(self.storage.history)

    def _change(self, row: Sequence[Any]) -> Change:
        """A row of the changes table (``seq``, then a record's columns;
        a tombstone's version is null) as the feed's entry."""
        return Change(row[0], row[1], None if row[-1] is None else self._make(row[1:]))

    def position(self) -> int:
        return int(self._read(self.table.position, lambda db: db.execute(
            self.table.position).fetchone()[0]))

    def announce_commits(self, listener: Callable[[str | None], None]) -> Callable[[], None]:
        """``protocol.CommitsAnnounced``, for these records served alone:
        their store's announcements (of every collection it holds)."""
        return self.storage.announce_commits(listener)

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
                        (c.seq, c.id, *(absent if c.record is None else
                                        (*table.stored(c.record[1:-1]), c.record.version)))
                        for c in changes])
                    _raise_position(table, db, max(c.seq for c in changes))
            except self.storage.unique_violation as e:
                raise Conflict(f"The store already holds one of these records ({e}).") from None
            top = max([last_id, *(r.id for r in records), *(c.id for c in changes)])
            if top > 0:
                _raise_last_id(table, db, top)
        if self.commits.listeners:
            self.commits.announce(self.schema.plural)


def _raise_position(table: Any, db: Any, seq: int) -> None:
    """Make ``seq`` the feed's high-water mark, if it is above it
    (SQLite's ``AUTOINCREMENT`` follows the largest ``seq`` inserted)."""
    if table.dialect.name == "postgres":
        db.execute(f"SELECT setval('{table.changes_table}_seq', %s) "
                   f"WHERE %s > (SELECT last_value FROM {table.changes_table}_seq)", (seq, seq))


def _raise_last_id(table: Any, db: Any, last_id: int) -> None:
    """Make ``last_id`` the high-water mark, if it is above it."""
    if table.dialect.name == "sqlite":   # the row exists once a record was inserted; make one if not
        db.execute(f"INSERT INTO sqlite_sequence (name, seq) SELECT '{table.name}', 0 WHERE "
                   f"NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = '{table.name}')")
        db.execute(f"UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = '{table.name}'",
                   (last_id,))
    else:
        db.execute(f"SELECT setval(pg_get_serial_sequence('{table.name}', 'id'), %s) "
                   f"WHERE %s > ({table.last_id})", (last_id, last_id))
