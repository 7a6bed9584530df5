"""What only the PostgreSQL store shows: its tables and migrations, lost
connections, and several server processes on one database (scale-out).

The store contract and API suites run on PostgreSQL too (``postgres`` in
conftest's ``STORES``); these tests add what is PostgreSQL's own. They use
the server named by ``USERSVC_TEST_POSTGRES_URL``, in a schema per test.
"""
from __future__ import annotations

import getpass
import json
import threading
import time
import uuid
from urllib.parse import urlsplit, urlunsplit

import pytest
from conftest import POSTGRES_REQUIRED, POSTGRES_URL, schema_of_its_own, unavailable
from helpers import Served, call, check_release_0_1_0, load_release_dump, page_shapes, race

from usersvc import USER, asking, text
from usersvc.storage import SchemaTooNew, StoreUnavailable, open_store

if not (POSTGRES_URL or POSTGRES_REQUIRED):
    pytest.skip("PostgreSQL tests: USERSVC_TEST_POSTGRES_URL is not set "
                "(e.g. postgresql://127.0.0.1:5432/test)", allow_module_level=True)
psycopg = pytest.importorskip("psycopg", reason="pip install -e '.[test,postgres]'")

from usersvc.storage.postgres.migrations import MIGRATIONS, migrate  # noqa: E402
from usersvc.storage.postgres.store import PostgresStorage, split_url  # noqa: E402
from usersvc.storage.sql import POSTGRES, Table  # noqa: E402
from usersvc.storage.sql.ddl import CHANNEL, objects  # noqa: E402

User = USER.record
USERS = Table(USER, POSTGRES)


@pytest.fixture
def url(postgres_url):
    return postgres_url


@pytest.fixture
def sql(url):
    """Run SQL in the test's schema, beside the store."""
    with psycopg.connect(split_url(url)[0], autocommit=True) as db:
        def run(query, *params):
            cursor = db.execute(query, params)
            return cursor.fetchall() if cursor.description else None
        yield run


def test_the_schema_version_is_recorded_and_migrating_again_changes_nothing(url, sql):
    open_store(url).close()
    assert sql("SELECT version FROM usersvc_schema") == [(len(MIGRATIONS),)]
    storage = open_store(url)
    storage["users"].create(name="Ada", email="ada@example.org")
    storage.close()
    open_store(url).close()
    assert sql("SELECT version FROM usersvc_schema") == [(len(MIGRATIONS),)]
    assert sql("SELECT count(*) FROM users") == [(1,)]


def test_uniqueness_is_a_unique_index_on_the_case_folded_email(url, sql):
    open_store(url).close()
    (indexdef,), = sql("SELECT indexdef FROM pg_indexes WHERE indexname = 'users_email_unique'"
                       " AND schemaname = current_schema()")
    assert indexdef.startswith("CREATE UNIQUE INDEX") and "(email__key)" in indexdef
    storage = open_store(url)
    storage["users"].create(name="S", email="STRASSE@example.org")
    storage.close()
    assert sql("SELECT email, email__key FROM users") == [
        ("STRASSE@example.org", "strasse@example.org")]


def test_ids_come_from_an_identity_column(url, sql):
    open_store(url).close()
    assert sql("SELECT is_identity, identity_generation FROM information_schema.columns"
               " WHERE table_schema = current_schema() AND table_name = 'users'"
               " AND column_name = 'id'") == [("YES", "ALWAYS")]


def test_a_newer_schema_is_refused(url, sql):
    open_store(url).close()
    sql("UPDATE usersvc_schema SET version = %s", len(MIGRATIONS) + 1)
    with pytest.raises(SchemaTooNew):
        open_store(url)


def test_a_failing_migration_leaves_nothing_behind(url, sql):
    with psycopg.connect(split_url(url)[0], autocommit=True) as db, \
            pytest.raises(psycopg.errors.SyntaxError), db.transaction():
        migrate(db, [*MIGRATIONS, ["CREATE TABLE extra (x int)", "NOT SQL"]], fresh=())
    assert sql("SELECT to_regclass('users'), to_regclass('usersvc_schema')") == [(None, None)]


def test_stores_opening_together_migrate_once(url, sql):
    stores = race(8, lambda i: open_store(url))
    for store in stores:
        store.close()
    assert sql("SELECT version FROM usersvc_schema") == [(len(MIGRATIONS),)]


def test_a_lost_connection_is_unavailable_once_then_replaced(url, sql):
    storage = PostgresStorage(url + "&application_name=usersvc_lost", (USER,), pool_size=1)
    store = storage["users"]
    try:
        user = store.create(name="Ada", email="ada@example.org")
        killed = sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                     " WHERE application_name = 'usersvc_lost'")
        assert killed == [(True,)]
        try:
            assert store.get(user.id) == user       # the pool may already have noticed
        except StoreUnavailable:
            assert store.get(user.id) == user       # and then it has replaced it
    finally:
        storage.close()


