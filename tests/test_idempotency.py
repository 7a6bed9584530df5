"""Idempotency-Key on POST and PATCH, through the WSGI app, on every store.

A retry with the key gets the first answer again, byte for byte, and
changes nothing; the key with another request is a 422; answers the store
gave having changed nothing (409, 412, 404) are kept, answers given before
it was asked (400, 413, 415, 422) and 5xx are not; keys are a token's own,
expire, and are purged. Races of one key make one record.
"""
from __future__ import annotations

import json

import pytest
from conftest import Client
from helpers import Served, call, race
from webob import Request

from usersvc import make_app
from usersvc.storage import StoreUnavailable, keys as store_keys, open_store
from usersvc.storage.sql.collection import SQLRecords

KEY = "8e03978e-40d5-43e8-bc93-6894a57f9324"
ADA = {"name": "Ada Lovelace", "email": "ada@example.org"}
GRACE = {"name": "Grace Hopper", "email": "grace@example.org"}


def keyed(key: str = KEY, **headers: str) -> dict[str, str]:
    return {"Idempotency-Key": key, **headers}


def exchange(response) -> tuple:
    """What a retry must repeat: status, the answer's own headers, body."""
    own = [(k, v) for k, v in response.headerlist if k not in ("Content-Length",)]
    return response.status, own, response.body


def users(client: Client) -> list[dict]:
    return client.get("/users").json


def feed(client: Client) -> list[dict]:
    return client.get("/users/changes").json


# -- the header ---------------------------------------------------------------

@pytest.mark.parametrize("value", [
    f'"{KEY}"', KEY, '"a \\"quoted\\" key"', "x" * 255, '"' + "y" * 255 + '"'])
def test_a_key_as_a_structured_string_or_bare_is_taken(client, value):
    assert client.post("/users", json_body=ADA, headers=keyed(value)).status_int == 201


def test_the_quoted_and_the_bare_key_are_the_same_key(client):
    first = client.post("/users", json_body=ADA, headers=keyed(f'"{KEY}"'))
    again = client.post("/users", json_body=ADA, headers=keyed(KEY))
    assert exchange(again) == exchange(first)
    assert len(users(client)) == 1


@pytest.mark.parametrize("value", [
    '"a", "b"', "a, b", '"unterminated', '""', '"a";p=1', "a;p=1", "x" * 256,
    '"' + "y" * 256 + '"', '"tab\there"', '"bad \\escape"', "no spaces", "é"])
def test_a_malformed_key_is_a_400_naming_the_header_and_is_not_kept(client, value):
    response = client.post("/users", json_body=ADA, headers=keyed(value))
    assert response.status_int == 400
    assert response.content_type == "application/problem+json"
    assert "Idempotency-Key" in response.json["detail"]
    assert users(client) == []
    assert client.post("/users", json_body=ADA, headers=keyed()).status_int == 201


def test_a_malformed_key_is_refused_before_the_body_is_judged(client):
    response = client.post("/users", json_body={}, headers=keyed("a, b"))
    assert response.status_int == 400 and "Idempotency-Key" in response.json["detail"]
    response = client.patch("/users/1", json_body={"name": None}, headers=keyed('"open'))
    assert response.status_int == 400 and "Idempotency-Key" in response.json["detail"]


# -- a retry ------------------------------------------------------------------

@pytest.mark.parametrize("accept", ["application/json", "application/xml"])
def test_a_retried_create_gets_the_same_answer_and_creates_nothing(client, accept):
    first = client.post("/users", json_body=ADA, headers=keyed(Accept=accept))
    assert first.status_int == 201
    retries = [client.post("/users", json_body=ADA, headers=keyed(Accept=accept))
               for _ in range(3)]
    assert all(exchange(r) == exchange(first) for r in retries)
    assert [u["email"] for u in users(client)] == [ADA["email"]]
    assert len(feed(client)) == 1


