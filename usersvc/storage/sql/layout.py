"""What a SQL store holds beside its collections' records, as it opens
(both SQL stores, under the lock that makes processes open one at a time):
the layout a new database is made with (``LAYOUT``, ``layout``), the
store's history token (``read_history``), and the record of each
collection's declaration (``COLLECTIONS``): a new collection made and
recorded, one recorded as declared left as it is (``opened``).

Nothing else is needed to open a database this usersvc made, with the
collections it made them for; the rest is loaded when it is met: a
database of an older layout is brought up by its store's ``migrations``
(history, frozen), and a collection recorded otherwise by ``evolution``,
which compares the two and changes what it can in place, or refuses.
"""
from __future__ import annotations

import json
from typing import Any

from ...schema import Schema
from ..stored import SchemaMismatch, declaration, schema_from
from . import ddl
from .collection import Table
from .dialects import SQLITE, Dialect

#: The layout a new database is made at (SQLite's ``PRAGMA user_version``,
#: PostgreSQL's ``usersvc_schema``): the length of each store's ``migrations``,
#: which bring an older one here.
LAYOUT = 6

#: The table of the collections' declarations, and of what was made for each.
COLLECTIONS = "usersvc_collections"


def layout(dialect: Dialect) -> list[str]:
    """What a new database is made with, beside its collections' tables:
    the table of their declarations, the idempotency keys' (layout 5's) and
    the history token's, the token made at random (layout 6's). Today's
    statements, as the migrations leave an older database
    (``tests/test_evolution.py`` holds the two alike)."""
    sqlite = dialect is SQLITE
    text, real, integer, blob = (("TEXT", "REAL", "INTEGER", "BLOB") if sqlite
                                 else ("text", "double precision", "integer", "bytea"))
    token = ("lower(hex(randomblob(6)))" if sqlite
             else "substr(md5(random()::text || clock_timestamp()::text), 1, 12)")
    return [f"""CREATE TABLE {COLLECTIONS} (
                    plural      {text} PRIMARY KEY,
                    declaration {text} NOT NULL,   -- stored.declaration(), JSON
                    objects     {text} NOT NULL    -- {{name: [kind, table, statement]}}
                )""",
            f"""CREATE TABLE usersvc_keys (
                    owner       {text} NOT NULL,   -- a token's digest, or ''
                    key         {text} NOT NULL,   -- the Idempotency-Key
                    fingerprint {text} NOT NULL,   -- the request's
                    expires     {real} NOT NULL,   -- Unix time
                    status      {integer} NOT NULL,   -- the answer
                    headers     {text} NOT NULL,
                    body        {blob} NOT NULL,
                    vary        {text} NOT NULL,
                    PRIMARY KEY (owner, key)
                ){" WITHOUT ROWID" if sqlite else ""}""",
            "CREATE TABLE usersvc_history (token text NOT NULL)",
            f"INSERT INTO usersvc_history (token) VALUES ({token})"]


def read_history(db: Any) -> str:
    """The store's history token (``usersvc_history``, made with the layout):
    read once, when the store opens (``protocol.ChangeFeed.history``)."""
    return str(db.execute("SELECT token FROM usersvc_history").fetchone()[0])


def declared(db: Any, dialect: Dialect) -> list[Schema]:
    """The collections a store holds, as their recorded declarations say."""
    if not _exists(db, COLLECTIONS, dialect):
        return []
    rows = db.execute(f"SELECT declaration FROM {COLLECTIONS} ORDER BY plural").fetchall()
    return [schema_from(json.loads(row[0])) for row in rows]


def opened(db: Any, table: Table) -> Any:
    """``table``'s collection as declared, on the connection ``db`` inside
    the caller's transaction: made, if it is new (its tables, then its
    indexes, functions and triggers, and its declaration recorded); or
    found recorded as declared, each object made as ``ddl`` makes it.
    Either way ``None``; else the row recorded (its declaration and
    objects, as JSON), which ``evolution.evolve`` brings up or refuses."""
    mark, plural = table.dialect.mark, table.name
    row = db.execute(f"SELECT declaration, objects FROM {COLLECTIONS} WHERE plural = {mark}",
                     (plural,)).fetchone()
    want, wanted = declaration(table.schema), ddl.objects(table)
    objects = {name: list(made) for name, made in wanted.items()}
    if row is not None:
        return None if (json.loads(row[0]), json.loads(row[1])) == (want, objects) else row
    if _exists(db, plural, table.dialect):
        raise SchemaMismatch(f"{plural}: the database has a table {plural} that usersvc "
                             "did not make; store the collection elsewhere")
    for statement in ddl.create_tables(table):
        db.execute(statement)
    for _, made in ddl.in_making_order(wanted):
        db.execute(made.sql)
    db.execute(f"INSERT INTO {COLLECTIONS} (declaration, objects, plural) "
               f"VALUES ({mark}, {mark}, {mark})",
               (json.dumps(want, sort_keys=True), json.dumps(objects, sort_keys=True), plural))
    return None


def _exists(db: Any, name: str, dialect: Dialect) -> bool:
    mark = dialect.mark
    if dialect is SQLITE:
        query = f"SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = {mark}"
    else:
        query = ("SELECT 1 FROM pg_tables WHERE schemaname = current_schema() "
                 f"AND tablename = {mark}")
    return db.execute(query, (name,)).fetchone() is not None


__all__ = ["COLLECTIONS", "LAYOUT", "declared", "layout", "opened", "read_history"]
