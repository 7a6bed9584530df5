"""What a SQL store does with many records at once: the statements of its pages and counts, of the
feed and a restore (``PageQueries``, a ``Table``'s ``pages``), made once per shape, and the reads
that run them (``SQLBulk``, a ``SQLRecords``'s ``bulk``).

A page in any order is a walk of one index (``ddl``: one on ``(<field>__key, id, version)`` for each
sort and filter) from the last page's keyset (keyset paging): O(log N + limit); a search starts from
the words that match (``q <= word < prefix_end(q)``) and sorts only those. In an optional sort's
order, a page walks its values, and then, if it is not full, its records without one, in id order,
in a second statement (``rest``); one in the union of both walks read both whole, and sorted them:
1.8 times a page in a required sort's order on SQLite.
"""
from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ... import fields
from ..errors import Conflict, WriteHealth
from ..feed import Change, Listener, Listeners, Stop
from ..protocol import Keyset
from ..stored import check_fresh_ids

if TYPE_CHECKING:       # (``collection``'s ``Table``, held to it; that module imports this one)
    from . import ddl

    class Table(ddl.Table, Protocol):     # (what ``ddl`` asks of one, and what these ask)
        columns: str
        written: list[str]
        stored_as: tuple[str, ...]
        pages: PageQueries

        def row(self, values: Sequence[Any]) -> builtins.list[Any]: ...

T = TypeVar("T")


class SQLStorage(Protocol):
    """What a SQL store's collections ask of the store (``SQLiteStorage``, ``PostgresStorage``,
    which make them, and so are held to it): what its driver raises for a unique value taken, its
    feed's history token, its listeners and ``announce_commits``, its writes' health, and a write
    transaction of its own (a restore's)."""

    @property
    def unique_violation(self) -> type[Exception]: ...

    @property
    def history(self) -> str: ...

    @property
    def commits(self) -> Listeners: ...

    @property
    def health(self) -> WriteHealth: ...

    def transaction(self) -> AbstractContextManager[Any]: ...

    def announce_commits(self, listener: Listener) -> Stop: ...


class SQLConnections(Protocol):
    """Where a SQL store's collections read, and write outside a step
    (SQLite's ``Connections``; the PostgreSQL store itself): ``read(db)``
    on a connection (``cache_as``: SQLite's fast build's), ``op(db)``
    committed on its own."""

    def read(self, cache_as: Any, read: Callable[[Any], T]) -> T: ...

    def commit(self, op: Callable[[Any], T]) -> T: ...


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
    """The statements of many records at once, made once for one ``Table`` (its ``pages``):
    ``RecordStore.list``'s and ``count``'s, made once per shape, the feed's and a restore's."""

    def __init__(self, table: Table) -> None:
        s, m, t, c = table.schema, table.dialect.mark, table.name, table.changes_table
        self.schema, self.dialect, self.name, self.columns = s, table.dialect, t, table.columns
        self.collated, self.words_table, self.owner = table.collated, table.words_table, table.owner
        written, fields = table.written, list(s.fields)
        self.restore = (f"INSERT INTO {t} (id, {', '.join(written)}, version)"
                        f"{' OVERRIDING SYSTEM VALUE' if self.dialect.name == 'postgres' else ''} "
                        f"VALUES ({', '.join(m for _ in range(len(written) + 2))})")
        self.forget_change = f"DELETE FROM {c} WHERE id = {m}"
        self.restore_change = (f"INSERT INTO {c} (seq, id, {', '.join(fields)}, version) "
                               f"VALUES ({', '.join(m for _ in range(len(fields) + 3))})")
        self.changes = (f"SELECT seq, {self.columns} FROM {c} WHERE seq > {m} "
                        f"ORDER BY seq LIMIT {m}")
        self.entry = f"SELECT seq, {self.columns} FROM {c} WHERE id = {m}"
        self.position = f"SELECT coalesce(max(seq), 0) FROM {c}"
        if self.dialect.name == "sqlite":   # AUTOINCREMENT's high-water mark
            self.last_id = f"SELECT coalesce(max(seq), 0) FROM sqlite_sequence WHERE name = '{t}'"
        else:                       # the identity column's sequence
            self.last_id = ("SELECT coalesce(pg_sequence_last_value(pg_get_serial_sequence("
                            f"'{t}', 'id')::regclass), 0)")
        self.select_some = f"SELECT {self.columns} FROM {t} WHERE id IN "
        self._pages: dict[tuple[Any, ...], str] = {}

    def page(self, *, limit: int, sort: str = "id", reverse: bool = False,
             after: Keyset | None = None, q: str | None = None,
             columns: tuple[str, ...] | None = None, where: Sequence[Any] = (),
             **filters: Any) -> tuple[str, list[Any]]:
        """The query for ``RecordStore.list`` with these arguments, and its
        parameters; ``columns=("u.id", "u.version")`` asks only for each
        record's id and version. In an optional sort's order: its values'
        walk, or the walk of its records without one past them (a keyset
        without a value); ``rest`` says what follows a short page."""
        params = self._filter_params(filters, q, where)
        past_values = type(after) is tuple and after[0] is None
        if past_values and after[1] is None:    # type: ignore[index]  # (past_values: a pair)
            after = None        # (past the values, from the first: ``rest``)
        if after is not None:
            if sort == "id":
                params.append(after)
            else:
                assert isinstance(after, tuple)
                params.extend(after[1:] if past_values else after[:len(self._order(sort))])
        params.append(limit)
        shape = (columns, sort, reverse, after is not None, tuple(filters), q is not None,
                 q is not None and prefix_end(fields.fold(q)) is not None, _shapes(where),
                 past_values, sort in self.schema.optional)
        query = self._pages.get(shape)
        if query is None:
            query = self._pages[shape] = self._page_sql(*shape)
        return query, params

    def rest(self, arguments: dict[str, Any], found: int) -> dict[str, Any] | None:
        """The arguments of a page's second walk, in an optional sort's
        order, after its values' walk found ``found`` records: its records
        without a value, from the first (in id order, backwards if
        reversed), as many as the page lacks and as many again as were
        found (each may have lost its value since, and be met again);
        ``None``: the page is whole (full, past the values, in a required
        sort's order, or a range on the sort, which keeps none)."""
        sort, after = arguments.get("sort", "id"), arguments.get("after")
        if (found >= arguments["limit"] or sort not in self.schema.optional
                or type(after) is tuple and after[0] is None
                or any(c.field == sort and c.op in _RANGES for c in arguments.get("where", ()))):
            return None
        return {**arguments, "after": (None, None)}

    def count(self, *, q: str | None = None, where: Sequence[Any] = (),
              **filters: Any) -> tuple[str, list[Any]]:
        """The query for ``RecordStore.count`` with these filters, and its parameters."""
        end = q is not None and prefix_end(fields.fold(q)) is not None
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
            prefix = fields.fold(q)
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

    def _page_sql(self, columns: tuple[str, ...] | None, sort: str, reverse: bool,
                  has_after: bool, filters: tuple[str, ...], has_q: bool, has_end: bool,
                  asked: tuple[tuple[str, str, Any], ...], past_values: bool,
                  optional: bool) -> str:
        mark, op = self.dialect.mark, "<" if reverse else ">"
        source, where = self._filtered(filters, has_q, has_end, asked)
        walked = self._order(sort)
        if past_values:             # (an optional sort's records without a value, by id)
            where += [f"{walked[0]} IS NULL", *[f"u.id {op} {mark}"] * has_after]
            walked = ("u.id",)
        else:
            if optional:            # (its values: NULL is first in SQLite's order)
                where.append(f"{walked[0]} IS NOT NULL")
            if has_after and len(walked) == 1:
                where.append(f"{walked[0]} {op} {mark}")
            elif has_after:             # a row value: (name__key, id) > (?, ?)
                where.append(f"({', '.join(walked)}) {op} ({', '.join(mark for _ in walked)})")
        direction = " DESC" if reverse else ""
        order = ", ".join(column + direction for column in walked)
        selected = ", ".join(columns or (f"u.{c}" for c in self.columns.split(", ")))
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
_RANGES = ("gt", "gte", "lt", "lte")