def test_a_retried_patch_gets_its_answer_not_a_412_and_makes_no_new_version(client):
    user = client.create()
    tag = client.get(f"/users/{user['id']}").headers["ETag"]
    first = client.patch(f"/users/{user['id']}", json_body={"name": "Ada King"},
                         headers=keyed(**{"If-Match": tag}))
    assert first.status_int == 200
    again = client.patch(f"/users/{user['id']}", json_body={"name": "Ada King"},
                         headers=keyed(**{"If-Match": tag}))
    assert exchange(again) == exchange(first)
    now = client.get(f"/users/{user['id']}")
    assert now.headers["ETag"] == first.headers["ETag"] == f'"{user["id"]}-2"'
    assert len(feed(client)) == 1
    # Without the key, the same request is stale, as it should be.
    assert client.patch(f"/users/{user['id']}", json_body={"name": "Ada King"},
                        headers={"If-Match": tag}).status_int == 412


def test_the_same_key_with_another_request_is_a_422_and_changes_nothing(client):
    assert client.post("/users", json_body=ADA, headers=keyed()).status_int == 201
    for response in (
            client.post("/users", json_body=GRACE, headers=keyed()),            # another body
            client.post("/users", json_body=ADA, headers=keyed(Accept="application/xml")),
            client.patch("/users/1", json_body=ADA, headers=keyed()),           # another target
            client.post("/users", body=b'<user><name>Ada Lovelace</name><email>ada@example.org'
                                       b'</email></user>', content_type="application/xml",
                        headers=keyed())):
        assert response.status_int == 422, response.text
        assert "This Idempotency-Key was used with a different request" in response.text
    assert [u["email"] for u in users(client)] == [ADA["email"]]
    assert len(feed(client)) == 1


def test_a_conflict_is_kept_a_409_even_once_the_address_is_free(client):
    taken = client.create(**ADA)
    refused = client.post("/users", json_body={"name": "Other", "email": ADA["email"]},
                          headers=keyed())
    assert refused.status_int == 409
    assert client.delete(f"/users/{taken['id']}").status_int == 204
    again = client.post("/users", json_body={"name": "Other", "email": ADA["email"]},
                        headers=keyed())
    assert exchange(again) == exchange(refused)
    assert users(client) == []


def test_a_stale_patch_is_kept_a_412_and_a_missing_record_a_404(client):
    user = client.create()
    client.patch(f"/users/{user['id']}", json_body={"name": "Changed"})
    stale = client.patch(f"/users/{user['id']}", json_body={"name": "Mine"},
                         headers=keyed("stale", **{"If-Match": f'"{user["id"]}-1"'}))
    assert stale.status_int == 412
    assert exchange(client.patch(f"/users/{user['id']}", json_body={"name": "Mine"},
                                 headers=keyed("stale", **{"If-Match": f'"{user["id"]}-1"'}))
                    ) == exchange(stale)
    missing = client.patch("/users/999", json_body={"name": "Nobody"}, headers=keyed("gone"))
    assert missing.status_int == 404
    assert exchange(client.patch("/users/999", json_body={"name": "Nobody"},
                                 headers=keyed("gone"))) == exchange(missing)
    assert client.get(f"/users/{user['id']}").json["name"] == "Changed"


@pytest.mark.parametrize("first, status", [
    ({"body": b'{"name": "Ada"}', "content_type": "application/json"}, 422),
    ({"body": b'{"name": ', "content_type": "application/json"}, 400),
    ({"body": b"name=Ada", "content_type": "application/x-www-form-urlencoded"}, 415),
    ({"body": b"x" * (64 * 1024 + 1), "content_type": "application/json"}, 413)])
def test_an_answer_given_before_the_store_was_asked_is_not_kept(client, first, status):
    assert client.post("/users", headers=keyed(), **first).status_int == status
    assert client.post("/users", json_body=ADA, headers=keyed()).status_int == 201


def test_a_503_is_not_kept_and_the_retry_writes(app, storage, monkeypatch):
    """The store is unavailable for the first write, inside the keyed
    write's own step: nothing is written, nothing kept."""
    store = storage["users"]
    # The write itself: the memory store's unkeyed create, a SQL store's statement.
    name = "_unique" if isinstance(store, SQLRecords) else "create"
    write = getattr(type(store), name)
    failed = []

    def failing_once(self, *args, **kwargs):
        if not failed and "key" not in kwargs:
            failed.append(True)
            raise StoreUnavailable("The database is busy; try again.")
        return write(self, *args, **kwargs)
    monkeypatch.setattr(type(store), name, failing_once)
    client = Client(app)
    assert client.post("/users", json_body=ADA, headers=keyed()).status_int == 503
    assert failed and users(client) == []
    retry = client.post("/users", json_body=ADA, headers=keyed())
    assert retry.status_int == 201
    assert len(users(client)) == 1


