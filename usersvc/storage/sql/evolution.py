"""A SQL store's collection recorded otherwise than declared, brought up to
its schema at open, or refused (``layout.opened`` finds it so, and makes
a new one; this module is loaded only then).

Each store records, in ``usersvc_collections``, every collection's
declaration (``stored.declaration``) and the objects it made for it
(``ddl.objects``), by name and statement. At open, under the lock that
makes processes open one at a time, ``evolve`` compares them with the
schema's, as Django's migration autodetector and Alembic's compare do: an
added optional field gets a column; a
filter, sort, search or uniqueness, its column, filled, and its index (a
uniqueness the records break is refused, naming a value); a field's
changed rule (``text(100)`` to ``text(5)``), held to every stored value (a
value it refuses is refused, naming the record); what is no longer
declared, dropped; an object whose statement changed, made again.

Versions are not touched (every ETag stays valid) and no feed entry is
made, but by the explicit migrations the schema declares (``reshape``:
renamed, dropped, converted, defaults, timestamps turned on), which give
each record they change a new version. What cannot be done safely and no
migration declares (a stored field the schema lacks, a changed type, a new
required field, a field made required) is refused with
``SchemaMismatch``, one line, before anything is changed.
"""
from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ...fields import Field
from ...kinds import dates
from ..stored import SchemaMismatch, declaration
from . import ddl, reshape
from .collection import Table
from .dialects import POSTGRES
from .layout import COLLECTIONS

log = logging.getLogger("usersvc.storage")


def evolve(db: Any, table: Table, row: Any) -> None:
    """Bring ``table``'s collection, recorded as ``row`` (its declaration
    and objects, as JSON: ``layout.opened``'s), up to its schema on the
    connection ``db``, inside the caller's transaction; raise ``SchemaMismatch``."""
    mark, plural = table.dialect.mark, table.name
    want = declaration(table.schema)
    stored, objects = json.loads(row[0]), json.loads(row[1])
    renamed = _rename(db, table, stored)
    todo = reshape.steps(table.schema, stored, want)
    migrated = {step.field for step in todo}
    _check(stored, want, plural, migrated)
    ruled = set()       # the fields whose rule changed in place: every value held to it
    for field, kind in want["fields"].items():
        was = stored["fields"].get(field, {}).get("rule")
        if was is not None and was != kind["rule"] and field not in migrated:
            reshape.check_values(db, table, field)     # (None: recorded before rules were)
            ruled.add(field)
    changes = list(_changes(stored, want, todo))
    wanted = ddl.objects(table)
    for name, (kind, on, sql) in sorted(objects.items(), key=_drop_order):
        # A function is replaced where it stands (its trigger depends on it);
        # before a migration's columns change, every object goes.
        if name not in wanted or (wanted[name].sql != sql and kind != "function") or todo:
            db.execute(_drop(table, kind, name, on))
            del objects[name]
    when = dates.now()  # the one time of every timestamp the migrations set
    touched, done = reshape.apply(db, table, stored, todo, when) if todo else (set(), [])
    _change_columns(db, table, stored, want)
    for field in sorted(ruled & reshape.collated_fields(want) & reshape.collated_fields(stored)):
        # A collated value follows the rule (a choice's place among its values): made again.
        _fill(db, table, f"{field}__key", field, _collated(table.schema.fields[field]))
    if _search_terms(stored) != _search_terms(want) or todo:    # (the folding's version too)
        db.execute(f"DELETE FROM {table.words_table}")
        if table.schema.searchable:
            db.execute(ddl.fill_words(table))
    for field in want["unique"]:        # newly unique, or its values changed by a migration
        if field not in stored["unique"] or field in migrated:
            reshape.check_unique(db, table, field)
    for name, made in ddl.in_making_order(wanted):
        if name not in objects or objects[name][2] != made.sql:
            db.execute(made.sql)
            objects[name] = list(made)
    # Each record whose representation changed gets a new version (a new
    # ETag, and the feed's entry), and with timestamps a new ``updated``.
    stamp = ", updated = " + mark if table.schema.read_only else ""
    if renamed:
        db.execute(f"UPDATE {table.name} SET version = version + 1{stamp}",
                   (when,) if stamp else ())
    elif touched:
        db.cursor().executemany(
            f"UPDATE {table.name} SET version = version + 1{stamp} WHERE id = {mark}",
            [(when, i) if stamp else (i,) for i in sorted(touched)])
    record = (json.dumps(want, sort_keys=True), json.dumps(objects, sort_keys=True), plural)
    if (want, objects) != (json.loads(row[0]), json.loads(row[1])):    # (``stored`` moved along)
        db.execute(f"UPDATE {COLLECTIONS} SET declaration = {mark}, objects = {mark} "
                   f"WHERE plural = {mark}", record)
    for change in [*done, *changes]:    # each change applied, in one line (at the open)
        log.info("%s: %s", plural, change)


