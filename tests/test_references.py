"""docs/api.md, "References": a ``ref("users")`` field names a user that
exists when the write is made, checked in the write's atomic step; a user
that a task names cannot be deleted (409, nothing deleted). On every
store, over HTTP and through the storage protocol, alone, in a batch, and
raced from many threads."""
from __future__ import annotations

import sqlite3
import threading

import pytest
from conftest import Client, problem
from helpers import DEADLINE, race

from usersvc import USER, Schema, boolean, make_app, ref, text
from usersvc.storage import Conflict, NotFound, open_store
from usersvc.storage.errors import Dangling

TASKS = Schema("task", "tasks", {"title": text(50), "done": boolean, "owner": ref("users"),
                                 "parent": ref("tasks")},
               optional=("owner", "parent"), filters=("done",))
ADA = {"name": "Ada", "email": "ada@example.org"}


@pytest.fixture
def storage(store_url):
    storage = open_store(store_url, (USER, TASKS))
    yield storage
    storage.close()


@pytest.fixture
def client(storage):
    return Client(make_app(storage))


def everything(client: Client) -> tuple[list, list]:
    return client.get("/users").json, client.get("/tasks").json


def test_a_ref_names_a_record_that_exists_and_a_named_record_stays(client):
    response = client.post("/tasks", json_body={"title": "a", "done": False, "owner": 1})
    assert problem(response, 422)["errors"] == [{"pointer": "/owner",
                                                 "detail": "there is no user 1"}]
    assert everything(client) == ([], [])
    ada = client.post("/users", json_body=ADA).json
    task = client.post("/tasks", json_body={"title": "a", "done": False, "owner": ada["id"]}).json
    assert task["owner"] == ada["id"]
    # Changed to a user that is not there: refused, nothing changed.
    response = client.patch(f"/tasks/{task['id']}", json_body={"owner": 99},
                            content_type="application/merge-patch+json")
    assert problem(response, 422)["detail"] == "There is no user 99."
    before = everything(client)
    assert before[1] == [task]
    # The user it names cannot be deleted; the detail names the tasks.
    detail = problem(client.delete(f"/users/{ada['id']}"), 409)["detail"]
    assert "tasks" in detail and "owner" in detail
    assert everything(client) == before
    # Once no task names it, it can.
    client.patch(f"/tasks/{task['id']}", json_body={"owner": None},
                 content_type="application/merge-patch+json")
    assert client.delete(f"/users/{ada['id']}").status_code == 204
    # A task may name a task, itself included; it cannot be deleted while another does.
    child = client.post("/tasks", json_body={"title": "b", "done": True,
                                             "parent": task["id"]}).json
    assert problem(client.delete(f"/tasks/{task['id']}"), 409)
    assert client.delete(f"/tasks/{child['id']}").status_code == 204
    assert client.delete(f"/tasks/{task['id']}").status_code == 204


def test_a_list_is_filtered_by_a_ref_and_xml_writes_it_as_decimal_text(client):
    client.post("/users", json_body=ADA)
    client.post("/users", json_body={"name": "Bo", "email": "bo@example.org"})
    for owner in (1, 2, 1, None):
        client.post("/tasks", json_body={"title": "t", "done": False,
                                         **({} if owner is None else {"owner": owner})})
    assert [t["id"] for t in client.get("/tasks?owner=1").json] == [1, 3]
    assert client.get("/tasks?owner=3").json == []
    assert problem(client.get("/tasks?owner=x"), 400)
    body = "<task><title>x</title><done>false</done><owner> 2 </owner></task>"
    made = client.post("/tasks", body=body, content_type="application/xml")
    assert made.status_code == 201 and made.json["owner"] == 2
    assert "<owner>2</owner>" in client.get(made.headers["Location"],
                                            headers={"Accept": "application/xml"}).text
    body = "<task><title>x</title><done>false</done><owner>7</owner></task>"
    assert problem(client.post("/tasks", body=body, content_type="application/xml"), 422)


def test_the_storage_protocol_checks_references_too(storage):
    users, tasks = storage["users"], storage["tasks"]
    with pytest.raises(Dangling) as dangling:
        tasks.create(title="a", done=False, owner=5)
    assert dangling.value.errors == [("/owner", "there is no user 5")]
    user = users.create(**ADA)
    task = tasks.create(title="a", done=False, owner=user.id)
    with pytest.raises(Conflict):
        users.delete(user.id)
    assert users.get(user.id) == user and tasks.list() == [task]
    with pytest.raises(NotFound):
        users.delete(99)


