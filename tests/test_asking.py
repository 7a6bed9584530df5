"""Asking with operators, ``field[op]=value`` (docs/api.md, "Asking"): on
every store, a page's conditions keep the records a plain model keeps (the
predicates below, written out in Python), in every order, page by page
through the ``next`` links, beside the filters and ``q``, and counted
alike; and what a collection does not take is a 400 naming the parameter
and what it takes."""
from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path
from urllib.parse import quote

import pytest
from conftest import opened
from every_kind import THINGS, thing_maker
from webob import Request

from usersvc import USER, make_app
from usersvc.storage import keyset

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
from tasks import TASKS  # noqa: E402

LEVELS = THINGS.fields["level"].options


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


#: (query, what it keeps, as a plain predicate on a stored record)
QUESTIONS = [
    ("count[gte]=3", lambda r: r.count >= 3),
    ("count[gt]=2&count[lte]=5", lambda r: 2 < r.count <= 5),
    ("count[ne]=0", lambda r: r.count != 0),
    ("count[in]=1,4,6", lambda r: r.count in (1, 4, 6)),
    ("level[in]=low,high", lambda r: r.level in ("low", "high")),
    ("level[gte]=normal", lambda r: LEVELS.index(r.level) >= 1),
    ("level[lt]=high&level[ne]=low", lambda r: r.level == "normal"),
    ("title[gte]=THING 2&title[lt]=thing 4", lambda r: "thing 2" <= r.title.casefold() < "thing 4"),
    ("at[gt]=2026-01-01T00:00:05Z", lambda r: _instant(r.at) > _instant("2026-01-01T00:00:05Z")),
    ("at[lte]=2026-01-01T01:00:07.5%2B01:00",
     lambda r: _instant(r.at) <= _instant("2026-01-01T00:00:07.5Z")),
    ("id[gt]=5&id[lte]=20", lambda r: 5 < r.id <= 20),
    ("code[ne]=C-3", lambda r: r.code != "c-3"),
    ('code[in]=C-1,"c-2",c-9,"a, b"', lambda r: r.code in ("c-1", "c-2", "c-9")),
    ("due[exists]=false", lambda r: r.due is None),
    ("due[exists]=true&count[lt]=4", lambda r: r.due is not None and r.count < 4),
    ("contact[ne]=a7@example.org",
     lambda r: r.contact is not None and r.contact != "a7@example.org"),
    ("link[eq]=https://example.org/5", lambda r: r.link == "https://example.org/5"),
    ("owner[exists]=true", lambda r: r.owner is not None),
    ("done=true&count[gte]=2", lambda r: r.done and r.count >= 2),
    ("q=many&count[lt]=3", lambda r: "many" in r.title.casefold().split() and r.count < 3),
    # equalities a filtered sort's index answers in some of the orders (every_kind's THINGS)
    ("count=3", lambda r: r.count == 3),
    ("done=false&level[in]=low,high", lambda r: not r.done and r.level in ("low", "high")),
    ("done[eq]=true&at[gte]=2026-01-01T00:00:10Z",
     lambda r: r.done and _instant(r.at) >= _instant("2026-01-01T00:00:10Z")),
    ("due=2026-12-04&title[gte]=thing 2", lambda r: r.due == "2026-12-04" and r.title >= "Thing 2"),
    ("level[in]=high,low,high&count[ne]=2", lambda r: r.level in ("low", "high") and r.count != 2),
    # an optional sort that is no filter takes exists: what its order puts last
    ("weight[exists]=false", lambda r: r.weight is None),
    ("weight[exists]=true&count[gte]=2", lambda r: r.weight is not None and r.count >= 2),
]
ORDERS = ["id", "-id", "title", "-count", "at", "-level", "done"]


def _fill(storage) -> list:
    storage["users"].create(name="Ada", email="ada@example.org")
    make, things = thing_maker(), storage["things"]
    kept = []
    for i in range(40):
        fields = make(f"Thing {i % 6}" + (" of many" if i % 4 == 0 else ""))
        if i % 3 == 0:
            fields.update(due=f"2026-12-{1 + i % 28:02d}", contact=f"a{i}@example.org",
                          link=f"https://example.org/{i}", owner=1, weight=i / 2)
        kept.append(things.create(**fields))
    return kept


@pytest.fixture
def asked(store_url):
    """``(app, the records it holds)``: 40 things on the store."""
    for storage in opened(store_url, (USER, THINGS)):
        records = _fill(storage)
        yield make_app(storage), records


def _get(app, target: str, **headers):
    response = Request.blank(target, headers={"Accept": "application/json", **headers}
                             ).get_response(app)
    return response


