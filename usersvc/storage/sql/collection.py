"""One collection of a SQL store, the same code for SQLite and PostgreSQL:
its statements (``Table``, made once per dialect) and its records
(``SQLRecords``); many records at once are ``bulk``'s, its tables ``ddl``'s.

Every write is one statement whose text depends only on its shape, every
value a bound parameter. An ``UPDATE`` or ``DELETE`` holds the
precondition in its ``WHERE`` (check and write in one step): only when no
row matched does a second read tell "gone" (404) from "changed" (412).
"""
from __future__ import annotations

import builtins
import copy
import json
from collections.abc import Callable, Sequence
from typing import Any

from ...fields import Field, search_terms
from ...schema import Schema
from ..errors import MAX_ID, Conflict, NotFound, Precondition, StaleVersion
from ..feed import Change, Listener, Stop
from ..stored import Restores
from . import ddl
from .bulk import PageQueries, SQLBulk, SQLConnections, SQLStorage, T
from .dialects import Dialect


def checked_id(schema: Schema, record_id: int) -> None:
    """``NotFound`` for an id no column can hold (1 to ``MAX_ID``), as for
    an id no record has (a larger one is an error to the database)."""
    if not 0 < record_id <= MAX_ID:
        raise NotFound(schema, record_id)


class Table:
    """Everything SQL about one collection, for one dialect, made once (its
    names, columns and one record's statements: ``ddl.statements``); the
    statements of many records at once are its ``pages``'s (``PageQueries``)."""

    def __init__(self, schema: Schema, dialect: Dialect) -> None:
        self.schema, self.dialect, self.name = schema, dialect, schema.plural
        self.collated = schema.collated             # fields with a __key column
        (self.words_table, self.owner, self.changes_table, self.stored_as, self.columns,
         self.written, self.select_one, self.insert, self.delete) = ddl.statements(schema, dialect)
        self._writes: dict[tuple[Any, ...], str] = {}
        self.pages = PageQueries(self)

    def row(self, values: Sequence[Any]) -> list[Any]:
        """The columns a write sets, from the fields' values in the
        schema's order (``row_of``'s, in the order of ``insert``'s columns)."""
        return list(self.row_of(dict(zip(self.schema.fields, values, strict=True))).values())

    def row_of(self, fields: dict[str, Any]) -> dict[str, Any]:
        """The columns that these fields' values set, by name: the values,
        then the collated values and words of those that have them."""
        row, kinds = dict(fields), self.schema.fields
        for f in self.collated:
            if f in fields:
                row[f"{f}__key"] = None if fields[f] is None else kinds[f].collate(fields[f])
        for f, (by_words, whole) in self.schema.searched.items():
            if f in fields:
                row[f"{f}__words"] = self.terms_value(fields[f], by_words, whole)
        for field in self.stored_as:
            if row.get(field) is not None:
                row[field] = kinds[field].to_stored(row[field])
        return row

    def terms_value(self, value: str | None, by_words: bool, whole: bool) -> Any:
        """A ``<field>__words`` value: the distinct folded search terms
        (``fields.search_terms``; in SQLite, as a JSON array)."""
        if value is None:
            return None
        found = sorted(set(search_terms(value, by_words, whole)))
        return found if self.dialect.arrays else json.dumps(found, ensure_ascii=False)

    def update(self, fields: dict[str, Any], record_id: int,
               precondition: Precondition | None) -> tuple[str, list[Any]]:
        """A conditional UPDATE that sets these fields (and their collated and
        words columns) and the next version, and returns the record; no row
        when the record is gone or the precondition fails."""
        derived = self.row_of(fields)
        where, params = self.condition(precondition)
        shape = (tuple(derived), where)
        query = self._writes.get(shape)
        if query is None:
            sets = "".join(f"{column} = {self.dialect.mark}, " for column in derived)
            query = self._writes[shape] = (
                f"UPDATE {self.name} SET {sets}version = version + 1 WHERE id = "
                f"{self.dialect.mark}{where} RETURNING {self.columns}")
        return query, [*derived.values(), record_id, *params]

    def condition(self, precondition: Precondition | None) -> tuple[str, list[Any]]:
        """The WHERE clause that ``Precondition.allows`` is, over ``version``."""
        if precondition is None:
            return "", []
        if precondition.none_match is None or precondition.match == frozenset():
            return " AND false", []         # (``*`` refuses every version; no version matches)
        params: list[Any]
        where, params = "", []
        for versions, negated in ((precondition.match, ""), (precondition.none_match, "NOT ")):
            if versions:
                clause, more = self.dialect.any_of("version", versions)
                where, params = f"{where} AND {negated}{clause}", params + more
        return where, params


def record_maker(schema: Schema) -> Callable[[Sequence[Any]], Any]:
    """How a SQL store makes a record from a row (``id``, the fields,
    ``version``): ``schema.record._make``, with each value read back by its
    kind (``Field.from_stored``) where a kind says more than the value."""
    make: Callable[..., Any] = schema.record._make  # type: ignore[attr-defined]  # (namedtuple's)
    read = [(at, kind.from_stored) for at, kind in enumerate(schema.fields.values(), 1)
            if type(kind).from_stored is not Field.from_stored]
    if not read:
        return make

    def made(row: Sequence[Any]) -> Any:
        values = list(row)
        for at, from_stored in read:
            if values[at] is not None:
                values[at] = from_stored(values[at])
        return make(values)
    return made


