"""Every reader of the feed misses nothing (docs/api.md, "Changes"): a
property test (hypothesis) on every store, in every order THINGS declares
(``every_kind``: two of them optional), each way. A client reads every page
of ``/things`` while writes (creates, updates that move records in the
order, an optional value given or taken away, deletes) come between any
two statements the store runs for the pages (``Seam``), then follows the
feed from the position its first page linked to: its copy (each page's
records, overwritten by the feed's entries, a tombstone removing one) is
exactly what the store holds. And each record there from the first page
to the last whose sort value no write touched is on exactly one page
(docs/decisions.md, "What a walk promises under writes").

A store's statements are where it can be interleaved: on SQLite and
PostgreSQL, each statement a read runs on its connection (the store's
``read``, given a connection that runs the writes due before each
``execute``); in memory, the position and the page, each read whole under
the collection's lock. (A private SQLite database, ``sqlite://``, has one
connection, held through a read: no write can come in between there.)

The cases that failed are always run (``example``): on PostgreSQL a page
whose values' walk found nothing took its position from its second
statement, read after a record got a value, which was then on no page and
before the position; and on both SQL stores a record that lost its value
between the two statements was met again by the second, which asked for
only as many as the page lacked, so the page came short, had no next link,
and the walk ended before records that had been there throughout.
"""
from __future__ import annotations

import itertools
from typing import Any

import pytest
from conftest import STORES, Client
from every_kind import THINGS, thing_maker
from helpers import DEADLINE, link_to, within
from hypothesis import HealthCheck, example, given, settings, strategies as st

from usersvc import USER, make_app
from usersvc.listing import FEED_RELATION
from usersvc.storage import open_store

#: Every store whose statements a write can come between.
INTERLEAVED = [p for p in STORES if p.id != "sqlite-memory"]

DUE, WEIGHT = ["2026-01-01", "2026-02-01"], [0.5, 2.0]
#: A thing's sorted fields (``at``: a day, made unique: ``Things.document``).
SORTED = {"title": st.sampled_from(["a", "B", "b"]), "count": st.integers(0, 3),
          "done": st.booleans(), "level": st.sampled_from(["low", "normal", "high"]),
          "at": st.integers(1, 3), "due": st.none() | st.sampled_from(DUE),
          "weight": st.none() | st.sampled_from(WEIGHT)}
THING = st.fixed_dictionaries(SORTED)
#: A write: a new thing; a merge patch of some sorted fields (``None``
#: removes an optional one) or a delete, of the n-th thing there by id.
WRITE = st.one_of(st.tuples(st.just("create"), THING),
                  st.tuples(st.just("update"), st.integers(0, 5),
                            st.fixed_dictionaries({}, optional=SORTED)),
                  st.tuples(st.just("delete"), st.integers(0, 5)))

BARE = {"title": "a", "count": 0, "done": False, "level": "low", "at": 1, "due": None,
        "weight": None}


class Seam:
    """The writes planned for a walk, each run before the statement it
    names (numbered from 0 across the walk's reads), while ``counted`` is
    not ``None``; the records moved meanwhile in the walk's order."""

    def __init__(self) -> None:
        self.counted: int | None = None
        self.planned: dict[int, list[Any]] = {}

    def before_statement(self) -> None:
        if self.counted is None:
            return
        at, self.counted = self.counted, None       # (a write's own reads are not counted)
        try:
            for write in self.planned.pop(at, ()):
                write()
        finally:
            self.counted = at + 1

    def install(self, storage: Any, plural: str) -> None:
        """Before each of the store's statements: on SQL, each ``execute``
        of a read's connection; in memory, the position and the page."""
        if hasattr(storage, "read"):
            reading = storage.read

            def read(cache_as: Any, read: Any) -> Any:
                return reading(cache_as, lambda db: read(Interleaved(db, self.before_statement)))
            storage.read = read
            return
        records = storage.collections[plural]
        for name in ("position", "list"):
            setattr(records, name, self.after_writes(getattr(records, name)))

    def after_writes(self, read: Any) -> Any:
        """``read``, run after the writes due before it."""
        def statement(*args: Any, **kwargs: Any) -> Any:
            self.before_statement()
            return read(*args, **kwargs)
        return statement


class Interleaved:
    """A connection that calls ``before()`` before each statement it runs."""

    def __init__(self, db: Any, before: Any) -> None:
        self._db, self._before = db, before

    def execute(self, *args: Any, **kwargs: Any) -> Any:
        self._before()
        return self._db.execute(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._db, name)


