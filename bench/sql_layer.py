"""Which SQL layer: the statements usersvc generates (``storage/sql.py``,
strings on the driver), or SQLAlchemy Core with its compiled cache?

    .venv/bin/pip install sqlalchemy     # for this script only: not a dependency
    .venv/bin/python bench/sql_layer.py [--rounds 7]

Both ask the same SQLite file (made by ``open_store``: 1,000 users, its
tables, indexes and triggers) the same questions, on one connection each,
with the same settings (WAL, ``synchronous=OFF``, so that what is timed is
the layer and not the disk): a GET by id, an INSERT returning its id, an
UPDATE returning the record, and a page of 100 by id. Each write is its own
committed transaction. Both build the same record (``USER.record``) from
each row. Rounds alternate which layer goes first; the figures are medians,
in µs per operation, and the difference is SQLAlchemy's cost on top.
"""
from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import sqlalchemy as sa  # noqa: E402

from usersvc import USER  # noqa: E402
from usersvc.storage import open_store  # noqa: E402
from usersvc.storage.sql import SQLITE, Table  # noqa: E402

COUNT = 2000


def made(path: str) -> None:
    store = open_store(f"sqlite:///{path}", (USER,))
    store["users"].restore([USER.record(id=i, name=f"User {i}", email=f"user{i}@example.org",
                                        version=1) for i in range(1, 1001)])
    store.close()


class Strings:
    """What SQLRecords does: a generated statement, the driver, the row."""

    def __init__(self, path: str) -> None:
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA synchronous=OFF")
        self.table = Table(USER, SQLITE)
        self.make = USER.record._make

    def get(self, i: int) -> object:
        return next(map(self.make, self.db.execute(self.table.select_one, (1 + i % 1000,))))

    def insert(self, i: int) -> object:
        values = (f"New {i}", f"strings{i}@example.org")
        self.db.execute("BEGIN IMMEDIATE")
        (record_id,), = self.db.execute(self.table.insert, self.table.row(values)).fetchall()
        self.db.execute("COMMIT")
        return self.make((record_id, *values, 1))

    def update(self, i: int) -> object:
        query, params = self.table.update({"name": f"Put {i}"}, 2, None)
        self.db.execute("BEGIN IMMEDIATE")
        row, = self.db.execute(query, params).fetchall()
        self.db.execute("COMMIT")
        return self.make(row)

    def page(self, i: int) -> list:
        return list(map(self.make, self.db.execute(
            *self.table.pages.page(limit=100, after=i % 900))))


class Core:
    """The same statements built with SQLAlchemy Core, compiled once and
    cached by the engine, on a connection of its own."""

    def __init__(self, path: str) -> None:
        self.engine = sa.create_engine(f"sqlite:///{path}")
        self.conn = self.engine.connect()
        self.conn.exec_driver_sql("PRAGMA synchronous=OFF")
        users = sa.Table("users", sa.MetaData(), autoload_with=self.engine)
        c = users.c
        self.columns = [c.id, c.name, c.email, c.version]
        self.select_one = sa.select(*self.columns).where(c.id == sa.bindparam("id"))
        self.insert_one = sa.insert(users).returning(c.id)
        self.update_one = (sa.update(users).where(c.id == sa.bindparam("rid"))
                           .values(name=sa.bindparam("name"), name__key=sa.bindparam("key"),
                                   name__words=sa.bindparam("words"), version=c.version + 1)
                           .returning(*self.columns))
        self.page_of = (sa.select(*self.columns).where(c.id > sa.bindparam("after"))
                        .order_by(c.id).limit(sa.bindparam("limit")))
        self.make = USER.record._make
        self.table = Table(USER, SQLITE)        # the key and words columns' values

    def get(self, i: int) -> object:
        return self.make(self.conn.execute(self.select_one, {"id": 1 + i % 1000}).one())

    def insert(self, i: int) -> object:
        values = (f"New {i}", f"core{i}@example.org")
        row = self.table.row_of(dict(zip(USER.fields, values, strict=True)))
        record_id = self.conn.execute(self.insert_one, {**row, "version": 1}).scalar_one()
        self.conn.commit()
        return self.make((record_id, *values, 1))

    def update(self, i: int) -> object:
        row = self.table.row_of({"name": f"Put {i}"})
        found = self.conn.execute(self.update_one, {
            "rid": 2, "name": row["name"], "key": row["name__key"],
            "words": row["name__words"]}).one()
        self.conn.commit()
        return self.make(found)

    def page(self, i: int) -> list:
        return list(map(self.make, self.conn.execute(self.page_of,
                                                     {"after": i % 900, "limit": 100})))


def timed(action, offset: int) -> float:
    start = time.perf_counter()
    for i in range(offset, offset + COUNT):
        action(i)
    return (time.perf_counter() - start) / COUNT * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    rounds = parser.parse_args().rounds
    with tempfile.TemporaryDirectory() as tmp:
        path = f"{tmp}/users.db"
        made(path)
        layers = {"strings": Strings(path), "SQLAlchemy Core": Core(path)}
        operations = ["get", "insert", "update", "page"]
        for layer in layers.values():       # each answers as the other does
            assert layer.get(2) == USER.record(id=3, name="User 3", email="user3@example.org",
                                               version=1)
            assert len(layer.page(0)) == 100
        samples = {op: {name: [] for name in layers} for op in operations}
        offset = 1
        for round_no in range(rounds):
            order = list(layers.items())[::1 if round_no % 2 == 0 else -1]
            for op in operations:
                for name, layer in order:
                    samples[op][name].append(timed(getattr(layer, op), offset))
                    offset += COUNT
        print(f"SQLAlchemy {sa.__version__}, SQLite {sqlite3.sqlite_version}, "
              f"{rounds} rounds of {COUNT}, medians in µs per operation")
        print("| operation | strings | SQLAlchemy Core | difference | ratio |")
        print("|---|---:|---:|---:|---:|")
        for op in operations:
            s, c = (statistics.median(samples[op][n]) for n in layers)
            print(f"| {op} | {s:.1f} | {c:.1f} | +{c - s:.1f} | {c / s:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
