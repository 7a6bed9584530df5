"""The promises every record store keeps, for any collection: a reusable suite.

A test module joins a store to it with one fixture, ``contract``, and a
star import::

    from store_contract import *  # noqa: F403  (the suite's tests)

    @pytest.fixture
    def contract():
        return Contract(MemoryBookStore(), lambda text: {"title": text})

``Contract.fields(text)`` gives the fields of a new valid record each time
it is called, distinct from every earlier one (unique fields made unique),
with ``text`` in its free-text fields. The suite holds the store to what
``usersvc.storage.UserStore`` promises of any record: fresh increasing ids
never reused, a new version on every change, ``NotFound`` and
``StaleVersion``, preconditions checked atomically with the write, and
pages by id. ``test_store_contract`` runs it on every user store, with the
users' own promises (e-mail uniqueness, ``restore``) beside it;
``test_every_kind_store`` runs it on a collection of every kind.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from helpers import race

from usersvc.storage import MAX_ID, NotFound, Precondition, StaleVersion

THREADS = 16


@dataclass
class Contract:
    store: Any
    fields: Callable[[str], dict[str, Any]]

    def create(self, text: str = "A") -> Any:
        return self.store.create(**self.fields(text))

    def text_fields(self, record: Any, fields: dict[str, Any]) -> dict[str, Any]:
        return {name: getattr(record, name) for name in fields}


def test_create_returns_the_record_at_version_1_with_its_fields(contract):
    fields = contract.fields("Ada")
    record = contract.store.create(**fields)
    assert record.version == 1 and record.id >= 1
    assert contract.text_fields(record, fields) == fields


def test_get_returns_what_was_created(contract):
    record = contract.create()
    assert contract.store.get(record.id) == record


@pytest.mark.parametrize("record_id", [0, -1, 99, MAX_ID, MAX_ID + 1, 2**100])
def test_get_of_an_unknown_id_raises_not_found(contract, record_id):
    contract.create()
    with pytest.raises(NotFound):
        contract.store.get(record_id)


def test_ids_increase_and_are_never_reused(contract):
    ids = [contract.create().id for _ in range(3)]
    contract.store.delete(ids[-1])
    contract.store.delete(ids[0])
    new = contract.create().id
    assert ids == sorted(ids) and len(set(ids)) == 3
    assert new > ids[-1]


def test_update_changes_given_fields_and_the_version(contract):
    record = contract.create("Before")
    changed = contract.fields("After")
    updated = contract.store.update(record.id, **changed)
    assert (updated.id, updated.version) == (record.id, 2)
    assert contract.text_fields(updated, changed) == changed
    assert contract.store.get(record.id) == updated
    # Nothing given: a new version all the same.
    assert contract.store.update(record.id).version == 3


def test_a_required_field_left_out_or_none_is_a_type_error_and_nothing_is_written(contract):
    record = contract.create("Kept")
    for field in contract.store.schema.required:
        fields = contract.fields("X")
        del fields[field]
        with pytest.raises(TypeError, match=field):
            contract.store.create(**fields)
        with pytest.raises(TypeError, match=field):
            contract.store.update(record.id, **{field: None})
    assert contract.store.list() == [record]


def test_update_of_a_missing_record_raises_not_found(contract):
    with pytest.raises(NotFound):
        contract.store.update(1, **contract.fields("X"))


def test_delete_removes_and_a_second_delete_raises(contract):
    record = contract.create()
    contract.store.delete(record.id)
    with pytest.raises(NotFound):
        contract.store.get(record.id)
    with pytest.raises(NotFound):
        contract.store.delete(record.id)


@pytest.mark.parametrize("precondition, allowed", [
    (Precondition(match=frozenset({1})), True),
    (Precondition(match=frozenset({2, 1})), True),
    (Precondition(match=frozenset({2})), False),
    (Precondition(match=frozenset()), False),
    (Precondition(match=None), True),
    (Precondition(none_match=frozenset({1})), False),
    (Precondition(none_match=frozenset({2})), True),
    (Precondition(none_match=None), False),
])
def test_preconditions_guard_update_and_delete(contract, precondition, allowed):
    store, record = contract.store, contract.create()
    if allowed:
        assert store.update(record.id, precondition=precondition).version == 2
    else:
        with pytest.raises(StaleVersion):
            store.update(record.id, precondition=precondition, **contract.fields("B"))
        with pytest.raises(StaleVersion):
            store.delete(record.id, precondition=precondition)
        assert store.get(record.id) == record


def test_a_missing_record_is_not_found_before_any_precondition(contract):
    with pytest.raises(NotFound):
        contract.store.delete(4, precondition=Precondition(match=frozenset({1})))


def test_list_pages_by_id(contract):
    store = contract.store
    ids = [contract.create().id for _ in range(7)]
    store.delete(ids[2])
    assert [r.id for r in store.list(limit=3)] == [ids[0], ids[1], ids[3]]
    assert [r.id for r in store.list(after=ids[3], limit=3)] == ids[4:7]
    assert store.list(after=ids[6]) == []
    assert store.list(after=MAX_ID) == []


def test_values_with_sql_and_markup_metacharacters_are_kept_verbatim(contract):
    fields = contract.fields("Robert'); DROP TABLE users;-- \" % _ \\ <x>")
    record = contract.store.create(**fields)
    assert contract.text_fields(contract.store.get(record.id), fields) == fields


def test_the_same_precondition_raced_from_many_threads_wins_once(contract):
    store, record = contract.store, contract.create()
    expected = Precondition(match=frozenset({record.version}))
    results = race(THREADS, lambda i: store.update(record.id, precondition=expected,
                                                   **contract.fields(f"N{i}")))
    winners = [r for r in results if not isinstance(r, Exception)]
    assert len(winners) == 1
    assert all(isinstance(r, StaleVersion) for r in results if r not in winners)
    assert store.get(record.id) == winners[0]


def test_concurrent_creates_get_distinct_increasing_ids(contract):
    fields = [contract.fields(f"U{i}") for i in range(THREADS)]
    results = race(THREADS, lambda i: contract.store.create(**fields[i]))
    ids = [r.id for r in results]
    assert len(set(ids)) == THREADS
    assert [r.id for r in contract.store.list()] == sorted(ids)


__all__ = ["Contract", *(name for name in dir() if name.startswith("test_"))]
