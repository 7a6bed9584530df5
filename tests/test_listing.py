"""docs/api.md, "Listing and searching: GET /users", over HTTP on every
store: sort, the cursor and its checks, q, the filters together, strict
parameters, and Prefer: count=exact.

What each store answers for every combination is held to one model in
``test_store_listing``; this module holds the HTTP layer to the contract:
the parameters it reads, the links it writes, the 400s it gives.
"""
from __future__ import annotations

import base64
from urllib.parse import parse_qs, quote, urlsplit

import pytest
from conftest import Client, problem
from helpers import link_to

from usersvc import make_app

pytestmark = pytest.mark.core       # runs on the plain core too (conftest.SERVED)

USERS = [("bob", "bob0@example.org"), ("Ada Lovelace", "ada1@Example.org"),
         ("Émile Zola", "ez2@example.org"), ("ada king", "ada3@example.org"),
         ("Zed", "zed4@example.org"), ("Cy Ada-Twist", "cy5@example.org"),
         ("Dee", "dee6@example.org")]
NAMES = [name for name, _ in USERS]


@pytest.fixture
def users(client):
    return [client.create(name=name, email=email) for name, email in USERS]


def walk(client, path, headers=None):
    """Every page from ``path`` on, following rel="next"; and the links."""
    pages, links = [], []
    while path:
        response = client.get(path, headers=headers)
        assert response.status_code == 200, response.text
        pages.append(response.json)
        url = link_to(response.headers)
        path = None
        if url:
            links.append(url)
            path = url.removeprefix("http://localhost")
    return pages, links


def names(pages):
    return [u["name"] for page in pages for u in page]


@pytest.mark.parametrize("sort, expected", [
    ("name", ["Ada King", "Ada Lovelace", "bob", "Cy Ada-Twist", "Dee", "Zed", "Émile Zola"]),
    ("-name", ["Émile Zola", "Zed", "Dee", "Cy Ada-Twist", "bob", "Ada Lovelace", "Ada King"]),
    ("email", ["Ada Lovelace", "Ada King", "bob", "Cy Ada-Twist", "Dee", "Émile Zola", "Zed"]),
    ("id", [*NAMES[:3], "Ada King", *NAMES[4:]]),
    ("-id", [*NAMES[:3], "Ada King", *NAMES[4:]][::-1]),
])
def test_each_order_walks_page_by_page_to_the_end(client, users, sort, expected):
    client.put("/users/4", json_body={"name": "Ada King", "email": "ada3@example.org"})
    pages, links = walk(client, f"/users?sort={sort}&limit=2")
    assert names(pages) == expected
    assert [len(p) for p in pages] == [2, 2, 2, 1]
    for url in links:
        query = parse_qs(urlsplit(url).query)
        assert query["sort"] == [sort] and query["limit"] == ["2"]
        # id order goes on by id; the others by an opaque cursor.
        assert ("after" in query) == (sort in ("id", "-id")) != ("cursor" in query)


def test_search_finds_word_prefixes_of_names_and_prefixes_of_emails(client, users):
    assert names(walk(client, "/users?q=ADA")[0]) == ["Ada Lovelace", "ada king", "Cy Ada-Twist"]
    assert names(walk(client, "/users?q=twi")[0]) == ["Cy Ada-Twist"]
    assert names(walk(client, "/users?q=%C3%89MI")[0]) == ["Émile Zola"]
    assert names(walk(client, "/users?q=emile")[0]) == ["Émile Zola"]  # folded: é is e
    assert names(walk(client, "/users?q=ez2%40")[0]) == ["Émile Zola"]  # the e-mail's start
    assert names(walk(client, "/users?q=example")[0]) == []        # ... only its start
    assert names(walk(client, "/users?q=ovelace")[0]) == []        # prefixes, not substrings


#: (a name, and what q finds it by: every store folds alike, docs/api.md)
FOLDED = [("Søren Kierkegaard", ["soren", "SØR", "søren"]),
          ("Łukasz Żak", ["lukasz", "zak", "ŁUK"]),
          ("Đorđe Balašević", ["dorde", "balasev"]), ("Æsa Œuvre", ["aesa", "oeuv", "ÆS"]),
          ("Straße", ["strasse", "STRASS", "straß"]), ("ﬁne Ⅳ", ["fine", "iv"]),
          ("Þóra Ðurić", ["thora", "duric"]), ("naïve café", ["naive", "CAFÉ", "cafe"])]


