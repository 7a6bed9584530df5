"""Load with a ledger: a mixed workload from 16 client threads against real
waitress servers, every acknowledged write written down on the client side,
and then the server's state checked against the ledger.

Bounded by time (``SECONDS`` per run), not by count; what it asserts holds
however many requests the machine managed. Run against one in-process
server on SQLite, and against two serve.py processes sharing one file.
"""
from __future__ import annotations

import http.client
import json
import random
import re
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field

from helpers import Served, link_to

THREADS = 16
SECONDS = 4.0
OK = {200, 201, 204, 404, 409, 412}     # what a mixed workload may get; never 5xx


@dataclass
class Ledger:
    """What the server acknowledged, as the clients saw it."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    created: list[int] = field(default_factory=list)
    #: id -> (version, name, email)
    writes: dict[int, list[tuple[int, str, str]]] = field(default_factory=dict)
    deleted: set[int] = field(default_factory=set)
    statuses: Counter = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)

    def ack(self, user_id, version, name, email):
        with self.lock:
            self.writes.setdefault(user_id, []).append((version, name, email))

    def pick(self, rng):
        with self.lock:
            return rng.choice(self.created) if self.created else None


def client(addresses, ledger, deadline, seed):
    rng = random.Random(seed)
    connections = {a: http.client.HTTPConnection(*a, timeout=30) for a in addresses}

    def request(method, path, body=None, headers=None):
        conn = connections[rng.choice(addresses)]
        headers = dict(headers or {})
        if body is not None:
            headers["Content-Type"] = "application/json"
            body = json.dumps(body)
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        data = response.read()
        if response.getheader("Connection", "").lower() == "close":
            conn.close()        # waitress closes after 204/304; http.client reconnects
        ledger.statuses[response.status] += 1
        if response.status not in OK:
            ledger.errors.append(f"{method} {path} -> {response.status} {data[:200]!r}")
        return response.status, response.getheader("ETag"), json.loads(data) if data else None

    def version(tag):
        return int(tag.strip('"').split("-")[1])

    try:
        while time.monotonic() < deadline:
            roll = rng.random()
            if roll < 0.3:
                email = f"{uuid.uuid4().hex}@example.org"
                status, tag, body = request("POST", "/users", {"name": "New", "email": email})
                if status == 201:
                    with ledger.lock:
                        ledger.created.append(body["id"])
                    ledger.ack(body["id"], version(tag), "New", email)
                continue
            user_id = ledger.pick(rng)
            if user_id is None:
                continue
            if roll < 0.45:
                request("GET", f"/users/{user_id}")
            elif roll < 0.55:
                request("GET", f"/users?after={max(0, user_id - 5)}&limit=10")
            else:
                status, tag, _ = request("GET", f"/users/{user_id}")
                if status != 200:
                    continue
                if roll < 0.75:
                    name, email = f"Put {rng.random():.6f}", f"{uuid.uuid4().hex}@example.org"
                    status, new_tag, body = request("PUT", f"/users/{user_id}",
                                                    {"name": name, "email": email},
                                                    {"If-Match": tag})
                elif roll < 0.95:
                    name = f"Patch {rng.random():.6f}"
                    status, new_tag, body = request("PATCH", f"/users/{user_id}", {"name": name},
                                                    {"If-Match": tag})
                else:
                    status, _, _ = request("DELETE", f"/users/{user_id}", headers={"If-Match": tag})
                    if status == 204:
                        with ledger.lock:
                            ledger.deleted.add(user_id)
                    continue
                if status == 200:
                    ledger.ack(user_id, version(new_tag), body["name"], body["email"])
    except Exception as e:          # a dropped connection, a timeout: the test fails
        ledger.errors.append(f"{type(e).__name__}: {e}")
    finally:
        for conn in connections.values():
            conn.close()


def run_workload(addresses):
    ledger = Ledger()
    deadline = time.monotonic() + SECONDS
    threads = [threading.Thread(target=client, args=(addresses, ledger, deadline, i))
               for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=SECONDS + 60)
    assert not any(t.is_alive() for t in threads), "a client hung"
    return ledger


def everyone(address):
    """Every user, by following the pages' Link headers."""
    users, path = [], "/users?limit=1000"
    while path:
        conn = http.client.HTTPConnection(*address, timeout=30)
        conn.request("GET", path)
        response = conn.getresponse()
        users += json.loads(response.read())
        link = link_to(response.headers)
        path = link[link.index("/users"):] if link else None
        conn.close()
    return users


def check(ledger, addresses):
    assert ledger.errors == [], ledger.errors[:5]
    assert ledger.statuses[201] > 50 and ledger.statuses[200] > 50, ledger.statuses
    # ids are unique: never handed out twice, so never reused after a delete
    assert len(ledger.created) == len(set(ledger.created))
    for address in addresses:           # every process sees the same, ledger's state
        state = {u["id"]: u for u in everyone(address)}
        assert set(state) == set(ledger.created) - ledger.deleted
        for user_id, user in state.items():
            version, name, email = max(ledger.writes[user_id])   # the last acknowledged write
            assert (user["name"], user["email"]) == (name, email), user_id
            conn = http.client.HTTPConnection(*address, timeout=30)
            conn.request("GET", f"/users/{user_id}")
            response = conn.getresponse()
            response.read()
            conn.close()
            # No write unacknowledged.
            assert response.getheader("ETag") == f'"{user_id}-{version}"'
    return ledger


def test_a_mixed_load_on_one_server_loses_nothing_it_acknowledged(server):
    ledger = run_workload([server])
    check(ledger, [server])


def test_a_mixed_load_on_two_processes_sharing_one_file_loses_nothing(tmp_path):
    ledger = None
    servers = [Served("--storage", "sqlite:///shared.db", "--threads", "8", cwd=tmp_path)
               for _ in range(2)]
    try:
        addresses = [s.address for s in servers]
        ledger = run_workload(addresses)
        check(ledger, addresses)
    finally:
        assert [s.stop() for s in servers] == [0, 0]
    logs = servers[0].log() + servers[1].log()
    assert re.search(r"usersvc\.access: \S+ \S+ 5[0-9][0-9] ", logs) is None
    assert len(re.findall(r"usersvc\.access: ", logs)) >= sum(ledger.statuses.values())