def test_put_and_delete_do_not_read_the_header(client):
    user = client.create()
    for _ in range(2):
        assert client.put(f"/users/{user['id']}", json_body=GRACE,
                          headers=keyed()).status_int == 200
    assert client.get(f"/users/{user['id']}").headers["ETag"] == f'"{user["id"]}-3"'


# -- whose keys, and for how long -----------------------------------------------

WRITER_A, WRITER_B = "writer-a-0123456789abcdef", "writer-b-0123456789abcdef"


def test_a_key_is_the_token_s_own(storage):
    client = Client(make_app(storage, tokens={WRITER_A: "write", WRITER_B: "write"}))
    a = client.post("/users", json_body=ADA,
                    headers=keyed(Authorization=f"Bearer {WRITER_A}"))
    assert a.status_int == 201
    # The other token's request with the same key is a request of its own:
    # not a 422 for a different body, and not A's answer.
    b = client.post("/users", json_body=GRACE,
                    headers=keyed(Authorization=f"Bearer {WRITER_B}"))
    assert b.status_int == 201 and b.json["email"] == GRACE["email"]
    b_again = client.post("/users", json_body=ADA,
                          headers=keyed(Authorization=f"Bearer {WRITER_B}"))
    assert b_again.status_int == 422
    assert exchange(client.post("/users", json_body=ADA, headers=keyed(
        Authorization=f"Bearer {WRITER_A}"))) == exchange(a)


class Clock:
    """``time.time()`` for the keys, moved by the test (no test waits)."""

    def __init__(self) -> None:
        import time
        self.now = time.time()

    def time(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch) -> Clock:
    clock = Clock()
    import usersvc.features.idempotency
    monkeypatch.setattr(usersvc.features.idempotency, "time", clock)
    monkeypatch.setattr(store_keys, "time", clock)
    return clock


def test_a_key_is_kept_for_its_time_and_then_forgotten(storage, clock):
    client = Client(make_app(storage, idempotency_ttl=60))
    assert client.post("/users", json_body=ADA, headers=keyed()).status_int == 201
    clock.now += 59
    assert client.post("/users", json_body=GRACE, headers=keyed()).status_int == 422
    clock.now += 2
    renewed = client.post("/users", json_body=GRACE, headers=keyed())
    assert renewed.status_int == 201
    assert exchange(client.post("/users", json_body=GRACE, headers=keyed())) == exchange(renewed)


def kept(app, storage) -> int:
    """How many keys the app's store keeps (``idempotency.keeping``: how)."""
    if isinstance(app.plugged["idempotency"].kept, store_keys.SQLKeys):    # its table
        return storage["users"].connections.read(None, lambda db: db.execute(
            "SELECT count(*) FROM usersvc_keys").fetchone()[0])
    return len(app.plugged["idempotency"].kept)       # the feature's own, on memory


def test_expired_keys_are_purged_in_small_steps(store_url, clock, monkeypatch):
    """Ten keys a step (the memory store's oldest; a SQL store's next in key
    order), while they are found expired; kept keys are never purged."""
    monkeypatch.setattr(store_keys, "PURGE_EVERY", 0.0)
    monkeypatch.setattr(store_keys, "PURGE_BATCH", 10)
    monkeypatch.setattr(store_keys, "SWEEP", 10)
    storage = open_store(store_url)
    try:
        app = make_app(storage, idempotency_ttl=60)
        client = Client(app)
        for i in range(25):
            assert client.post("/users", json_body={"name": f"U{i}", "email": f"u{i}@example.org"},
                               headers=keyed(f"k{i:02}")).status_int == 201
        assert kept(app, storage) == 25
        clock.now += 61
        for n, left in ((1, 16), (2, 7), (3, 3)):
            assert client.post("/users", json_body={"name": f"N{n}", "email": f"n{n}@example.org"},
                               headers=keyed(f"new-{n}")).status_int == 201
            assert kept(app, storage) == left
        for n in (1, 2, 3):         # the kept ones answer as before
            again = client.post("/users", json_body={"name": f"N{n}", "email": f"n{n}@example.org"},
                                headers=keyed(f"new-{n}"))
            assert again.status_int == 201
        assert len(users(client)) == 28
    finally:
        storage.close()


