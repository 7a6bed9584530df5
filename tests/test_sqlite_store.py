"""docs/api.md, "Storage", for SQLite: journal, durability settings, schema
versions and migrations, query plans, and races between processes."""
from __future__ import annotations

import contextlib
import functools
import logging
import multiprocessing
import os
import select
import shutil
import signal
import sqlite3
import threading
from contextlib import closing

import pytest
from conftest import Client, problem
from helpers import (
    RELEASE_0_1_0,
    RELEASE_1_USERS,
    check_positions_after_migration,
    check_release_0_1_0,
    check_sorted_and_searched_after_migration,
    page_shapes,
    race,
    writes_on,
)

from usersvc import USER, asking, fast, make_app
from usersvc.storage import (
    Conflict,
    NotFound,
    Precondition,
    SchemaTooNew,
    StaleVersion,
    StoreError,
    StoreUnavailable,
    open_store,
)
from usersvc.storage.sql import SQLITE, Table
from usersvc.storage.sql.layout import LAYOUT
from usersvc.storage.sqlite.errors import retrying
from usersvc.storage.sqlite.migrations import MIGRATIONS, migrate
from usersvc.storage.sqlite.store import SQLiteStorage

User = USER.record

USERS = Table(USER, SQLITE)


def open_users(path, **options):
    """The users of a SQLite file; ``.storage.close()`` closes it."""
    return SQLiteStorage(path, (USER,), **options)["users"]


@pytest.fixture(params=[True, False], ids=["fast", "plain"], autouse=True)
def speedups(request):
    """Every test on both builds: the plain one commits each write on the
    request's thread; the fast one, in groups, by the writer thread
    (``usersvc.fast.sqlite``), whose own tests run on it alone (``FAST``)."""
    fast.install(request.param)
    return request.param


#: For a test of a fast path itself (the writer, kept answers and pages).
FAST = pytest.mark.parametrize("speedups", [True], ids=["fast"], indirect=True)


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "users.db")


@pytest.fixture
def store(path):
    store = open_users(path)
    yield store
    store.storage.close()


def pragma(path, name):
    with closing(sqlite3.connect(path)) as db:
        return db.execute(f"PRAGMA {name}").fetchone()[0]


def test_the_file_is_in_wal_mode(store, path):
    assert pragma(path, "journal_mode") == "wal"


def test_connections_wait_for_locks_and_sync_every_commit(store):
    with store.storage.connections.session() as db:
        assert db.execute("PRAGMA busy_timeout").fetchone()[0] == 10_000
        assert db.execute("PRAGMA synchronous").fetchone()[0] == 2   # FULL


def test_synchronous_normal_is_asked_for_in_the_url_and_set_on_every_connection(tmp_path):
    storage = open_store(f"sqlite:///{tmp_path}/n.db?synchronous=normal")
    try:
        storage["users"].create(name="A", email="a@example.org")     # (the writer's connection)
        assert storage.connections.commit(
            lambda db: db.execute("PRAGMA synchronous").fetchone()[0]) == 1
        with storage.connections.session() as db:
            assert db.execute("PRAGMA synchronous").fetchone()[0] == 1       # NORMAL
        assert (tmp_path / "n.db").exists() and not (tmp_path / "n.db?synchronous=normal").exists()
    finally:
        storage.close()
    for query in ("?synchronous=off", "?sync=normal", "?synchronous=normal&x=1"):
        with pytest.raises(ValueError, match="takes [?]synchronous=full or [?]synchronous=normal"):
            open_store(f"sqlite:///{tmp_path}/n.db{query}")


def test_a_new_file_gets_the_current_schema_version(store, path):
    assert pragma(path, "user_version") == len(MIGRATIONS) == LAYOUT == 6


def test_urls_name_files_relative_and_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    relative = open_store("sqlite:///rel.db")["users"]
    absolute = open_store(f"sqlite:///{tmp_path}/abs.db")["users"]
    relative.create(name="A", email="a@example.org")
    absolute.create(name="A", email="a@example.org")
    relative.storage.close(), absolute.storage.close()
    assert (tmp_path / "rel.db").exists() and (tmp_path / "abs.db").exists()