def _walk(app, query: str, sort: str) -> list[int]:
    """Every record's id, page by page (7 a page) through the next links."""
    target, ids = f"/things?{query}&sort={quote(sort)}&limit=7", []
    for _ in range(20):
        response = _get(app, target)
        assert response.status_int == 200, (target, response.json)
        ids += [thing["id"] for thing in response.json]
        link = response.headers.get("Link", "")
        if 'rel="next"' not in link:
            return ids
        target = link.split(">", 1)[0].lstrip("<").replace("http://localhost", "")
    raise AssertionError("more than 20 pages")


def _expected(records: list, keeps, sort: str) -> list[int]:
    name = sort.lstrip("-")
    kept = [r for r in records if keeps(r)]
    kept.sort(key=lambda r: keyset(THINGS, r, name), reverse=sort.startswith("-"))
    return [r.id for r in kept]


@pytest.mark.parametrize("query, keeps", QUESTIONS, ids=[q for q, _ in QUESTIONS])
def test_every_store_keeps_what_the_plain_model_keeps_in_every_order(asked, query, keeps):
    app, records = asked
    for sort in ORDERS:
        assert _walk(app, query, sort) == _expected(records, keeps, sort), sort
    counted = _get(app, f"/things?{query}", Prefer="count=exact")
    assert counted.headers["X-Total-Count"] == str(len(_expected(records, keeps, "id")))


def test_a_cursor_is_bound_to_its_conditions(asked):
    app, _ = asked
    link = _get(app, "/things?count[gte]=1&sort=title&limit=2").headers["Link"]
    cursor = link.split("cursor=", 1)[1].split("&", 1)[0]
    assert _get(app, f"/things?count[gte]=2&sort=title&cursor={cursor}").status_int == 400
    assert _get(app, f"/things?count[gte]=1&sort=title&cursor={cursor}").status_int == 200


REFUSED = [
    ("done[gt]=true", "done[gt]", "done takes done[eq|ne|in]"),           # boolean: no ranges
    ("link[lt]=https://a.org/", "link[lt]", "link[eq|ne|in|exists]"),      # url: no ranges
    ("contact[gte]=a@b.org", "contact[gte]", "contact[eq|ne|in|exists]"),  # email: no ranges
    ("code[exists]=true", "code[exists]", "code[eq|ne|in]"),               # required: no exists
    ("note[eq]=x", "note[eq]", "note is not a field it can be asked about"),
    ("nmae[eq]=Ada", "nmae[eq]", "it takes id[gt|gte|lt|lte], title["),
    ("count[between]=1", "count[between]", "count[eq|ne|in|gt|gte|lt|lte]"),
    ("count[gt]=many", "count[gt]", "must be a whole number"),
    ("count[gt]=1&count[gt]=2", "count[gt]", "given more than once"),
    ("due[exists]=yes", "due[exists]", "must be true or false"),
    ("level[in]=low,urgent", "level[in]", "must be one of low, normal, high"),
    ("count[in]=" + ",".join(["1"] * 101), "count[in]", "at most 100 values"),
    ('code[in]="a"b', "code[in]", "separated by commas"),
    ("id[gt]=-1", "id[gt]", "a whole number from 0"),
    ("at[gt]=yesterday", "at[gt]", "at[gt]"),
    ("level=high&level[eq]=high", "level[eq]", "given more than once"),     # = is [eq]
    ("count[gt]=99999999999999999999999", "count[gt]", "must be from -5 to 5000"),
    ("count[lt]=-99999999999999999999999", "count[lt]", "must be from -5 to 5000"),
    ("count=123456789012345678901234567890", "count", "must be from -5 to 5000"),
    ("weight[eq]=1", "weight[eq]", "weight takes weight[exists|gt|gte|lt|lte]"),
]


@pytest.mark.parametrize("store_url", ["memory://"], indirect=True)
@pytest.mark.parametrize("query, name, says", REFUSED, ids=[q[:30] for q, _, _ in REFUSED])
def test_what_a_collection_does_not_take_is_a_400_naming_it(asked, query, name, says):
    app, _ = asked
    response = _get(app, f"/things?{query}")
    assert response.status_int == 400
    assert name in response.json["detail"] and says in response.json["detail"]


#: Text conditions holding what no text value holds (a control character:
#: NUL compared unlike in each store; a non-character), each way one is asked.
NOT_TEXT = ["title[gte]=%00", "title[lt]=%00", "title[gt]=thing%00", "title[lte]=thing%01",
            "code=c-1%09", "code[eq]=%1F", "code[ne]=c-1%7F", "code[in]=c-1,c%C2%852",
            'code[in]=c-1,"c,%00"', "contact=a%00@example.org", "contact[in]=%0Aa@b.org",
            "q=thing%00", "q=%09thing", "title[gt]=thing%EF%BF%BE"]


@pytest.mark.parametrize("query", NOT_TEXT)
def test_a_text_condition_holding_a_control_character_is_a_400_naming_it(asked, query):
    app, _ = asked
    response = _get(app, f"/things?{query}")
    assert response.status_int == 400, response.body
    name = query.split("=", 1)[0]
    assert f"The query parameter {name} must" in response.json["detail"]
    assert ("control characters" in response.json["detail"]
            or "non-characters" in response.json["detail"])


