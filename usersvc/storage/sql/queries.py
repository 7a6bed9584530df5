"""The queries of a SQL store's pages and counts, and of the feed and a
restore (``PageQueries``, a ``Table``'s ``pages``), made once per shape.

A page in any order is a walk of one index (``ddl``: one on ``(<field>__key,
id, version)`` for each sort and filter) from the last page's position
(keyset paging): O(log N + limit); a search starts from the words that
match (``q <= word < prefix_end(q)``) and sorts only those. In an
optional sort's order, a page walks its values, and then, if it is not
full, its records without one, in id order, in a second statement
(``rest``); one in the union of both walks read both whole, and sorted
them: 1.8 times a page in a required sort's order on SQLite.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ... import fields
from ..protocol import Position


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
    """The statements of many records at once, made once for one ``Table``
    (its ``pages``): ``RecordStore.list``'s and ``count``'s, made once per
    shape, the feed's and a restore's."""

    def __init__(self, table: Any) -> None:
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
             after: Position | None = None, q: str | None = None,
             columns: tuple[str, ...] | None = None, where: Sequence[Any] = (),
             **filters: Any) -> tuple[str, list[Any]]:
        """The query for ``RecordStore.list`` with these arguments, and its
        parameters; ``columns=("u.id", "u.version")`` asks only for each
        record's id and version. In an optional sort's order: its values'
        walk, or the walk of its records without one past them (a position
        without a value); ``rest`` says what follows a short page."""
        params = self._filter_params(filters, q, where)
        past_values = type(after) is tuple and after[0] is None
        if past_values and after[1] is None:    # (past the values, from the first: ``rest``)
            after = None
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
