"""docs/api.md, "Storage": the promises every user store keeps, run on each one.

The promises of any record store (ids, versions, preconditions, paging,
races) are the reusable suite in ``store_contract``, joined here by the
``contract`` fixture; the users' own (e-mail uniqueness, the e-mail filter,
``last_id`` and ``restore``) follow. A new user store joins both by adding
one entry to ``STORES`` in conftest.
"""
from __future__ import annotations

import itertools

import pytest
from helpers import race
from store_contract import *  # noqa: F403  (the suite's tests)
from store_contract import THREADS, Contract

from usersvc import USER
from usersvc.storage import Conflict, NotFound, Precondition

User = USER.record


@pytest.fixture
def contract(store):
    numbers = itertools.count(1)
    return Contract(store, lambda text: {"name": text, "email": f"u{next(numbers)}@example.org"})


def test_create_returns_the_user_at_version_1(store):
    assert store.create(name="Ada", email="ada@example.org") == \
        User(id=1, name="Ada", email="ada@example.org", version=1)


def test_a_missing_user_is_user_not_found(store):
    for call in (lambda: store.get(1), lambda: store.update(1, name="X"), lambda: store.delete(1),
                 lambda: store.delete(1, precondition=Precondition(match=frozenset({1})))):
        with pytest.raises(NotFound):
            call()


def test_emails_are_unique_ignoring_case(store):
    store.create(name="Ada", email="ada@example.org")
    with pytest.raises(Conflict):
        store.create(name="Other", email="ADA@Example.Org")


def test_emails_compare_by_casefold(store):
    store.create(name="Ada", email="STRASSE@example.org")
    assert [u.email for u in store.list(email="strasse@EXAMPLE.org")] == ["STRASSE@example.org"]


def test_a_freed_email_can_be_taken_again(store):
    user = store.create(name="Ada", email="ada@example.org")
    store.delete(user.id)
    assert store.create(name="Ada", email="ada@example.org").id > user.id


def test_update_to_a_taken_email_raises_and_changes_nothing(store):
    store.create(name="Ada", email="ada@example.org")
    bob = store.create(name="Bob", email="bob@example.org")
    with pytest.raises(Conflict):
        store.update(bob.id, name="Robert", email="Ada@example.org")
    assert store.get(bob.id) == bob


def test_update_may_change_the_case_of_its_own_email(store):
    user = store.create(name="Ada", email="ada@example.org")
    assert store.update(user.id, email="ADA@example.org").email == "ADA@example.org"


def test_update_releases_the_old_email(store):
    user = store.create(name="Ada", email="ada@example.org")
    store.update(user.id, email="king@example.org")
    store.create(name="Other", email="ada@example.org")
    with pytest.raises(Conflict):
        store.create(name="Other", email="king@example.org")


def test_list_filters_by_email_with_after(store):
    user = store.create(name="Ada", email="ada@example.org")
    assert store.list(email="ADA@example.org") == [user]
    assert store.list(email="ADA@example.org", after=user.id) == []
    assert store.list(email="ada@example.com") == []
    assert store.list(email="%") == [] and store.list(email="_da@example.org") == []


def test_an_email_with_sql_metacharacters_is_kept_and_found_verbatim(store):
    name = "Robert'); DROP TABLE users;-- \" % _ \\ <x>"
    user = store.create(name=name, email="o'hara@example.org")
    assert store.get(user.id).name == name
    assert store.list(email="O'HARA@example.org") == [store.get(user.id)]


# -- concurrency: races widened with a barrier -----------------------------

def test_the_same_email_raced_from_many_threads_is_created_once(store):
    def create(i):   # the same address, in two spellings
        return store.create(name=f"U{i}", email="same@example.org" if i % 2 else "SAME@example.org")

    results = race(THREADS, create)
    created = [r for r in results if isinstance(r, User)]
    assert len(created) == 1
    assert all(isinstance(r, Conflict) for r in results if r not in created)
    assert store.list() == created


# -- last_id and restore: what `usersvc copy` stands on ---------------------

def test_last_id_counts_deleted_ids(store):
    assert store.last_id() == 0
    users = [store.create(name="U", email=f"u{i}@example.org") for i in range(3)]
    store.delete(users[-1].id)
    assert store.last_id() == users[-1].id


def test_restore_keeps_ids_and_versions_and_new_ids_continue_above(store):
    users = [User(id=3, name="Ada", email="ada@example.org", version=7),
             User(id=10, name="Bob", email="Bob@Example.org", version=1)]
    store.restore(users)
    assert store.list() == users
    assert store.get(3).version == 7
    assert store.create(name="New", email="new@example.org").id == 11
    with pytest.raises(Conflict):     # restored addresses are as unique as any
        store.create(name="B", email="bob@example.org")


def test_restore_raises_last_id_past_deleted_ids(store):
    store.restore([User(id=2, name="Ada", email="ada@example.org", version=1)], last_id=50)
    assert store.last_id() == 50
    assert store.create(name="New", email="new@example.org").id == 51


def test_restore_of_nothing_only_raises_last_id(store):
    store.restore([], last_id=5)
    assert store.list() == []
    assert store.create(name="New", email="new@example.org").id == 6


def test_restore_never_reuses_an_id_handed_out_before_even_if_deleted(store):
    gone = store.create(name="Ada", email="ada@example.org")
    store.delete(gone.id)
    with pytest.raises(Conflict):
        store.restore([User(id=gone.id, name="Other", email="other@example.org",
                            version=gone.version)])
    assert store.list() == []


@pytest.mark.parametrize("clash", [
    User(id=1, name="Other", email="other@example.org", version=1),      # an id that is taken
    User(id=9, name="Other", email="ADA@example.org", version=1),        # an e-mail that is taken
])
def test_restore_is_all_or_nothing(store, clash):
    existing = store.create(name="Ada", email="ada@example.org")
    with pytest.raises(Conflict):
        store.restore([User(id=5, name="Fine", email="fine@example.org", version=1), clash])
    assert store.list() == [existing]
