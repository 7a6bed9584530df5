"""A store's atomic step as what wraps it sees it (``served.Step``), on
every store: ``step.attempt(part)`` undoes what ``part`` wrote if it
raises, and the step goes on (on PostgreSQL too, where a refused
statement ends a transaction); ``step.db`` is the step's transaction, or
``None`` where the store says its steps have none
(``protocol.Transactional``). The idempotency feature keeps its answers
so (``test_idempotency``); no store method takes a feature's argument."""
from __future__ import annotations

import pytest

from usersvc import USER
from usersvc.storage import Conflict, open_store
from usersvc.storage.protocol import Atomic, Transactional


@pytest.fixture
def storage(store_url):
    storage = open_store(store_url, (USER,))
    yield storage
    storage.close()


def emails(storage) -> list[str]:
    return [user.email for user in storage["users"].list()]


def test_an_attempt_that_raises_is_undone_and_the_step_goes_on(storage):
    def part(users):
        users.create(name="Undone", email="undone@example.org")
        users.create(name="Taken", email="kept@example.org")        # refused

    def run(step):
        users = step["users"]
        kept = users.create(name="Kept", email="kept@example.org")
        with pytest.raises(Conflict):
            step.attempt(part, users)
        return kept, users.create(name="After", email="after@example.org")
    kept, after = storage.atomically(("users",), run)
    assert emails(storage) == ["kept@example.org", "after@example.org"]
    assert after.id > kept.id
    assert storage["users"].count() == 2


def test_an_attempt_that_works_is_kept_with_its_step(storage):
    def run(step):
        made = step.attempt(lambda: step["users"].create(name="Ada", email="ada@example.org"))
        return made, step["users"].create(name="Grace", email="grace@example.org")
    made, _ = storage.atomically(("users",), run)
    assert storage["users"].get(made.id) == made
    assert emails(storage) == ["ada@example.org", "grace@example.org"]


def test_a_refused_write_with_nothing_to_undo_leaves_the_step_going_on(storage):
    storage["users"].create(name="Ada", email="ada@example.org")

    def run(step):
        users = step["users"]
        with pytest.raises(Conflict):
            step.attempt(lambda: users.create(name="Twin", email="ADA@example.org"))
        return users.create(name="Grace", email="grace@example.org")
    storage.atomically(("users",), run, nothing_to_undo=True)
    assert emails(storage) == ["ada@example.org", "grace@example.org"]


def test_an_error_after_an_attempt_undoes_the_whole_step(storage):
    def run(step):
        step.attempt(lambda: step["users"].create(name="Ada", email="ada@example.org"))
        raise ValueError("the step fails")
    with pytest.raises(ValueError):
        storage.atomically(("users",), run)
    assert emails(storage) == []


def test_a_step_s_db_is_its_transaction_as_the_store_says(storage):
    assert isinstance(storage, Atomic) and isinstance(storage, Transactional)

    def run(step):
        step["users"].create(name="Ada", email="ada@example.org")
        if storage.dialect is None:
            return step.db
        return step.db.execute("SELECT count(*) FROM users").fetchone()[0]
    seen = storage.atomically(("users",), run)
    assert seen is None if storage.dialect is None else seen == 1
