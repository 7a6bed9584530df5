"""The SQLite store's schema: each version's statements, and ``migrate``.

``MIGRATIONS[n]`` takes a database from schema version n to n + 1; the
version lives in ``PRAGMA user_version``. Every step a database lacks runs
in one transaction with the version bumps: all of them, or none. Version 2
holds what listing and search need (``sql`` says what each part is for):
``name_key``, ``name_words`` and the ``user_words`` table, kept in step by
triggers. Version 3 holds the change feed (``feed``): ``user_changes``,
one row per user ever created, at the position of its latest change, kept
by triggers inside every write's transaction.
"""
from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager

from . import SchemaTooNew, StoreUnavailable, sql


def name_columns(name: str) -> tuple[str, str]:
    """``name_key`` and ``name_words`` (a JSON array) for a name."""
    return name.casefold(), json.dumps(sql.name_words(name), ensure_ascii=False)


def _fill_name_columns(db: sqlite3.Connection) -> None:
    """Give every existing user its ``name_key`` and ``name_words``."""
    rows = db.execute("SELECT id, name FROM users").fetchall()
    db.executemany("UPDATE users SET name_key = ?, name_words = ? WHERE id = ?",
                   [(*name_columns(name), user_id) for user_id, name in rows])


_WORDS_OF = {   # a row's search keys: its name's words and its e-mail key
    row: f"SELECT value FROM json_each({row}.name_words) UNION SELECT {row}.email_key"
    for row in ("NEW", "OLD")}
_ADD_WORDS = f"INSERT OR IGNORE INTO user_words (word, user_id) SELECT value, NEW.id FROM ({_WORDS_OF['NEW']});"
_DROP_WORDS = f"DELETE FROM user_words WHERE user_id = OLD.id AND word IN ({_WORDS_OF['OLD']});"

#: Each entry upgrades the schema by one version: statements, and the
#: functions that fill what SQL cannot compute (Python's ``str.casefold``).
MIGRATIONS: list[Sequence[sql.Step]] = [
    # 0 -> 1: the users table.
    [
        """CREATE TABLE users (
               id        INTEGER PRIMARY KEY AUTOINCREMENT,
               name      TEXT    NOT NULL,
               email     TEXT    NOT NULL,
               email_key TEXT    NOT NULL UNIQUE,  -- the case-folded e-mail
               version   INTEGER NOT NULL
           )""",
    ],
    # 1 -> 2: sorting by name and searching (see ``sql``).
    [
        "ALTER TABLE users ADD COLUMN name_key TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE users ADD COLUMN name_words TEXT NOT NULL DEFAULT '[]'",
        _fill_name_columns,
        # The name order's index holds the version too, so that a page's ids
        # and versions (``_page``) are read from it alone. (The e-mail order
        # reads them from the table: an index of its own would cost every
        # write more than its pages save.)
        "CREATE INDEX users_name ON users (name_key, id, version)",
        """CREATE TABLE user_words (
               word    TEXT    NOT NULL,
               user_id INTEGER NOT NULL,
               PRIMARY KEY (word, user_id)
           ) WITHOUT ROWID""",
        "INSERT OR IGNORE INTO user_words (word, user_id)"
        " SELECT w.value, u.id FROM users AS u, json_each(u.name_words) AS w"
        " UNION ALL SELECT email_key, id FROM users",
        f"CREATE TRIGGER user_words_insert AFTER INSERT ON users BEGIN {_ADD_WORDS} END",
        f"CREATE TRIGGER user_words_delete AFTER DELETE ON users BEGIN {_DROP_WORDS} END",
        "CREATE TRIGGER user_words_update AFTER UPDATE OF name_words, email_key ON users"
        " WHEN OLD.name_words IS NOT NEW.name_words OR OLD.email_key IS NOT NEW.email_key"
        f" BEGIN {_DROP_WORDS} {_ADD_WORDS} END",
    ],
    # 2 -> 3: the change feed: each user's row at the position of its
    # latest change, with the user as it is then (none: deleted), so that a
    # page of the feed is one walk of one table in position order. REPLACE
    # moves the row to a new AUTOINCREMENT position, above every one ever
    # used. The users there are given positions in id order.
    [
        """CREATE TABLE user_changes (
               seq     INTEGER PRIMARY KEY AUTOINCREMENT,
               id      INTEGER NOT NULL UNIQUE,
               name    TEXT,
               email   TEXT,
               version INTEGER
           )""",
        "INSERT INTO user_changes (id, name, email, version)"
        " SELECT id, name, email, version FROM users ORDER BY id",
        *(f"CREATE TRIGGER user_changes_{op.lower()} AFTER {op} ON users BEGIN"
          f" INSERT OR REPLACE INTO user_changes (id, name, email, version) VALUES ({row}); END"
          for op, row in (("INSERT", "NEW.id, NEW.name, NEW.email, NEW.version"),
                          ("UPDATE", "NEW.id, NEW.name, NEW.email, NEW.version"),
                          ("DELETE", "OLD.id, NULL, NULL, NULL"))),
    ],
]


def migrate(db: sqlite3.Connection, migrations: Sequence[Sequence[sql.Step]] = MIGRATIONS) -> int:
    """Bring the schema up to ``len(migrations)``; returns the version found.

    The check and every step run under one write lock, so two processes that
    open a new file together migrate it once.
    """
    db.execute("BEGIN IMMEDIATE")
    try:
        found = db.execute("PRAGMA user_version").fetchone()[0]
        SchemaTooNew.check(found, len(migrations))
        for version in range(found, len(migrations)):
            sql.apply(db, migrations[version])
            db.execute(f"PRAGMA user_version = {version + 1}")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
    return found


def prepare(session: Callable[[], AbstractContextManager[sqlite3.Connection]], *,
            wal: bool, busy_timeout: float) -> None:
    """WAL mode and the current schema, on a connection of ``session``.
    Processes opening a new file together can find it locked here without
    SQLite calling the busy handler: a busy answer (``StoreUnavailable``)
    is tried again, until the busy timeout."""
    deadline = time.monotonic() + busy_timeout
    pause = 0.001
    while True:
        try:
            with session() as db:
                if wal:
                    db.execute("PRAGMA journal_mode = WAL")
                migrate(db)
            return
        except StoreUnavailable:
            if time.monotonic() + pause > deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.1)
