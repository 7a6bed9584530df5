"""What a filtered page costs beside an unfiltered one, at size (issue 46's
budget: within 1.25x): tasks with a title, done, a level, a due date, a
date closed (optional) and timestamps, on the memory store and a SQLite file, at 100,000 and
1,000,000 records, through the app.

    .venv/bin/python bench/asking.py [N ...] [--rounds R] [--store memory|"SQLite file"]

Questions, each beside the unfiltered page of 100 in the same order:
``?done=false&sort=title`` and ``?level=high&sort=-created`` (filtered
sorts the schema declares, ``filtered_sorts``), ``?due[lt]=...&sort=due``
(a range on the page's own order), ``?sort=-closed`` (an optional sort,
half the tasks closed) beside ``?sort=-due`` (a required one), and a page
of it past the values (the tasks not closed) beside ``?sort=-id``; and
``?done=false&sort=title`` again in a schema that does not declare it
(what ``filtered_sorts`` saves).
Each figure is the best of ``R`` rounds of 100 pages (each round's
pages all different, none answered from a SQLite connection's kept
answers), µs a page (the question not declared: one round of 3), a question's rounds and its
unfiltered page's taken in turns; the best, as ``timeit`` advises, since
what a shared machine adds is never less than nothing. The ratios are
each question over its unfiltered page, measured in one run.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale import next_link, per_request  # noqa: E402

from usersvc import Schema, boolean, choice, date, listing, make_app, text  # noqa: E402
from usersvc.storage import open_store  # noqa: E402


def tasks(indexed: bool) -> Schema:
    return Schema("task", "tasks", {"title": text(100), "done": boolean,
                                    "level": choice("low", "normal", "high"), "due": date,
                                    "closed": date},
                  optional=("closed",), filters=("done", "level"),
                  sorts=("title", "due", "closed"), timestamps=True,
                  filtered_sorts={"done": ("title",), "level": ("created",)} if indexed else None)


QUESTIONS = [("done=false&sort=title", "sort=title"),
             ("level=high&sort=-created", "sort=-created"),
             ("due[lt]=2026-06-01&sort=due", "sort=due"),
             # an optional sort (half the tasks closed), its values' page
             # beside a required sort's, and its page past them beside an id page
             ("sort=-closed", "sort=-due"),
             ("sort=-closed&cursor=", "sort=-id")]
BATCH = 20_000


def fill(store: Any, schema: Schema, n: int) -> None:
    """``n`` tasks: done one in two, a level in turn, due across 2026."""
    for start in range(1, n + 1, BATCH):
        store.restore([schema.record(
            id=i, title=f"Task {i * 7919 % n:07d}", done=i % 2 == 0,
            level=("low", "normal", "high")[i % 3], due=f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}",
            closed=f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}" if i % 2 == 0 else None,
            created=f"2026-01-01T00:00:{i % 60:02d}.{i % 1000:03d}Z",
            updated=f"2026-01-01T00:00:{i % 60:02d}.{i % 1000:03d}Z", version=1)
            for i in range(start, min(n, start + BATCH - 1) + 1)])


def page_of(app: Any, tasks: Any, query: str, count: int) -> float:
    """µs a page of 100 of ``query``, over ``count`` pages each another:
    its second page and those after it, by their next links; ``cursor=``
    at its end: pages past an optional sort's values (the cursors a page
    whose last record has one would carry, as ``listing`` writes them).
    Each page is read once after a write, so that none is a SQLite
    connection's kept answer (``connections.answers``)."""
    if query.endswith("&cursor="):
        sort = query.split("&")[0].split("=")[1]
        context = json.dumps(["tasks", sort, [], None]).encode()
        targets = [f"/tasks?{query}{listing._write_cursor([None, 10**9 - 100 * k], context)}"
                   "&limit=100" for k in range(count)]
    else:
        targets = [f"/tasks?{query}&limit=100"]
        while len(targets) <= count:
            targets.append(next_link(app, targets[-1]).replace("/users?", "/tasks?"))
        targets = targets[1:]
    tasks.update(1, title=tasks.get(1).title)      # (a commit: every kept answer forgotten)
    return per_request(app, [("GET", target, b"") for target in targets])


def run(sizes: list[int], rounds: int, stores: list[str]) -> None:
    for kind in stores:
        for n in sizes:
            for indexed in (True, False):
                with tempfile.TemporaryDirectory() as tmp:
                    schema = tasks(indexed)
                    storage = open_store("memory://" if kind == "memory"
                                         else f"sqlite:///{tmp}/t.db", (schema,))
                    began = time.perf_counter()
                    fill(storage["tasks"], schema, n)
                    filled = time.perf_counter() - began
                    app = make_app(storage)
                    asked = QUESTIONS if indexed else QUESTIONS[:1]
                    figures = {q: [] for pair in asked for q in pair}
                    for q in figures:       # (warm: the first pages after a fill read the disk)
                        page_of(app, storage["tasks"], q, 20 if indexed else 1)
                    for _ in range(rounds if indexed else 1):
                        for q in figures:   # (not declared: a few, each reads half of them)
                            figures[q].append(
                                page_of(app, storage["tasks"], q, 100 if indexed else 3))
                    storage.close()
                said = "declared" if indexed else "not declared"
                print(f"{kind}, {n:,} tasks (filled in {filled:.0f} s), filtered sorts {said}:")
                for question, plain in asked:
                    a, b = min(figures[question]), min(figures[plain])
                    print(f"  ?{question:32} {a:9.1f} µs   ?{plain:14} {b:7.1f} µs   "
                          f"ratio {a / b:6.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[100_000, 1_000_000])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--store", action="append", choices=("memory", "SQLite file"),
                        help="only this store (again for more; default: both)")
    arguments = parser.parse_args()
    run(arguments.sizes, arguments.rounds, arguments.store or ["memory", "SQLite file"])
