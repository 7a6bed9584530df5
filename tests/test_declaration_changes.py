"""Declaration changes are idempotent (docs/api.md, "Changing a
declaration"): hypothesis makes sequences of changes (a field added,
dropped, converted, made required by a default or optional again (a
sort: on PostgreSQL, its index of the records without a value made and
dropped), renamed, its rule narrowed, a choice's values changed, a
filtered sort kept or no longer), with records written between them,
as an app's declaration would grow, each migration kept declared once
made; after each change is opened, opening the same declaration again
changes nothing: no log line, no new version, no feed entry. On SQLite
and PostgreSQL. (Found from outside: a conversion ran again at every
start, and with it kept declared a later change ran it again.)"""
from __future__ import annotations

import itertools
import logging
import uuid

import pytest
from conftest import POSTGRES_REQUIRED, POSTGRES_URL, with_search_path
from hypothesis import HealthCheck, given, settings, strategies as st

from usersvc import Schema, choice, integer, text
from usersvc.storage import open_store

CHANGES = ["add", "drop", "convert", "require", "loosen", "rename", "narrow", "choice", "index"]
SQL_STORES = [pytest.param("sqlite", id="sqlite-file")]
if POSTGRES_URL or POSTGRES_REQUIRED:
    SQL_STORES.append(pytest.param("postgres", id="postgres"))


class Declared:
    """An app's declaration of ``items`` as it changes, its migrations
    kept once declared."""

    def __init__(self):
        self.fields = {"title": text(60), "year": text(10), "level": choice("low", "high"),
                       "note": text(100)}
        self.optional = {"year", "note"}
        self.renamed, self.dropped, self.converted, self.defaults = {}, [], {}, {}
        self.added = itertools.count(1)
        self.indexed = False        # level kept in title order (``filtered_sorts``)

    def schema(self):
        # (the note, by either name, a sort made required and optional again)
        note = "remark" if "remark" in self.fields else "note"
        return Schema("item", "items", dict(self.fields),
                      optional=[f for f in self.fields if f in self.optional],
                      filters=("level",), sorts=("title", "level", note), words=("title",),
                      filtered_sorts={"level": ("title", note)} if self.indexed else None,
                      renamed=dict(self.renamed), dropped=tuple(self.dropped),
                      converted=dict(self.converted), defaults=dict(self.defaults))

    def change(self, what, n):
        """Make the change ``what`` (one that cannot be made now: nothing)."""
        fields = self.fields
        if what == "add":
            fields[f"x{next(self.added)}"] = integer(0, 100)
            self.optional.add(list(fields)[-1])
        elif what == "drop":
            gone = [f for f in fields if f.startswith("x") and f in self.optional]
            if gone:
                del fields[gone[0]]
                self.optional.discard(gone[0])
                self.dropped.append(gone[0])
        elif what == "convert" and fields["year"].type == "text":
            fields["year"] = integer(0, 9999)
            self.converted["year"] = int
        elif what == "require":
            name = "remark" if "remark" in fields else "note"
            if name in self.optional:
                self.optional.discard(name)
                self.defaults[name] = "none"
        elif what == "loosen":
            name = "remark" if "remark" in fields else "note"
            if name not in self.optional:
                self.optional.add(name)
                self.defaults.pop(name, None)
        elif what == "rename" and "note" in fields:
            fields["remark"] = fields.pop("note")
            self.renamed["remark"] = "note"
            if "note" in self.optional:
                self.optional.discard("note")
                self.optional.add("remark")
            if "note" in self.defaults:
                self.defaults["remark"] = self.defaults.pop("note")
        elif what == "narrow" and fields["title"].max_length > 20:
            fields["title"] = text(fields["title"].max_length - 10)
        elif what == "index":
            self.indexed = not self.indexed
        elif what == "choice":
            options = list(fields["level"].options)
            options.insert(n % (len(options) + 1), f"v{len(options)}")
            fields["level"] = choice(*options)

    def record(self, n):
        values = {"title": f"t{n}", "level": self.fields["level"].options[n % 2]}
        if n % 2:
            values["year"] = 1900 + n if self.fields["year"].type == "integer" else str(1900 + n)
        name = "remark" if "remark" in self.fields else "note"
        if n % 3 or name not in self.optional:
            values[name] = f"note {n}"
        for field in self.fields:
            if field.startswith("x") and n % 2:
                values[field] = n
        return values


def _opened(url, schema, caplog):
    """What opening ``schema`` logs, and every record and feed entry then."""
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="usersvc.storage"):
        storage = open_store(url, (schema,))
    try:
        items = storage["items"]
        held = (items.list(limit=1000), [(c.seq, c.id, c.record)
                                         for c in items.changes(after=0, limit=1000)])
    finally:
        storage.close()
    return held, [r.getMessage() for r in caplog.records if r.name == "usersvc.storage"
                  and " writes in " not in r.getMessage()]     # (the writer's summary at close)


@pytest.mark.parametrize("kind", SQL_STORES)
def test_opening_the_same_declaration_again_changes_nothing(kind, tmp_path, caplog, request):
    made = itertools.count()

    # (PostgreSQL: a schema made and dropped for each example: fewer of them.)
    @settings(max_examples=30 if kind == "sqlite" else 12, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(st.lists(st.tuples(st.sampled_from(CHANGES), st.integers(0, 3)), min_size=1,
                    max_size=7))
    def idempotent(changes):
        if kind == "sqlite":
            url, done = f"sqlite:///{tmp_path}/d{next(made)}.db", lambda: None
        else:
            admin = request.getfixturevalue("postgres_admin")
            pg_schema = f"usersvc_decl_{uuid.uuid4().hex[:12]}"
            admin.execute(f"CREATE SCHEMA {pg_schema}")
            url = with_search_path(POSTGRES_URL, pg_schema)
            done = lambda: admin.execute(f"DROP SCHEMA {pg_schema} CASCADE")  # noqa: E731
        try:
            declared, n = Declared(), itertools.count()
            for what, between in [("first", 2), *changes]:
                if what != "first":
                    declared.change(what, between)
                schema = declared.schema()
                storage = open_store(url, (schema,))
                for _ in range(between):
                    storage["items"].create(**declared.record(next(n)))
                storage.close()
                first, _ = _opened(url, schema, caplog)
                again, said = _opened(url, schema, caplog)
                assert said == [], (what, said)
                assert again == first, what
        finally:
            done()

    idempotent()
