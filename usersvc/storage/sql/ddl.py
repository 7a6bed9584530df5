"""What a SQL store makes of a declaration when it opens, per dialect: the
names, columns and one record's statements a ``Table`` keeps (``statements``),
the tables (``create_tables``), a field's columns (``column``, ``collated_column``,
``words_column``), and the indexes, triggers and functions (``objects``),
each a name and its statement, which ``layout`` records and ``evolution``
compares.

A record's row: ``id``, each field, ``version``, and what SQL cannot
compute as Python does: ``<field>__key``, a value collated where that is
not the value (``Field.collate``: text case-folded; unique, filtered,
sorted or searched whole: the column's name is on disk since layout 4),
and ``<field>__words``, a ``words`` field's case-folded words. Collated
text compares in code point order
(``BINARY``, ``COLLATE "C"``), as Python's ``str`` does. Triggers, in each
write's transaction, keep the search words (``<name>_words``) and the feed
(``<name>_changes``); on PostgreSQL the feed's takes a lock held until
commit, so positions follow commit order, and announces the change (``CHANNEL``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple, Protocol

from ...fields import COLUMN_TYPES, Field
from ...schema import Schema
from .dialects import SQLITE, Dialect

if TYPE_CHECKING:       # (``collection``'s ``Table``, held to it; that module imports this one)
    class Compared(Protocol):
        def compared(self, field: str) -> str: ...

    class Table(Protocol):
        """What the tables, indexes and triggers are made from: a ``Table``'s
        names and columns, its schema and dialect, its ``pages.compared``."""

        schema: Schema
        dialect: Dialect
        name: str
        collated: tuple[str, ...]
        words_table: str
        owner: str
        changes_table: str

        @property
        def pages(self) -> Compared: ...


class Statements(NamedTuple):
    """What a collection's ``Table`` keeps, made once as its store opens
    (``statements``): its tables' names, its columns, one record's statements."""

    words_table: str            # ``<name>_words``: each search term and its record
    owner: str                  # ... whose id is in the column ``<name>_id``
    changes_table: str          # ``<name>_changes``: the feed
    stored_as: tuple[str, ...]  # the fields kept as another value (``Field.to_stored``)
    columns: str                # a record's, in ``schema.record``'s order
    written: list[str]          # the columns a write sets: fields, collated values, words
    select_one: str
    insert: str
    delete: str                 # (its ``WHERE`` completed by ``Table.condition``)


def statements(schema: Schema, dialect: Dialect) -> Statements:
    """A collection's ``Statements``, for ``dialect``."""
    s, m, t = schema, dialect.mark, schema.plural
    columns = ", ".join(["id", *s.fields, "version"])
    written = [*s.fields, *(f"{f}__key" for f in s.collated),
               *(f"{f}__words" for f in s.searched)]
    return Statements(
        words_table=f"{s.name}_words", owner=f"{s.name}_id", changes_table=f"{s.name}_changes",
        stored_as=tuple(f for f, kind in s.fields.items()
                        if type(kind).to_stored is not Field.to_stored),
        columns=columns, written=written, select_one=f"SELECT {columns} FROM {t} WHERE id = {m}",
        insert=(f"INSERT INTO {t} ({', '.join(written)}, version) "
                f"VALUES ({', '.join(m for _ in written)}, 1) RETURNING id"),
        delete=f"DELETE FROM {t} WHERE id = {m}")


class Object(NamedTuple):
    kind: str       # "index", "function" or "trigger"
    table: str      # the table it is on (for dropping a trigger)
    sql: str


def column(table: Table, field: str) -> str:
    """A field's column: its type, and ``NOT NULL`` unless it is optional."""
    kind = table.schema.fields[field].column_type(table.dialect.name)
    return f"{field} {kind}" + ("" if field in table.schema.optional else " NOT NULL")


def collated_column(table: Table, field: str) -> str:
    """A field's collated column (``Field.collate``): text in code point order, or an integer."""
    text = table.schema.fields[field].collated_type == "text"
    kind = table.dialect.collated_type if text else COLUMN_TYPES["integer"][table.dialect.name]
    return f"{field}__key {kind}"