def test_users_and_the_id_sequence_survive_a_reopen(path):
    first = open_users(path)
    ids = [first.create(name="U", email=f"u{i}@example.org").id for i in range(3)]
    first.delete(ids[-1])
    first.storage.close()
    second = open_users(path)
    assert [u.id for u in second.list()] == ids[:2]
    assert second.create(name="U", email="v@example.org").id == ids[-1] + 1
    second.storage.close()


def migrated(db, steps):
    """``migrate`` through ``steps`` from any version, in
    one transaction, as the store runs it."""
    db.execute("BEGIN IMMEDIATE")
    try:
        found = migrate(db, steps)
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
    return found


def test_reopening_does_not_migrate_again(path):
    open_users(path).storage.close()
    with closing(sqlite3.connect(path, isolation_level=None)) as db:
        assert migrated(db, MIGRATIONS) == len(MIGRATIONS)


def test_a_new_file_skips_the_history_and_holds_only_its_collections(path):
    open_users(path).storage.close()
    with closing(sqlite3.connect(path)) as db:
        tables = {row[0]
                  for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert tables == {"usersvc_collections", "usersvc_keys", "usersvc_history", "users",
                      "user_words", "user_changes", "sqlite_sequence"}


def test_migrations_run_from_every_earlier_version(tmp_path):
    steps = [["CREATE TABLE t (a)"], ["ALTER TABLE t ADD COLUMN b"], ["CREATE INDEX t_b ON t (b)"]]
    for start in range(len(steps)):
        db = sqlite3.connect(tmp_path / f"from{start}.db", isolation_level=None)
        migrated(db, steps[:start])                 # a database left at `start`
        assert migrated(db, steps) == start         # brought up from there
        assert db.execute("PRAGMA user_version").fetchone()[0] == 3
        assert [c[1] for c in db.execute("PRAGMA table_info(t)")] == ["a", "b"]
        db.close()


def test_a_failing_migration_leaves_the_database_as_it_was(tmp_path):
    with closing(sqlite3.connect(tmp_path / "x.db", isolation_level=None)) as db:
        migrated(db, [["CREATE TABLE t (a)"]])
        with pytest.raises(sqlite3.OperationalError):
            migrated(db, [["CREATE TABLE t (a)"], ["CREATE TABLE u (a)"], ["NOT SQL"]])
        assert db.execute("PRAGMA user_version").fetchone()[0] == 1
        assert db.execute("SELECT count(*) FROM sqlite_master WHERE name = 'u'").fetchone()[0] == 0


def test_a_file_made_by_release_0_1_0_opens_with_everything_kept(tmp_path, caplog):
    path = tmp_path / "release.db"
    shutil.copyfile(RELEASE_0_1_0, path)
    store = open_users(str(path))
    try:
        assert pragma(path, "user_version") == len(MIGRATIONS)
        check_release_0_1_0(store)
    finally:
        store.storage.close()
    caplog.clear()      # opened again: nothing to do (re-indexed once)
    with caplog.at_level(logging.INFO, logger="usersvc.storage"):
        open_users(str(path)).storage.close()
    assert [r.getMessage() for r in caplog.records if " writes in " not in r.getMessage()] == []


def test_a_database_from_a_newer_version_is_refused(path):
    open_users(path).storage.close()
    with closing(sqlite3.connect(path)) as db:
        db.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    with pytest.raises(SchemaTooNew):
        open_users(path)


PAGES = page_shapes(("u", 5), ("u5@example.org", 5), "u5@example.org", "u")


def plan(path, query, params):
    with closing(sqlite3.connect(path)) as db:
        db.execute("ANALYZE")
        return " / ".join(row[-1] for row in db.execute("EXPLAIN QUERY PLAN " + query, params))


@pytest.fixture
def fifty(store, path):
    for i in range(50):
        store.create(name="U", email=f"u{i}@example.org")
    return path


def test_a_page_of_the_feed_is_one_walk_of_the_positions(fifty, store):
    for i in range(0, 50, 3):
        store.update(i + 1, name="V")     # positions out of id order
    found = plan(fifty, USERS.pages.changes, (10, 20))
    assert found == "SEARCH user_changes USING INTEGER PRIMARY KEY (rowid>?)", found


def test_reading_one_user_searches_the_primary_key(fifty):
    assert plan(fifty, USERS.select_one, (5,)) == "SEARCH users USING INTEGER PRIMARY KEY (rowid=?)"


@pytest.mark.parametrize("arguments", PAGES, ids=repr)
def test_every_page_walks_an_index_and_never_scans(fifty, arguments):
    found = plan(fifty, *USERS.pages.page(limit=10, **arguments))
    if "q" in arguments:
        # The matching words are one range of user_words' key; only their
        # users are read (by id) and sorted.
        assert found.startswith(
            "CO-ROUTINE m / SEARCH user_words USING PRIMARY KEY (word>? AND word<?)"), found
        assert "SEARCH u USING INTEGER PRIMARY KEY (rowid=?)" in found or \
            "SEARCH u USING INDEX users_email_unique (email__key=? AND rowid=?)" in found, found
        assert "SCAN u" not in found, found
    else:
        # One index, walked in the page's order: no sorting, no scan.
        assert found.startswith("SEARCH u USING ") or found.startswith("SCAN u USING INDEX ") \
            or found == "SCAN u", found
        assert "TEMP B-TREE" not in found, found
        if found.startswith("SCAN"):        # from the start: the index's first entries
            assert "after" not in arguments and "email" not in arguments, found
            assert arguments["sort"] == "id" or "INDEX" in found, found


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("sort, asked", [("name", "name[gte]=u&name[lt]=v"), ("id", "id[gt]=7"),
                                         ("email", "email[ne]=u5@example.org")])
def test_a_range_on_the_pages_own_order_is_a_search_of_its_index(fifty, sort, asked, reverse):
    """The cost rule (docs/api.md, "Asking"): the page starts at the
    range's edge in the order's index, and walks it: no sort, no scan."""
    where = tuple(asking.read(USER, *pair.split("=")) for pair in asked.split("&"))
    found = plan(fifty, *USERS.pages.page(limit=10, sort=sort, reverse=reverse, where=where))
    if sort == "email":         # ne is no range: the index walked from its start
        assert found.startswith("SCAN u USING INDEX users_email_unique"), found
    else:
        assert found.startswith("SEARCH u USING "), found
        assert "(email__key" not in found and "TEMP B-TREE" not in found, found


@pytest.mark.parametrize("sort", ["name"])
@pytest.mark.parametrize("reverse", [False, True])
def test_a_pages_ids_and_versions_come_from_its_orders_index_alone(fifty, sort, reverse):
    found = plan(fifty, *USERS.pages.page(limit=10, columns=("u.id", "u.version"), sort=sort,
                               reverse=reverse, after=("u", 5)))
    assert found.startswith(f"SEARCH u USING COVERING INDEX users_{sort}_order "), found


def test_counting_a_search_reads_only_the_matching_words(fifty):
    found = plan(fifty, *USERS.pages.count(q="u1"))
    assert "SEARCH user_words USING PRIMARY KEY (word>? AND word<?)" in found, found
    assert "SCAN u" not in found, found


@pytest.mark.parametrize("made_by", [1, 2])
def test_a_database_of_an_earlier_release_is_migrated_with_its_users(path, made_by):
    """A file made by usersvc's schema version 1 (no name index, no search)
    or 2 (no change feed) gains what it lacks: its users are found by name
    and by search, and have positions in the feed, in id order."""
    with closing(sqlite3.connect(path, isolation_level=None)) as db:
        migrated(db, MIGRATIONS[:1])
        db.executemany("INSERT INTO users (name, email, email_key, version) VALUES (?, ?, ?, 1)",
                       RELEASE_1_USERS)
        migrated(db, MIGRATIONS[:made_by])
    store = open_users(path)
    try:
        assert pragma(path, "user_version") == len(MIGRATIONS)
        check_positions_after_migration(store)
        check_sorted_and_searched_after_migration(store)
    finally:
        store.storage.close()


def test_closing_closes_the_connections_of_live_threads(store):
    ready, closed, seen = threading.Event(), threading.Event(), []

    def worker():
        store.list()             # opens this thread's connection
        ready.set()
        closed.wait()
        try:
            store.list()
        except sqlite3.ProgrammingError as e:
            seen.append(e)

    thread = threading.Thread(target=worker)
    thread.start()
    ready.wait()
    store.storage.close()
    closed.set()
    thread.join()
    assert len(seen) == 1        # "Cannot operate on a closed database."


def test_a_lock_held_past_the_busy_timeout_is_store_unavailable(path):
    store = open_users(path, busy_timeout=0.05)
    with closing(sqlite3.connect(path, isolation_level=None)) as other:
        other.execute("BEGIN IMMEDIATE")      # another writer holds the lock
        with pytest.raises(StoreUnavailable):
            store.create(name="Ada", email="ada@example.org")
        other.execute("ROLLBACK")
    assert store.create(name="Ada", email="ada@example.org").id == 1
    store.storage.close()


def test_a_busy_database_is_a_503_with_retry_after(path):
    store = open_users(path, busy_timeout=0.05)
    client = Client(make_app(store))
    with closing(sqlite3.connect(path, isolation_level=None)) as other:
        other.execute("BEGIN IMMEDIATE")
        response = client.post("/users", json_body={"name": "Ada", "email": "ada@example.org"})
        other.execute("ROLLBACK")
    assert problem(response, 503)["detail"] == "The database is busy; try again."
    assert response.headers["Retry-After"] == "1"
    assert client.get("/users").json == []
    store.storage.close()


# -- two processes on one file ---------------------------------------------

def _create_in_process(path, barrier, i, results):
    store = open_users(path)
    barrier.wait()
    try:
        results.put(("created", store.create(name=f"P{i}", email="same@example.org").id))
    except Conflict:
        results.put(("taken", None))
    store.storage.close()


def _update_in_process(path, barrier, i, version, results):
    store = open_users(path)
    barrier.wait()
    try:
        store.update(1, name=f"P{i}", precondition=Precondition(match=frozenset({version})))
        results.put(("updated", i))
    except StaleVersion:
        results.put(("stale", i))
    store.storage.close()


def _open_in_process(path, barrier, results):
    barrier.wait()
    try:
        open_users(path).storage.close()
        results.put(("opened", None))
    except Exception as e:      # what a server would print at start, and exit
        results.put((f"{type(e).__name__}: {e}", None))


def _race_processes(target, args_of, n=4, start="spawn"):
    """Start n processes that each open the file and then wait on one
    barrier, so their writes collide; return what each reported."""
    ctx = multiprocessing.get_context(start)
    barrier, results = ctx.Barrier(n), ctx.Queue()
    processes = [ctx.Process(target=target, args=args_of(i, barrier, results))
                 for i in range(n)]
    for p in processes:
        p.start()
    outcomes = [results.get(timeout=60) for _ in processes]
    for p in processes:
        p.join(timeout=60)
        assert p.exitcode == 0
    return outcomes


def _open_args(path, i, barrier, results):
    return path, barrier, results


def test_processes_opening_a_new_file_together_all_open_it_and_migrate_it_once(tmp_path):
    """Four processes open one new file at once, twenty times: switching to
    WAL and the first migration race, and SQLite does not always wait for
    the other's lock there; every one must open it."""
    for attempt in range(20):
        path = str(tmp_path / f"new{attempt}.db")
        outcomes = _race_processes(_open_in_process, functools.partial(_open_args, path),
                                   start="fork")
        assert [kind for kind, _ in outcomes] == ["opened"] * 4, (attempt, outcomes)
        assert pragma(path, "user_version") == len(MIGRATIONS)
        assert pragma(path, "journal_mode") == "wal"


def test_the_same_email_raced_from_processes_is_created_once(path):
    open_users(path).storage.close()
    outcomes = _race_processes(_create_in_process, lambda i, b, q: (path, b, i, q))
    assert sorted(kind for kind, _ in outcomes) == ["created", "taken", "taken", "taken"]
    store = open_users(path)
    assert len(store.list()) == 1
    store.storage.close()


def test_the_same_precondition_raced_from_processes_wins_once(path):
    store = open_users(path)
    user = store.create(name="Ada", email="ada@example.org")
    outcomes = _race_processes(_update_in_process, lambda i, b, q: (path, b, i, user.version, q))
    winners = [i for kind, i in outcomes if kind == "updated"]
    assert len(winners) == 1
    assert store.get(user.id) == User(id=user.id, name=f"P{winners[0]}", email=user.email,
                                      version=2)
    store.storage.close()


@FAST
def test_writes_waiting_together_commit_together_and_fail_alone(store):
    """Group commit: writes that arrive while a commit is under way go in
    one transaction; the one that fails (a taken e-mail) changes nothing,
    and the others are committed."""
    store.create(name="Ada", email="ada@example.org")
    written = writes_on(store.storage.connections)      # (the writer's)
    commits = []
    written.set_trace_callback(lambda sql: commits.append(sql) if sql == "COMMIT" else None)
    results = {}

    def write(name, email):
        try:
            results[name] = store.create(name=name, email=email)
        except Conflict as e:
            results[name] = e

    threads = [threading.Thread(target=write, args=args) for args in
               [("Bob", "bob@example.org"), ("Dup", "ADA@example.org"), ("Cy", "cy@example.org")]]
    with written.in_use:        # a commit under way: the first waits for it, the others queue
        for t in threads:
            t.start()
        threading.Event().wait(0.5)
    for t in threads:
        t.join(timeout=30)
    assert not any(t.is_alive() for t in threads)
    assert isinstance(results["Dup"], Conflict)
    assert {u.name for u in store.list()} == {"Ada", "Bob", "Cy"}
    assert len(commits) <= 2            # the leader (perhaps with others), then those that waited
    written.set_trace_callback(None)



@FAST
def test_updates_and_deletes_that_fail_in_a_group_change_nothing_and_the_others_commit(store):
    """No savepoints: each write makes at most one change, in its last
    statement, and SQLite undoes a failed statement by itself."""
    ada = store.create(name="Ada", email="ada@example.org")
    bob = store.create(name="Bob", email="bob@example.org")
    cy = store.create(name="Cy", email="cy@example.org")
    stale = Precondition(match=frozenset({ada.version + 1}))
    writes = {
        "stale update": lambda: store.update(ada.id, name="Nope", precondition=stale),
        "taken e-mail": lambda: store.update(bob.id, email="ADA@example.org"),
        "stale delete": lambda: store.delete(cy.id, precondition=stale),
        "good update": lambda: store.update(bob.id, name="Bobby"),
        "good create": lambda: store.create(name="Di", email="di@example.org"),
    }
    results = {}

    def write(name):
        try:
            results[name] = writes[name]()
        except StoreError as e:
            results[name] = e

    written = writes_on(store.storage.connections)      # (the writer's)
    commits = []
    written.set_trace_callback(lambda sql: commits.append(sql) if sql == "COMMIT" else None)
    threads = [threading.Thread(target=write, args=(name,)) for name in writes]
    with written.in_use:        # a commit under way: they queue up behind it
        for t in threads:
            t.start()
        threading.Event().wait(0.5)
    for t in threads:
        t.join(timeout=30)
    written.set_trace_callback(None)
    assert not any(t.is_alive() for t in threads)
    assert isinstance(results["stale update"], StaleVersion)
    assert isinstance(results["taken e-mail"], Conflict)
    assert isinstance(results["stale delete"], StaleVersion)
    assert len(commits) <= 2
    assert store.get(ada.id) == ada and store.get(cy.id) == cy
    assert store.get(bob.id) == User(id=bob.id, name="Bobby", email="bob@example.org", version=2)
    assert [u.name for u in store.list()] == ["Ada", "Bobby", "Cy", "Di"]


@FAST
def test_a_write_that_fails_after_changing_something_fails_its_whole_group(store):
    """The guard behind the rule above: a write that broke it would leave a
    half-done change in the group's transaction, so nothing is committed."""
    def half_done(db):
        db.execute("UPDATE users SET name = 'Half' WHERE id = 1")
        raise StaleVersion(1)
    store.create(name="Ada", email="ada@example.org")
    with pytest.raises(RuntimeError):
        store.storage.connections.commit(half_done)     # (the writer's)
    assert store.get(1).name == "Ada"

@FAST
def test_every_write_is_made_by_the_one_writer_thread(store):
    """On the writer's connection of its own (opened by its first write)."""
    seen = []
    store.create(name="Grace", email="grace@example.org")
    db = store.storage.connections.writer.db
    db.set_trace_callback(
        lambda sql: seen.append((threading.current_thread().name, sql.split()[0])))
    user = store.create(name="Ada", email="ada@example.org")
    store.update(user.id, name="Ada King")
    store.delete(user.id)
    db.set_trace_callback(None)
    assert {name for name, _ in seen} == {"usersvc-sqlite-writer"}
    assert {"INSERT", "UPDATE", "DELETE", "COMMIT"} <= {statement for _, statement in seen}


def test_a_closed_store_refuses_writes(path):
    store = open_users(path)
    store.storage.close()
    with pytest.raises(StoreUnavailable):
        store.create(name="Ada", email="ada@example.org")


@FAST
def test_a_page_reuses_built_users_only_at_the_version_the_file_has(path):
    """Pages read ids and versions first and take the users built for an
    earlier page at the same version; what another process changed is read
    again, and a write between the two reads makes the page be read whole.
    (While nothing is committed anywhere, the same page is the same answer.)"""
    a, b = open_users(path), open_users(path)
    try:
        users = [a.create(name=f"U{i}", email=f"u{i}@example.org") for i in range(3)]
        first = a.list()
        assert first == users and a.list()[0] is first[0]       # built once, then kept
        b.update(users[1].id, name="Changed")                   # another store, same file
        assert [u.name for u in a.list()] == ["U0", "Changed", "U2"]

        class WriteInBetween(dict):
            """Kept users whose first look-up lets another store write."""
            armed = True

            def get(self, key, default=None):
                if self.armed:
                    WriteInBetween.armed = False
                    b.update(users[0].id, name="Raced")
                    b.update(users[2].id, name="Raced too")
                return super().get(key, default)

        a.bulk.kept = WriteInBetween()      # nothing kept: every user is read again
        with a.storage.connections.session() as db:
            db.kept[1].clear()              # and the last answer forgotten
        page = a.list()
        assert [u.name for u in page] == ["Raced", "Changed", "Raced too"]
        assert [u.version for u in page] == [2, 2, 2]
        b.delete(users[1].id)
        assert [u.id for u in a.list()] == [users[0].id, users[2].id]
    finally:
        a.storage.close(), b.storage.close()


@FAST
def test_answers_kept_while_nothing_is_committed_are_dropped_by_any_commit(path):
    """A connection answers the same read again only while PRAGMA
    data_version says nobody has committed: its store's own writes (the
    writer's connection), another store's or process's, and a restore made
    on the reading connection itself all show at once."""
    a, b = open_users(path), open_users(path)
    try:
        ada = a.create(name="Ada", email="ada@example.org")
        assert a.get(ada.id) is a.get(ada.id)                  # kept while nothing changes
        a.update(ada.id, name="Ada King")                       # this store's writer
        assert a.get(ada.id).name == "Ada King"
        b.update(ada.id, name="Ada B.")                         # another store on the file
        assert a.get(ada.id).name == "Ada B." and [u.name for u in a.list()] == ["Ada B."]
        # on the reading connection
        a.restore([User(id=7, name="Restored", email="r@example.org", version=1)])
        assert [u.id for u in a.list()] == [ada.id, 7]
        b.delete(7)
        with pytest.raises(NotFound):
            a.get(7)
    finally:
        a.storage.close(), b.storage.close()


@FAST
def test_a_write_waits_for_its_commit_at_most_the_writers_timeout(tmp_path):
    """A writer held up (here by a write that blocks): the write queued
    behind it is a 503 after the timeout and is then never made; the one
    under way is a 503 that says it may yet be committed."""
    from usersvc.fast.sqlite import Writer
    from usersvc.storage import StoreUnavailable, WriteHealth
    from usersvc.storage.sqlite.store import Connections
    connections = Connections(str(tmp_path / "w.db"), 1.0, WriteHealth("w.db"))
    writer = Writer(connections, timeout=0.2)
    writer.commit(lambda db: db.execute("CREATE TABLE t (x)"))
    held, made = threading.Event(), []

    def blocking(db):
        held.wait(10)
        db.execute("INSERT INTO t VALUES (1)")

    first = race(1, lambda _: writer.commit(blocking))      # under way, held up
    assert isinstance(first[0], StoreUnavailable) and "may be yet" in str(first[0])
    with pytest.raises(StoreUnavailable, match="nothing was written"):
        writer.commit(lambda db: made.append(db.execute("INSERT INTO t VALUES (2)")))
    held.set()
    writer.commit(lambda db: None)                          # the queue has moved on
    rows = writer.commit(lambda db: db.execute("SELECT x FROM t").fetchall())
    assert rows == [(1,)] and made == []
    writer.stop()
    connections.close()


@FAST
def test_a_forked_process_writes_through_a_writer_of_its_own(tmp_path):
    """As a server's worker after --preload: the store opened (and written)
    before the fork; the child's write goes through its own writer thread,
    and closing there logs no figures of the parent's writer."""
    storage = open_store(f"sqlite:///{tmp_path}/f.db")
    storage["users"].create(name="Ada", email="ada@example.org")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:        # the child: write, close, and report
        lines = []
        handler = logging.Handler()
        handler.emit = lambda record: lines.append(record.getMessage())
        logging.getLogger("usersvc.storage").addHandler(handler)
        try:
            made = storage["users"].create(name="Bea", email="bea@example.org")
            storage.close()
            os.write(write, f"{made.id} {sum('SQLite writer' in line for line in lines)}".encode())
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    assert os.read(read, 100).decode() == "2 0"
    assert [u.email for u in storage["users"].list()] == ["ada@example.org", "bea@example.org"]
    storage.close()


def forked_write(storage, lock) -> bytes:
    """What a child forked while ``lock`` is held (as by another thread of
    the parent) says of its first write: the new record's id, or its error;
    failing past the deadline (a write that waits for the copy of the held
    lock, which no thread of the child would ever release)."""
    read, write = os.pipe()
    with lock:
        pid = os.fork()
        if pid == 0:
            try:
                os.close(read)
                try:
                    said = str(storage["users"].create(name="Bea",
                                                       email=f"bea{os.getpid()}@example.org").id)
                except Exception as e:
                    said = f"{type(e).__name__}: {e}"
                os.write(write, said.encode())
            finally:
                os._exit(0)
    os.close(write)
    try:
        ready, _, _ = select.select([read], [], [], 20)
        assert ready, "the child's first write waited for the parent's lock"
        return os.read(read, 1000)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(read)


@FAST
def test_a_process_forked_while_the_parent_takes_the_write_lock_writes_all_the_same(tmp_path):
    """As a worker forked after --preload while a thread of the master held
    the file's write lock (its first write under way, its writer not made
    yet): the child's first write takes a lock of its own."""
    storage = open_store(f"sqlite:///{tmp_path}/f.db")
    try:
        assert forked_write(storage, storage.connections.writing) == b"1"
    finally:
        storage.close()


@FAST
def test_a_process_forked_while_the_parent_queues_a_write_writes_all_the_same(tmp_path):
    """The same with the writer made (the master wrote), forked while a
    thread of it queued a write (the writer's own lock held): the child's
    first write starts a writer, and takes a lock, of its own."""
    storage = open_store(f"sqlite:///{tmp_path}/f.db")
    try:
        storage["users"].create(name="Ada", email="ada@example.org")
        assert forked_write(storage, storage.connections.writer._closing) == b"2"
        # ... or while one opened a connection (the child's writer opens its own)
        assert forked_write(storage, storage.connections.opened._lock) == b"3"
    finally:
        storage.close()


# -- opening: what is waited for --------------------------------------------

def test_opening_a_busy_file_is_tried_again():
    """Processes opening a new file together may find it locked."""
    attempts = []

    def open_():
        attempts.append(1)
        if len(attempts) < 3:
            raise StoreUnavailable("busy") from sqlite3.OperationalError("database is locked")
    retrying(open_, busy_timeout=10)
    assert len(attempts) == 3


def test_a_file_that_cannot_be_opened_is_said_at_once_not_waited_for(tmp_path):
    attempts = []

    def open_():
        attempts.append(1)
        try:
            sqlite3.connect(tmp_path / "no-such-folder" / "users.db")
        except sqlite3.OperationalError as e:
            raise StoreUnavailable("cannot open") from e
    with pytest.raises(StoreUnavailable):
        retrying(open_, busy_timeout=10)
    assert attempts == [1]