def test_a_cursor_holding_a_control_character_is_refused(asked):
    """A cursor carries a text sort's value; one holding a control
    character is none the service wrote (whose check a client could make)."""
    from usersvc.listing import Listing, _write_cursor
    app, _ = asked
    context = Listing.read(THINGS, {"sort": ["title"], "limit": ["3"]}).context
    made = _write_cursor(("thing 1", 1), context)
    assert _get(app, f"/things?sort=title&limit=3&cursor={made}").status_int == 200
    for text in ("thing\x01", "thing\t1", "\x7f"):
        forged = _write_cursor((text, 1), context)
        response = _get(app, f"/things?sort=title&limit=3&cursor={forged}")
        assert response.status_int == 400, (text, response.body)
        assert "cursor" in response.json["detail"]


def test_a_refused_date_times_example_works_pasted_into_a_url(asked):
    """The example a 400 gives is written as a URL carries it (``+`` is
    ``%2B``: a bare + in a query is a space), so that pasted it is kept."""
    app, records = asked
    said = _get(app, "/things?at[gt]=yesterday").json["detail"]
    example = said.rstrip(".").rsplit(" ", 1)[1]
    assert example == "2026-11-25T21:57:01%2B01:00"
    answer = _get(app, f"/things?at[gt]={example}")
    assert answer.status_int == 200, answer.json
    assert [t["id"] for t in answer.json] == [r.id for r in records if
                                             _instant(r.at) > _instant("2026-11-25T20:57:01Z")]
    said = _get(app, '/things?code[in]="a"b').json["detail"]
    example = said.rstrip(".").rsplit(" ", 1)[1].strip("()")
    assert _get(app, f"/things?code[in]={example}").status_int == 200


def test_a_range_on_the_pages_own_order_reads_only_the_page_on_memory():
    """The cost rule's first part (docs/api.md, "Asking"): a range on the
    field a page is ordered by is walked from its edge, so the memory store
    looks at the records it returns and no others (``touched``), both ways,
    from a position too; in id order as in a field's."""
    from usersvc import asking
    for storage in opened("memory://", (USER, THINGS)):
        things, make = storage["things"], thing_maker()
        for i in range(3000):
            things.create(**make(f"Thing {i:04d}"))
        ask = lambda name, value: asking.read(THINGS, name, value)  # noqa: E731
        questions = [
            (dict(sort="title", where=(ask("title[gte]", "THING 1500"),)), range(1500, 1510)),
            (dict(sort="title", reverse=True, where=(ask("title[lt]", "thing 1500"),)),
             range(1499, 1489, -1)),
            (dict(sort="title",
                  where=(ask("title[gt]", "thing 1500"), ask("title[lte]", "thing 1504"))),
             range(1501, 1505)),
            (dict(sort="title", after=("thing 2000", 2001),
                  where=(ask("title[gte]", "thing 1500"),)),
             range(2001, 2011)),
            (dict(where=(ask("id[gt]", "2500"),)), range(2500, 2510)),
            (dict(reverse=True, where=(ask("id[lte]", "100"),)), range(99, 89, -1)),
        ]
        records = storage.collections["things"]       # (``touched``: their bulk's own)
        for arguments, expected in questions:
            records.bulk.touched = 0
            page = things.list(limit=10, **arguments)
            assert [r.title for r in page] == [f"Thing {i:04d}" for i in expected], arguments
            assert records.bulk.touched == len(page), arguments


@pytest.fixture
def timed(store_url):
    """``(app, tasks)``: examples/tasks.py's tasks (created, updated), 12 of
    them, some changed after."""
    for storage in opened(store_url, (USER, TASKS)):
        tasks = storage["tasks"]
        made = [tasks.create(title=f"Task {i}", done=False, priority="normal") for i in range(12)]
        for task in made[::4]:
            tasks.update(task.id, done=True)
        yield make_app(storage), tasks.list(limit=100)


def test_created_and_updated_take_ranges_to_the_millisecond(timed):
    app, tasks = timed
    middle = sorted(t.created for t in tasks)[6]
    for query, keeps in [(f"created[gte]={middle}", lambda t: t.created >= middle),
                         (f"created[lt]={middle}", lambda t: t.created < middle),
                         (f"updated[gt]={middle}&done[eq]=true",
                          lambda t: t.updated > middle and t.done)]:
        answer = _get(app, f"/tasks?{quote(query, safe='=&[]')}&limit=100")
        assert answer.status_int == 200, answer.json
        assert [t["id"] for t in answer.json] == [t.id for t in tasks if keeps(t)], query
    refused = _get(app, "/tasks?created[gt]=2026-11-27T10:00:00.0001Z")
    assert refused.status_int == 400 and "created[gt]" in refused.json["detail"]
    assert "milliseconds" in refused.json["detail"]