def words_column(table: Table, field: str) -> str:
    return f"{field}__words {table.dialect.words_type}"


def create_tables(table: Table) -> list[str]:
    """The statements that make the collection's three tables, empty."""
    s, d, t, c = table.schema, table.dialect, table.name, table.changes_table
    columns = [d.id_column, *(column(table, f) for f in s.fields),
               f"version {COLUMN_TYPES['integer'][d.name]} NOT NULL",
               *(collated_column(table, f) for f in table.collated),
               *(words_column(table, f) for f in s.searched)]
    kept = [f"{f} {k.column_type(d.name)}" for f, k in s.fields.items()]
    if d is SQLITE:
        words = (f"CREATE TABLE {table.words_table} (word TEXT NOT NULL, {table.owner} "
                 f"INTEGER NOT NULL, PRIMARY KEY (word, {table.owner})) WITHOUT ROWID")
        changes = [f"CREATE TABLE {c} (seq INTEGER PRIMARY KEY AUTOINCREMENT, id INTEGER "
                   f"NOT NULL UNIQUE, {', '.join([*kept, 'version INTEGER'])})"]
    else:
        words = (f'CREATE TABLE {table.words_table} (word text COLLATE "C" NOT NULL, '
                 f"{table.owner} bigint NOT NULL, PRIMARY KEY (word, {table.owner}))")
        changes = [f"CREATE TABLE {c} (id bigint PRIMARY KEY, seq bigint NOT NULL UNIQUE, "
                   f"{', '.join([*kept, 'version bigint'])})", f"CREATE SEQUENCE {c}_seq"]
    return [f"CREATE TABLE {t} ({', '.join(columns)})", words, *changes]


def objects(table: Table) -> dict[str, Object]:
    """The indexes, triggers and functions the declaration asks for, by name."""
    s, t = table.schema, table.name
    found: dict[str, Object] = {}
    for field in s.unique:
        indexed = table.pages.compared(field)
        found[f"{t}_{field}_unique"] = Object(
            "index", t, f"CREATE UNIQUE INDEX {t}_{field}_unique ON {t} ({indexed})")
    for field in dict.fromkeys((*s.sorts[1:], *s.filters)):
        if field not in s.unique:
            indexed = table.pages.compared(field)
            found[f"{t}_{field}_order"] = Object(
                "index", t, f"CREATE INDEX {t}_{field}_order ON {t} ({indexed}, id, version)")
    for field, sorts in s.filtered_sorts.items():     # a filtered page in another order
        for sort in sorts:
            indexed = f"{table.pages.compared(field)}, {table.pages.compared(sort)}"
            found[f"{t}_{field}_by_{sort}"] = Object(
                "index", t, f"CREATE INDEX {t}_{field}_by_{sort} ON {t} ({indexed}, id, version)")
            if sort in s.optional and table.dialect is not SQLITE:
                found.update(_absent(table, f"{t}_{field}_by_{sort}", sort,
                                     table.pages.compared(field)))
    for sort in s.sorts[1:]:
        if sort in s.optional and table.dialect is not SQLITE:
            found.update(_absent(table, f"{t}_{sort}", sort))
    triggers = _sqlite_triggers if table.dialect is SQLITE else _postgres_triggers
    found.update(triggers(table))
    return found


def in_making_order(objects: dict[str, Object]) -> list[tuple[str, Object]]:
    """``objects``' names and objects in the order they are made: functions,
    then indexes, then the triggers (that call the functions)."""
    order = ("function", "index", "trigger")
    return sorted(objects.items(), key=lambda item: order.index(item[1].kind))


def _absent(table: Table, name: str, sort: str, *by: str) -> dict[str, Object]:
    """On PostgreSQL, the index of an optional sort's records without a
    value, in id order (after ``by``), which a page walks after the values:
    its planner does not take ``IS NULL`` as an equality after which the
    order index is in id order (SQLite's does, and needs none)."""
    t = table.name
    return {f"{name}_absent": Object("index", t, f"CREATE INDEX {name}_absent ON {t} "
                                     f"({', '.join((*by, 'id', 'version'))}) "
                                     f"WHERE {table.pages.compared(sort)} IS NULL")}