def test_a_write_held_up_by_another_sessions_lock_is_a_503_after_the_bound(url):
    """Another session holds the row (a transaction left open): the write
    does not wait for ever, but a statement's bound (1.5 x the pool's
    timeout), and then is a 503 that changed nothing."""
    storage = PostgresStorage(url, (USER,), timeout=0.4)
    try:
        user = storage["users"].create(name="Ada", email="ada@example.org")
        with psycopg.connect(split_url(url)[0]) as other:
            other.execute("SELECT * FROM users WHERE id = %s FOR UPDATE", (user.id,))
            with pytest.raises(StoreUnavailable):
                storage["users"].update(user.id, name="Bea")
        assert storage["users"].get(user.id) == user
        assert storage["users"].update(user.id, name="Bea").name == "Bea"   # and then it works
    finally:
        storage.close()


def test_an_unreachable_server_fails_at_open_without_the_password():
    with pytest.raises(StoreUnavailable, match='port 1 failed: Connection refused') as raised:
        PostgresStorage("postgresql://u:secret@127.0.0.1:1/x", (USER,), timeout=0.5)
    assert "secret" not in str(raised.value)


@pytest.mark.parametrize("url, conninfo, size", [
    ("postgresql://h/db", "postgresql://h/db", 8),
    ("postgresql://h/db?pool_size=3&sslmode=disable", "postgresql://h/db?sslmode=disable", 3),
    # libpq reads %20 as a space and "+" as itself: the options stay two.
    ("postgresql://h/db?options=-ca%3D1%20-cb%3D2&pool_size=2",
     "postgresql://h/db?options=-ca%3D1%20-cb%3D2", 2),
])
def test_pool_size_is_taken_out_of_the_url(url, conninfo, size):
    assert split_url(url) == (conninfo, size)


@pytest.mark.parametrize("bad", ["0", "x", "-1"])
def test_a_bad_pool_size_is_refused(bad):
    with pytest.raises(ValueError, match="pool_size"):
        split_url(f"postgresql://h/db?pool_size={bad}")


# -- scale-out: several server processes on one database ---------------------

def test_two_server_processes_on_one_database(url, tmp_path):
    servers = [Served("--storage", url, cwd=tmp_path) for _ in range(2)]
    try:
        one, two = (s.address for s in servers)
        # Created through one, read, replaced and deleted through the other.
        status, headers, body = call(one, "POST", "/users",
                                     {"name": "Ada", "email": "ada@example.org"})
        assert status == 201
        path = "/users/" + str(json.loads(body)["id"])
        status, got, body = call(two, "GET", path)
        assert status == 200 and got["ETag"] == headers["ETag"]
        status, put, _ = call(two, "PUT", path, {"name": "Ada L.", "email": "ada@example.org"},
                              {"If-Match": got["ETag"]})
        assert status == 200
        assert json.loads(call(one, "GET", path)[2])["name"] == "Ada L."
        assert call(two, "DELETE", path, headers={"If-Match": put["ETag"]})[0] == 204
        assert call(one, "GET", path)[0] == 404

        # The same e-mail raced across both: one 201.
        statuses = race(16, lambda i: call((one, two)[i % 2], "POST", "/users",
                                           {"name": f"U{i}", "email": "same@example.org"})[0])
        assert sorted(statuses) == [201] + [409] * 15

        # The same If-Match raced across both: one success.
        user = json.loads(call(one, "GET", "/users?email=same@example.org")[2])[0]
        _, headers, _ = call(two, "GET", f"/users/{user['id']}")
        statuses = race(16, lambda i: call((one, two)[i % 2], "PATCH", f"/users/{user['id']}",
                                           {"name": f"N{i}"}, {"If-Match": headers["ETag"]})[0])
        assert sorted(statuses) == [200] + [412] * 15
        assert call(one, "GET", f"/users/{user['id']}")[2] == \
            call(two, "GET", f"/users/{user['id']}")[2]
    finally:
        assert [s.stop() for s in servers] == [0, 0]


def test_the_server_never_prints_the_password_in_its_url(url, tmp_path):
    parts = urlsplit(url)
    user = parts.username or getpass.getuser()
    with_password = urlunsplit(parts._replace(
        netloc=f"{user}:hunter2@{parts.netloc.rpartition('@')[2]}"))
    served = Served("--storage", with_password, cwd=tmp_path)  # trust auth ignores it
    try:
        assert "hunter2" not in served.line
        assert f"{user}:***@" in served.storage
    finally:
        assert served.stop() == 0


PAGES = page_shapes(("name 05000", 5000), ("u5000@example.org", 5000), "u5@example.org", "rare")