def _shapes(where: Sequence[Any]) -> tuple[tuple[str, str, Any], ...]:
    """What a page's conditions make of its SQL: field, operator, and an
    ``in``'s number of values or an ``exists``'s answer."""
    return tuple((c.field, c.op, len(c.collated) if c.op == "in" else
                  c.value if c.op == "exists" else None) for c in where)


def _where(conditions: list[str]) -> str:
    return " WHERE " + " AND ".join(conditions) if conditions else ""


LIST_DEFAULTS = dict(limit=100, sort="id", reverse=False, after=None, q=None)


class Read(Protocol):
    """How a read runs, given by its records (``SQLRecords._read``): ``read(cache_as,
    read)`` is ``read(db)``, on one of the store's connections, or in an atomic
    step on its transaction's."""

    def __call__(self, cache_as: Any, read: Callable[[Any], T], /) -> T: ...


class SQLBulk:
    """What one collection of a SQL store does with many records at once
    (its ``SQLRecords``'s ``bulk``, whose methods of ``RecordStore`` and
    ``ChangeFeed`` pass here, with how they read): pages, counts and the
    feed's reads, by the statements of its table's ``pages``
    (``PageQueries``), and a restore."""

    def __init__(self, storage: SQLStorage, table: Table,
                 make: Callable[[Sequence[Any]], Any]) -> None:
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


def _stored(table: Table, values: Sequence[Any]) -> builtins.list[Any]:
    """The fields' values (in the schema's order) as their columns keep them."""
    return table.row(values)[:len(values)] if table.stored_as else list(values)


def _raise_position(table: Table, db: Any, seq: int) -> None:
    """Make ``seq`` the feed's high-water mark, if it is above it
    (SQLite's ``AUTOINCREMENT`` follows the largest ``seq`` inserted)."""
    if table.dialect.name == "postgres":
        db.execute(f"SELECT setval('{table.changes_table}_seq', %s) "
                   f"WHERE %s > (SELECT last_value FROM {table.changes_table}_seq)", (seq, seq))


def _raise_last_id(table: Table, db: Any, last_id: int) -> None:
    """Make ``last_id`` the high-water mark, if it is above it."""
    if table.dialect.name == "sqlite":   # its row exists once a record was inserted; else made
        db.execute(f"INSERT INTO sqlite_sequence (name, seq) SELECT '{table.name}', 0 WHERE "
                   f"NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = '{table.name}')")
        db.execute(f"UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = '{table.name}'",
                   (last_id,))
    else:
        db.execute(f"SELECT setval(pg_get_serial_sequence('{table.name}', 'id'), %s) "
                   f"WHERE %s > ({table.pages.last_id})", (last_id, last_id))
