"""A library: users and books, served by usersvc.

    python examples/library.py --storage sqlite:///library.db

Books are declared once, here; every store keeps them (tables, indexes,
search and change feed made from the declaration), and the service gives
them /books, /books/{id}, /books/changes, their pages and their part of
/openapi.json. Every option of serve.py works (--help lists them).
"""
import sys

from usersvc import USER, Schema, integer, text
from usersvc.serving import main

BOOKS = Schema("book", "books",
               {"title": text(200), "isbn": text(20), "year": integer(0, 9999)},
               optional=("year",), unique=("isbn",), filters=("isbn",),
               sorts=("title",), words=("title",), prefixes=("isbn",))

if __name__ == "__main__":
    sys.exit(main(collections=(USER, BOOKS)))