def fill_words(table: Table) -> str:
    """The statement that fills the (emptied) words table from every record."""
    t, w, owner = table.name, table.words_table, table.owner
    if table.dialect is SQLITE:
        parts = [f"SELECT j.value, u.id FROM {t} AS u, json_each(u.{col}) AS j" if kind == "words"
                 else f"SELECT u.{col}, u.id FROM {t} AS u WHERE u.{col} IS NOT NULL"
                 for kind, col in _search_terms(table)]
        return f"INSERT OR IGNORE INTO {w} (word, {owner}) {' UNION '.join(parts)}"
    terms = " || ".join(f"coalesce(u.{col}, '{{}}')" if kind == "words" else f"ARRAY[u.{col}]"
                       for kind, col in _search_terms(table))
    return (f"INSERT INTO {w} (word, {owner}) SELECT DISTINCT k, u.id FROM {t} AS u, "
            f"unnest({terms}) AS k WHERE k IS NOT NULL")


def _search_terms(table: Table) -> list[tuple[str, str]]:
    """Each search term column of a row, as ``(kind, column)``: a searched
    field's ``__words`` (its terms, folded in Python at the write:
    ``fields.search_terms``), a prefix field's ``__key`` where its collated
    value is folded (one term: ``Schema.prefixes_by_key``)."""
    s = table.schema
    return [("words", f"{f}__words") for f in s.searched] + [
        ("whole", f"{f}__key") for f in s.prefixes_by_key]


def _sqlite_triggers(table: Table) -> dict[str, Object]:
    t, w, c, owner = table.name, table.words_table, table.changes_table, table.owner
    found: dict[str, Object] = {}
    terms = _search_terms(table)
    if terms:
        def of(row: str) -> str:     # a row's search terms, as one SELECT of "value"
            return " UNION ".join(
                f"SELECT value FROM json_each({row}.{col})" if kind == "words"
                else f"SELECT {row}.{col} AS value WHERE {row}.{col} IS NOT NULL"
                for kind, col in terms)
        add = (f"INSERT OR IGNORE INTO {w} (word, {owner}) SELECT value, NEW.id "
               f"FROM ({of('NEW')});")
        drop = f"DELETE FROM {w} WHERE {owner} = OLD.id AND word IN ({of('OLD')});"
        cols = [col for _, col in terms]
        changed = " OR ".join(f"OLD.{col} IS NOT NEW.{col}" for col in cols)
        for name, sql in (
                ("insert", f"AFTER INSERT ON {t} BEGIN {add} END"),
                ("delete", f"AFTER DELETE ON {t} BEGIN {drop} END"),
                ("update", f"AFTER UPDATE OF {', '.join(cols)} ON {t} WHEN {changed} "
                           f"BEGIN {drop} {add} END")):
            found[f"{w}_{name}"] = Object("trigger", t, f"CREATE TRIGGER {w}_{name} {sql}")
    # The feed: REPLACE moves a record's row to a new AUTOINCREMENT position,
    # above every one ever used. Only a write that sets the version is a
    # change (a store's every write does; filling a new collated column does not).
    fields = list(table.schema.fields)
    kept = ", ".join(["id", *fields, "version"])
    new = ", ".join(f"NEW.{f}" for f in ["id", *fields, "version"])
    for name, when, values in (
            ("insert", "INSERT", new), ("update", "UPDATE OF version", new),
            ("delete", "DELETE", ", ".join(["OLD.id", *("NULL" for _ in fields), "NULL"]))):
        found[f"{c}_{name}"] = Object("trigger", t, (
            f"CREATE TRIGGER {c}_{name} AFTER {when} ON {t} BEGIN "
            f"INSERT OR REPLACE INTO {c} ({kept}) VALUES ({values}); END"))
    return found


#: The channel a committed change is announced on (``postgres.notify``);
#: the payload is the collection's plural.
CHANNEL = "usersvc_changes"


