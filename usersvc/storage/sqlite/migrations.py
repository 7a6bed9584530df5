"""The SQLite store's history: each release's layout change, and ``migrate``.

``MIGRATIONS[n]`` takes a database from layout version n to n + 1 (``PRAGMA
user_version``). They are history, importing nothing of today's code, so
they never change when today's schemas do; a new file is made at today's
layout instead (``layout.layout``, by the store, which imports this
module only for a file of an older layout) and its collections from their
schemas (``layout.opened``). 1 to 3
are release 0.1.0's (users; sorting and searching; the change feed); 4
records declarations in ``usersvc_collections`` and makes ``users`` again
with ``<field>__key`` columns, everything kept; 5 adds ``usersvc_keys``
(``keys``); 6 adds ``usersvc_history``, the feed's history token. The
steps a database lacks run in one transaction.
"""
from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from ..sql import history
from ..stored import Step, upgrade


def _fill_name_columns(db: sqlite3.Connection) -> None:
    """Give every existing user its ``name_key`` and ``name_words``."""
    rows = db.execute("SELECT id, name FROM users").fetchall()
    db.executemany("UPDATE users SET name_key = ?, name_words = ? WHERE id = ?",
                   [(name.casefold(), json.dumps(history.words(name), ensure_ascii=False),
                     user_id) for user_id, name in rows])


_WORDS_OF = {   # a row's search keys: its name's words and its e-mail key
    row: f"SELECT value FROM json_each({row}.name_words) UNION SELECT {row}.email_key"
    for row in ("NEW", "OLD")}
_ADD_WORDS = ("INSERT OR IGNORE INTO user_words (word, user_id) SELECT value, NEW.id FROM "
              f"({_WORDS_OF['NEW']});")
_DROP_WORDS = f"DELETE FROM user_words WHERE user_id = OLD.id AND word IN ({_WORDS_OF['OLD']});"


def _remake_users(db: sqlite3.Connection) -> None:
    """Version 4's ``users``: made again, SQLite's way (a new table, the rows
    copied, the old one dropped, the new one renamed), keeping every id,
    version and the AUTOINCREMENT high-water mark (which the drop forgets)."""
    row = db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'users'").fetchone()
    db.execute("""CREATE TABLE users_4 (id INTEGER PRIMARY KEY AUTOINCREMENT,
                      name TEXT NOT NULL, email TEXT NOT NULL, version INTEGER NOT NULL,
                      name__key TEXT, email__key TEXT, name__words TEXT)""")
    db.execute("INSERT INTO users_4 (id, name, email, version, name__key, email__key, name__words)"
               " SELECT id, name, email, version, name_key, email_key, name_words FROM users")
    db.execute("DROP TABLE users")      # and its index and triggers
    db.execute("ALTER TABLE users_4 RENAME TO users")
    db.execute("DELETE FROM sqlite_sequence WHERE name = 'users'")
    if row is not None:
        db.execute("INSERT INTO sqlite_sequence (name, seq) VALUES ('users', ?)", (row[0],))


_COLLECTIONS = history.collections_table("TEXT")
_KEYS = [history.keys_table("TEXT", "REAL", "INTEGER", "BLOB", " WITHOUT ROWID")]
_HISTORY = history.history_table("lower(hex(randomblob(6)))")

#: Each entry upgrades the layout by one version.
MIGRATIONS: list[Sequence[Step]] = [
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
    # 1 -> 2: sorting by name and searching.
    [
        "ALTER TABLE users ADD COLUMN name_key TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE users ADD COLUMN name_words TEXT NOT NULL DEFAULT '[]'",
        _fill_name_columns,
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
    # 2 -> 3: the change feed; the users there get positions in id order.
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
    # 3 -> 4: collections declared once.
    [
        _COLLECTIONS,
        _remake_users,
        f"INSERT INTO usersvc_collections (plural, declaration, objects)"
        f" VALUES ('users', '{history.USERS}', '{{}}')",
    ],
    # 4 -> 5: idempotency keys.
    _KEYS,
    # 5 -> 6: the feed's history token.
    _HISTORY,
]


def migrate(db: sqlite3.Connection, migrations: Sequence[Sequence[Step]] = MIGRATIONS) -> int:
    """Bring the layout up to ``len(migrations)``, each migration past the
    version found, inside the caller's transaction; returns the version
    found. (A new file is the store's to make, at today's layout.)"""
    found: int = db.execute("PRAGMA user_version").fetchone()[0]
    upgrade(db, found, migrations)
    if found != len(migrations):
        db.execute(f"PRAGMA user_version = {len(migrations)}")
    return found


__all__ = ["MIGRATIONS", "migrate"]
