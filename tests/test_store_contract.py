"""CONTRACT.md, "Storage": the promises every store keeps, run on each one.

A new store joins this suite by adding one entry to ``STORES`` in conftest.
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from usersvc.storage import (
    MAX_ID,
    Conflict,
    EmailTaken,
    Precondition,
    StaleVersion,
    User,
    UserNotFound,
)


def test_create_returns_the_user_at_version_1(store):
    assert store.create(name="Ada", email="ada@example.org") == User(1, "Ada", "ada@example.org", 1)


def test_get_returns_what_was_created(store):
    user = store.create(name="Ada", email="ada@example.org")
    assert store.get(user.id) == user


@pytest.mark.parametrize("user_id", [0, -1, 99, MAX_ID, MAX_ID + 1, 2**100])
def test_get_of_an_unknown_id_raises_user_not_found(store, user_id):
    with pytest.raises(UserNotFound):
        store.get(user_id)


def test_ids_increase_and_are_never_reused(store):
    ids = [store.create(name="U", email=f"u{i}@example.org").id for i in range(3)]
    store.delete(ids[-1])
    store.delete(ids[0])
    new = store.create(name="U", email="new@example.org").id
    assert ids == sorted(ids) and len(set(ids)) == 3
    assert new > ids[-1]


def test_emails_are_unique_ignoring_case(store):
    store.create(name="Ada", email="ada@example.org")
    with pytest.raises(EmailTaken):
        store.create(name="Other", email="ADA@Example.Org")


def test_emails_compare_by_casefold(store):
    store.create(name="Ada", email="STRASSE@example.org")
    assert [u.email for u in store.list(email="strasse@EXAMPLE.org")] == ["STRASSE@example.org"]


def test_a_freed_email_can_be_taken_again(store):
    user = store.create(name="Ada", email="ada@example.org")
    store.delete(user.id)
    assert store.create(name="Ada", email="ada@example.org").id > user.id


def test_update_changes_given_fields_and_the_version(store):
    user = store.create(name="Ada", email="ada@example.org")
    updated = store.update(user.id, name="Ada King")
    assert updated == User(user.id, "Ada King", "ada@example.org", 2)
    assert store.get(user.id) == updated
    assert store.update(user.id).version == 3


def test_update_to_a_taken_email_raises_and_changes_nothing(store):
    store.create(name="Ada", email="ada@example.org")
    bob = store.create(name="Bob", email="bob@example.org")
    with pytest.raises(EmailTaken):
        store.update(bob.id, name="Robert", email="Ada@example.org")
    assert store.get(bob.id) == bob


def test_update_may_change_the_case_of_its_own_email(store):
    user = store.create(name="Ada", email="ada@example.org")
    assert store.update(user.id, email="ADA@example.org").email == "ADA@example.org"


def test_update_releases_the_old_email(store):
    user = store.create(name="Ada", email="ada@example.org")
    store.update(user.id, email="king@example.org")
    store.create(name="Other", email="ada@example.org")
    with pytest.raises(EmailTaken):
        store.create(name="Other", email="king@example.org")


def test_update_of_a_missing_user_raises(store):
    with pytest.raises(UserNotFound):
        store.update(1, name="X")


def test_delete_removes_and_a_second_delete_raises(store):
    user = store.create(name="Ada", email="ada@example.org")
    store.delete(user.id)
    with pytest.raises(UserNotFound):
        store.get(user.id)
    with pytest.raises(UserNotFound):
        store.delete(user.id)


# -- preconditions ---------------------------------------------------------

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
def test_preconditions_guard_update_and_delete(store, precondition, allowed):
    user = store.create(name="Ada", email="ada@example.org")
    if allowed:
        assert store.update(user.id, name="B", precondition=precondition).version == 2
    else:
        with pytest.raises(StaleVersion):
            store.update(user.id, name="B", precondition=precondition)
        with pytest.raises(StaleVersion):
            store.delete(user.id, precondition=precondition)
        assert store.get(user.id) == user


def test_a_missing_user_is_not_found_before_any_precondition(store):
    with pytest.raises(UserNotFound):
        store.delete(4, precondition=Precondition(match=frozenset({1})))


# -- listing -------------------------------------------------------------

def test_list_pages_by_id(store):
    ids = [store.create(name="U", email=f"u{i}@example.org").id for i in range(7)]
    store.delete(ids[2])
    assert [u.id for u in store.list(limit=3)] == [ids[0], ids[1], ids[3]]
    assert [u.id for u in store.list(after=ids[3], limit=3)] == ids[4:7]
    assert store.list(after=ids[6]) == []
    assert store.list(after=MAX_ID) == []


def test_list_filters_by_email_with_after(store):
    user = store.create(name="Ada", email="ada@example.org")
    assert store.list(email="ADA@example.org") == [user]
    assert store.list(email="ADA@example.org", after=user.id) == []
    assert store.list(email="ada@example.com") == []
    assert store.list(email="%") == [] and store.list(email="_da@example.org") == []


def test_values_with_sql_and_markup_metacharacters_are_kept_verbatim(store):
    name = "Robert'); DROP TABLE users;-- \" % _ \\ <x>"
    user = store.create(name=name, email="o'hara@example.org")
    assert store.get(user.id).name == name
    assert store.list(email="O'HARA@example.org") == [store.get(user.id)]


# -- concurrency: races widened with a barrier -----------------------------

THREADS = 16


def race(n, action):
    """Run ``action(i)`` on n threads released together; return results or
    the exceptions they raised."""
    barrier = threading.Barrier(n)

    def run(i):
        barrier.wait()
        try:
            return action(i)
        except Exception as e:   # collected, then asserted on
            return e

    with ThreadPoolExecutor(n) as pool:
        return list(pool.map(run, range(n)))


def test_the_same_email_raced_from_many_threads_is_created_once(store):
    def create(i):   # the same address, in two spellings
        return store.create(name=f"U{i}", email="same@example.org" if i % 2 else "SAME@example.org")

    results = race(THREADS, create)
    created = [r for r in results if isinstance(r, User)]
    assert len(created) == 1
    assert all(isinstance(r, EmailTaken) for r in results if r not in created)
    assert store.list() == created


def test_the_same_precondition_raced_from_many_threads_wins_once(store):
    user = store.create(name="Ada", email="ada@example.org")
    expected = Precondition(match=frozenset({user.version}))
    results = race(THREADS, lambda i: store.update(user.id, name=f"N{i}", precondition=expected))
    winners = [r for r in results if isinstance(r, User)]
    assert len(winners) == 1
    assert all(isinstance(r, StaleVersion) for r in results if r not in winners)
    assert store.get(user.id) == winners[0]


def test_concurrent_creates_get_distinct_increasing_ids(store):
    results = race(THREADS, lambda i: store.create(name="U", email=f"u{i}@example.org"))
    ids = [r.id for r in results]
    assert len(set(ids)) == THREADS
    assert [u.id for u in store.list()] == sorted(ids)


# -- last_id and restore: what `usersvc copy` stands on ---------------------

def test_last_id_counts_deleted_ids(store):
    assert store.last_id() == 0
    users = [store.create(name="U", email=f"u{i}@example.org") for i in range(3)]
    store.delete(users[-1].id)
    assert store.last_id() == users[-1].id


def test_restore_keeps_ids_and_versions_and_new_ids_continue_above(store):
    users = [User(3, "Ada", "ada@example.org", 7), User(10, "Bob", "Bob@Example.org", 1)]
    store.restore(users)
    assert store.list() == users
    assert store.get(3).version == 7
    assert store.create(name="New", email="new@example.org").id == 11
    with pytest.raises(EmailTaken):     # restored addresses are as unique as any
        store.create(name="B", email="bob@example.org")


def test_restore_raises_last_id_past_deleted_ids(store):
    store.restore([User(2, "Ada", "ada@example.org", 1)], last_id=50)
    assert store.last_id() == 50
    assert store.create(name="New", email="new@example.org").id == 51


def test_restore_of_nothing_only_raises_last_id(store):
    store.restore([], last_id=5)
    assert store.list() == []
    assert store.create(name="New", email="new@example.org").id == 6


@pytest.mark.parametrize("clash", [
    User(1, "Other", "other@example.org", 1),      # an id that is taken
    User(9, "Other", "ADA@example.org", 1),        # an e-mail that is taken
])
def test_restore_is_all_or_nothing(store, clash):
    existing = store.create(name="Ada", email="ada@example.org")
    with pytest.raises(Conflict):
        store.restore([User(5, "Fine", "fine@example.org", 1), clash])
    assert store.list() == [existing]
