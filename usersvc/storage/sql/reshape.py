"""The explicit migrations a schema declares (``Schema(dropped=...,
converted=..., defaults=..., timestamps=True)``), done by a SQL store at
open, inside ``evolution.evolve``'s transaction: what the declaration
stored asks of the one declared (``steps``), and each done to the
records and the feed (``apply``).

A column whose values change is made again beside the old one, filled,
and put in its place, in both the records' table and the feed's (whose
rows for live records are then copied from the records, so a record whose
values did not change keeps its feed entry as it was). Every record whose
representation changed is returned, for ``evolve`` to give a new version
(and a feed entry, and with timestamps a new ``updated``) once the
triggers are made again.
"""
from __future__ import annotations

from typing import Any, NamedTuple

from ...fields import FieldError, Folded
from ...schema import Schema
from ..stored import SchemaMismatch, kind_of
from .collection import Table
from .dialects import POSTGRES, SQLITE


class Step(NamedTuple):
    kind: str       # "dropped", "converted", "default" (a field made or made required),
                    # "stamped", "optional" (a required field made optional)
    field: str


def steps(schema: Schema, stored: dict[str, Any], want: dict[str, Any]) -> list[Step]:
    """The declared migrations that apply to what is stored, in order."""
    found = [Step("dropped", f) for f in schema.dropped if f in stored["fields"]]
    for field, kind in want["fields"].items():
        was = stored["fields"].get(field)
        if field in schema.converted and was is not None and was["type"] != kind["type"]:
            found.append(Step("converted", field))      # (once: then the type is the one stored)
        elif field in schema.read_only and was is None:
            found.append(Step("stamped", field))
        elif field in schema.defaults and not kind["optional"] and (was is None or was["optional"]):
            found.append(Step("default", field))
        elif was is not None and not was["optional"] and kind["optional"]:
            found.append(Step("optional", field))      # (loses nothing: done in place)
    return found


def apply(db: Any, table: Table, stored: dict[str, Any], todo: list[Step],
          when: str) -> tuple[set[int], list[str]]:
    """Do ``todo`` (every object on the table dropped first), bringing
    ``stored`` along; the ids of the records whose representation changed,
    and a phrase per step for the log. A value that a conversion or the new
    kind refuses is ``SchemaMismatch``, naming the record (nothing kept:
    the caller's transaction is undone)."""
    schema, t = table.schema, table.name
    touched: set[int] = set()
    said = []
    for step in todo:
        field = step.field
        if step.kind == "dropped":
            ids = _ids(db, f"SELECT id FROM {t} WHERE {step.field} IS NOT NULL")
            _drop_derived(db, table, stored, field)
            for name in (t, table.changes_table):
                db.execute(f"ALTER TABLE {name} DROP COLUMN {field}")
            for what in ("unique", "filters", "sorts", "words", "prefixes", "order"):
                stored[what] = [f for f in stored.get(what, ()) if f != field]
            del stored["fields"][field]
            touched |= ids
            said.append(f"{field} dropped ({_count(ids)})")
            continue
        kind = schema.fields[field]     # (a field the schema has: one not dropped)
        rows = db.execute(f"SELECT id, {field} FROM {t}" if field in stored["fields"]
                          else f"SELECT id, NULL FROM {t}").fetchall()
        if step.kind == "converted":
            was = stored["fields"][field]
            values = _converted(schema, table, field, rows, _old_kind(was))
            changed = {i for i, value in rows if value is not None}
            touched |= changed
            said.append(f"{field} converted from {was.get('rule', was['type'])} to {kind!r} "
                        f"({_count(changed)})")
        elif step.kind == "optional":       # the same values, in a column that may be empty
            values = {i: kind.from_stored(old) for i, old in rows}
            said.append(f"{field} is now optional (no record changed)")
        else:
            value = when if step.kind == "stamped" else schema.defaults[field]
            values = {i: value if old is None else kind.from_stored(old) for i, old in rows}
            gave = {i for i, old in rows if old is None}
            touched |= gave
            if step.kind == "default":
                said.append(f"{field} is now required: {kind.to_text(value)!r} where a record "
                            f"had none ({_count(gave)})")
        _drop_derived(db, table, stored, field)
        _put_column(db, table, field, values, field in stored["fields"])
        stored["fields"][field] = {"type": kind.type, "rule": repr(kind),
                                   "optional": field in schema.optional}
    if any(s.kind == "stamped" for s in todo):
        said.append(f"timestamps added: created and updated are {when} ({_count(touched)})")
    return touched, said


def _converted(schema: Schema, table: Table, field: str, rows: list[tuple[int, Any]],
               old: Any) -> dict[int, Any]:
    convert, kind = schema.converted[field], schema.fields[field]
    values: dict[int, Any] = {}
    for record_id, value in rows:
        if value is None:
            values[record_id] = None
            continue
        try:
            values[record_id] = kind(convert(old.from_stored(value)))
        except Exception as e:      # the conversion's, or the new kind's
            why = str(e) if isinstance(e, FieldError) else f"{type(e).__name__}: {e}"
            raise SchemaMismatch(
                f"{table.name}.{field}: the stored {schema.name} {record_id} ({value!r}) does "
                f"not convert to {kind!r}: {why} (nothing was changed)") from None
    return values


