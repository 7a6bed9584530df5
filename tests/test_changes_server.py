"""The change feed across processes: two serve.py on one SQLite file, and
on one PostgreSQL database. A client that lists every page and then follows
the feed ends with exactly the users there are, whatever 8 threads write
through both servers meanwhile; a request waiting on one server is
answered when the other commits; waiting never takes more than half the
worker threads; and a server with requests waiting stops at once on SIGTERM.
"""
from __future__ import annotations

import json
import random
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from helpers import Served, call, link_to, shared_url

from usersvc.listing import FEED_RELATION

storage = pytest.fixture(params=["sqlite", "postgres"], name="storage")(shared_url)


@pytest.fixture
def servers(storage, tmp_path):
    started = [Served("--storage", storage, cwd=tmp_path) for _ in range(2)]
    yield [s.address for s in started]
    for server in started:
        assert server.stop() == 0, server.log()


def get(address, url):
    """GET a path or a URL the service wrote; (status, headers, JSON)."""
    path = url.split("://", 1)[1].split("/", 1)[1] if "://" in url else url.lstrip("/")
    status, headers, body = call(address, "GET", "/" + path)
    return status, headers, json.loads(body) if body else None


def sync(addresses, writing):
    """A client, reading from both servers in turn: every page (the first
    page's feed link kept), then the feed, until the writers are done and
    it has caught up. Returns the copy it built, by id."""
    turn = iter(lambda: random.choice(addresses), None)
    status, headers, page = get(next(turn), "/users?limit=7")
    feed = link_to(headers, FEED_RELATION)
    copy = {u["id"]: u for u in page}
    following = link_to(headers)
    while following:
        status, headers, page = get(next(turn), following)
        copy.update((u["id"], u) for u in page)
        following = link_to(headers)
    url = feed + "&limit=13"
    while True:
        done = not writing.is_set()
        status, headers, changes = get(next(turn), url)
        assert status == 200, changes
        for change in changes:
            if change.get("deleted"):
                copy.pop(change["id"], None)
            else:
                copy[change["id"]] = change["user"]
        url = link_to(headers)
        if not changes and done:
            return copy


def write(addresses, seed, ids, rounds):
    rng = random.Random(seed)
    for n in range(rounds):
        address = addresses[n % 2]
        action = rng.choice(["create", "create", "replace", "patch", "delete"])
        if action == "create" or not ids:
            status, headers, _ = call(address, "POST", "/users",
                                      {"name": f"W{seed} {n}", "email": f"w{seed}.{n}@example.org"})
            ids.append(int(headers["Location"].rsplit("/", 1)[1]))
        elif action == "replace":
            call(address, "PUT", f"/users/{rng.choice(ids)}",
                 {"name": f"R{seed} {n}", "email": f"r{seed}.{n}@example.org"})
        elif action == "patch":
            call(address, "PATCH", f"/users/{rng.choice(ids)}",
                 json.dumps({"name": f"P{seed} {n}"}),
                 {"Content-Type": "application/merge-patch+json"})
        else:
            call(address, "DELETE", f"/users/{rng.choice(ids)}")


def everyone(address):
    users, url = {}, "/users?limit=1000"
    while url:
        status, headers, page = get(address, url)
        users.update((u["id"], u) for u in page)
        url = link_to(headers)
    return users


def test_listing_then_following_misses_nothing_across_two_processes(servers):
    ids = []
    for i in range(30):
        status, headers, _ = call(servers[i % 2], "POST", "/users",
                                  {"name": f"Seed {i}", "email": f"seed{i}@example.org"})
        ids.append(int(headers["Location"].rsplit("/", 1)[1]))
    writing = threading.Event()
    writing.set()
    with ThreadPoolExecutor(11) as pool:
        readers = [pool.submit(sync, servers, writing)]
        writers = [pool.submit(write, servers, seed, ids, 40) for seed in range(8)]
        readers += [pool.submit(sync, servers, writing) for _ in range(2)]
        for writer in writers:
            writer.result()
        writing.clear()
        copies = [reader.result() for reader in readers]
    final = everyone(servers[0])
    assert everyone(servers[1]) == final
    for copy in copies:
        assert copy == final


def test_a_request_waiting_on_one_server_is_answered_by_a_commit_on_the_other(servers):
    _, headers, _ = get(servers[0], "/users")
    feed = link_to(headers, FEED_RELATION)
    answers = []
    waiter = threading.Thread(target=lambda: answers.append(get(servers[0], feed + "&wait=30")))
    waiter.start()
    call(servers[1], "POST", "/users", {"name": "Ada", "email": "ada@example.org"})
    waiter.join(15)     # bounded, not timed: a missed commit would hold it 30 s
    assert not waiter.is_alive(), "the waiting request was not answered"
    status, _, changes = answers[0]
    assert status == 200 and [c["user"]["name"] for c in changes] == ["Ada"]


def wait_three(address, after):
    """Three requests to wait for a change after ``after``: with two
    waiting places, two wait and one is refused at once. Returns the threads and, when the
    refusal has come (the other two are waiting), what each answered."""
    answers, refused = [], threading.Event()

    def ask():
        try:
            answer = call(address, "GET", f"/users/changes?after={after}&wait=30")
        except OSError as e:      # the server stopped meanwhile
            answer = (None, {}, str(e).encode())
        answers.append(answer)
        if answer[0] == 503:
            refused.set()

    threads = [threading.Thread(target=ask, daemon=True) for _ in range(3)]
    for thread in threads:
        thread.start()
    assert refused.wait(15), answers
    return threads, answers


def test_waiting_takes_at_most_its_places_and_sigterm_still_stops_at_once(tmp_path):
    served = Served("--storage", "memory://", "--threads", "2", "--max-waiting", "2", cwd=tmp_path)
    threads, answers = wait_three(served.address, 0)
    status, headers, body = answers[0]
    assert status == 503 and headers["Retry-After"] == "1", body
    assert b"2 requests are already waiting" in body
    # The other threads (--threads) still serve everyone else.
    assert call(served.address, "GET", "/users")[0] == 200
    assert call(served.address, "POST", "/users",
                {"name": "Ada", "email": "a@example.org"})[0] == 201
    for thread in threads:      # the create answers the two waiting
        thread.join(15)
    assert sorted(status for status, _, _ in answers) == [200, 200, 503]
    assert all(json.loads(body)[0]["user"]["name"] == "Ada" for status, _, body in answers
               if status == 200)
    # Two wait again; the server is stopped meanwhile, and stops at once.
    wait_three(served.address, 1)
    served.process.terminate()
    assert served.process.wait(timeout=5) == 0, served.log()
    served.stop()
