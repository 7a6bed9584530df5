"""The PostgreSQL store's history: each release's layout change, and ``migrate``.

As ``sqlite.migrations``, with the version in the table ``usersvc_schema``:
1 to 3 are release 0.1.0's, 4 declares collections (the key columns become
``<field>__key``; old triggers, functions and indexes go, to be made again
from the declaration), 5 adds ``usersvc_keys``, 6 ``usersvc_history`` (the
feed's history token). The caller holds the
transaction and the advisory lock that make processes opening one
database together take turns.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from ..sql import history
from ..sql.dialects import POSTGRES
from ..sql.layout import layout
from ..stored import Step, upgrade


def _fill_name_columns(db: psycopg.Connection[Any]) -> None:
    """Give every existing user its ``name_key`` and ``name_words``."""
    rows = db.execute("SELECT id, name FROM users").fetchall()
    with db.cursor() as cursor:
        cursor.executemany("UPDATE users SET name_key = %s, name_words = %s WHERE id = %s",
                           [(name.casefold(), history.words(name), user_id)
                            for user_id, name in rows])


# Keeps user_words in step with a user's name words and e-mail key (``sql``).
_WORDS_TRIGGER = """
CREATE FUNCTION user_words_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        DELETE FROM user_words
         WHERE user_id = OLD.id AND word = ANY(OLD.name_words || OLD.email_key);
    END IF;
    IF TG_OP <> 'DELETE' THEN
        INSERT INTO user_words (word, user_id)
        SELECT DISTINCT w, NEW.id FROM unnest(NEW.name_words || NEW.email_key) AS w
            ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END $$"""

# Gives a changed user the next position. The transaction first takes a
# lock it holds until it ends (re-entrant: a restore of many users takes it
# once), so a writer that comes later waits here for the one before to
# commit: positions are handed out in commit order (``feed``). The lock's
# key is the table's own oid, so stores in other schemas do not share it.
_CHANGES_TRIGGER = """
CREATE FUNCTION user_changes_record() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock('user_changes'::regclass::oid::bigint);
    IF TG_OP = 'DELETE' THEN
        INSERT INTO user_changes (id, seq) VALUES (OLD.id, nextval('user_changes_seq'))
            ON CONFLICT (id) DO UPDATE
            SET seq = EXCLUDED.seq, name = NULL, email = NULL, version = NULL;
    ELSE
        INSERT INTO user_changes (id, seq, name, email, version)
        VALUES (NEW.id, nextval('user_changes_seq'), NEW.name, NEW.email, NEW.version)
            ON CONFLICT (id) DO UPDATE SET seq = EXCLUDED.seq, name = EXCLUDED.name,
                                           email = EXCLUDED.email, version = EXCLUDED.version;
    END IF;
    PERFORM pg_notify('usersvc_user_changes', '');
    RETURN NULL;