def test_search_folds_accents_marks_and_the_letters_nfkd_keeps(client):
    for i, (name, _) in enumerate(FOLDED):
        assert client.post("/users", json_body={"name": name, "email": f"f{i}@example.org"}
                           ).status_code == 201
    assert client.post("/users", json_body={"name": "Hans Ørsted", "email": "Ore@Example.org"}
                       ).status_code == 201
    for name, asked in FOLDED:
        for q in asked:
            assert names(walk(client, f"/users?q={quote(q)}")[0]) == [name], q
    # An e-mail's start, folded too: q is folded as the terms are.
    assert names(walk(client, "/users?q=" + quote("ØRE@EX"))[0]) == ["Hans Ørsted"]
    assert names(walk(client, "/users?q=" + quote("ørs"))[0]) == ["Hans Ørsted"]


def test_filters_combine_with_each_other_with_orders_and_with_paging(client, users):
    pages, links = walk(client, "/users?q=ada&sort=-name&limit=1")
    assert names(pages) == ["Cy Ada-Twist", "Ada Lovelace", "ada king"]
    assert all(parse_qs(urlsplit(url).query)["q"] == ["ada"] for url in links)
    assert names(walk(client, "/users?q=ada&email=ADA1%40example.ORG")[0]) == ["Ada Lovelace"]
    assert names(walk(client, "/users?q=bob&email=ada1%40example.org")[0]) == []