def _postgres_triggers(table: Table) -> dict[str, Object]:
    t, w, c, owner = table.name, table.words_table, table.changes_table, table.owner
    found: dict[str, Object] = {}
    terms = _search_terms(table)
    if terms:
        def of(row: str) -> str:     # a row's search terms, as one text[]
            return " || ".join(f"coalesce({row}.{col}, '{{}}')" if kind == "words"
                               else f"ARRAY[{row}.{col}]" for kind, col in terms)
        found[f"{w}_sync"] = Object("function", t, f"CREATE OR REPLACE FUNCTION {w}_sync() "
                                    f"""RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        DELETE FROM {w} WHERE {owner} = OLD.id AND word = ANY({of('OLD')});
    END IF;
    IF TG_OP <> 'DELETE' THEN
        INSERT INTO {w} (word, {owner})
        SELECT DISTINCT k, NEW.id FROM unnest({of('NEW')}) AS k WHERE k IS NOT NULL
            ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END $$""")
        cols = [col for _, col in terms]
        changed = " OR ".join(f"OLD.{col} IS DISTINCT FROM NEW.{col}" for col in cols)
        found[f"{w}_insert_delete"] = Object("trigger", t, (
            f"CREATE TRIGGER {w}_insert_delete AFTER INSERT OR DELETE ON {t} "
            f"FOR EACH ROW EXECUTE FUNCTION {w}_sync()"))
        found[f"{w}_update"] = Object("trigger", t, (
            f"CREATE TRIGGER {w}_update AFTER UPDATE OF {', '.join(cols)} ON {t} FOR EACH ROW "
            f"WHEN ({changed}) EXECUTE FUNCTION {w}_sync()"))
    # Each statement's transaction first takes a lock it holds until it
    # ends (re-entrant: a restore of many records takes it once), before
    # the statement locks any row, so a writer that comes later waits here
    # for the one before to commit: positions are handed out in commit order
    # (``feed``), and a batch, which takes the locks of its collections
    # first, never waits for a row that a writer waiting for it holds. The
    # key is the table's own oid, so stores in other schemas do not share it.
    found[f"{c}_lock"] = Object("function", t, f"CREATE OR REPLACE FUNCTION {c}_lock() "
                                f"""RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock('{c}'::regclass::oid::bigint);
    RETURN NULL;
END $$""")
    found[f"{c}_first"] = Object("trigger", t, (
        f"CREATE TRIGGER {c}_first BEFORE INSERT OR UPDATE OR DELETE ON {t} "
        f"FOR EACH STATEMENT EXECUTE FUNCTION {c}_lock()"))
    fields = list(table.schema.fields)
    kept, new = ", ".join(fields), ", ".join(f"NEW.{f}" for f in fields)
    gone = ", ".join(f"{f} = NULL" for f in [*fields, "version"])
    made = ", ".join(f"{f} = EXCLUDED.{f}" for f in [*fields, "version"])
    found[f"{c}_record"] = Object("function", t, f"CREATE OR REPLACE FUNCTION {c}_record() "
                                  f"""RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        INSERT INTO {c} (id, seq) VALUES (OLD.id, nextval('{c}_seq'))
            ON CONFLICT (id) DO UPDATE SET seq = EXCLUDED.seq, {gone};
    ELSE
        INSERT INTO {c} (id, seq, {kept}, version)
        VALUES (NEW.id, nextval('{c}_seq'), {new}, NEW.version)
            ON CONFLICT (id) DO UPDATE SET seq = EXCLUDED.seq, {made};
    END IF;
    PERFORM pg_notify('{CHANNEL}', '{t}');     -- delivered at the commit (postgres.notify)
    RETURN NULL;
END $$""")
    found[f"{c}_trigger"] = Object("trigger", t, (
        f"CREATE TRIGGER {c}_trigger AFTER INSERT OR UPDATE OF version OR DELETE ON {t} "
        f"FOR EACH ROW EXECUTE FUNCTION {c}_record()"))
    return found