class Things:
    """The store's things, written directly (as another client's requests
    would be, between the statements of a page's read), and the ids there."""

    def __init__(self, storage: Any) -> None:
        self.records = storage["things"]
        self.fields = thing_maker()
        self.stamps = itertools.count(1)
        self.ids: list[int] = []

    def document(self, values: dict[str, Any]) -> dict[str, Any]:
        """A thing's JSON fields for these sorted values, ``at`` on its day
        at a time no other had."""
        if "at" not in values:
            return dict(values)
        n = next(self.stamps)
        return {**values, "at": f"2026-01-0{values['at']}T{n // 3600 % 24:02d}:"
                                f"{n // 60 % 60:02d}:{n % 60:02d}Z"}

    def create(self, values: dict[str, Any]) -> None:
        document = {**self.fields("t"), **self.document(values)}
        document = {k: v for k, v in document.items() if v is not None}
        self.ids.append(self.records.create(**THINGS.for_create(document)).id)

    def target(self, n: int) -> int | None:
        return sorted(self.ids)[n % len(self.ids)] if self.ids else None

    def write(self, op: tuple, moved: set[int], sort: str) -> None:
        """``op``, on the thing it names (none there: nothing); a thing
        whose sort value it may change is ``moved``."""
        if op[0] == "create":
            self.create(op[1])
            return
        record_id = self.target(op[1])
        if record_id is None:
            return
        if op[0] == "delete":
            self.records.delete(record_id)
            self.ids.remove(record_id)
        else:
            if sort in op[2]:
                moved.add(record_id)
            self.records.update(record_id, **THINGS.for_patch(self.document(op[2]), record_id))

    def reset(self, things: list[dict[str, Any]]) -> None:
        """Only these things there (each of the others deleted)."""
        for record_id in self.ids:
            self.records.delete(record_id)
        self.ids = []
        for values in things:
            self.create(values)


@pytest.fixture(params=INTERLEAVED)
def walked(request, tmp_path):
    """A store of THINGS (and their users), its seam, an app and a client."""
    url = (request.getfixturevalue("postgres_url") if request.param == "{postgres}"
           else request.param.format(tmp=tmp_path))
    storage = open_store(url, (USER, THINGS))
    seam = Seam()
    seam.install(storage, "things")
    yield Things(storage), seam, Client(make_app(storage))
    storage.close()


def _get(client: Client, url: str) -> Any:
    answer = within(DEADLINE, lambda: client.get(url))
    assert answer.status_code == 200, (url, answer.text)
    return answer


# The examples: both optional sorts' values given, or taken away, between a
# page's two statements (the first on PostgreSQL, the second on SQLite,
# which reads the position first).
GIVEN, TAKEN = {"due": DUE[1], "weight": WEIGHT[1]}, {"due": None, "weight": None}
HELD = {**BARE, "due": DUE[0], "weight": WEIGHT[0]}


@pytest.mark.parametrize("sort", THINGS.sorts)
@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@example(reverse=False, limit=2, things=[BARE, BARE], writes=[(1, ("update", 0, GIVEN))])
@example(reverse=True, limit=2, things=[BARE, BARE], writes=[(2, ("update", 0, GIVEN))])
@example(reverse=False, limit=2, things=[HELD, BARE, BARE], writes=[(1, ("update", 0, TAKEN))])
@example(reverse=False, limit=2, things=[HELD, BARE, BARE], writes=[(2, ("update", 0, TAKEN))])
@example(reverse=True, limit=2, things=[BARE, BARE, HELD], writes=[(2, ("update", 2, TAKEN))])
@given(reverse=st.booleans(), limit=st.integers(1, 3), things=st.lists(THING, max_size=5),
       writes=st.lists(st.tuples(st.integers(1, 10), WRITE), max_size=4))
def test_pages_then_the_feed_from_the_first_page_hold_every_record(
        walked, sort, reverse, limit, things, writes):
    store, seam, client = walked
    store.reset(things)
    _get(client, "/things?limit=1000")     # (read before, as by others: SQLite keeps them built)
    there = set(store.ids)
    moved: set[int] = set()
    for at, op in writes:
        seam.planned.setdefault(at, []).append(lambda op=op: store.write(op, moved, sort))

    seam.counted, pages, feed = 0, [], None
    url: str | None = f"/things?sort={'-' * reverse}{sort}&limit={limit}"
    while url is not None:
        answer = _get(client, url)
        pages += answer.json
        feed = feed or link_to(answer.headers, FEED_RELATION)
        url = link_to(answer.headers)
        assert len(pages) < 50, "the walk does not end"
    seam.counted = None
    steady = there & set(store.ids) - moved       # there throughout, not moved
    for at in sorted(seam.planned):        # (planned past the walk's end: after it)
        for write in seam.planned.pop(at):
            write()

    seen = [thing["id"] for thing in pages]
    assert {i: seen.count(i) for i in steady} == {i: 1 for i in steady}, seen
    copy = {thing["id"]: thing for thing in pages}
    assert feed is not None
    while True:
        answer = _get(client, feed)
        if not answer.json:
            break
        for entry in answer.json:
            if entry.get("deleted"):
                copy.pop(entry["id"], None)
            else:
                copy[entry["id"]] = entry["thing"]
        feed = link_to(answer.headers)
    held = {thing["id"]: thing for thing in _get(client, "/things?limit=1000").json}
    assert copy == held