def test_a_preflight_allows_the_header(storage):
    client = Client(make_app(storage, cors_origins=["https://app.example"]))
    response = client.request("OPTIONS", "/users", headers={
        "Origin": "https://app.example", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type, idempotency-key"})
    allowed = [h.strip().lower() for h in
               response.headers["Access-Control-Allow-Headers"].split(",")]
    assert "idempotency-key" in allowed


# -- races and processes -----------------------------------------------------------

def post_raw(app, key: str, body: dict) -> tuple:
    req = Request.blank("/users", method="POST", body=json.dumps(body).encode(),
                        content_type="application/json")
    req.environ["wsgi.multithread"] = True
    req.headers["Idempotency-Key"] = key
    return exchange(req.get_response(app))


def test_eight_threads_with_one_key_make_one_record(app, client):
    answers = race(8, lambda i: post_raw(app, KEY, ADA))
    assert not [a for a in answers if isinstance(a, Exception)], answers
    assert len(set(map(repr, answers))) == 1 and answers[0][0] == "201 Created"
    assert len(users(client)) == 1
    assert len(feed(client)) == 1


def test_eight_threads_with_one_key_and_different_bodies_make_one_record(app, client):
    answers = race(8, lambda i: post_raw(app, KEY, {"name": f"U{i}", "email": f"u{i}@example.org"}))
    statuses = sorted(a[0] for a in answers)
    assert statuses == ["201 Created"] + ["422 Unprocessable Content"] * 7
    assert len(users(client)) == 1


def test_two_stores_on_one_database_share_their_keys(store_url):
    if store_url.startswith(("memory", "sqlite://")) and not store_url.startswith("sqlite:///"):
        pytest.skip("one process's store: nothing else opens it")
    first, second = open_store(store_url), open_store(store_url)
    try:
        a, b = Client(make_app(first)), Client(make_app(second))
        created = a.post("/users", json_body=ADA, headers=keyed())
        assert exchange(b.post("/users", json_body=ADA, headers=keyed())) == exchange(created)
        assert b.post("/users", json_body=GRACE, headers=keyed()).status_int == 422
        answers = race(8, lambda i: post_raw(make_app((first, second)[i % 2]), "raced", GRACE))
        assert len(set(map(repr, answers))) == 1 and answers[0][0] == "201 Created"
        assert len(users(a)) == 2
    finally:
        first.close()
        second.close()


def test_two_servers_on_one_database_with_one_key_make_one_record(store_url, tmp_path):
    """Two ``serve.py`` processes on one SQLite file or PostgreSQL database,
    eight clients racing one key across them: one user, one answer."""
    if not store_url.startswith(("sqlite:///", "postgresql")):
        pytest.skip("one process's store: nothing else opens it")
    servers = [Served("--storage", store_url, "--no-access-log", cwd=tmp_path) for _ in range(2)]
    try:
        body = json.dumps(ADA)

        def post(i):
            status, headers, answer = call(servers[i % 2].address, "POST", "/users", body, {
                "Content-Type": "application/json", "Idempotency-Key": KEY})
            return status, headers["Location"], headers["ETag"], answer
        answers = race(8, post)
        assert len(set(answers)) == 1 and answers[0][0] == 201, answers
        status, _, listed = call(servers[1].address, "GET", "/users")
        assert [u["email"] for u in json.loads(listed)] == [ADA["email"]]
    finally:
        for served in servers:
            assert served.stop() == 0


class WithoutKeys:
    """A store of an embedder's own that keeps no idempotency keys."""

    keeps_keys = False

    def __init__(self, records) -> None:
        self._records = records

    def __getattr__(self, name):
        return getattr(self._records, name)


def test_a_store_that_keeps_no_keys_refuses_the_header_and_serves_without_it():
    client = Client(make_app(WithoutKeys(open_store("memory://")["users"])))
    refused = client.post("/users", json_body=ADA, headers=keyed())
    assert refused.status_int == 400 and "keeps no Idempotency-Keys" in refused.json["detail"]
    assert users(client) == []
    assert client.post("/users", json_body=ADA).status_int == 201
