"""The change feed, through the store protocol, on every user store
(memory, SQLite in memory and on a file, PostgreSQL): positions, one entry
per user in its latest state, tombstones, and the guarantee that a client
who lists every page and then follows the feed misses no change, whatever
8 threads write meanwhile; every commit announced to the store's listeners
(``CommitsAnnounced``), and the waiting feature's watches they wake."""
from __future__ import annotations

import os
import random
import select
import threading
import time

import pytest
from helpers import shared_url

from usersvc import USER, open_store
from usersvc.features.waiting.watch import Nudge, Watch, Watches
from usersvc.storage import CommitsAnnounced, Conflict, NotFound, Precondition, StaleVersion
from usersvc.storage.feed import Change

User = USER.record


def feed(store, after=0, limit=1000):
    return [(c.seq, c.id, c.record and c.record.name)
            for c in store.changes(after=after, limit=limit)]


def test_every_change_gets_the_next_position_and_the_feed_lists_each_user_once(store):
    assert store.position() == 0 and store.changes(after=0) == []
    ada = store.create(name="Ada", email="ada@example.org")
    bob = store.create(name="Bob", email="bob@example.org")
    assert store.position() == 2
    assert feed(store) == [(1, ada.id, "Ada"), (2, bob.id, "Bob")]
    store.update(ada.id, name="Ada King")                              # a patch
    store.update(ada.id, name="Ada Byron", email="ab@example.org")     # a replace
    store.delete(bob.id)
    assert store.position() == 5
    # Ada once, at her latest change and as she is now; Bob as a tombstone.
    assert feed(store) == [(4, ada.id, "Ada Byron"), (5, bob.id, None)]
    assert store.changes(after=0)[0].record == store.get(ada.id)
    assert feed(store, after=4) == [(5, bob.id, None)]
    assert feed(store, after=5) == []


def test_restore_changes_keeps_each_record_and_tombstone_at_its_position(store):
    from usersvc.storage.feed import Change
    ada = User(id=1, name="Ada", email="ada@example.org", version=3)
    bob = User(id=3, name="Bob", email="bob@example.org", version=1)
    # Ids and positions in different orders, a tombstone between them.
    store.restore_changes([Change(4, 3, bob), Change(6, 2, None), Change(9, 1, ada)])
    assert feed(store) == [(4, 3, "Bob"), (6, 2, None), (9, 1, "Ada")]
    assert store.get(1) == ada and store.list() == [ada, bob] and store.position() == 9
    with pytest.raises(NotFound):
        store.get(2)
    with pytest.raises(Conflict):               # a position at or below the feed's: nothing kept
        store.restore_changes([
            Change(12, 7, User(id=7, name="Cy", email="cy@example.org", version=1)),
            Change(8, 8, None)])
    assert store.position() == 9 and store.list() == [ada, bob]
    carl = store.create(name="Carl", email="carl@example.org")
    assert carl.id == 4 and feed(store, after=9) == [(10, 4, "Carl")]
    store.update(ada.id, name="Ada King")
    assert feed(store, after=9) == [(10, 4, "Carl"), (11, 1, "Ada King")]


def test_the_feed_pages_by_position_and_limit(store):
    users = [store.create(name=f"U{i}", email=f"u{i}@example.org") for i in range(7)]
    pages, after = [], 0
    while page := store.changes(after=after, limit=3):
        pages.append([c.id for c in page])
        after = page[-1].seq
    assert pages == [[u.id for u in users[:3]], [u.id for u in users[3:6]], [users[6].id]]


def test_a_refused_write_takes_no_position(store):
    ada = store.create(name="Ada", email="ada@example.org")
    store.create(name="Bob", email="bob@example.org")
    with pytest.raises(Conflict):
        store.create(name="Ada again", email="ADA@example.org")
    with pytest.raises(Conflict):
        store.update(ada.id, email="bob@example.org")
    with pytest.raises(StaleVersion):
        store.update(ada.id, name="X", precondition=Precondition(match=frozenset({9})))
    with pytest.raises(StaleVersion):
        store.delete(ada.id, precondition=Precondition(match=frozenset({9})))
    with pytest.raises(NotFound):
        store.delete(99)
    assert store.position() == 2 and [c.seq for c in store.changes(after=0)] == [1, 2]


def test_tombstones_are_kept_and_positions_never_reused(store):
    ids = [store.create(name=f"U{i}", email=f"u{i}@example.org").id for i in range(3)]
    for user_id in ids:
        store.delete(user_id)
    last = store.create(name="Last", email="last@example.org")
    assert feed(store) == [(4, ids[0], None), (5, ids[1], None), (6, ids[2], None),
                           (7, last.id, "Last")]