def _put_column(db: Any, table: Table, field: str, values: dict[int, Any], existed: bool) -> None:
    """``field``'s column made again from ``values`` (by id), in place of
    the old one if it ``existed``; the feed's column likewise, its live
    records' values copied from the records."""
    t, c, mark, dialect = table.name, table.changes_table, table.dialect.mark, table.dialect
    kind = table.schema.fields[field]
    column = kind.column_type(dialect.name)
    required = field not in table.schema.optional
    # SQLite adds a NOT NULL column only with a default; every row then gets its value.
    default = " NOT NULL DEFAULT '0'" if required and dialect is SQLITE else ""
    db.execute(f"ALTER TABLE {t} ADD COLUMN {field}__new {column}{default}")
    db.cursor().executemany(f"UPDATE {t} SET {field}__new = {mark} WHERE id = {mark}", [
        (None if value is None else kind.to_stored(value), record_id)
        for record_id, value in values.items()])
    if existed:
        db.execute(f"ALTER TABLE {t} DROP COLUMN {field}")
        db.execute(f"ALTER TABLE {c} DROP COLUMN {field}")
    db.execute(f"ALTER TABLE {t} RENAME COLUMN {field}__new TO {field}")
    if required and dialect is POSTGRES:
        db.execute(f"ALTER TABLE {t} ALTER COLUMN {field} SET NOT NULL")
    db.execute(f"ALTER TABLE {c} ADD COLUMN {field} {column}")
    db.execute(f"UPDATE {c} SET {field} = {t}.{field} FROM {t} WHERE {t}.id = {c}.id")


def _drop_derived(db: Any, table: Table, stored: dict[str, Any], field: str) -> None:
    """Drop ``field``'s collated and words columns, if it has them, and say so
    in ``stored`` (``evolve`` makes and fills those the schema wants)."""
    collated = collated_fields(stored)
    if field in collated:
        db.execute(f"ALTER TABLE {table.name} DROP COLUMN {field}__key")
        collated.discard(field)
    stored["keyed"] = sorted(collated)
    if field in searched_fields(stored):
        db.execute(f"ALTER TABLE {table.name} DROP COLUMN {field}__words")
        for what in ("words", "prefixes", "searched"):
            if what in stored:
                stored[what] = [f for f in stored[what] if f != field]


def searched_fields(declaration: dict[str, Any]) -> set[str]:
    """The fields that have a ``__words`` column (``Schema.searched``,
    recorded since search is folded; before that, the ``words`` fields)."""
    return set(declaration.get("searched", declaration["words"]))


def collated_fields(declaration: dict[str, Any]) -> set[str]:
    """The fields that have a ``__key`` column (``Schema.collated``, recorded
    as ``"keyed"`` since kinds other than text are collated; before that,
    text's)."""
    if "keyed" in declaration:
        return set(declaration["keyed"])
    return {f for f, kind in declaration["fields"].items() if kind["type"] == "text" and (
        f in declaration["unique"] or f in declaration["filters"]
        or f in declaration["sorts"] or f in declaration["prefixes"])}


def check_unique(db: Any, table: Table, field: str) -> None:
    """Refuse a uniqueness that two stored records break."""
    column = f"{field}__key" if field in table.collated else field
    t = table.name
    row = db.execute(f"SELECT {field} FROM {t} WHERE {column} = (SELECT {column} FROM {t} WHERE "
                     f"{column} IS NOT NULL GROUP BY {column} HAVING count(*) > 1 LIMIT 1) "
                     "LIMIT 1").fetchone()
    if row is not None:
        compared = " (compared case-folded)" if isinstance(table.schema.fields[field],
                                                              Folded) else ""
        raise SchemaMismatch(f"{table.name}.{field}: declared unique, but more than one "
                             f"stored {table.schema.name} has "
                             f"{table.schema.fields[field].from_stored(row[0])!r}{compared}")


def check_values(db: Any, table: Table, field: str) -> None:
    """Refuse a field's rule that a stored value breaks (a narrowed
    ``text(n)`` or ``integer`` bound), naming the first such record."""
    kind = table.schema.fields[field]
    for record_id, value in db.execute(f"SELECT id, {field} FROM {table.name} "
                                       f"WHERE {field} IS NOT NULL ORDER BY id"):
        try:
            kind(kind.from_stored(value))
        except ValueError as refused:       # FieldError
            raise SchemaMismatch(
                f"{table.name}.{field}: declared {kind!r}, but the stored {table.schema.name} "
                f"{record_id} {refused} (narrowing a rule needs every stored value to keep "
                "to it)") from None


def _old_kind(was: dict[str, Any]) -> Any:
    """The kind a stored field had, to read its values back as it wrote them."""
    try:
        return kind_of(was.get("rule", ""))
    except ValueError:
        return _AsStored


class _AsStored:
    @staticmethod
    def from_stored(value: Any) -> Any:
        return value


def _ids(db: Any, query: str) -> set[int]:
    return {row[0] for row in db.execute(query)}


def _count(ids: set[int]) -> str:
    return f"{len(ids):,} record{'s' * (len(ids) != 1)}"


__all__ = ["Step", "apply", "check_unique", "check_values", "collated_fields", "steps"]