@pytest.fixture(scope="module")
def analyzed():
    """20,000 users, a few of them "Rare", and fresh planner statistics, in
    a schema of their own that every query-plan test reads (made once: the
    plans are read, nothing is written)."""
    with schema_of_its_own("usersvc_plans") as url:
        storage = open_store(url)
        storage["users"].restore([
            User(id=i, name=f"Name {i:05} {'Rare' if i % 2000 == 0 else 'Common'}",
                 email=f"u{i}@example.org", version=1) for i in range(1, 20_001)], last_id=20_000)
        storage.close()
        with psycopg.connect(split_url(url)[0], autocommit=True) as db:
            for table in ("users", "user_words", "user_changes"):
                db.execute(f"ANALYZE {table}")

            def run(query, *params):
                cursor = db.execute(query, params)
                return cursor.fetchall() if cursor.description else None
            yield run


@pytest.mark.parametrize("arguments", PAGES, ids=repr)
def test_every_page_reads_an_index_and_never_scans_the_users(analyzed, arguments):
    query, params = USERS.pages.page(limit=10, **arguments)
    plan = "\n".join(row[0] for row in analyzed("EXPLAIN " + query, *params))
    assert "Seq Scan" not in plan, plan
    if "q" in arguments:        # the matching words, then only their users, sorted
        assert "user_words_pkey" in plan, plan
        assert "users_pkey" in plan or "users_email_unique" in plan, plan
    elif "email" in arguments:  # at most one user, by the unique index
        assert "Index Scan using users_email_unique" in plan, plan
    else:                       # one index, walked in the page's order
        assert "Index Scan" in plan and "Sort" not in plan, plan


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("sort, asked", [("name", "name[gte]=name 05000&name[lt]=name 06000"),
                                         ("id", "id[gt]=7000")])
def test_a_range_on_the_pages_own_order_is_a_search_of_its_index(analyzed, sort, asked, reverse):
    """The cost rule (docs/api.md, "Asking"): the page starts at the
    range's edge in the order's index (an Index Cond), and walks it."""
    where = tuple(asking.read(USER, *pair.split("=")) for pair in asked.split("&"))
    query, params = USERS.pages.page(limit=10, sort=sort, reverse=reverse, where=where)
    plan = "\n".join(row[0] for row in analyzed("EXPLAIN " + query, *params))
    assert "Seq Scan" not in plan and "Sort" not in plan, plan
    assert "Index Cond" in plan and ("name__key >" if sort == "name" else "id >") in plan, plan


@pytest.mark.parametrize("after", [0, 10_000, 19_990])
def test_a_page_of_the_feed_is_one_walk_of_the_positions(analyzed, after):
    plan = "\n".join(row[0] for row in analyzed("EXPLAIN " + USERS.pages.changes, after, 100))
    assert "Seq Scan" not in plan and "Sort" not in plan, plan
    assert "Index Scan using user_changes_seq_key on user_changes" in plan, plan
    assert " users" not in plan.replace("user_changes", ""), plan     # no other table
    # The position a page links to: the largest, from the end of the same index.
    plan = "\n".join(row[0] for row in analyzed("EXPLAIN " + USERS.pages.position))
    assert "Index Only Scan Backward using user_changes_seq_key" in plan, plan


def test_a_database_made_by_release_0_1_0_opens_with_everything_kept(url, sql):
    """tests/data/release-0.1.0.sql: the dump of a database made by
    usersvc 0.1.0 (the last release before declared collections)."""
    load_release_dump(url)
    storage = open_store(url)
    try:
        assert sql("SELECT version FROM usersvc_schema") == [(len(MIGRATIONS),)]
        check_release_0_1_0(storage["users"])
    finally:
        storage.close()


# -- the change feed: positions in commit order ------------------------------

# The lock each statement takes before it touches a row (a trigger of its
# own); without it, positions come from the sequence alone.
_LOCK = "PERFORM pg_advisory_xact_lock('user_changes'::regclass::oid::bigint);"
assert _LOCK in objects(USERS)["user_changes_lock"].sql
assert "pg_advisory" not in objects(USERS)["user_changes_record"].sql
NAIVE_POSITIONS = "DROP TRIGGER user_changes_first ON users"


def follow_past_a_held_writer(store, url, sql, naive):
    """A follower reads the feed while one writer has taken its position
    but not committed (held open here) and a later writer commits (or, with
    positions in commit order, waits); then both are done and it reads on
    from where it was. Returns the names it saw."""
    seen, position = [], store.position()
    held = psycopg.connect(split_url(url)[0])
    later = threading.Thread(target=store.create, kwargs={"name": "Later",
                                                          "email": "later@example.org"})
    try:
        held.execute("INSERT INTO users (name, email, email__key, name__key, version)"
                     " VALUES ('Held', 'held@example.org', 'held@example.org', 'held', 1)")
        later.start()
        if naive:
            later.join()            # nothing holds it back: it commits first
        else:
            wait_for(lambda: sql("SELECT count(*) FROM pg_stat_activity WHERE datname ="
                                 " current_database() AND wait_event_type = 'Lock'")[0][0] == 1)
        for change in store.changes(after=position):     # the follower, meanwhile
            seen.append(change.record.name)
            position = change.seq
        held.commit()
    finally:
        held.close()
        later.join()
    seen += [c.record.name for c in store.changes(after=position)]
    return seen


