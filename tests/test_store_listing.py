"""docs/api.md, "Listing and searching", at the store: every order, filter
and search, page by page, on every user store (conftest's ``STORES``).

Each store is held to one model written here in plain Python (sort the
users, keep those the filters keep), so every store gives the same users,
in the same order, on the same pages. Walks that meet writes between pages
skip nothing that existed throughout and repeat nothing.
"""
from __future__ import annotations

import itertools

import pytest

from usersvc import USER
from usersvc.fields import fold
from usersvc.storage import keyset
from usersvc.storage.memory.walks import search_terms

User = USER.record
ORDERS = USER.sorts

NAMES = [
    "Ada Lovelace", "ada lovelace", "ADA", "Zoë Zola-Ada", "Émile", "Strasse", "STRASSE",
    "bob", "Bob O'Hara", "李小龍", "x²y", "Grace Hopper", "Ada", "1234 Numbers",
    "Jose\u0301 Ramírez", "नमस्ते दुनिया", "İstanbul", "Zed",
]

SEARCHES = ["ada", "ADA", "a", "lov", "zo", "é", "straß", "bob", "hara", "zz", "ada@",
            "1", "x²", "jose\u0301", "नम", "दु", "i̇s", "\U0010ffff", "\ud7ff", "@"]


def model(users, *, sort="id", reverse=False, email=None, q=None):
    """What every store must answer: the users the filters keep, in order."""
    kept = [u for u in users
            if (email is None or u.email.casefold() == email.casefold())
            and (q is None or any(k.startswith(fold(q)) for k in search_terms(USER, u)))]
    return sorted(kept, key=lambda u: keyset(USER, u, sort), reverse=reverse)


def walk(store, limit, **arguments):
    """Every page from the first, each from the last one's position."""
    pages, after = [], None
    while True:
        page = store.list(limit=limit, after=after, **arguments)
        pages.append(page)
        if len(page) < limit:
            return pages
        after = keyset(store.schema, page[-1], arguments.get("sort", "id"))


@pytest.fixture
def users(store):
    """The names above, with e-mails in mixed case; two deleted, one
    renamed, so the indexes have seen every kind of write."""
    made = [store.create(name=name, email=f"{'U' if i % 3 == 0 else 'u'}{i}.{i % 4}@Example.org")
            for i, name in enumerate(NAMES)]
    store.delete(made[2].id)
    store.delete(made[9].id)
    store.update(made[4].id, name="Émile Zola")
    store.update(made[5].id, email="straße@example.org")
    return [u for u in store.list(limit=1000)]


FILTERS = [{}, {"email": "u1.1@EXAMPLE.org"}, {"email": "nobody@example.org"},
           *({"q": q} for q in SEARCHES), {"q": "ada", "email": "U0.0@example.org"},
           {"q": "zz", "email": "U0.0@example.org"}]


@pytest.mark.parametrize("sort", ORDERS)
@pytest.mark.parametrize("reverse", [False, True], ids=["up", "down"])
def test_every_order_filter_and_search_pages_as_the_model_says(store, users, sort, reverse):
    assert len(users) == len(NAMES) - 2
    for filters in FILTERS:
        expected = model(users, sort=sort, reverse=reverse, **filters)
        assert store.count(**filters) == len(expected), filters
        for limit in (1, 4, 100):
            pages = walk(store, limit, sort=sort, reverse=reverse, **filters)
            assert list(itertools.chain(*pages)) == expected, (filters, limit)
            assert all(len(p) == limit for p in pages[:-1]), (filters, limit)


def test_name_order_is_case_folded_then_by_id(store, users):
    names = [(u.name.casefold(), u.id) for u in store.list(sort="name", limit=1000)]
    assert names == sorted(names)
    twins = [u.id for u in store.list(sort="name", limit=1000)
             if u.name.casefold() == "ada lovelace"]
    assert twins == sorted(twins) and len(twins) == 2


