"""The store contract (``store_contract``) for a collection of every kind
(``every_kind.THINGS``) on every store, and what only such a collection
can ask: a required field missing beside optional ones of every kind."""
from __future__ import annotations

import pytest
from conftest import opened
from every_kind import THINGS, thing_maker
from store_contract import *  # noqa: F403  (the suite's tests)
from store_contract import Contract

from usersvc import USER
from usersvc.serving.transfer import copy_store
from usersvc.storage import Conflict, open_store

EVERY_OPTIONAL = {"contact": "a@example.org", "weight": 0.5, "due": "2026-12-01",
                  "link": "https://example.org/", "note": "a note", "owner": 1}


@pytest.fixture
def storage(store_url):
    """Things and users, with user 1 (every optional field's owner)."""
    for storage in opened(store_url, (USER, THINGS)):
        storage["users"].create(name="Ada", email="ada@example.org")
        yield storage


@pytest.fixture
def things(storage):
    return storage["things"]


@pytest.fixture
def contract(things):
    return Contract(things, thing_maker())


@pytest.mark.parametrize("missing", THINGS.required)
def test_a_required_field_missing_beside_every_optional_one_is_refused(things, missing):
    fields = {**thing_maker()("A"), **EVERY_OPTIONAL}
    del fields[missing]
    with pytest.raises(TypeError, match=missing):
        things.create(**fields)
    kept = things.create(**{**thing_maker(100)("B"), **EVERY_OPTIONAL})
    with pytest.raises(TypeError, match=missing):
        things.update(kept.id, **{missing: None, "note": "changed"})
    assert things.list() == [kept]


def test_every_optional_field_is_absent_until_given_and_removed_by_none(things):
    thing = things.create(**thing_maker()("A"))
    assert all(getattr(thing, f) is None for f in EVERY_OPTIONAL)
    given = things.update(thing.id, **EVERY_OPTIONAL)
    assert {f: getattr(given, f) for f in EVERY_OPTIONAL} == EVERY_OPTIONAL
    assert things.get(thing.id) == given
    removed = things.update(thing.id, **dict.fromkeys(EVERY_OPTIONAL))
    assert all(getattr(removed, f) is None for f in EVERY_OPTIONAL)
    assert things.get(thing.id) == removed and removed.version == 3


@pytest.mark.parametrize("field, first, second", [
    ("code", "C-1", "c-1"), ("contact", "A@Example.org", "a@example.ORG"),
    ("at", "2026-11-25T20:57:01.5Z", "2026-11-25T20:57:01.5Z"),
    ("link", "https://example.org/", "https://example.org/")])
def test_every_unique_field_is_unique_as_its_kind_compares(things, field, first, second):
    make = thing_maker()
    things.create(**{**make("A"), field: first})
    with pytest.raises(Conflict) as taken:
        things.create(**{**make("B"), field: second})
    assert taken.value.errors == [(f"/{field}", "is already taken")]


def test_a_write_taking_every_unique_value_at_once_names_one_field(things, store_url):
    # Which one is the store's (docs/api.md): the first declared on memory
    # and PostgreSQL, which check in that order; the last on SQLite, which
    # checks a table's unique indexes newest first.
    make = thing_maker()
    held = {"code": "c-x", "contact": "x@example.org", "at": "2026-11-25T20:57:01Z",
            "link": "https://example.org/x"}
    things.create(**{**make("A"), **held})
    with pytest.raises(Conflict) as taken:
        things.create(**{**make("B"), **held})
    named = THINGS.unique[-1] if store_url.startswith("sqlite") else THINGS.unique[0]
    assert taken.value.errors == [(f"/{named}", "is already taken")]


def test_usersvc_copy_moves_every_kind_from_a_sqlite_file_into_each_store(tmp_path, store_url):
    source = open_store(f"sqlite:///{tmp_path}/source.db", (USER, THINGS))
    storage = open_store(store_url, (USER, THINGS))
    try:
        source["users"].create(name="Ada", email="ada@example.org")
        make = thing_maker()
        for n in range(20):
            extra = {**EVERY_OPTIONAL, "contact": f"a{n}@example.org",
                     "link": f"https://example.org/{n}"} if n % 2 else {}
            thing = source["things"].create(**make(f"thing {n}"), **extra)
        source["things"].delete(thing.id)
        declared = open_store(f"sqlite:///{tmp_path}/source.db", None)    # as the file says
        copy_store(declared, storage, batch=7)
        declared.close()
        for plural in ("users", "things"):
            assert storage[plural].list(limit=100) == source[plural].list(limit=100)
        # The copy's kinds are the stored ones: a choice orders as declared.
        assert ([t.level for t in storage["things"].list(sort="level", limit=3)]
                == ["low"] * 3)
    finally:
        source.close()
        storage.close()
