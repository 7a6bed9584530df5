"""What a store keeps of a schema and checks when it opens, shared by the
stores (below ``open_store``, which names them): a schema as a store records
it (``declaration``, ``schema_from``, a field's kind by its rule: ``kind_of``),
a layout brought up to date (``upgrade``, each migration's steps run by
``apply``) or refused (``SchemaTooNew``, ``SchemaMismatch``), its
collections' references (``references_of``), a store's ``Restores``, the
ids a ``restore`` may take (``check_fresh_ids``), and a storage URL as logs
may show it (``redact``).
"""
from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..fields import FOLDING, MAX_INTEGER, Field, text
from ..schema import Schema
from .errors import Conflict

if TYPE_CHECKING:
    from .feed import Change
    from .references import References

MAX_DOUBLE = 1.7976931348623157e308       # (sys.float_info.max)


class SchemaTooNew(RuntimeError):
    """The database was written by a newer usersvc than this one."""

    @classmethod
    def check(cls, found: int, known: int) -> None:
        """Raise if a database's schema version ``found`` is above ``known``."""
        if found > known:
            raise cls(f"the database has schema version {found}; this usersvc "
                      f"knows versions up to {known}")


class Restores:
    """``restore`` and ``restore_changes``, as one ``_restore(records,
    changes, last_id)`` of the store's (the changes' records, when given)."""

    _restore: Callable[[Sequence[Any], Sequence[Change], int], None]   # (each store's own)

    def restore(self, records: Sequence[Any], *, last_id: int = 0) -> None:
        self._restore(records, (), last_id)

    def restore_changes(self, changes: Sequence[Change], *, last_id: int = 0) -> None:
        self._restore([c.record for c in changes if c.record is not None],
                      changes, last_id)


#: One step of a migration: a statement, or a function of the connection
#: for what SQL cannot compute (Python's ``str.casefold``).
Step = str | Callable[[Any], None]


def apply(db: Any, steps: Sequence[Step]) -> None:
    """Run one migration's steps on a connection (sqlite3's or psycopg's)."""
    for step in steps:
        if isinstance(step, str):
            db.execute(step)
        else:
            step(db)


def upgrade(db: Any, found: int, migrations: Sequence[Sequence[Step]],
            fresh: Sequence[Step] = ()) -> None:
    """Apply what a layout at version ``found`` lacks: ``fresh`` to a new one
    (0, when given), else each migration past ``found``; ``SchemaTooNew``
    for a layout this usersvc does not know."""
    SchemaTooNew.check(found, len(migrations))
    if found == 0 and fresh:
        apply(db, fresh)
    else:
        for version in range(found, len(migrations)):
            apply(db, migrations[version])


class SchemaMismatch(ValueError):
    """A stored collection cannot be opened with its schema as declared (a
    stored field the schema lacks, a new required field...): nothing was
    changed. ``str()`` is one line naming the collection and the field."""


def declaration(schema: Schema) -> dict[str, Any]:
    """What a store records of the schema, to compare at its next open:
    each field's stored type, its rule as declared (``text(100)``: the
    kind's ``repr``; when it changes, every stored value is held to the
    new one) and whether it may be absent, and what is indexed."""
    return {"name": schema.name, "plural": schema.plural, "order": list(schema.fields),
            "fields": {f: {"type": kind.type, "rule": repr(kind), "optional": f in schema.optional}
                       for f, kind in schema.fields.items()},
            "unique": sorted(schema.unique), "filters": sorted(schema.filters),
            "sorts": sorted(schema.sorts[1:]), "words": sorted(schema.words),
            "prefixes": sorted(schema.prefixes), "keyed": sorted(schema.collated),
            "folding": FOLDING, "searched": sorted(schema.searched),
            **({"filtered_sorts": {f: list(by) for f, by in schema.filtered_sorts.items()}}
               if schema.filtered_sorts else {}),
            "timestamps": bool(schema.read_only)}


def schema_from(declaration: dict[str, Any]) -> Schema:
    """The schema a stored declaration records: its fields, each of the
    kind its rule names (``kind_of``: ``text(200)``,
    ``choice('low', 'high')``), its indexes and names (for ``usersvc
    copy``, which opens a store as it recorded itself, and makes the copy
    record the same). A field recorded before rules were is of its type,
    without bounds."""
    from ..kinds import integers, number  # (the kinds it may name: loaded when one is read)
    loose = {"text": text(2**31), "integer": integers.integer(-MAX_INTEGER, MAX_INTEGER),
             "number": number(-MAX_DOUBLE, MAX_DOUBLE)}
    order = declaration.get("order") or list(declaration["fields"])
    timestamps = declaration.get("timestamps", False)       # (created and updated: its own)
    fields = {f: kind_of(kind["rule"]) if "rule" in kind else loose[kind["type"]]
              for f in order for kind in [declaration["fields"][f]]
              if not (timestamps and f in ("created", "updated"))}
    return Schema(declaration["name"], declaration["plural"], fields, timestamps=timestamps,
                  optional=[f for f, kind in declaration["fields"].items() if kind["optional"]],
                  filtered_sorts=declaration.get("filtered_sorts"),
                  **{what: declaration[what] for what in ("unique", "filters", "sorts", "words",
                                                          "prefixes")})


def kind_of(rule: str) -> Field:
    """The kind a stored declaration's rule (a kind's ``repr``) names:
    ``text(200)``, ``boolean``, ``choice('low', 'high')``, an embedder's
    ``money`` (``Field.kinds``: its module imported); ``ValueError`` for
    another."""
    from ..kinds import integers, stamp  # noqa: F401  (usersvc's kinds: in Field.kinds once loaded)
    name, _, arguments = rule.partition("(")
    made = Field.kinds.get(name)
    try:
        if made is not None:
            kind = made(*ast.literal_eval(f"({arguments[:-1]},)")) if arguments else made()
            if repr(kind) == rule:
                return kind
    except (SyntaxError, ValueError, TypeError):
        pass
    raise ValueError(f"a stored field's kind that usersvc does not know: {rule} (a kind of "
                     "your own: import the module that defines it first, as usersvc copy --kinds "
                     "MODULE does)")


def references_of(schemas: Sequence[Schema]) -> dict[str, References]:
    """Each collection's references, by plural (``references.references``,
    imported where a schema has a ``ref``: none has, none is); ``ValueError``
    for a ``ref`` to a collection the store does not hold."""
    if not any(kind.refers_to for schema in schemas for kind in schema.fields.values()):
        return {}
    from .references import references
    return references(schemas)


def check_fresh_ids(records: Sequence[Any], handed_out: int) -> None:
    """``restore`` takes only ids above every id the store has handed out:
    ids are never reused (and a version, with its id, names one content
    for good, which the SQLite store's kept records rely on)."""
    if records and min(r.id for r in records) <= handed_out:
        raise Conflict(f"Ids are never reused: this store has handed out ids up to "
                       f"{handed_out}, and record {min(r.id for r in records)} is not above that.")


def redact(url: str) -> str:
    """``url`` with any password replaced by ``***``, for logs and messages."""
    scheme, sep, rest = url.partition("://")
    authority, slash, path = rest.partition("/")
    user, at, host = authority.rpartition("@")
    if sep and at and ":" in user:
        user = user.split(":", 1)[0] + ":***"
        return f"{scheme}{sep}{user}@{host}{slash}{path}"
    return url