def test_search_words_follow_renames_and_deletes(store):
    ada = store.create(name="Ada Lovelace", email="ada@example.org")
    store.update(ada.id, name="Grace Hopper")
    assert store.list(q="lov") == [] and store.count(q="ada") == 1     # the e-mail still starts so
    assert [u.id for u in store.list(q="hop")] == [ada.id]
    store.update(ada.id, email="grace@example.org")
    assert store.list(q="ada") == []
    store.delete(ada.id)
    assert store.list(q="hop") == [] and store.count(q="g") == 0


def test_a_count_without_filters_counts_everyone(store, users):
    assert store.count() == len(users)


@pytest.mark.parametrize("sort", ORDERS)
@pytest.mark.parametrize("reverse", [False, True], ids=["up", "down"])
def test_a_walk_that_meets_writes_skips_nothing_that_stayed_and_repeats_nothing(
        store, sort, reverse):
    """Between every two pages: two creates, a delete, and a change that
    keeps the user's place in this order (a record whose sort key changes
    mid-walk may be met at either place; docs/decisions.md)."""
    numbers = itertools.count()

    def create():
        n = next(numbers)
        return store.create(name=f"{'Ada' if n % 2 else 'bob'} {n:03}",
                            email=f"w{n:03}@example.org")

    for _ in range(30):
        create()
    initial = {u.id for u in store.list(limit=1000)}
    deleted: set[int] = set()
    seen: list[int] = []
    after = None
    while True:
        page = store.list(limit=4, sort=sort, reverse=reverse, after=after)
        seen += [u.id for u in page]
        if len(page) < 4:
            break
        after = keyset(store.schema, page[-1], sort)
        create(), create()
        victim = max(initial - deleted - set(seen), default=None)
        if victim is not None:
            store.delete(victim)
            deleted.add(victim)
        keep = sorted(initial - deleted)[len(seen) % len(initial - deleted)]
        user = store.get(keep)
        if sort == "email":
            store.update(keep, name=user.name + " x")
        else:
            store.update(keep, email=f"moved{next(numbers)}@example.org")
    assert len(seen) == len(set(seen)), "a user was repeated"
    assert initial - deleted <= set(seen), "a user that stayed was skipped"


def test_positions_past_the_end_and_before_the_start_give_empty_pages(store, users):
    assert store.list(after=10**9) == []
    assert store.list(sort="id", reverse=True, after=0) == []
    assert store.list(sort="name", after=("\U0010ffff", 1)) == []
    assert store.list(sort="email", reverse=True, after=("", 0)) == []


def test_the_memory_store_touches_a_page_not_the_collection():
    """Without timing: the memory store counts the records each call
    touches, and a page or a search touches what it returns, not all."""
    from usersvc.storage.memory.collection import MemoryRecords
    store = MemoryRecords(USER)
    store.restore([User(id=i, name=f"Name {i:05} {'Rare' if i % 1000 == 0 else 'Common'}",
                        email=f"u{i}@example.org", version=1) for i in range(1, 5001)],
                  last_id=5000)
    for arguments in [{}, {"sort": "name"}, {"sort": "name", "after": ("name 02500", 2500)},
                      {"sort": "email", "reverse": True, "after": ("u3000@example.org", 3000)},
                      {"sort": "id", "reverse": True, "after": 4000}]:
        store.bulk.touched = 0
        assert len(store.list(limit=10, **arguments)) == 10
        assert store.bulk.touched == 10, arguments
    store.bulk.touched = 0
    assert [u.id for u in store.list(q="rare", sort="name")] == [1000, 2000, 3000, 4000, 5000]
    assert store.bulk.touched == 5 + 5           # the matches, then the page
    store.bulk.touched = 0
    assert store.count(q="rar") == 5 and store.bulk.touched == 5
    store.bulk.touched = 0
    assert len(store.list(email="U77@example.org")) == 1 and store.bulk.touched == 1 + 1
