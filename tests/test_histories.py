"""A place in the feed from another history of the store (usersvc/places.py),
on every store: a client that followed a store which then lost its history
(a memory store restarted; a SQLite file put back from an older copy of
itself; a PostgreSQL database rebuilt and restored by ``usersvc copy``),
written past the client's place, comes back with that place and ends with
exactly the store's records: a stream tells it to drop what it holds
(``event: reset``) and sends every record from 0; the JSON feed answers
410 with a link to the start. Within one history nothing is dropped."""
from __future__ import annotations

import json
import shutil
import sqlite3
from contextlib import ExitStack
from pathlib import Path

import pytest
from conftest import Client, schema_of_its_own
from helpers import Listener, link_to, seq_of

from usersvc import make_app, places
from usersvc.serving.transfer import copy_store
from usersvc.storage import open_store


class Histories:
    """One store, and the ways it loses its history: ``older`` keeps the
    store as it is now; ``another`` is the store again, in another history
    that starts from what ``older`` kept (memory: from nothing)."""

    def __init__(self, store_url: str, held: ExitStack) -> None:
        self.url, self.held = store_url, held

    def older(self, storage):
        if self.url.startswith("sqlite:///"):        # a copy of the file, as a backup makes it
            path = Path(self.url.removeprefix("sqlite:///"))
            copy = path.with_name("older.db")
            with sqlite3.connect(path) as db, sqlite3.connect(copy) as into:
                db.backup(into)
            return copy
        if self.url.startswith("postgres"):          # a copy into another database
            backup = open_store(self.held.enter_context(schema_of_its_own("usersvc_backup")))
            self.held.callback(backup.close)
            copy_store(storage, backup)
            return backup
        return None                                  # memory: nothing survives

    def another(self, storage, older):
        storage.close()
        if self.url.startswith("sqlite:///"):        # the older copy put back in its place
            path = Path(self.url.removeprefix("sqlite:///"))
            for gone in (path, path.with_name(path.name + "-wal"),
                         path.with_name(path.name + "-shm")):
                gone.unlink(missing_ok=True)
            shutil.copyfile(older, path)
            return open_store(self.url)
        if self.url.startswith("postgres"):          # rebuilt, and restored by usersvc copy
            rebuilt = open_store(self.held.enter_context(schema_of_its_own("usersvc_rebuilt")))
            copy_store(older, rebuilt)
            return rebuilt
        return open_store(self.url)                  # memory: restarted


def records(client) -> dict:
    return {user["id"]: user for user in client.get("/users?limit=1000").json}


def follow_stream(app, held: dict, last: str | None) -> str:
    """A client's copy ``held`` brought up to date from the stream, from
    ``last`` (its last event's id; ``None``: from 0): each event applied, a
    reset dropping everything; the last id it saw."""
    listener = Listener(app, "/users/changes?after=0" if last is None else "/users/changes",
                        headers={} if last is None else {"Last-Event-ID": last}, threads=False)
    for block in listener.end():                    # (no threads: what there is, then the end)
        last = block.get("id", last)
        event = block.get("event")
        if event == "reset":
            held.clear()
        elif event in ("change", "delete"):
            data = json.loads(block["data"])
            if event == "change":
                held[data["id"]] = data["user"]
            else:
                held.pop(data["id"], None)
    return last


def follow_feed(client, held: dict, url: str) -> str:
    """The same from the JSON feed, following its next links from ``url``:
    a 410 drops everything and goes where its link says; the last link."""
    for _ in range(100):
        answer = client.get(url)
        url = link_to(answer.headers).removeprefix("http://localhost")
        if answer.status_code == 410:
            assert answer.json["type"] == "tag:usersvc.example,2026:another-history"
            held.clear()
            continue
        assert answer.status_code == 200
        if not answer.json:
            return url
        for entry in answer.json:
            if entry.get("deleted"):
                held.pop(entry["id"], None)
            else:
                held[entry["id"]] = entry["user"]
    pytest.fail("the feed never came to its end")


