"""A second collection, as an embedding app would add one: books.

    app = make_app("memory://")
    app.add_collection(BOOK, MemoryBookStore())     # /books and /books/{id}

The schema says what a book is; the store keeps the promises every store
keeps (``store_contract``, run on it by ``test_books_store``): ids that
increase and are never reused, a new version on every change, and
preconditions checked in the same locked step as the write.
"""
from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, replace

from sortedcontainers import SortedDict

from usersvc.storage import NotFound, Precondition, StaleVersion, checked_id
from usersvc.validation import Schema, text

BOOK = Schema("book", "books", {"title": text(300)})


@dataclass(frozen=True)
class Book:
    id: int
    title: str
    version: int


class BookNotFound(NotFound):
    def __init__(self, book_id: int):
        super().__init__(f"There is no book with id {book_id}.")


class MemoryBookStore:
    """Books in a sorted dict, under one lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._books: SortedDict = SortedDict()      # id -> Book, in id order
        self._ids = itertools.count(1)              # never goes back: ids are not reused

    def get(self, book_id: int) -> Book:
        with self._lock:
            return self._get(book_id)

    def list(self, *, after: int = 0, limit: int = 100) -> list[Book]:
        with self._lock:
            ids = self._books.irange(minimum=after, inclusive=(False, True))
            return [self._books[i] for i in itertools.islice(ids, limit)]

    def count(self) -> int:
        with self._lock:
            return len(self._books)

    def create(self, *, title: str) -> Book:
        with self._lock:
            book = Book(next(self._ids), title, 1)
            self._books[book.id] = book
            return book

    def update(self, book_id: int, *, title: str | None = None,
               precondition: Precondition | None = None) -> Book:
        with self._lock:
            book = self._checked(book_id, precondition)
            book = self._books[book_id] = replace(
                book, title=book.title if title is None else title, version=book.version + 1)
            return book

    def delete(self, book_id: int, *, precondition: Precondition | None = None) -> None:
        with self._lock:
            self._checked(book_id, precondition)
            del self._books[book_id]

    def close(self) -> None:
        pass

    def _get(self, book_id: int) -> Book:
        try:
            return self._books[checked_id(book_id)]
        except (KeyError, NotFound):
            raise BookNotFound(book_id) from None

    def _checked(self, book_id: int, precondition: Precondition | None) -> Book:
        book = self._get(book_id)
        if precondition is not None and not precondition.allows(book.version):
            raise StaleVersion(book_id)
        return book