def test_a_restore_gives_the_users_positions_in_order(store):
    store.restore([User(id=5, name="Five", email="five@example.org", version=3),
                   User(id=9, name="Nine", email="nine@example.org", version=1)], last_id=10)
    assert feed(store) == [(1, 5, "Five"), (2, 9, "Nine")]


def told_of(storage):
    """A listener of ``storage``'s commits: each collection it is told of,
    with the users' position it reads then, as a listener would."""
    told: list = []
    storage.announce_commits(lambda plural: told.append(
        (plural, None if plural is None else storage["users"].position())))
    return told


def test_every_write_is_announced_once_it_can_be_read(storage):
    """Each way a store writes tells its listeners, before the call returns,
    the collection it changed, whose position then shows the write: a
    create, an update, a delete, a step (batch), a restore, a restore of
    the feed (``usersvc copy``)."""
    assert isinstance(storage, CommitsAnnounced)
    users, told = storage["users"], told_of(storage)
    ada = users.create(name="Ada", email="ada@example.org")
    writes = [lambda: users.create(name="Bob", email="bob@example.org"),
              lambda: users.update(ada.id, name="Ada King"),
              lambda: users.delete(ada.id),
              lambda: storage.atomically(["users"], lambda step: step["users"].create(
                  name="Cy", email="cy@example.org")),
              lambda: users.restore([User(id=50, name="Di", email="di@example.org",
                                          version=2)]),
              lambda: users.restore_changes([Change(users.position() + 5, 60, User(
                  id=60, name="Ed", email="ed@example.org", version=1))])]
    for write in writes:
        told.clear()
        write()
        assert ("users", users.position()) in told, told


def test_a_listener_is_told_of_another_thread_s_commit_until_it_stops(storage):
    """Told on the thread that wrote (and, for other processes' commits, on
    the store's own: SQLite's poller, PostgreSQL's listener, which may tell
    once more of what they looked at as ``stop`` is called)."""
    users, told = storage["users"], []
    woke = threading.Event()
    stop = storage.announce_commits(lambda plural: (
        told.append((plural, threading.get_ident())), woke.set()))
    writer = threading.Thread(target=lambda: users.create(name="Ada", email="ada@example.org"))
    writer.start()
    # Bounded, not timed: a commit never told fails here.
    assert woke.wait(10), "the listener was not told of the commit"
    writer.join()
    assert ("users", writer.ident) in told
    stop()
    told.clear()
    users.create(name="Bob", email="bob@example.org")
    assert ("users", threading.get_ident()) not in told


def test_a_listener_that_fails_is_logged_and_the_others_are_told(storage, caplog):
    users, told = storage["users"], told_of(storage)

    def failing(plural):
        raise RuntimeError("a listener's bug")
    storage.announce_commits(failing)
    later = told_of(storage)
    ada = users.create(name="Ada", email="ada@example.org")     # made, whatever a listener does
    assert users.get(ada.id) == ada
    assert ("users", 1) in told and ("users", 1) in later
    assert "a listener of commits failed, told of users" in caplog.text


def test_closing_the_store_tells_each_listener_once_then_nothing_more(store_url):
    """``None``, last (a look for other processes' commits may have told of
    every collection before: SQLite's first look, PostgreSQL's LISTEN)."""
    storage = open_store(store_url)
    told, also = told_of(storage), told_of(storage)
    stopped_at_once = []
    storage.announce_commits(stopped_at_once.append)()      # never told
    storage.close()
    for each in (told, also):
        assert each[-1] == (None, None) and each.count((None, None)) == 1
    assert stopped_at_once == []
    late = []
    storage.announce_commits(late.append)               # a closed store: at once
    assert late == [None]


def test_a_watch_waits_until_another_thread_commits(storage):
    """The waiting feature's watch of a collection (``Watches``), woken by
    the store's announcement; a change there already: no wait."""
    store = storage["users"]
    watches = Watches(storage)
    watch = watches.add("users", store)
    store.create(name="Ada", email="ada@example.org")
    woke, after = threading.Event(), store.position()     # read before the commit to wait for

    def waiter():
        watches.listen()
        watch.wait(after, 30)
        woke.set()

    thread = threading.Thread(target=waiter)
    thread.start()
    store.create(name="Bob", email="bob@example.org")
    # Bounded, not timed: a wait that missed the commit would run its 30 s.
    assert woke.wait(10), "the waiting reader was not woken by the commit"
    thread.join()
    assert within(10, lambda: watch.wait(store.position() - 1, 30))    # no wait


def within(deadline, call):
    """``call()``'s result; still running after ``deadline`` s: a failure."""
    done: list = []
    thread = threading.Thread(target=lambda: done.append(call()), daemon=True)
    thread.start()
    thread.join(deadline)
    assert done, f"no answer within {deadline} s"
    return done[0]


