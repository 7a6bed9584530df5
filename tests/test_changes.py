"""GET /users/changes through the WSGI app (usersvc/changes.py), on every
store: the representations, the links, the parameters, and waiting for a
change. What needs real servers and processes is test_changes_server.py."""
from __future__ import annotations

import threading

import pytest
from conftest import Client, problem
from helpers import link_to
from webob import Request

from usersvc import USER, make_app
from usersvc.listing import FEED_RELATION
from usersvc.storage import CommitsAnnounced
from usersvc.storage.memory.collection import MemoryRecords
from usersvc.storage.protocol import ChangeFeed

pytestmark = pytest.mark.core       # runs on the plain core too (conftest.SERVED)


@pytest.fixture
def changed(client):
    """Ada (1) replaced, Bob (2) deleted, Cy (3): positions 3, 4 and 5."""
    client.create("Ada", "ada@example.org")
    client.create("Bob", "bob@example.org")
    client.put("/users/1", json_body={"name": "Ada King", "email": "ada@example.org"})
    client.delete("/users/2")
    client.create("Cy", "cy@example.org")
    return client


def test_the_feed_in_json_is_each_user_once_and_tombstones(changed):
    response = changed.get("/users/changes")
    assert response.status_code == 200 and response.content_type == "application/json"
    assert response.body == (
        b'[{"seq":3,"id":1,"user":{"id":1,"name":"Ada King","email":"ada@example.org"}},'
        b'{"seq":4,"id":2,"deleted":true},'
        b'{"seq":5,"id":3,"user":{"id":3,"name":"Cy","email":"cy@example.org"}}]')
    h = changed.app.records[0].history       # the last entry named, in this history
    assert response.headers["Link"] == \
        f'<http://localhost/users/changes?after=5.3.1.{h}&limit=100>; rel="next"'
    assert response.headers["Cache-Control"] == "no-store"


def test_the_feed_in_xml(changed):
    response = changed.get("/users/changes?after=3", headers={"Accept": "application/xml"})
    assert response.headers["Content-Type"] == "application/xml; charset=utf-8"
    assert response.body == (
        b"<changes><change><seq>4</seq><id>2</id><deleted>true</deleted></change>"
        b"<change><seq>5</seq><id>3</id><user><id>3</id><name>Cy</name>"
        b"<email>cy@example.org</email></user></change></changes>")


def test_next_is_always_there_and_a_client_just_follows_it(changed):
    seen, url = [], "/users/changes?limit=2"
    for _ in range(3):
        response = changed.get(url)
        seen.append([entry["seq"] for entry in response.json])
        url = link_to(response.headers).removeprefix("http://localhost")
    assert seen == [[3, 4], [5], []]
    h = changed.app.records[0].history
    assert url == f"/users/changes?after=5.3.1.{h}&limit=2"     # nothing new: the same place
    changed.patch("/users/3", body=b'{"name": "Cyril"}',
                  content_type="application/merge-patch+json")
    assert [e["user"]["name"] for e in changed.get(url).json] == ["Cyril"]


def test_every_page_of_users_links_to_the_feed_at_the_position_before_it(changed):
    response = changed.get("/users?limit=1")
    h = changed.app.records[0].history       # the position, in this history (no entry named)
    assert link_to(response.headers) == "http://localhost/users?after=1&limit=1"
    assert link_to(response.headers, FEED_RELATION) == f"http://localhost/users/changes?after=5.{h}"
    assert link_to(changed.get("/users?sort=name&q=cy").headers, FEED_RELATION).endswith(
        f"?after=5.{h}")
    head = changed.request("HEAD", "/users")
    assert link_to(head.headers, FEED_RELATION) == f"http://localhost/users/changes?after=5.{h}"


@pytest.mark.parametrize("query", ["x=1", "after=-1", "after=abc", "after=1&after=2", "limit=0",
                                   "limit=1001", "wait=31", "wait=1.5", "cursor=abc",
                                   "after=99999999999999999999"])
def test_bad_parameters_are_400_saying_which(client, query):
    detail = problem(client.get(f"/users/changes?{query}"), 400)["detail"]
    assert query.split("=")[0] in detail


def test_options_and_a_write_are_as_for_any_read_only_path(client):
    response = client.request("OPTIONS", "/users/changes")
    assert response.status_code == 204 and response.headers["Allow"] == "GET, HEAD, OPTIONS"
    assert problem(client.post("/users/changes", json_body={}), 405)


