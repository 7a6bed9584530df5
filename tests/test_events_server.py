"""The change feed as Server-Sent Events from real servers, over sockets:
serve.py (waitress) and serve.py --server granian, on a SQLite file and on
PostgreSQL, the writes made through another server process; a client that
reconnects with Last-Event-ID after the server restarts misses nothing;
SIGTERM ends every stream and the server stops, and so does Ctrl-C. Every
read has a deadline:
a stream that hangs fails the test. The same through the WSGI app, in
every detail: test_events.py."""
from __future__ import annotations

import json
import os
import signal
import subprocess

import pytest
from helpers import (GRANIAN, STREAM_DEADLINE, Served, StreamOverHTTP, call, free_port,
                     long_poll, seq_of, shared_url, until_waiting)

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
    served = Served("--storage", "memory://", "--threads", "4", cwd=tmp_path)
    streams = [StreamOverHTTP(served.address) for _ in range(2)]     # half the threads: every slot
    for stream in streams:
        stream.next()
    busy = StreamOverHTTP(served.address)
    assert busy.response.status == 200
    assert busy.next() == {"retry": "5000"}
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
    served = Served("--storage", "memory://", "--threads", "2", *chosen, cwd=tmp_path)  # 1 slot
    try:
        for round in range(3):                  # (a person going from page to page)
            stream = StreamOverHTTP(served.address)
            assert stream.next()["retry"] == "2000", round
            stream.close()
        polling = call(served.address, "GET", "/users/changes?wait=1")
        assert polling[0] == 200, polling       # a long-poll gets it too, not a 503
        kept = StreamOverHTTP(served.address)
        assert kept.next()["retry"] == "2000"
        busy = StreamOverHTTP(served.address)   # its client is there: its slot stays its own
        assert busy.next() == {"retry": "5000"}
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