_ROLES = {"unique": "unique", "filters": "a filter", "sorts": "a sort",
          "words": "searched by its words", "prefixes": "searched by its start"}


def _changes(stored: dict[str, Any], want: dict[str, Any], todo: list[Any]) -> Iterator[str]:
    """What bringing ``stored`` up to ``want`` does, one phrase a change
    (after any rename, which ``_rename`` says, and beside the migrations
    ``todo``, which ``reshape`` says)."""
    migrated = {step.field for step in todo}
    for field, kind in want["fields"].items():
        was = stored["fields"].get(field)
        if field in migrated:
            continue
        if was is None:
            yield f"{field} added, optional ({kind['type']})"
        elif was.get("rule") not in (None, kind["rule"]):     # (None: not recorded before)
            yield (f"{field} is now {kind['rule']}, was {was['rule']} (every stored value "
                   "keeps to it)")
    for role, said in _ROLES.items():
        for field in sorted(set(want[role]) - set(stored[role]) - migrated):
            yield f"{field} is now {said}"
        for field in sorted(set(stored[role]) - set(want[role]) - migrated):
            yield f"{field} is no longer {said}"
    pairs = [{(f, s) for f, sorts in d.get("filtered_sorts", {}).items() for s in sorts}
             for d in (stored, want)]
    for field, sort in sorted(pairs[1] - pairs[0]):
        yield f"pages filtered by {field} now have an index in {sort} order"
    for field, sort in sorted(pairs[0] - pairs[1]):
        yield f"pages filtered by {field} no longer have an index in {sort} order"


def _rename(db: Any, table: Table, stored: dict[str, Any]) -> bool:
    """The explicit migration ``Schema.renamed``: each stored field renamed
    where the declaration still has its old name, with its columns (its
    indexes and triggers are made again from the declaration, and then every
    record gets a new version, in ``evolve``); whether there was one."""
    renames = {old: new for new, old in table.schema.renamed.items()
               if old in stored["fields"] and new not in stored["fields"]}
    if not renames:
        return False
    t, c = table.name, table.changes_table
    suffixes = {"__key": reshape.collated_fields(stored),
                "__words": reshape.searched_fields(stored)}
    for old, new in renames.items():
        for name in (t, c):
            db.execute(f"ALTER TABLE {name} RENAME COLUMN {old} TO {new}")
        for suffix, fields in suffixes.items():
            if old in fields:
                db.execute(f"ALTER TABLE {t} RENAME COLUMN {old}{suffix} TO {new}{suffix}")
    for old, new in renames.items():
        log.info("%s: %s renamed from %s (every record a new version)", t, new, old)

    def rename(names: Iterable[str]) -> list[str]:
        return sorted(renames.get(n, n) for n in names)

    stored["fields"] = {renames.get(f, f): kind for f, kind in stored["fields"].items()}
    stored["order"] = [renames.get(f, f) for f in stored.get("order", stored["fields"])]
    for what in ("unique", "filters", "sorts", "words", "prefixes", "keyed", "searched"):
        if what in stored:
            stored[what] = rename(stored[what])
    stored["filtered_sorts"] = {renames.get(f, f): rename(by)
                                for f, by in stored.get("filtered_sorts", {}).items()}
    return True


