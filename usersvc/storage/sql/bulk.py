"""What a SQL store does with many records at once: the queries of pages
and counts (``PageQueries``, part of ``sql.Table``), and the reads that run
them, the feed's and a restore (``SQLBulk``, part of ``sql.SQLRecords``).

A page in any order is a walk of one index (``ddl``: one on ``(<field>__key,
id, version)`` for each sort and filter) from the last page's position
(keyset paging): O(log N + limit); a search starts from the words that
match (``q <= word < prefix_end(q)``) and sorts only those.
"""
from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

from ...fields import fold
from ..protocol import Conflict, Position
from ..feed import Change
from ..stored import Restores, check_fresh_ids

LIST_DEFAULTS = dict(limit=100, sort="id", reverse=False, after=None, q=None)


def prefix_end(prefix: str) -> str | None:
    """The least string above every string that starts with ``prefix``, for
    an index range ``prefix <= term < prefix_end(prefix)`` in code point order
    (``None``: there is none, every string from ``prefix`` on qualifies)."""
    stripped = prefix.rstrip("\U0010ffff")
    if not stripped:
        return None
    following = ord(stripped[-1]) + 1
    if 0xD800 <= following <= 0xDFFF:      # surrogates are not text: skip them
        following = 0xE000
    return stripped[:-1] + chr(following)


def _sendable(param: Any) -> Any:
    """A filter's or search's value as a database can be sent it: NUL,
    which no stored value holds and PostgreSQL cannot be sent, as U+FFFE,
    which no stored value holds either (every text kind refuses it), so
    it matches nothing, as it does in memory."""
    return param.replace("\x00", "\ufffe") if type(param) is str and "\x00" in param else param


class PageQueries:
    """The queries of ``RecordStore.list`` and ``count``, the feed's and a
    restore's (a ``Table``'s)."""

    def make_bulk_statements(self: Any, written: list[str]) -> None:
        """The statements of the feed and of a restore (``written``: the
        columns a write sets), made once with the ``Table``."""
        t, c, m, fields = self.name, self.changes_table, self.dialect.mark, list(self.schema.fields)
        self.restore = (f"INSERT INTO {t} (id, {', '.join(written)}, version)"
                        f"{' OVERRIDING SYSTEM VALUE' if self.dialect.name == 'postgres' else ''} "
                        f"VALUES ({', '.join(m for _ in range(len(written) + 2))})")
        self.forget_change = f"DELETE FROM {c} WHERE id = {m}"
        self.restore_change = (f"INSERT INTO {c} (seq, id, {', '.join(fields)}, version) "
                               f"VALUES ({', '.join(m for _ in range(len(fields) + 3))})")
        self.changes = (f"SELECT seq, {self.columns} FROM {c} WHERE seq > {m} "
                        f"ORDER BY seq LIMIT {m}")
        self.position = f"SELECT coalesce(max(seq), 0) FROM {c}"
        if self.dialect.name == "sqlite":   # AUTOINCREMENT's high-water mark
            self.last_id = f"SELECT coalesce(max(seq), 0) FROM sqlite_sequence WHERE name = '{t}'"
        else:                       # the identity column's sequence
            self.last_id = ("SELECT coalesce(pg_sequence_last_value(pg_get_serial_sequence("
                            f"'{t}', 'id')::regclass), 0)")
        self._pages: dict[tuple[Any, ...], str] = {}

    def page(self, *, limit: int, sort: str = "id", reverse: bool = False,
             after: Position | None = None, q: str | None = None, columns: str | None = None,
             where: Sequence[Any] = (), **filters: Any) -> tuple[str, list[Any]]:
        """The query for ``RecordStore.list`` with these arguments, and its
        parameters; ``columns="u.id, u.version"`` asks only for each
        record's id and version."""
        params = self._filter_params(filters, q, where)
        if after is not None:
            if sort == "id":
                params.append(after)
            else:
                assert isinstance(after, tuple)
                params.extend(after[:len(self._order(sort))])
        params.append(limit)
        shape = (columns, sort, reverse, after is not None, tuple(filters), q is not None,
                 q is not None and prefix_end(fold(q)) is not None, _shapes(where))
        query = self._pages.get(shape)
        if query is None:
            query = self._pages[shape] = self._page_sql(*shape)
        return query, params

    def count(self, *, q: str | None = None, where: Sequence[Any] = (),
              **filters: Any) -> tuple[str, list[Any]]:
        """The query for ``RecordStore.count`` with these filters, and its parameters."""
        end = q is not None and prefix_end(fold(q)) is not None
        source, conditions = self._filtered(tuple(filters), q is not None, end, _shapes(where))
        return (f"SELECT count(*) FROM {source}{_where(conditions)}",
                self._filter_params(filters, q, where))

    def compared(self, field: str) -> str:
        """What a field is compared and ordered by, in filters, orders and
        their indexes: its collated column, or its own; text in code point
        order on every store, whatever the database's collation (on
        PostgreSQL, ``COLLATE "C"``: an ICU database ordered
        ``https://B...`` after ``https://a...``)."""
        if field in self.collated:
            return f"{field}__key"
        if self.dialect.name == "postgres" and self.schema.fields[field].column_type(
                "postgres") == "text":
            return f'{field} COLLATE "C"'
        return field

    def _order(self, sort: str) -> tuple[str, ...]:
        """The columns an order walks. A unique field orders the records alone
        (the id after it could never decide)."""
        if sort == "id":
            return ("u.id",)
        column = f"u.{self.compared(sort)}"
        return (column,) if sort in self.schema.unique else (column, "u.id")

    def _filter_params(self, filters: dict[str, str], q: str | None,
                       where: Sequence[Any]) -> list[Any]:
        params: list[Any] = []
        if q is not None:
            prefix = fold(q)
            end = prefix_end(prefix)
            params += [prefix] if end is None else [prefix, end]
        kinds = self.schema.fields
        params += [kinds[field].collate(value) for field, value in filters.items()]
        for condition in where:         # (``asking.Condition``: its value collated)
            if condition.op == "in":
                params += condition.collated
            elif condition.op != "exists":
                params.append(condition.collated)
        return [_sendable(p) for p in params]

    def _page_sql(self, columns: str | None, sort: str, reverse: bool, has_after: bool,
                  filters: tuple[str, ...], has_q: bool, has_end: bool,
                  asked: tuple[tuple[str, str, Any], ...]) -> str:
        mark = self.dialect.mark
        source, where = self._filtered(filters, has_q, has_end, asked)
        walked = self._order(sort)
        if has_after:
            op = "<" if reverse else ">"
            if len(walked) == 1:
                where.append(f"{walked[0]} {op} {mark}")
            else:                       # a row value: (name__key, id) > (?, ?)
                where.append(f"({', '.join(walked)}) {op} ({', '.join(mark for _ in walked)})")
        direction = " DESC" if reverse else ""
        order = ", ".join(column + direction for column in walked)
        selected = columns or ", ".join(f"u.{c}" for c in self.columns.split(", "))
        return f"SELECT {selected} FROM {source}{_where(where)} ORDER BY {order} LIMIT {mark}"

    def _filtered(self, filters: tuple[str, ...], has_q: bool, has_end: bool,
                  asked: tuple[tuple[str, str, Any], ...] = ()) -> tuple[str, list[str]]:
        """The rows a query starts from, and its filters' conditions, then
        those ``asked`` (``_shapes``: what ``asking.Condition.holds`` says)."""
        mark = self.dialect.mark
        source, where = f"{self.name} AS u", []
        if has_q:
            found = f"word >= {mark}" + (f" AND word < {mark}" if has_end else "")
            source = (f"(SELECT DISTINCT {self.owner} FROM {self.words_table} WHERE {found}) "
                      f"AS m {self.dialect.join} {self.name} AS u ON u.id = m.{self.owner}")
        for field in filters:
            if field not in self.schema.filters:
                raise TypeError(f"{self.name} cannot be filtered by {field}")
            where.append(f"u.{self.compared(field)} = {mark}")
        for field, op, more in asked:
            column = "u.id" if field == "id" else f"u.{self.compared(field)}"
            if op == "exists":          # (more: whether it must have one)
                where.append(f"{column} IS {'NOT ' if more else ''}NULL")
            elif op == "in":            # (more: how many values)
                where.append(f"{column} IN ({', '.join(mark for _ in range(more))})")
            else:                       # (NULL compares to nothing: no value, not kept)
                where.append(f"{column} {_SQL_OPERATORS[op]} {mark}")
        return source, where


