"""The change feed as Server-Sent Events from real servers, over sockets:
serve.py (waitress) and serve.py --server granian, on a SQLite file and on
PostgreSQL, the writes made through another server process; a client that
reconnects with Last-Event-ID after the server restarts misses nothing;
SIGTERM ends every stream and the server stops, and so does Ctrl-C. Every
read has a deadline:
a stream that hangs fails the test. The same through the WSGI app, in
every detail: test_events.py."""
from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import threading
import time

import pytest
from helpers import (
    GRANIAN,
    STREAM_DEADLINE,
    Served,
    StreamOverHTTP,
    _parsed,
    call,
    free_port,
    long_poll,
    placed,
    seq_of,
    serve,
    shared_url,
    stop,
    turned_away,
    until_waiting,
    within,
)

from usersvc import make_app

storage = pytest.fixture(params=["sqlite", "postgres"], name="storage")(shared_url)


def create(address, name: str) -> int:
    status, headers, body = call(address, "POST", "/users",
                                 {"name": name, "email": f"{name.lower()}@example.org"})
    assert status == 201, body
    return int(headers["Location"].rsplit("/", 1)[1])


@pytest.mark.parametrize("server", ["waitress", "granian"])
def test_a_stream_on_one_process_gets_each_write_made_through_another(storage, server, tmp_path):
    """SQLite's other writers are noticed by the store's poll, PostgreSQL's
    by NOTIFY; the stream's server never writes."""
    if server == "granian" and not GRANIAN.exists():
        pytest.skip("granian is not installed (pip install -e '.[test]')")
    chosen = ["--server", "granian", "--workers", "1"] if server == "granian" else []
    listening = Served("--storage", storage, *chosen, cwd=tmp_path)
    writing = Served("--storage", storage, cwd=tmp_path)
    try:
        ada = create(writing.address, "Ada")
        stream = StreamOverHTTP(listening.address, "/users/changes?after=0")
        assert stream.response.status == 200
        assert stream.response.headers["Content-Type"] == "text/event-stream"
        first = stream.next()
        assert first["retry"] == "2000" and seq_of(first["id"]) == 0
        assert [(seq, kind) for seq, kind, _ in stream.changes(1)] == [(1, "change")]
        bob = create(writing.address, "Bob")                # after the stream began
        assert call(writing.address, "DELETE", f"/users/{ada}")[0] == 204
        found = stream.changes(2)
        assert [(seq, kind, data["id"]) for seq, kind, data in found] == [
            (2, "change", bob), (3, "delete", ada)]
        assert found[0][2]["user"]["name"] == "Bob"
        listening.terminate()           # and a stream ends with the server
        stream.end()
        assert listening.process.wait(timeout=STREAM_DEADLINE) == 0, listening.log()
    finally:
        for served in (listening, writing):
            assert served.stop() == 0, served.log()
    assert "Traceback" not in listening.log(), listening.log()


def test_after_a_restart_a_client_resuming_from_its_last_event_misses_nothing(tmp_path):
    url = f"sqlite:///{tmp_path}/users.db"
    served = Served("--storage", url, cwd=tmp_path)
    stream = StreamOverHTTP(served.address)
    first = stream.next()
    create(served.address, "Ada")
    [(last, _, _)] = stream.changes(1)
    assert served.stop() == 0, served.log()         # the stream ends with it
    stream.end()
    writer = Served("--storage", url, cwd=tmp_path)     # while no one listens
    create(writer.address, "Bob")
    assert writer.stop() == 0
    served = Served("--storage", url, cwd=tmp_path)
    try:
        create(served.address, "Cy")
        again = StreamOverHTTP(served.address, headers={"Last-Event-ID": str(last)})
        assert seq_of(again.next()["id"]) == last
        assert [data["user"]["name"] for _, _, data in again.changes(2)] == ["Bob", "Cy"]
    finally:
        assert served.stop() == 0, served.log()
    assert seq_of(first["id"]) == 0