def test_a_batch_may_name_what_it_made_and_is_refused_whole_for_what_is_not_there(client):
    made = client.post("/batch", json_body={"requests": [
        {"method": "POST", "path": "/users", "body": ADA},
        {"method": "POST", "path": "/tasks", "body": {"title": "a", "done": False,
                                                      "owner": 1}}]})
    assert made.status_code == 200, made.text
    before = everything(client)
    refused = client.post("/batch", json_body={"requests": [
        {"method": "POST", "path": "/tasks", "body": {"title": "b", "done": False,
                                                      "owner": 1}},
        {"method": "POST", "path": "/tasks", "body": {"title": "c", "done": False,
                                                      "owner": 2}}]})
    assert problem(refused, 422)["request"] == 1
    assert everything(client) == before
    refused = client.post("/batch", json_body={"requests": [
        {"method": "DELETE", "path": "/users/1"}, {"method": "DELETE", "path": "/tasks/1"}]})
    assert problem(refused, 409)["request"] == 0
    assert everything(client) == before
    done = client.post("/batch", json_body={"requests": [
        {"method": "DELETE", "path": "/tasks/1"}, {"method": "DELETE", "path": "/users/1"}]})
    assert done.status_code == 200 and everything(client) == ([], [])


def test_racing_deletes_and_references_never_leave_a_task_naming_no_user(storage):
    users, tasks = storage["users"], storage["tasks"]
    ids = [users.create(name=f"u{i}", email=f"u{i}@example.org").id for i in range(6)]

    def act(i):
        user = ids[i // 4]
        if i % 4 == 0:
            return users.delete(user)
        return tasks.create(title=f"t{i}", done=False, owner=user)
    results = race(24, act)
    for result in results:
        assert result is None or isinstance(result, (Conflict, Dangling)) or result.owner
    remaining = {u.id for u in users.list(limit=100)}
    for task in tasks.list(limit=100):
        assert task.owner in remaining
    for user, deleted in zip(ids, results[::4], strict=True):
        made = [r for r in results if getattr(r, "owner", None) == user]
        # Deleted: no task named it; kept: it was refused because one did.
        assert (deleted is None) == (user not in remaining)
        assert (not made) if deleted is None else isinstance(deleted, Conflict)


def test_a_ref_to_a_collection_the_store_does_not_hold_is_refused_at_open(tmp_path):
    path = tmp_path / "t.db"
    with pytest.raises(ValueError, match="tasks.owner: refers to users"):
        open_store(f"sqlite:///{path}", (TASKS,))
    tables = sqlite3.connect(path).execute(
        "SELECT name FROM sqlite_master WHERE name = 'tasks'").fetchall()
    assert tables == []
    with pytest.raises(ValueError, match="refers to users"):
        open_store("memory://", (TASKS,))


def _batch(client, *requests):
    return client.post("/batch", json_body={"requests": list(requests)})


def test_batches_single_writes_and_deletes_across_collections_never_wait_for_each_other(client):
    """One lock order (docs/architecture.md): a batch that deletes a user
    (users, then tasks for its check) beside single writes and batches of
    tasks naming users (tasks, then users) once deadlocked the memory store;
    on PostgreSQL a batch naming a user checked it unlocked, and a task was
    left naming a deleted user. Four kinds of writer, raced, each request
    under the race's deadline; then no task names a missing user."""
    keep = client.post("/users", json_body=ADA).json["id"]
    latest = [keep]         # the last user made: what the tasks name

    def act(i):
        for n in range(60):
            if i == 0:      # a user made, then deleted by a batch
                made = client.post("/users", json_body={"name": "u", "email": f"u{n}@x.org"})
                latest[0] = made.json["id"]
                _batch(client, {"method": "DELETE", "path": f"/users/{latest[0]}"})
            elif i == 1:    # single writes naming the latest user (and the next)
                client.post("/tasks", json_body={"title": "t", "done": False,
                                                 "owner": latest[0] + n % 2})
            elif i == 2:    # a tasks batch naming a user late
                _batch(client, *[{"method": "POST", "path": "/tasks",
                                  "body": {"title": "b", "done": False}}] * 3,
                       {"method": "POST", "path": "/tasks",
                        "body": {"title": "late", "done": False, "owner": latest[0]}})
            else:           # a users batch deleting one, then writing another
                _batch(client, {"method": "DELETE", "path": f"/users/{latest[0]}"},
                       *[{"method": "PATCH", "path": f"/users/{keep}",
                          "headers": {"content-type": "application/merge-patch+json"},
                          "body": {"name": f"n{n}"}}] * 5)
            # a task deleted now and then, so users can go
            if i == 1 and n % 3 == 0:
                for task in client.get("/tasks?limit=5").json:
                    client.delete(f"/tasks/{task['id']}")
    for result in race(4, act):
        assert result is None, result
    users = {u["id"] for u in client.get("/users?limit=1000").json}
    owners = {t["owner"] for t in client.get("/tasks?limit=1000").json if "owner" in t}
    assert owners <= users


@pytest.mark.parametrize("attempt", range(5))
def test_a_batch_deleting_a_user_and_a_batch_naming_it_never_both_win(client, attempt):
    """Two batches overlapping by milliseconds: one deletes user 2 first
    (then writes user 1 many times), one writes a task many times and then
    makes a task naming user 2. Whichever comes second sees the other:
    never both 200 with a task naming no user."""
    one = client.post("/users", json_body=ADA).json["id"]
    two = client.post("/users", json_body={"name": "B", "email": "b@x.org"}).json["id"]
    task = client.post("/tasks", json_body={"title": "t", "done": False}).json["id"]
    patch = {"content-type": "application/merge-patch+json"}

    def act(i):
        if i == 0:
            return _batch(client, {"method": "DELETE", "path": f"/users/{two}"},
                          *[{"method": "PATCH", "path": f"/users/{one}", "headers": patch,
                             "body": {"name": f"n{n}"}} for n in range(99)])
        return _batch(client, *[{"method": "PATCH", "path": f"/tasks/{task}", "headers": patch,
                                 "body": {"title": f"n{n}"}} for n in range(30)],
                      {"method": "POST", "path": "/tasks",
                       "body": {"title": "t", "done": False, "owner": two}})
    deleted, named = (r.status_code for r in race(2, act))
    assert (deleted, named) in ((200, 422), (409, 200)), (deleted, named)
    users = {u["id"] for u in client.get("/users").json}
    assert {t["owner"] for t in client.get("/tasks").json if "owner" in t} <= users


def test_after_a_refused_delete_or_a_failed_batch_the_feed_ends_where_it_did(storage, client):
    """The feed's position is its last entry's: a delete refused with 409
    (a task names the user) and a failed batch add none, so a client at
    the end of the feed waits for the next change, not at once (memory
    once answered every ``wait`` at once until the next write)."""
    ada = client.post("/users", json_body=ADA).json["id"]
    client.post("/tasks", json_body={"title": "t", "done": False, "owner": ada})
    end = storage["users"].position()
    assert [c.seq for c in storage["users"].changes(after=0)] == [end]
    problem(client.delete(f"/users/{ada}"), 409)
    refused = _batch(client, {"method": "POST", "path": "/users",
                              "body": {"name": "B", "email": "b@x.org"}},
                     {"method": "DELETE", "path": f"/users/{ada}"})
    assert problem(refused, 409)["request"] == 1
    assert storage["users"].position() == end
    assert storage["users"].changes(after=end) == []
    answers = []
    waiting = threading.Thread(target=lambda: answers.append(
        client.get(f"/users/changes?after={end}&wait=30")))
    waiting.start()
    made = client.post("/users", json_body={"name": "C", "email": "c@x.org"}).json
    waiting.join(DEADLINE)
    assert not waiting.is_alive()
    assert [e["id"] for e in answers[0].json] == [made["id"]]     # not [] at once


def test_a_failed_batchs_ids_are_never_handed_out_again(storage, client):
    """Every store alike (PostgreSQL's sequences are not undone; memory and
    SQLite keep theirs as taken too): ids increase and are never reused."""
    first = client.post("/users", json_body=ADA).json["id"]
    refused = _batch(client, {"method": "POST", "path": "/users",
                              "body": {"name": "B", "email": "b@x.org"}},
                     {"method": "POST", "path": "/tasks",
                      "body": {"title": "t", "done": False, "owner": 999}})
    assert problem(refused, 422)["request"] == 1
    assert storage["users"].last_id() == first + 1
    again = client.post("/users", json_body={"name": "B", "email": "b@x.org"}).json["id"]
    assert again == first + 2


def test_a_write_to_a_missing_or_changed_record_naming_a_missing_one_is_404_or_412(client):
    """The record the URL names is looked at first: 404 (or 412 for another
    version) before the 422 for a record the body names."""
    patch = "application/merge-patch+json"
    problem(client.patch("/tasks/99", json_body={"owner": 99}, content_type=patch), 404)
    task = client.post("/tasks", json_body={"title": "a", "done": False}).json["id"]
    problem(client.patch(f"/tasks/{task}", json_body={"owner": 99}, content_type=patch,
                         headers={"If-Match": '"9-9"'}), 412)
    problem(client.patch(f"/tasks/{task}", json_body={"owner": 99}, content_type=patch), 422)


def test_checked_names_each_read_it_passes_on_and_is_no_proxy(storage):
    """``Checked`` (the tasks: they name records) passes each read of
    ``RecordStore`` and ``ChangeFeed`` to its records by name, and has no
    ``__getattr__``: what it is, a reader sees in its class."""
    from usersvc.storage.protocol import ChangeFeed, RecordStore
    from usersvc.storage.served import Checked
    tasks = storage["tasks"]
    assert isinstance(tasks, Checked) and "__getattr__" not in vars(Checked)
    for protocol in (RecordStore, ChangeFeed):
        for name, member in vars(protocol).items():
            if callable(member) and not name.startswith("_"):
                assert name in vars(Checked), name
        for name in protocol.__annotations__:
            assert getattr(tasks, name) == getattr(tasks.records, name), name
    assert isinstance(tasks, ChangeFeed)
