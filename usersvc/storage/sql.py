"""The queries of a collection, generated from its schema for SQLite and
for PostgreSQL, in this one place: ``Table(schema, dialect)`` (what a store
makes of the schema at open, its tables, indexes and triggers, is ``ddl``'s).

The tables, for a schema named ``user`` with plural ``users``:

- ``users``: ``id``, each field by name (its type; ``NOT NULL`` unless
  optional), ``version``, and, kept by the store beside each value, what
  SQL cannot compute as Python does: ``<field>__key``, the case-folded value
  of a text field that is unique, filtered, sorted or searched whole; and
  ``<field>__words``, the case-folded words of a ``words`` field
  (``fields.words``);
- ``user_words (word, user_id)``: every search key of every record (its
  words, and its ``prefixes`` fields' keys), kept by triggers, so that a
  ``q`` search is one range of its key, ``q <= word < prefix_end(q)``;
- ``user_changes``: each record at the position ``seq`` of its latest
  change, with its fields (none: deleted), kept by triggers in every
  write's transaction (``feed``).

Indexes: a unique one on the key (or the integer) of each unique field; one
on ``(<field>__key, id, version)`` for each sort and each filter that is not
unique, so a page's ids and versions come from the index alone. Every key
compares in code point order (SQLite's ``BINARY``, PostgreSQL's ``COLLATE
"C"``), as Python's ``str`` does, so every store gives the same order. A page
in any order is a walk of one index from the last page's position (keyset
paging): O(log N + limit); a search starts from the words that match and
sorts only those: O(log N + matches).

Records are read by name: every query selects
``id, <fields>, version``, the order of ``schema.record``. Every value is a
bound parameter; the text of a query depends only on its shape.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..fields import words
from ..validation import Schema
from . import Position


def prefix_end(prefix: str) -> str | None:
    """The least string above every string that starts with ``prefix``, for
    an index range ``prefix <= key < prefix_end(prefix)`` in code point order
    (``None``: there is none, every string from ``prefix`` on qualifies)."""
    stripped = prefix.rstrip("\U0010ffff")
    if not stripped:
        return None
    following = ord(stripped[-1]) + 1
    if 0xD800 <= following <= 0xDFFF:      # surrogates are not text: skip them
        following = 0xE000
    return stripped[:-1] + chr(following)


class Dialect:
    """What differs between the two databases, as fragments of SQL."""

    def any_of(self, column: str, values: frozenset[int]) -> tuple[str, list[Any]]:
        """``column`` is one of ``values``: the condition and its parameters."""
        return f"{column} IN ({', '.join(self.mark for _ in values)})", sorted(values)

    name: str
    mark: str               # the driver's placeholder
    join: str               # how the matching words join their records
    types: dict[str, str]   # a field's type -> the column's
    key_type: str
    words_type: str
    id_column: str

    def words_value(self, value: str | None) -> Any:
        """A ``<field>__words`` value: the distinct case-folded words."""
        return None if value is None else sorted(set(words(value)))


class SQLiteDialect(Dialect):
    name = "sqlite"
    mark = "?"
    # SQLite's planner takes a CROSS JOIN's tables in the order written: the
    # matching words first, then their records by id.
    join = "CROSS JOIN"
    types = {"text": "TEXT", "integer": "INTEGER"}
    key_type = "TEXT"
    words_type = "TEXT"             # a JSON array
    id_column = "id INTEGER PRIMARY KEY AUTOINCREMENT"   # never an id again

    def words_value(self, value: str | None) -> Any:
        found = super().words_value(value)
        return None if found is None else json.dumps(found, ensure_ascii=False)


class PostgresDialect(Dialect):
    name = "postgres"
    mark = "%s"
    join = "JOIN"
    types = {"text": "text", "integer": "bigint"}
    key_type = 'text COLLATE "C"'
    words_type = "text[]"
    id_column = "id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY"

    def any_of(self, column: str, values: frozenset[int]) -> tuple[str, list[Any]]:
        return f"{column} = ANY({self.mark})", [sorted(values)]     # one array: one shape


SQLITE, POSTGRES = SQLiteDialect(), PostgresDialect()


class Table:
    """Everything SQL about one collection, for one dialect, made once."""

    def __init__(self, schema: Schema, dialect: Dialect) -> None:
        self.schema, self.dialect = schema, dialect
        s, d, m = schema, dialect, dialect.mark
        self.name = t = s.plural
        self.words_table = f"{s.name}_words"
        self.owner = f"{s.name}_id"                 # the words table's record id
        self.changes_table = c = f"{s.name}_changes"
        self.keys = s.keyed                          # fields with a __key column
        self.derived = ([f"{f}__key" for f in self.keys] + [f"{f}__words" for f in s.words])
        fields = list(s.fields)
        self.columns = ", ".join(["id", *fields, "version"])      # schema.record's order
        written = [*fields, *self.derived]
        self.select_one = f"SELECT {self.columns} FROM {t} WHERE id = {m}"
        self.select_some = f"SELECT {self.columns} FROM {t} WHERE id IN "
        self.insert = (f"INSERT INTO {t} ({', '.join(written)}, version) "
                       f"VALUES ({', '.join(m for _ in written)}, 1) RETURNING id")
        self.restore = (f"INSERT INTO {t} (id, {', '.join(written)}, version)"
                        f"{' OVERRIDING SYSTEM VALUE' if d is POSTGRES else ''} "
                        f"VALUES ({', '.join(m for _ in range(len(written) + 2))})")
        self.exists = f"SELECT 1 FROM {t} WHERE id = {m}"
        self.forget_change = f"DELETE FROM {c} WHERE id = {m}"
        self.restore_change = (f"INSERT INTO {c} (seq, id, {', '.join(fields)}, version) "
                               f"VALUES ({', '.join(m for _ in range(len(fields) + 3))})")
        self.changes = (f"SELECT seq, {self.columns} FROM {c} WHERE seq > {m} "
                        f"ORDER BY seq LIMIT {m}")
        self.position = f"SELECT coalesce(max(seq), 0) FROM {c}"
        if d is SQLITE:     # AUTOINCREMENT's high-water mark: the largest id ever handed out
            self.last_id = f"SELECT coalesce(max(seq), 0) FROM sqlite_sequence WHERE name = '{t}'"
        else:               # the identity column's sequence
            self.last_id = ("SELECT coalesce(pg_sequence_last_value(pg_get_serial_sequence("
                            f"'{t}', 'id')::regclass), 0)")
        self._pages: dict[tuple[Any, ...], str] = {}
        self._writes: dict[tuple[Any, ...], str] = {}

    # -- values -----------------------------------------------------------

    def row(self, values: Sequence[Any]) -> list[Any]:
        """The columns a write sets, from the fields' values in the
        schema's order: the values, their keys, their words."""
        return list(self.row_of(dict(zip(self.schema.fields, values))).values())

    def row_of(self, fields: dict[str, Any]) -> dict[str, Any]:
        """The columns that these fields' values set, by name: the values,
        then the keys and words of those that have them."""
        row = dict(fields)
        for field in self.keys:
            if field in fields:
                row[f"{field}__key"] = None if fields[field] is None else fields[field].casefold()
        for field in self.schema.words:
            if field in fields:
                row[f"{field}__words"] = self.dialect.words_value(fields[field])
        return row

    def update(self, fields: dict[str, Any], record_id: int,
               precondition: Any) -> tuple[str, list[Any]]:
        """A conditional UPDATE that sets these fields (and their key and
        words columns) and the next version, and returns the record; no row
        when the record is gone or the precondition fails."""
        derived = self.row_of(fields)
        where, params = self._condition(precondition)
        shape = ("update", tuple(derived), where)
        query = self._writes.get(shape)
        if query is None:
            sets = "".join(f"{column} = {self.dialect.mark}, " for column in derived)
            query = self._writes[shape] = (
                f"UPDATE {self.name} SET {sets}version = version + 1 WHERE id = "
                f"{self.dialect.mark}{where} RETURNING {self.columns}")
        return query, [*derived.values(), record_id, *params]

    def delete(self, record_id: int, precondition: Any) -> tuple[str, list[Any]]:
        """A conditional DELETE; no row deleted when the record is gone or the
        precondition fails."""
        where, params = self._condition(precondition)
        return f"DELETE FROM {self.name} WHERE id = {self.dialect.mark}{where}", [record_id, *params]

    def _condition(self, precondition: Any) -> tuple[str, list[Any]]:
        """The WHERE clause that ``Precondition.allows`` is, over ``version``."""
        if precondition is None:
            return "", []
        where, params = "", []
        if precondition.match is not None:
            if not precondition.match:
                return " AND false", []
            clause, params = self.dialect.any_of("version", precondition.match)
            where = f" AND {clause}"
        if precondition.none_match is None:
            return " AND false", []
        if precondition.none_match:
            clause, more = self.dialect.any_of("version", precondition.none_match)
            where, params = f"{where} AND NOT {clause}", params + more
        return where, params

    # -- pages and counts --------------------------------------------------

    def page(self, *, limit: int, sort: str = "id", reverse: bool = False,
             after: Position | None = None, q: str | None = None, columns: str | None = None,
             **filters: str) -> tuple[str, list[Any]]:
        """The query for ``RecordStore.list`` with these arguments, and its
        parameters; ``columns="u.id, u.version"`` asks only for each
        record's id and version."""
        params = self._filter_params(filters, q)
        if after is not None:
            if sort == "id":
                params.append(after)
            else:
                assert isinstance(after, tuple)
                params.extend(after[:len(self._order(sort))])
        params.append(limit)
        shape = (columns, sort, reverse, after is not None, tuple(filters), q is not None,
                 q is not None and prefix_end(q.casefold()) is not None)
        query = self._pages.get(shape)
        if query is None:
            query = self._pages[shape] = self._page_sql(*shape)
        return query, params

    def count(self, *, q: str | None = None, **filters: str) -> tuple[str, list[Any]]:
        """The query for ``RecordStore.count`` with these filters, and its parameters."""
        end = q is not None and prefix_end(q.casefold()) is not None
        source, where = self._filtered(tuple(filters), q is not None, end)
        return f"SELECT count(*) FROM {source}{_where(where)}", self._filter_params(filters, q)

    def _order(self, sort: str) -> tuple[str, ...]:
        """The columns an order walks. A unique key orders the records alone
        (the id after it could never decide)."""
        if sort == "id":
            return ("u.id",)
        return (f"u.{sort}__key",) if sort in self.schema.unique else (f"u.{sort}__key", "u.id")

    def _filter_params(self, filters: dict[str, str], q: str | None) -> list[Any]:
        params: list[Any] = []
        if q is not None:
            prefix = q.casefold()
            end = prefix_end(prefix)
            params += [prefix] if end is None else [prefix, end]
        params += [value.casefold() for value in filters.values()]
        return params

    def _page_sql(self, columns: str | None, sort: str, reverse: bool, has_after: bool,
                  filters: tuple[str, ...], has_q: bool, has_end: bool) -> str:
        mark = self.dialect.mark
        source, where = self._filtered(filters, has_q, has_end)
        keys = self._order(sort)
        if has_after:
            op = "<" if reverse else ">"
            if len(keys) == 1:
                where.append(f"{keys[0]} {op} {mark}")
            else:                       # a row value: (name__key, id) > (?, ?)
                where.append(f"({', '.join(keys)}) {op} ({', '.join(mark for _ in keys)})")
        direction = " DESC" if reverse else ""
        order = ", ".join(key + direction for key in keys)
        selected = columns or ", ".join(f"u.{c}" for c in self.columns.split(", "))
        return f"SELECT {selected} FROM {source}{_where(where)} ORDER BY {order} LIMIT {mark}"

    def _filtered(self, filters: tuple[str, ...], has_q: bool,
                  has_end: bool) -> tuple[str, list[str]]:
        """The rows a query starts from, and its filters' conditions."""
        mark = self.dialect.mark
        source, where = f"{self.name} AS u", []
        if has_q:
            found = f"word >= {mark}" + (f" AND word < {mark}" if has_end else "")
            source = (f"(SELECT DISTINCT {self.owner} FROM {self.words_table} WHERE {found}) "
                      f"AS m {self.dialect.join} {self.name} AS u ON u.id = m.{self.owner}")
        for field in filters:
            if field not in self.schema.filters:
                raise TypeError(f"{self.name} cannot be filtered by {field}")
            where.append(f"u.{field}__key = {mark}")
        return source, where


def _where(conditions: list[str]) -> str:
    return " WHERE " + " AND ".join(conditions) if conditions else ""