END $$"""

_COLLECTIONS = history.collections_table("text")
_KEYS = [history.keys_table("text", "double precision", "integer", "bytea")]
_HISTORY = history.history_table("substr(md5(random()::text || clock_timestamp()::text), 1, 12)")

#: Each entry upgrades the schema by one version: statements, and the
#: functions that fill what SQL cannot compute (Python's ``str.casefold``).
MIGRATIONS: list[Sequence[Step]] = [
    # 0 -> 1: the users table.
    [
        """CREATE TABLE users (
               id        bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
               name      text    NOT NULL,
               email     text    NOT NULL,
               email_key text    NOT NULL,  -- the case-folded e-mail
               version   bigint  NOT NULL
           )""",
        "CREATE UNIQUE INDEX users_email_key ON users (email_key)",
    ],
    # 1 -> 2: sorting by name and searching (see ``sql``); every key in
    # code point order, as Python's str and SQLite compare.
    [
        'ALTER TABLE users ALTER COLUMN email_key TYPE text COLLATE "C"',
        """ALTER TABLE users ADD COLUMN name_key text COLLATE "C" NOT NULL DEFAULT '',
                         ADD COLUMN name_words text[] NOT NULL DEFAULT '{}'""",
        _fill_name_columns,
        "CREATE INDEX users_name ON users (name_key, id)",
        """CREATE TABLE user_words (
               word    text   COLLATE "C" NOT NULL,
               user_id bigint NOT NULL,
               PRIMARY KEY (word, user_id)
           )""",
        """INSERT INTO user_words (word, user_id)
           SELECT DISTINCT w, id FROM users, unnest(name_words || email_key) AS w""",
        _WORDS_TRIGGER,
        """CREATE TRIGGER user_words_insert_delete AFTER INSERT OR DELETE ON users
           FOR EACH ROW EXECUTE FUNCTION user_words_sync()""",
        """CREATE TRIGGER user_words_update AFTER UPDATE ON users FOR EACH ROW
           WHEN (OLD.name_words IS DISTINCT FROM NEW.name_words
                 OR OLD.email_key IS DISTINCT FROM NEW.email_key)
           EXECUTE FUNCTION user_words_sync()""",
    ],
    # 2 -> 3: the change feed: each user at the position of its latest
    # change, as it is then (none: deleted), so that a page of the feed reads
    # one index and its rows. The users there get positions in id order.
    [
        """CREATE TABLE user_changes (
               id      bigint PRIMARY KEY,
               seq     bigint NOT NULL UNIQUE,
               name    text,
               email   text,
               version bigint
           )""",
        "CREATE SEQUENCE user_changes_seq",
        "INSERT INTO user_changes (id, seq, name, email, version)"
        " SELECT id, nextval('user_changes_seq'), name, email, version FROM"
        " (SELECT id, name, email, version FROM users ORDER BY id) AS by_id",
        _CHANGES_TRIGGER,
        """CREATE TRIGGER user_changes_record AFTER INSERT OR UPDATE OR DELETE ON users
           FOR EACH ROW EXECUTE FUNCTION user_changes_record()""",
    ],
    # 3 -> 4: collections declared once.
    [
        "DROP TRIGGER user_changes_record ON users",
        "DROP TRIGGER user_words_insert_delete ON users",
        "DROP TRIGGER user_words_update ON users",
        "DROP FUNCTION user_changes_record()",
        "DROP FUNCTION user_words_sync()",
        "DROP INDEX users_email_key",
        "DROP INDEX users_name",
        "ALTER TABLE users RENAME COLUMN email_key TO email__key",
        "ALTER TABLE users RENAME COLUMN name_key TO name__key",
        "ALTER TABLE users RENAME COLUMN name_words TO name__words",
        """ALTER TABLE users ALTER COLUMN email__key DROP NOT NULL,
                          ALTER COLUMN name__key DROP NOT NULL,
                          ALTER COLUMN name__key DROP DEFAULT,
                          ALTER COLUMN name__words DROP NOT NULL,
                          ALTER COLUMN name__words DROP DEFAULT""",
        _COLLECTIONS,
        f"INSERT INTO usersvc_collections (plural, declaration, objects)"
        f" VALUES ('users', '{history.USERS}', '{{}}')",
    ],
    # 4 -> 5: idempotency keys (``keys``), for every collection.
    _KEYS,
    # 5 -> 6: the feed's history token.
    _HISTORY,
]

#: What a new database gets instead: today's layout (the table of
#: collections, the keys, the history), as ``layout`` makes it.
FRESH: Sequence[Step] = layout(POSTGRES)


def migrate(db: psycopg.Connection[Any], migrations: Sequence[Sequence[Step]] = MIGRATIONS,
            fresh: Sequence[Step] = FRESH) -> int:
    """Bring the layout up to ``len(migrations)``, inside the caller's
    transaction; returns the version found (0: a new database, given ``fresh``)."""
    # Nothing written when nothing is to do: a read-only database (a standby)
    # opens, to serve reads.
    made = db.execute("SELECT to_regclass('usersvc_schema')").fetchone()
    if made[0] is None:         # type: ignore[index]  # (one row, always)
        db.execute("CREATE TABLE usersvc_schema (version integer NOT NULL)")
    row = db.execute("SELECT version FROM usersvc_schema").fetchone()
    if row is None:
        db.execute("INSERT INTO usersvc_schema (version) VALUES (0)")
    found = row[0] if row else 0
    upgrade(db, found, migrations, fresh)
    if found != len(migrations):
        db.execute("UPDATE usersvc_schema SET version = %s", (len(migrations),))
    return found