class Waits(MemoryRecords):
    """A memory store, served alone, that says when a request has begun to
    wait: the waiting feature listens to its commits from the first wait
    (``CommitsAnnounced``), rather than read its position now and then."""

    def __init__(self):
        super().__init__(USER)
        self.waiting = threading.Event()

    def announce_commits(self, listener):
        stop = super().announce_commits(listener)
        self.waiting.set()
        return stop


def in_thread(client, path):
    answers = []
    thread = threading.Thread(target=lambda: answers.append(client.get(path)))
    thread.start()
    return thread, answers


def test_wait_answers_when_a_change_comes_and_past_the_limit_is_503():
    store = Waits()
    client = Client(make_app(store, max_waiting=1))
    client.create("Ada", "ada@example.org")
    thread, answers = in_thread(client, "/users/changes?after=1&wait=30")
    assert store.waiting.wait(10)
    busy = client.get("/users/changes?after=1&wait=1")       # the one slot is taken
    problem(busy, 503)
    assert busy.headers["Retry-After"] == "1"
    assert client.get("/users/changes?after=1").json == []   # not waiting: answered at once
    client.create("Bob", "bob@example.org")
    thread.join(10)     # bounded, not timed: a missed wake-up would hold it 30 s
    assert not thread.is_alive()
    assert [e["user"]["name"] for e in answers[0].json] == ["Bob"]
    assert link_to(answers[0].headers) == \
        f"http://localhost/users/changes?after=2.2.1.{store.history}&limit=100"


class OwnStore:
    """An embedder's store of its own: the store protocol and the feed (here
    a memory store's), and no capability: it announces no commit."""

    def __init__(self):
        records = MemoryRecords(USER)
        self.schema, self.history = USER, records.history
        for name in ("get", "list", "count", "create", "update", "delete", "last_id", "restore",
                     "changes", "entry", "position", "position_and_list", "restore_changes"):
            setattr(self, name, getattr(records, name))


def test_a_store_that_announces_no_commit_is_waited_on_by_reading_its_position():
    """The waiting feature still serves ``wait`` on it: a waiting request
    reads its position every second (``POLL_SECONDS``), and is answered with
    a change nobody told it of."""
    store = OwnStore()
    assert isinstance(store, ChangeFeed) and not isinstance(store, CommitsAnnounced)
    app = make_app(store, max_waiting=1)
    waiting = threading.Event()
    app.waiting.watchers.append(lambda n, stream: n > 0 and waiting.set())
    client = Client(app)
    client.create("Ada", "ada@example.org")
    thread, answers = in_thread(client, "/users/changes?after=1&wait=30")
    assert waiting.wait(10)
    store.create(name="Bob", email="bob@example.org")       # beside the app: no one is told
    thread.join(10)     # bounded, not timed: a wait that never reads again holds it 30 s
    assert not thread.is_alive()
    assert [e["user"]["name"] for e in answers[0].json] == ["Bob"]


@pytest.mark.feature       # (the waiting feature's: the plain core takes no wait, test_hooks)
def test_a_wait_with_changes_there_already_answers_at_once(changed):
    assert [e["seq"] for e in changed.get("/users/changes?after=4&wait=30").json] == [5]


def test_with_no_waiting_allowed_a_wait_is_503_and_a_plain_read_is_not():
    client = Client(make_app("memory://", max_waiting=0))
    problem(client.get("/users/changes?wait=5"), 503)
    assert client.get("/users/changes").json == []


def test_a_server_without_threads_answers_a_wait_at_once():
    """gunicorn's sync workers, uWSGI without threads: wsgi.multithread is
    false, and a wait would hold the process's one worker; it answers as
    wait=0 would (no slot is even needed: max_waiting=0 is no 503 here)."""
    client = Client(make_app("memory://", max_waiting=0))
    req = Request.blank("/users/changes?after=0&wait=30")
    req.environ["wsgi.multithread"] = False
    answer = client.send(req)
    assert answer.status_code == 200 and answer.json == []
    assert link_to(answer.headers) == "http://localhost/users/changes?after=0&limit=100"


def test_a_read_token_reads_the_feed():
    client = Client(make_app("memory://", tokens={"reader-0123456789": "read"}))
    problem(client.get("/users/changes"), 401)
    response = client.get("/users/changes", headers={"Authorization": "Bearer reader-0123456789"})
    assert response.status_code == 200 and response.json == []