def test_a_nudged_wait_returns_and_the_others_wait_on(storage):
    """``Nudge.set`` ends the one wait it was given (a stream asked to
    write at once); another waiter of the same collection goes on waiting
    for a change."""
    store, watches = storage["users"], Watches(storage)
    watch = watches.add("users", store)
    watches.listen()
    after, nudge = store.position(), Nudge()
    ended: list = []
    nudged = threading.Thread(target=lambda: ended.append(watch.wait(after, 30, nudge)))
    other = threading.Thread(target=lambda: ended.append(("other", watch.wait(after, 30))))
    nudged.start(), other.start()
    deadline = time.monotonic() + 10
    while nudge.watch is None:                  # (until it waits)
        assert time.monotonic() < deadline, "the wait did not begin"
        time.sleep(0.01)
    nudge.set()
    nudged.join(10)
    assert not nudged.is_alive() and ended == [True]        # still open: nothing more
    assert other.is_alive()
    store.create(name="Ada", email="ada@example.org")
    other.join(10)
    assert ended == [True, ("other", True)]
    assert watch.wait(store.position(), 30, nudge)      # set before it waits: at once


def test_a_closed_store_ends_every_wait_and_answers_every_later_one_at_once(store_url):
    storage = open_store(store_url)
    watches = Watches(storage)
    watch = watches.add("users", storage["users"])
    watches.listen()
    ended: list = []
    waiter = threading.Thread(target=lambda: ended.append(watch.wait(0, 30)))
    waiter.start()
    storage.close()
    waiter.join(10)
    assert ended == [False]                         # closed: nothing will come
    assert within(10, lambda: watch.wait(0, 30)) is False


class Counted:
    """A position that counts how often it is read."""

    def __init__(self) -> None:
        self.reads = 0

    def __call__(self) -> int:
        self.reads += 1
        return 0


def test_a_waiting_request_reads_the_position_only_when_woken():
    """Idle waiters (long-polls, streams) cost nothing: 20 of them read the
    position as they start and once more when their time is up (or when
    woken), never in between; closed, they leave without reading it."""
    position = Counted()
    watch = Watch(position)         # (the waiting feature's: usersvc/features/waiting/watch.py)
    waiters = [threading.Thread(target=watch.wait, args=(0, 1.0)) for _ in range(20)]
    for waiter in waiters:
        waiter.start()
    for waiter in waiters:
        waiter.join(10)
    assert position.reads == 2 * 20         # as they started, and when their second passed
    waiters = [threading.Thread(target=watch.wait, args=(0, 30)) for _ in range(20)]
    for waiter in waiters:
        waiter.start()
    while watch._waiting < 20:              # (every one of them waiting)
        threading.Event().wait(0.01)
    watch.close()
    for waiter in waiters:
        waiter.join(10)
        assert not waiter.is_alive()
    assert position.reads == 2 * 20 + 20


shared = pytest.fixture(params=["sqlite", "postgres"], name="shared")(shared_url)


def test_one_look_per_store_wakes_every_waiter_when_another_process_commits(shared):
    """Two stores on one file or database stand for two processes: 20
    requests wait on the first's watch (the waiting feature's); the
    second's commit wakes all of them, by the first store's one look for
    other processes' commits (SQLite: one polling thread; PostgreSQL: one
    listening connection), started by its first listener, stopped by its close."""
    before = set(threading.enumerate())     # (another test's may still be ending)
    waiting, writing = open_store(shared), open_store(shared)
    looking = lambda: [t for t in threading.enumerate()  # noqa: E731
                       if t.name in ("usersvc-poll", "usersvc-listen") and t.is_alive()
                       and t not in before]
    started: list[threading.Thread] = []
    try:
        assert looking() == []                      # nobody listens yet
        watches = Watches(waiting)
        watch = watches.add("users", waiting["users"])
        after = waiting["users"].position()
        woke = []
        waiters = [threading.Thread(target=lambda: (watches.listen(), watch.wait(after, 60),
                                                    woke.append(1)), daemon=True)
                   for _ in range(20)]
        for waiter in waiters:
            waiter.start()
        watches.listen()
        started = looking()
        assert len(started) == 1
        writing["users"].create(name="Ada", email="ada@example.org")
        deadline = time.monotonic() + 10    # bounded, not timed: a missed wake-up runs 60 s
        for waiter in waiters:
            waiter.join(max(0.0, deadline - time.monotonic()))
        assert len(woke) == 20
    finally:
        waiting.close()
        writing.close()
    for thread in started:          # stopped by the close (a deadline: a hang, not a time)
        thread.join(10)
    assert [t for t in started if t.is_alive()] == []