def test_sigterm_ends_every_stream_at_once_and_past_the_slots_a_client_is_told_to_retry(tmp_path):
    served = Served("--storage", "memory://", "--max-waiting", "2", cwd=tmp_path)
    streams = [StreamOverHTTP(served.address) for _ in range(2)]     # every slot
    for stream in streams:
        stream.next()
    busy = StreamOverHTTP(served.address)
    assert busy.response.status == 200
    assert busy.next() == turned_away(2)
    busy.end()
    assert call(served.address, "GET", "/users/changes?wait=1")[0] == 503
    assert call(served.address, "GET", "/users")[0] == 200      # the other threads serve
    served.terminate()
    for stream in streams:
        stream.end()
    assert served.process.wait(timeout=5) == 0, served.log()
    served.stop()


@pytest.mark.parametrize("server", ["waitress", "granian"])
def test_a_stream_whose_client_went_away_frees_its_slot_for_the_next(server, tmp_path):
    """A browser that leaves a page closes its stream's connection, which
    the app learns only when a write fails. The next client that wants the
    slot nudges the stream to write, and gets the slot, rather than "come
    back later" until a keep-alive failed (up to 30 s); one whose client
    is there keeps its slot."""
    if server == "granian" and not GRANIAN.exists():
        pytest.skip("granian is not installed (pip install -e '.[test]')")
    chosen = ["--server", "granian", "--workers", "1"] if server == "granian" else []
    served = Served("--storage", "memory://", "--max-waiting", "1", *chosen, cwd=tmp_path)
    try:
        for _ in range(3):                      # (a person going from page to page)
            placed(served.address).close()
        for _ in range(200):                    # a long-poll gets it too
            polling = call(served.address, "GET", "/users/changes?wait=1")
            if polling[0] != 503:
                break
            threading.Event().wait(0.05)
        assert polling[0] == 200, polling
        kept = placed(served.address)
        busy = StreamOverHTTP(served.address)   # its client is there: its slot stays its own
        assert busy.next() == turned_away(1)
        busy.end()
        create(served.address, "Ada")
        assert [kind for _, kind, _ in kept.changes(1)] == ["change"]
        kept.close()
    finally:
        assert served.stop() == 0, served.log()
    assert "Traceback" not in served.log(), served.log()


#: Seconds Ctrl-C may take to stop serve.py with a stream and a long-poll
#: open: a deadline for a hang, not a time. (It took waitress's 5 s join of
#: its threads, and 10 s under granian when a worker missed the signal.)
CTRL_C_DEADLINE = 3


@pytest.mark.parametrize("server", ["waitress", "granian"])
def test_ctrl_c_answers_a_stream_and_a_long_poll_and_stops_at_once(store_url, server, tmp_path):
    """Ctrl-C in a terminal sends SIGINT to the whole process group: serve.py,
    and under granian its workers too, with granian's own SIGTERM to them
    close behind. A stream and a long-poll (wait=30) open then are answered,
    and the server exits 0, at once; two workers under granian where the
    store can be shared (more signals, to more processes)."""
    if server == "granian" and not GRANIAN.exists():
        pytest.skip("granian is not installed (pip install -e '.[test]')")
    workers = "2" if store_url.startswith(("postgresql", "sqlite:///")) else "1"
    chosen = ["--server", "granian", "--workers", workers] if server == "granian" else []
    served = Served("--storage", store_url, "--metrics-port", str(free_port()), *chosen,
                    cwd=tmp_path)
    try:
        stream = StreamOverHTTP(served.address)
        assert stream.next()["retry"] == "2000"
        poll, polled = long_poll(served.address, 30)
        until_waiting(served.metrics_address, 2)   # the stream and the poll
        if server == "granian":     # every worker started (one still starting as the
            end = time.monotonic() + STREAM_DEADLINE    # signal comes: granian's own abort)
            while served.log().count("Started worker") < int(workers):
                assert time.monotonic() < end, served.log()
                time.sleep(0.05)
        served.signalled = True
        os.killpg(served.process.pid, signal.SIGINT)        # as a terminal's Ctrl-C
        try:
            code = served.process.wait(timeout=CTRL_C_DEADLINE)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"serve.py did not stop within {CTRL_C_DEADLINE} s of "
                                 f"Ctrl-C:\n{served.stopped_hung()}") from None
        assert code == 0, served.log()
        stream.end()
        poll.join(STREAM_DEADLINE)
        assert not poll.is_alive(), "the long-poll was never answered"
        assert polled[0][0] == 200 and json.loads(polled[0][2]) == []
    finally:
        served.stop()           # (stopped already, or killed by stopped_hung)
    assert "Traceback" not in served.log() and "still running" not in served.log(), served.log()