def _check(stored: dict[str, Any], want: dict[str, Any], plural: str,
           migrated: set[str]) -> None:
    """Refuse what cannot be done in place and no migration declared does
    (``migrated``: the fields a declared one changes), naming the field."""
    if stored["name"] != want["name"]:
        raise SchemaMismatch(f"{plural}: stored as records named {stored['name']!r}, "
                             f"declared as {want['name']!r}")
    old, new = stored["fields"], want["fields"]
    for field in old:
        if field not in new and field not in migrated:
            raise SchemaMismatch(f"{plural}.{field}: a stored field the schema lacks "
                                 "(dropping or renaming it is an explicit migration)")
    for field, kind in new.items():
        was = old.get(field)
        if field in migrated:
            continue
        if was is None and not kind["optional"]:
            raise SchemaMismatch(f"{plural}.{field}: a new required field (the records "
                                 "stored before have no value: declare it optional, or "
                                 "give them one with defaults=)")
        if was is not None and was["type"] != kind["type"]:
            raise SchemaMismatch(f"{plural}.{field}: stored as {was['type']}, declared as "
                                 f"{kind['type']} (a change of type is an explicit migration)")
        if was is not None and was["optional"] and not kind["optional"]:
            raise SchemaMismatch(f"{plural}.{field}: made required (the records stored "
                                 "before may have no value: give them one with defaults=)")


def _search_terms(declaration: dict[str, Any]) -> tuple[Any, ...]:
    return (declaration["words"], declaration["prefixes"], declaration.get("folding"),
            declaration.get("searched"))


def _change_columns(db: Any, table: Table, stored: dict[str, Any], want: dict[str, Any]) -> None:
    """Columns for added fields, key and words columns added (and filled)
    or dropped as the declaration now needs them."""
    t, c = table.name, table.changes_table
    for field in want["fields"]:
        if field not in stored["fields"]:
            db.execute(f"ALTER TABLE {t} ADD COLUMN {ddl.column(table, field)}")
            kind = table.schema.fields[field].column_type(table.dialect.name)
            db.execute(f"ALTER TABLE {c} ADD COLUMN {field} {kind}")
    old_collated, new_collated = reshape.collated_fields(stored), reshape.collated_fields(want)
    old_words, new_words = reshape.searched_fields(stored), reshape.searched_fields(want)
    for field in sorted(old_collated - new_collated):
        db.execute(f"ALTER TABLE {t} DROP COLUMN {field}__key")
    for field in sorted(old_words - new_words):
        db.execute(f"ALTER TABLE {t} DROP COLUMN {field}__words")
    for field in sorted(new_collated - old_collated):
        db.execute(f"ALTER TABLE {t} ADD COLUMN {ddl.collated_column(table, field)}")
        _fill(db, table, f"{field}__key", field, _collated(table.schema.fields[field]))
    for field in sorted(new_words - old_words):
        db.execute(f"ALTER TABLE {t} ADD COLUMN {ddl.words_column(table, field)}")
    refolded = stored.get("folding") != want["folding"]     # (each term made again, once)
    for field in sorted(new_words - old_words if not refolded else new_words):
        _fill(db, table, f"{field}__words", field, _terms(table, *table.schema.searched[field]))


def _collated(kind: Field) -> Callable[[Any], Any]:
    """A ``__key`` column's value, from the field's stored value."""
    return lambda value: kind.collate(kind.from_stored(value))


def _terms(table: Table, by_words: bool, whole: bool) -> Callable[[Any], Any]:
    """A ``__words`` column's value, from the field's stored value."""
    return lambda value: table.terms_value(value, by_words, whole)


def _fill(db: Any, table: Table, column: str, field: str, derive: Callable[[Any], Any]) -> None:
    """Give every record's new ``column`` its value, made from ``field``."""
    mark = table.dialect.mark
    rows = db.execute(f"SELECT id, {field} FROM {table.name} WHERE {field} IS NOT NULL").fetchall()
    if rows:
        cursor = db.cursor()
        cursor.executemany(f"UPDATE {table.name} SET {column} = {mark} WHERE id = {mark}",
                           [(derive(value), record_id) for record_id, value in rows])


def _drop(table: Table, kind: str, name: str, on: str) -> str:
    if kind == "trigger" and table.dialect is POSTGRES:
        return f"DROP TRIGGER {name} ON {on}"
    return f"DROP {kind.upper()} {name}" + ("()" if kind == "function" else "")


def _drop_order(item: tuple[str, list[str]]) -> int:
    return {"trigger": 0, "function": 1, "index": 2}[item[1][0]]


__all__ = ["evolve"]