def test_a_forked_process_looks_for_other_processes_commits_on_its_own(shared):
    """As a server's worker after --preload: the store listened to before
    the fork; the parent's thread that looks is not in the child, which
    starts its own at its first use of the store and is told of the
    parent's commit."""
    storage = open_store(shared)
    told = threading.Event()
    storage.announce_commits(lambda plural: plural == "users" and told.set())
    # Its first look done (it tells of every collection then): the parent's
    # thread is asleep between looks, holding none of SQLite's locks, as
    # the fork copies them.
    assert told.wait(10)
    ready_r, ready_w = os.pipe()
    said_r, said_w = os.pipe()
    pid = os.fork()
    if pid == 0:            # the child: use the store, then wait to be told
        try:
            told.clear()
            storage["users"].position()
            os.write(ready_w, b"r")
            os.write(said_w, b"told" if told.wait(10) else b"not told")
        except BaseException as e:
            os.write(said_w, repr(e).encode())
        finally:
            os._exit(0)
    os.close(ready_w), os.close(said_w)

    def read(fd):           # (a child that hangs: a failure, not a hang)
        assert select.select([fd], [], [], 20)[0], "the forked process said nothing"
        return os.read(fd, 200)
    try:
        assert read(ready_r) == b"r"
        storage["users"].create(name="Ada", email="ada@example.org")
        assert read(said_r) == b"told"
    finally:
        os.waitpid(pid, 0)
        storage.close()


def sync(store, writing, page_size=7, feed_size=13):
    """What a client does: the feed's position, then every page of the
    collection, then the feed from that position, until the writers are
    done and nothing is left. Returns the copy it built."""
    position = store.position()         # read before the first page, as the page's link carries it
    copy, after = {}, None
    while True:
        page = store.list(limit=page_size, after=after)
        copy.update((u.id, u) for u in page)
        if len(page) < page_size:
            break
        after = page[-1].id
    while True:
        done = not writing.is_set()     # read first: if done, this read sees every write
        changes = store.changes(after=position, limit=feed_size)
        for change in changes:
            if change.record is None:
                copy.pop(change.id, None)
            else:
                copy[change.id] = change.record
        if changes:
            position = changes[-1].seq
        elif done:
            return copy


def write_randomly(store, seed, ids, rounds):
    rng = random.Random(seed)
    for n in range(rounds):
        action = rng.choice(["create", "create", "replace", "patch", "delete"])
        try:
            if action == "create" or not ids:
                ids.append(store.create(name=f"W{seed} {n}", email=f"w{seed}.{n}@example.org").id)
            elif action == "replace":
                store.update(rng.choice(ids), name=f"R{seed} {n}", email=f"r{seed}.{n}@example.org")
            elif action == "patch":
                store.update(rng.choice(ids), name=f"P{seed} {n}")
            else:
                store.delete(rng.choice(ids))
        except (NotFound, Conflict, StaleVersion):
            pass        # another writer got there first: as a client would see it


def test_listing_then_following_the_feed_misses_nothing_while_8_threads_write(store):
    ids = [store.create(name=f"Seed {i}", email=f"seed{i}@example.org").id for i in range(40)]
    writing = threading.Event()
    writing.set()
    copies = []
    readers = [threading.Thread(target=lambda: copies.append(sync(store, writing)))
               for _ in range(3)]
    writers = [threading.Thread(target=write_randomly, args=(store, seed, ids, 60))
               for seed in range(8)]
    for thread in writers[:4] + readers[:2] + writers[4:] + readers[2:]:
        thread.start()
    for thread in writers:
        thread.join()
    writing.clear()
    for thread in readers:
        thread.join()
    final = {}
    after = None
    while page := store.list(limit=100, after=after):
        final.update((u.id, u) for u in page)
        after = page[-1].id
    assert len(copies) == 3
    for copy in copies:
        assert copy == final
    # Each user is in the feed once, in its latest state, positions increasing.
    entries = store.changes(after=0, limit=1000)
    assert len({c.id for c in entries}) == len(entries)
    assert [c.seq for c in entries] == sorted(c.seq for c in entries)
    assert {c.id: c.record for c in entries if c.record is not None} == final


def test_a_page_of_the_memory_store_feed_touches_the_page_not_the_collection():
    from usersvc.storage.memory.collection import MemoryRecords
    store = MemoryRecords(USER)
    store.restore([User(id=i, name=f"U{i}", email=f"u{i}@example.org", version=1)
                   for i in range(1, 5001)])
    for i in range(1, 5001, 7):
        store.update(i, name="V")             # positions out of id order
    store.bulk.touched = 0
    page = store.changes(after=2500, limit=10)
    seqs = [c.seq for c in page]
    assert len(seqs) == 10 and seqs[0] > 2500 and seqs == sorted(seqs)
    assert store.bulk.touched == 10