def test_a_cursor_is_refused_when_altered_or_used_with_another_order_or_filters(client, users):
    url = link_to(client.get("/users?sort=name&q=a&limit=1").headers).removeprefix("http://localhost")
    cursor = parse_qs(urlsplit(url).query)["cursor"][0]
    assert client.get(url).status_code == 200
    raw = bytearray(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    for i in range(len(raw)):                       # any one byte changed
        changed = raw.copy()
        changed[i] ^= 1
        token = base64.urlsafe_b64encode(bytes(changed)).rstrip(b"=").decode()
        problem(client.get(f"/users?sort=name&q=a&limit=1&cursor={token}"), 400)
    for other in ["sort=-name&q=a", "sort=email&q=a", "sort=name&q=ad", "sort=name",
                  "sort=name&q=a&email=ada1%40example.org"]:
        body = problem(client.get(f"/users?{other}&cursor={cursor}"), 400)
        assert "cursor" in body["detail"]
    for junk in ["", "x", "!!!", "a" * 2000, cursor[:-1], cursor + "A"]:
        problem(client.get(f"/users?sort=name&q=a&cursor={junk}"), 400)


def test_a_cursor_needs_no_secret_any_app_on_the_store_reads_it(tmp_path):
    first, second = (Client(make_app(f"sqlite:///{tmp_path}/u.db")) for _ in range(2))
    for name in ("Cy", "Ada", "Bo"):
        first.create(name=name, email=f"{name}@example.org")
    url = link_to(first.get("/users?sort=name&limit=1").headers).removeprefix("http://localhost")
    assert [u["name"] for u in second.get(url).json] == ["Bo"]
    first.app.close(), second.app.close()


@pytest.mark.parametrize("query, says", [
    ("nmae=Ada", "Unknown query parameter: nmae. /users takes: limit, sort, after, cursor, "
                 "email, q, fields, id[gt|gte|lt|lte], name[gt|gte|lt|lte], email[eq|ne|in]."),
    ("sort=", "sort must be one of id, name, email"),
    ("sort=age", "sort must be one of id, name, email"),
    ("sort=--name", "sort must be one of"),
    ("sort=Name", "sort must be one of"),
    ("sort=name&sort=id", "sort is given more than once"),
    ("after=", "after must be a whole number"),
    ("after=-1", "after must be a whole number"),
    ("after=1&sort=name", "after is for id order"),
    ("after=1&sort=-email", "after is for id order"),
    ("limit=0", "limit must be a whole number from 1 to 1000"),
    ("limit=1001", "limit must be a whole number from 1 to 1000"),
    ("limit=", "limit must be a whole number"),
    ("q=", "q must be 1 to 100 characters"),
    ("q=" + "a" * 101, "q must be 1 to 100 characters"),
    ("q=a&q=b", "q is given more than once"),
    ("email=a%40b.c&email=a%40b.c", "email is given more than once"),
])
def test_bad_parameters_are_400_saying_which(client, query, says):
    assert says in problem(client.get(f"/users?{query}"), 400)["detail"]


def test_a_cursor_in_id_order_is_400_even_one_forged_with_the_right_check(client):
    """No secret makes a cursor: anyone can write one whose check holds. It
    still only starts a page, and only in the orders that take one."""
    import hashlib
    import json
    payload = json.dumps(["x", 1]).encode()
    forged = base64.urlsafe_b64encode(hashlib.sha256(b"\0" + payload).digest()[:12] + payload)
    body = problem(client.get(f"/users?cursor={forged.rstrip(b'=').decode()}"), 400)
    assert "cursor is for the other orders" in body["detail"]
    # A forged cursor in name order starts a page where it says, or is a 400.
    context = json.dumps(["users", "name", [], None]).encode()
    for key, status in [("b", 200), ("\ud800", 400)]:
        payload = json.dumps([key, 1]).encode()
        token = base64.urlsafe_b64encode(hashlib.sha256(context + b"\0" + payload).digest()[:12]
                                         + payload).rstrip(b"=").decode()
        assert client.get(f"/users?sort=name&cursor={token}").status_code == status, key


def test_after_with_cursor_is_400(client, users):
    link = link_to(client.get("/users?sort=name&limit=1").headers)
    cursor = parse_qs(urlsplit(link).query)["cursor"][0]
    answer = client.get(f"/users?sort=name&after=1&cursor={cursor}")
    assert "not both" in problem(answer, 400)["detail"]


def test_a_search_of_100_characters_is_fine(client, users):
    assert client.get("/users?q=" + "a" * 100).json == []


def test_after_in_reverse_id_order_gives_smaller_ids(client, users):
    assert [u["id"] for u in client.get("/users?sort=-id&after=4").json] == [3, 2, 1]


@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_prefer_count_exact_counts_what_the_filters_keep(client, users, method):
    response = client.request(method, "/users?q=ada&limit=1", headers={"Prefer": "count=exact"})
    assert response.headers["Preference-Applied"] == "count=exact"
    assert response.headers["X-Total-Count"] == "3"
    assert response.headers["Vary"] == "Accept, Prefer"
    response = client.request(method, "/users",
                              headers={"Prefer": 'respond-async, COUNT="exact"; x=1'})
    assert response.headers["X-Total-Count"] == str(len(NAMES))


def test_without_prefer_nothing_is_counted(client, users):
    for prefer in (None, "count=planned", "count", "return=minimal"):
        response = client.get("/users", headers={"Prefer": prefer} if prefer else {})
        assert "X-Total-Count" not in response.headers
        assert "Preference-Applied" not in response.headers


def test_a_304_carries_the_count_a_cache_should_update(client, users):
    first = client.get("/users?limit=2", headers={"Prefer": "count=exact"})
    client.create(name="New", email="new@example.org")       # past the page: same bytes
    again = client.get("/users?limit=2", headers={"Prefer": "count=exact",
                                                   "If-None-Match": first.headers["ETag"]})
    assert again.status_code == 304
    assert again.headers["X-Total-Count"] == str(len(NAMES) + 1)
    assert again.headers["Vary"] == "Accept, Prefer"


def test_a_walk_under_writes_in_name_order_skips_and_repeats_nothing(client, users):
    seen, path, n = [], "/users?sort=name&limit=2", 0
    while path:
        response = client.get(path)
        seen += [u["id"] for u in response.json]
        client.create(name=f"Aaa {n}", email=f"aaa{n}@example.org")     # before the position
        client.create(name=f"Zzz {n}", email=f"zzz{n}@example.org")     # after it
        n += 1
        link = link_to(response.headers)
        path = link and link.removeprefix("http://localhost")
    assert len(seen) == len(set(seen))
    assert {u["id"] for u in users} <= set(seen)


def test_a_collection_gets_the_parameters_its_schema_declares():
    """The same machinery for any collection: what a schema declares is
    what its list takes; the rest is refused."""
    from usersvc import USER
    from usersvc.listing import Listing
    from usersvc.problems import Problem
    from usersvc.schema import Schema, text

    notes = Schema("note", "notes", {"text": text(100)})       # nothing but pages by id
    app = make_app("memory://", collections=(USER, notes))
    client = Client(app)
    client.post("/notes", json_body={"text": "Dune"})
    assert [b["text"] for b in client.get("/notes?limit=1").json] == ["Dune"]
    body = problem(client.get("/notes?sort=text"), 400)
    assert body["detail"] == ("Unknown query parameter: sort. "
                              "/notes takes: limit, after, fields, id[gt|gte|lt|lte].")

    films = Schema("film", "films", {"title": text(100), "year": text(4)},
                   filters=("year",), sorts=("title",), words=("title",))
    listing = Listing.read(films, {"sort": ["-title"], "year": ["1977"], "q": ["star"]})
    assert listing.store_arguments() == {"limit": 100, "year": "1977", "sort": "title",
                                         "reverse": True, "q": "star"}
    problem_detail = pytest.raises(Problem, Listing.read, films, {"sort": ["year"]}).value.detail
    assert problem_detail.startswith("The query parameter sort must be one of id, title")