def test_a_commit_in_another_process_is_announced_by_notify(url, sql):
    """Two stores stand for two processes. Once the first store's first
    listener made it listen, only the NOTIFY it receives can tell it of the
    second's commit (it never asks for the position itself): what wakes a
    waiting request (test_store_changes: the waiting feature's watches)."""
    waiting, writing = open_store(url), open_store(url)
    try:
        told = []
        woke = threading.Event()
        waiting.announce_commits(lambda plural: (told.append(plural), woke.set()))
        wait_for(lambda: sql("SELECT count(*) FROM pg_stat_activity WHERE datname ="
                             " current_database() AND query = %s",
                             f"LISTEN {CHANNEL}")[0][0] == 1)
        wait_for(lambda: told)              # (listening: it tells of every collection once)
        told.clear(), woke.clear()
        writing["users"].create(name="Ada", email="ada@example.org")
        assert woke.wait(10), "the NOTIFY was not announced"
        assert told == ["users"]
    finally:
        waiting.close()
        writing.close()


def wait_for(condition):
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, "what the test waits for never happened"
        time.sleep(0.01)


def test_a_follower_never_passes_a_change_that_commits_later(url, sql):
    """The naive way, a sequence, lets a later writer commit a larger
    position first: the follower passes the held writer's and misses it for
    good (shown first, on the same scenario). The store's positions are
    handed out in commit order, so the follower sees both."""
    storage = open_store(url)
    try:
        sql(NAIVE_POSITIONS)
        # Held: missed
        assert follow_past_a_held_writer(storage["users"], url, sql, naive=True) == ["Later"]
    finally:
        storage.close()
    sql("DROP TABLE users, user_changes, user_words, usersvc_schema, usersvc_collections,"
        " usersvc_keys, usersvc_history CASCADE;"
        " DROP FUNCTION user_changes_record, user_changes_lock, user_words_sync;"
        " DROP SEQUENCE user_changes_seq")
    storage = open_store(url)
    try:
        assert follow_past_a_held_writer(storage["users"], url, sql, naive=False) == [
            "Held", "Later"]
    finally:
        storage.close()


@pytest.fixture
def icu_url(postgres_admin):
    """A database of its own whose collation is ICU's en-US (case before
    code point: ``a`` before ``B``), dropped afterwards."""
    name = f"usersvc_icu_{uuid.uuid4().hex[:12]}"
    try:
        postgres_admin.execute(f"CREATE DATABASE {name} TEMPLATE template0 ENCODING 'UTF8' "
                               "LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'")
    except psycopg.Error as e:
        unavailable(f"cannot make a database with an ICU collation here: {e}")
    parts = urlsplit(POSTGRES_URL)
    try:
        yield urlunsplit(parts._replace(path=f"/{name}"))
    finally:
        postgres_admin.execute(f"DROP DATABASE {name} WITH (FORCE)")


def test_every_kind_orders_in_code_points_whatever_the_databases_collation(icu_url):
    """Found from outside: url, date and the other kinds kept as their own
    value were ordered by the database's collation (an ICU en-US database
    put https://B... last); memory and SQLite put it first. Every store
    orders alike, in code points."""
    from usersvc import Schema, date, url
    marks = Schema("mark", "marks", {"link": url, "day": date, "note": text(9)},
                   sorts=("link", "note"), filters=("link", "day"))
    links = ["https://b.example/a", "https://B.example/z", "https://a.example/q",
             "https://_.example/"]
    stores = [open_store(icu_url, (marks,)), open_store("memory://", (marks,))]
    try:
        answers = []
        for storage in stores:
            for n, link in enumerate(links):
                storage["marks"].create(link=link, day=f"2026-01-0{n + 1}", note=link[8])
            answers.append([(m.link, m.id) for m in storage["marks"].list(sort="link")])
            answers.append([m.id for m in storage["marks"].list(sort="link", reverse=True)])
            after = storage["marks"].list(sort="link", limit=2)[-1]
            answers.append([m.id for m in storage["marks"].list(
                sort="link", after=("https://_.example/", after.id))])
        assert answers[:3] == answers[3:]
        assert [link for link, _ in answers[0]] == sorted(links)
    finally:
        for storage in stores:
            storage.close()
