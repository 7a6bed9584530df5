"""The store contract (``store_contract``) for a collection of every kind
(``every_kind.THINGS``) on every store, and what only such a collection
can ask: a required field missing beside optional ones of every kind."""
from __future__ import annotations

import pytest
from every_kind import THINGS, thing_maker
from store_contract import *  # noqa: F403  (the suite's tests)
from conftest import opened
from store_contract import Contract

from usersvc import USER
from usersvc.storage import Conflict

EVERY_OPTIONAL = {"contact": "a@example.org", "weight": 0.5, "due": "2026-12-01",
                  "link": "https://example.org/", "note": "a note"}


@pytest.fixture
def things(store_url):
    for storage in opened(store_url, (USER, THINGS)):
        yield storage["things"]


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