_SQL_OPERATORS = {"eq": "=", "ne": "<>", "gt": ">", "gte": ">=", "lt": "<", "lte": "<="}


def _shapes(where: Sequence[Any]) -> tuple[tuple[str, str, Any], ...]:
    """What a page's conditions make of its SQL: field, operator, and an
    ``in``'s number of values or an ``exists``'s answer."""
    return tuple((c.field, c.op, len(c.collated) if c.op == "in" else
                  c.value if c.op == "exists" else None) for c in where)


def _where(conditions: list[str]) -> str:
    return " WHERE " + " AND ".join(conditions) if conditions else ""


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
        return list(map(self._make, db.execute(*self.table.page(**arguments))))

    def count(self, *, q: str | None = None, where: Sequence[Any] = (), **filters: Any) -> int:
        query, params = self.table.count(q=q, where=where, **filters)
        return int(self._read(None, lambda db: db.execute(query, params).fetchone()[0]))

    def last_id(self) -> int:
        return int(self._read(None, lambda db: db.execute(self.table.last_id).fetchone()[0]))

    def changes(self, *, after: int = 0, limit: int = 100) -> builtins.list[Change]:
        rows = self._read((self.table.changes, after, limit), lambda db: db.execute(
            self.table.changes, (after, limit)).fetchall())
        return [Change(row[0], row[1], None if row[-1] is None else self._make(row[1:]))
                for row in rows]

    def position(self) -> int:
        return int(self._read(self.table.position, lambda db: db.execute(
            self.table.position).fetchone()[0]))

    def wait(self, after: int, timeout: float) -> None:
        self.storage.listen()
        self.watch.wait(after, timeout)

    def stop_waiting(self) -> None:
        self.watch.close()

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
        self.watch.notify()


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
