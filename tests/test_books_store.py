"""Books (``books.BOOKS``) beside users on every store: what a second
collection asks (an optional field, its own ids and feed, its orders and
searches). The store contract (``store_contract``) runs on users and on
``every_kind.THINGS``, which says all that books say and more
(``test_every_kind_store``)."""
from __future__ import annotations

import pytest
from books import BOOKS
from conftest import opened

from usersvc import USER
from usersvc.storage import Conflict


@pytest.fixture
def library(store_url):
    yield from opened(store_url, (USER, BOOKS))


@pytest.fixture
def books(library):
    return library["books"]


def test_an_optional_field_is_absent_until_given_and_removed_by_none(books):
    book = books.create(title="Dune", isbn="0441013597")
    assert book.year is None
    assert books.update(book.id, year=1965).year == 1965
    assert books.update(book.id, year=None).year is None
    assert books.get(book.id).year is None and books.get(book.id).version == 3


def test_a_required_field_missing_beside_an_optional_one_is_refused(books):
    with pytest.raises(TypeError, match="isbn"):
        books.create(title="Dune", year=1965)
    book = books.create(title="Dune", isbn="0441013597", year=1965)
    with pytest.raises(TypeError, match="isbn"):
        books.update(book.id, isbn=None, year=1966)
    assert books.list() == [book]


def test_a_unique_field_is_unique_ignoring_case_and_names_itself(books):
    books.create(title="Dune", isbn="ISBN-X")
    with pytest.raises(Conflict) as taken:
        books.create(title="Other", isbn="isbn-x")
    assert taken.value.errors == [("/isbn", "is already taken")]
    assert str(taken.value) == "The isbn isbn-x belongs to another book."


def test_books_and_users_in_one_store_keep_their_own_ids_and_feeds(library):
    users, books = library["users"], library["books"]
    assert books.create(title="A", isbn="1").id == 1
    assert users.create(name="Ada", email="ada@example.org").id == 1
    assert books.create(title="B", isbn="2").id == 2
    assert [c.id for c in books.changes()] == [1, 2] and [c.id for c in users.changes()] == [1]
    assert books.position() == 2 and users.position() == 1


def test_books_are_sorted_filtered_and_searched(books):
    for title, isbn in [("Dune Messiah", "b-2"), ("dune", "a-1"), ("Emma", "c-3")]:
        books.create(title=title, isbn=isbn)
    assert [b.title for b in books.list(sort="title")] == ["dune", "Dune Messiah", "Emma"]
    assert [b.isbn for b in books.list(q="DUN")] == ["b-2", "a-1"]
    assert [b.isbn for b in books.list(q="c-")] == ["c-3"]
    assert [b.title for b in books.list(isbn="A-1")] == ["dune"] and books.count(q="mess") == 1