def test_a_client_of_another_history_ends_with_exactly_the_stores_records(store_url):
    with ExitStack() as held_open:
        histories = Histories(store_url, held_open)
        storage = open_store(store_url)
        client = Client(make_app(storage))
        client.create("Ada", "ada@example.org")
        client.create("Bob", "bob@example.org")                     # positions 1, 2
        older = histories.older(storage)
        client.create("Cy", "cy@example.org")
        client.patch("/users/1", body=b'{"name": "Ada King"}',
                     content_type="application/merge-patch+json")
        client.delete("/users/2")                                   # 3, 4, 5
        streamed, fed = {}, {}
        last = follow_stream(client.app, streamed, None)
        url = follow_feed(client, fed, "/users/changes?after=0&limit=2")
        assert streamed == fed == records(client)
        assert seq_of(last) == 5 and "after=5." in url

        storage = histories.another(storage, older)
        held_open.callback(storage.close)
        client = Client(make_app(storage))
        for name in ("Dee", "Eve", "Fay", "Gus"):
            client.create(name, f"{name.lower()}@example.org")
        client.patch("/users/3", body=b'{"name": "Cyd"}',
                     content_type="application/merge-patch+json")
        client.delete("/users/4")
        assert storage["users"].position() > seq_of(last)          # written past the place
        follow_stream(client.app, streamed, last)
        follow_feed(client, fed, url)
        assert streamed == records(client)
        assert fed == records(client)


def test_a_place_of_this_history_is_taken_as_it_is_after_a_restart(store_url):
    """The store kept (a file, a database) opens in the same history: a
    resumed stream hears only what came since, and drops nothing."""
    if store_url in ("memory://", "sqlite://"):
        pytest.skip("a store that does not outlive its process has no restart to keep")
    storage = open_store(store_url)
    client = Client(make_app(storage))
    client.create("Ada", "ada@example.org")
    held: dict = {}
    last = follow_stream(client.app, held, None)
    storage.close()
    storage = open_store(store_url)
    try:
        client = Client(make_app(storage))
        client.create("Bob", "bob@example.org")
        listener = Listener(client.app, "/users/changes", headers={"Last-Event-ID": last},
                            threads=False)
        blocks = listener.end()
        assert blocks[0] == {"retry": "2000", "id": last}           # no reset
        assert [json.loads(b["data"])["user"]["name"] for b in blocks[1:]] == ["Bob"]
    finally:
        storage.close()


def test_a_place_is_checked_against_the_entry_it_names(storage):
    """Within one history a record's entry only moves on, with a later
    version; a tombstone never moves. What contradicts that is another
    history's, and so is a place past the end or of another token."""
    store = storage["users"]
    client = Client(make_app(storage))
    client.create("Ada", "ada@example.org")                         # 1: Ada v1
    client.create("Bob", "bob@example.org")                         # 2: Bob v1
    client.delete("/users/2")                                       # 3: Bob gone
    client.patch("/users/1", body=b'{"name": "Ada King"}',
                 content_type="application/merge-patch+json")       # 4: Ada v2
    h = store.history

    def found(text):
        return places.found(places.read(text), store)
    assert found(f"1.1.1.{h}") == 1          # Ada moved on, with a later version
    assert found(f"4.1.2.{h}") == 4          # Ada there, as named
    assert found(f"3.2.d.{h}") == 3          # Bob's tombstone there
    assert found(f"2.2.1.{h}") == 2          # Bob moved on: deleted
    assert found(f"4.{h}") == 4 and found("4") == 4 and found("0") == 0
    assert found(f"4.1.3.{h}") is None       # Ada there at another version
    assert found(f"4.2.1.{h}") is None       # Bob named where Ada is
    assert found(f"1.1.2.{h}") is None       # moved on without a later version
    assert found(f"2.2.d.{h}") is None       # a tombstone does not move
    assert found(f"5.1.2.{h}") is None       # named past where Ada is
    assert found(f"2.9.1.{h}") is None       # a record this feed never had
    assert found(f"5.{h}") is None and found("5") is None           # past the end
    other = "0" * 12 if h != "0" * 12 else "1" * 12
    assert found(f"4.1.2.{other}") is None and found(f"0.{other}") is None


@pytest.mark.parametrize("text", ["4.x", "4.1.2", "4.1.2.ABCDEF012345", "4.1.2.abc",
                                  "4..2.abcdef012345", "1.1.-1.abcdef012345",
                                  f"{2**63}.abcdef012345", " 4", "4.1.2.abcdef0123456"])
def test_what_is_not_a_place_is_400_on_the_feed_and_the_stream(client, text):
    answer = client.get(f"/users/changes?after={text}")
    assert answer.status_code == 400 and "after" in answer.json["detail"]
    stream = client.get("/users/changes", headers={"Accept": "text/event-stream",
                                                   "Last-Event-ID": text})
    assert stream.status_code == 400 and "Last-Event-ID" in stream.json["detail"]