class SQLRecords(Restores):
    """One collection of a SQL store: one record's reads and writes are here; what it does
    with many at once (pages, counts, the feed, a restore) is its ``bulk``'s (``SQLBulk``)."""

    db: Any = None          # in an atomic step: its transaction's connection (``bound``)
    bulk_type = SQLBulk     # (``PostgresRecords``: its own)

    def __init__(self, storage: SQLStorage, table: Table, connections: SQLConnections) -> None:
        self.storage, self.table, self.schema = storage, table, table.schema
        self.connections = connections      # SQLite's ``Connections``, or the PostgreSQL store
        self._make = record_maker(self.schema)      # a row to a record
        self.bulk = self.bulk_type(storage, table, self._make)
        self.history = str(storage.history)     # the feed's (read as the store opened)
        self.commits = storage.commits      # told of this process's commits (``Listeners``)

    @property
    def writes_failing(self) -> str | None:
        """Why the store's writes are failing now (a full disk...), or ``None``."""
        return self.storage.health.failing

    def get(self, record_id: int) -> Any:
        checked_id(self.schema, record_id)
        record = self._read((self.table.name, record_id), lambda db: next(
            map(self._make, db.execute(self.table.select_one, (record_id,))), None))
        if record is None:
            raise NotFound(self.schema, record_id)
        return record

    def create(self, **fields: Any) -> Any:
        values = self.schema.values(fields)
        row = self.table.row(values)

        def insert(db: Any) -> Any:
            # Every row read: a RETURNING statement is not done until then.
            (record_id,), = self._unique(db, self.table.insert, row, fields).fetchall()
            return self.schema.record._make((record_id, *values, 1))  # type: ignore[attr-defined]  # (namedtuple's)
        return self._write(insert)

    def update(self, record_id: int, *, precondition: Precondition | None = None,
               **fields: Any) -> Any:
        checked_id(self.schema, record_id)
        self.schema.check_names(fields)
        query, params = self.table.update(fields, record_id, precondition)

        def change(db: Any) -> Any:
            rows = self._unique(db, query, params, fields).fetchall()
            if not rows:
                raise self._why_not(db, record_id)
            return self._make(rows[0])
        return self._write(change)

    def delete(self, record_id: int, *, precondition: Precondition | None = None) -> None:
        checked_id(self.schema, record_id)
        where, params = self.table.condition(precondition)

        def remove(db: Any) -> None:
            if db.execute(self.table.delete + where, [record_id, *params]).rowcount == 0:
                raise self._why_not(db, record_id)
        self._write(remove)

    # -- many records at once: the ``bulk``'s, read as these records read (``_read``)

    def list(self, **arguments: Any) -> builtins.list[Any]:
        return self.bulk.list(self._read, **arguments)

    def position_and_list(self, **arguments: Any) -> tuple[int, builtins.list[Any]]:
        return self.bulk.position_and_list(self._read, **arguments)

    def count(self, **filters: Any) -> int:
        return self.bulk.count(self._read, **filters)

    def last_id(self) -> int:
        return self.bulk.last_id(self._read)

    def changes(self, *, after: int = 0, limit: int = 100) -> builtins.list[Change]:
        return self.bulk.changes(self._read, after, limit)

    def entry(self, record_id: int) -> Change | None:
        return self.bulk.entry(self._read, record_id)

    def position(self) -> int:
        return self.bulk.position(self._read)

    def _restore(self, records: Sequence[Any], changes: Sequence[Change], last_id: int) -> None:
        self.bulk.restore(records, changes, last_id)   # (its own transaction, never a step's)

    def announce_commits(self, listener: Listener) -> Stop:
        """``protocol.CommitsAnnounced``, for these records served alone:
        their store's announcements (of every collection it holds)."""
        return self.storage.announce_commits(listener)

    def bound(self, db: Any) -> SQLRecords:
        """These records, reading and writing in ``db``'s transaction (an
        atomic step's, which the store commits or undoes: ``served.Step``)."""
        records = copy.copy(self)
        records.db = db
        return records

    def _read(self, cache_as: Any, read: Callable[[Any], T]) -> T:
        if self.db is not None:         # in an atomic step: its transaction
            return read(self.db)
        return self.connections.read(cache_as, read)

    def _write(self, op: Callable[[Any], T]) -> T:
        if self.db is not None:         # in an atomic step: its transaction
            return op(self.db)
        done = self.connections.commit(op)
        if self.commits.listeners:
            self.commits.announce(self.schema.plural)
        return done

    def _unique(self, db: Any, query: str, params: Sequence[Any], fields: dict[str, Any]) -> Any:
        """``db.execute(query, params)``; a unique index's refusal as the
        ``Conflict`` of the field it names."""
        try:
            return db.execute(query, params)
        except self.storage.unique_violation as e:
            # SQLite names the column ("UNIQUE constraint failed:
            # users.email__key"), PostgreSQL the index (users_email_unique).
            named = e.diag.constraint_name if hasattr(e, "diag") else str(e).rpartition(" ")[2]
            t = self.table.name
            for field in self.schema.unique:
                if named in (f"{t}.{field}", f"{t}.{field}__key", f"{t}_{field}_unique"):
                    raise Conflict.taken(self.schema, field, fields.get(field)) from None
            raise

    def _why_not(self, db: Any, record_id: int) -> Exception:
        """No row matched a conditional write: gone, or changed?"""
        if db.execute(self.table.select_one, (record_id,)).fetchone() is None:
            return NotFound(self.schema, record_id)
        return StaleVersion(record_id)