def asking(address, n: int, path: str = "/users/changes") -> list[http.client.HTTPConnection]:
    """``n`` stream requests sent at once, their answers not yet read."""
    connections = []
    for _ in range(n):
        conn = http.client.HTTPConnection(*address, timeout=60)
        conn.request("GET", path, headers={"Accept": "text/event-stream"})
        connections.append(conn)
    return connections


def answered_busy(conn: http.client.HTTPConnection, most: int) -> None:
    """The answer to a stream request turned away: a 200 that says so, and its end."""
    response = conn.getresponse()
    body = response.read().decode()
    conn.close()
    assert response.status == 200, body
    assert [_parsed(block) for block in body.split("\n\n") if block] == [turned_away(most)]


def test_on_the_defaults_32_streams_all_hear_a_write_and_past_them_a_get_is_not_held(storage,
                                                                                      tmp_path):
    """serve.py's defaults: 32 waiting places, with threads of their own
    beside --threads' four, so the pages of a team are all live at once and
    a plain request keeps its threads. One write reaches every stream.
    Past the places, stream requests are turned away at once (the streams
    holding the places nudged to write, none waited for), and a plain GET
    sent while they come is answered."""
    served = Served("--storage", storage, "--no-access-log", cwd=tmp_path)
    streams = []
    try:
        for _ in range(32):
            streams.append(StreamOverHTTP(served.address))
        assert [stream.next()["retry"] for stream in streams] == ["2000"] * 32
        turned = asking(served.address, 12)
        assert within(10, lambda: call(served.address, "GET", "/users"))[0] == 200
        for conn in turned:
            answered_busy(conn, 32)
        ada = create(served.address, "Ada")
        for stream in streams:
            assert [(kind, data["id"]) for _, kind, data in stream.changes(1)] == [("change", ada)]
        served.terminate()
        for stream in streams:
            stream.end()
    finally:
        assert served.stop() == 0, served.log()
    assert "--max-waiting" not in served.log()      # (a line said only when none may wait)


def test_requests_turned_away_never_hold_a_thread_a_plain_get_needs(storage):
    """A request that finds every waiting place taken is answered at once:
    waiting there for the place of a client that may have gone would hold
    a thread. On two threads and one place (one thread left for everything
    else), with the place held by a client that is there, twelve stream
    requests and then a plain GET: the GET is answered (it waited behind
    them, 1.5 s each, before)."""
    app = make_app(storage, max_waiting=1)
    server = serve(app, threads=2)
    address = ("127.0.0.1", server.effective_port)
    try:
        held = StreamOverHTTP(address)
        assert held.next()["retry"] == "2000"
        turned = asking(address, 12)
        assert within(10, lambda: call(address, "GET", "/users"))[0] == 200
        for conn in turned:
            answered_busy(conn, 1)
        create(address, "Ada")
        assert [kind for _, kind, _ in held.changes(1)] == ["change"]   # its place still its own
    finally:
        stop(server)
        app.close()
    held.end()


def test_with_no_waiting_place_serve_py_says_so_at_start_in_one_line(tmp_path):
    served = Served("--storage", "memory://", "--max-waiting", "0", cwd=tmp_path)
    try:
        stream = StreamOverHTTP(served.address)
        assert stream.next() == turned_away(0)     # (says none may wait, not "busy")
        stream.end()
        status, headers, body = call(served.address, "GET", "/users/changes?wait=1")
        assert status == 503 and "Retry-After" not in headers      # (trying again is no use)
        assert json.loads(body)["detail"] == ("This server lets no request wait for changes "
                                              "(its max_waiting is 0). Ask without wait.")
    finally:
        assert served.stop() == 0, served.log()
    said = [line for line in served.log().splitlines() if "--max-waiting" in line]
    assert len(said) == 1 and said[0].endswith(
        "WARNING usersvc: --max-waiting 0: no request may wait for changes: every stream is "
        "told to come back later and every long-poll with wait= gets a 503 (--max-waiting N "
        "lets N wait)"), said
