"""A second collection, as an embedding app declares one: books.

    app = make_app("sqlite:///library.db", collections=(USER, BOOKS))

Declared once: every store keeps its records (``test_books_store``), with
the year optional, the ISBN unique, the
title searched by its words and the ISBN by its start.
"""
from __future__ import annotations

from usersvc import Schema, integer, text

BOOKS = Schema("book", "books",
               {"title": text(200), "isbn": text(20), "year": integer(0, 9999)},
               optional=("year",), unique=("isbn",), filters=("isbn",),
               sorts=("title",), words=("title",), prefixes=("isbn",))
