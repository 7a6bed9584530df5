"""The fast paths: what is swapped in for a plain definition when an app is
built with ``speedups`` on (the default), and the one place that lists them.

Read the plain definitions to learn how a request is served; they are the
reference, and each fast path here is held to the one it replaces by
``tests/test_fast_paths.py`` (on values hypothesis makes, where inputs are
open). This is Falcon's way with its compiled ``cyutil``: the plain Python
is the definition, the fast code sits beside it and is chosen when the
service starts. ``make_app(..., speedups=False)`` (``serve.py --speedups
off``, ``USERSVC_SPEEDUPS=off``) serves with every plain definition.

A fast path is swapped in where the plain one lives (a module's function,
a class's method), so the code that calls it is the same either way, and
it is the process's, as a compiled module is: the fast paths are in place
for every app of a process while the last app built asked for them. Apps
built either way answer alike, byte for byte; only their speed differs
(``bench/instructions.py`` counts both; docs/decisions.md, "Plain first,
fast beside it").

Swapping the fast paths in imports every module they replace something
in (``asking`` and ``kinds.dates`` too, which the plain build loads only
when a request or a declaration first needs them), but a feature's: a
feature's fast path is swapped in when an app plugs the feature in (its
module loaded), and an app without it loads none; swapping them out
leaves a module never imported as it is, to be loaded as defined. What a
module imports by name it keeps, so a definition with a fast path is
called through its module elsewhere (``fields.fold(q)``, ``dates.now()``).
"""
from __future__ import annotations

import importlib
import sys
import threading
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Speedup:
    """One fast path: the plain definition it replaces (``module:name`` or
    ``module:Class.name``), where the fast one is (``module:name``), and
    what it saves, as measured (the bench that measures it)."""

    plain: str
    fast: str
    saves: str


#: Every fast path. What each saves was measured by ``bench/fastpaths.py``
#: (µs a call, fast against plain, one run on 2026-11-29) where it says so.
SPEEDUPS = (
    Speedup("usersvc.representation.json_format:JSONFormat.decode", "usersvc.fast.json:decode",
            "a user's body read in 0.9 µs, not 1.3: json's scanner without the Python "
            "layers of JSONDecoder.decode"),
    Speedup("usersvc.representation.json_format:JSONFormat.render_record",
            "usersvc.fast.json:render_record",
            "a user written in 0.9 µs, not 2.3: member by member from the values' types, "
            "not JSONEncoder.encode of a dict"),
    Speedup("usersvc.representation.json_format:JSONFormat.render", "usersvc.fast.json:render",
            "a record's fields as a dict written as render_record writes them"),
    Speedup("usersvc.representation:best_offer",
            "usersvc.fast.headers:best_offer",
            "Accept read once for each text: WebOb takes 16 µs for application/json and 23 "
            "for a browser's; the kept answer 0.05"),
    Speedup("usersvc.representation:body_format",
            "usersvc.fast.headers:body_format", "Content-Type read once for each text"),
    Speedup("usersvc.request:status_line", "usersvc.fast.headers:status_line",
            "the status line made once for each status"),
    Speedup("usersvc.request:Request.header", "usersvc.fast.headers:header",
            "a header's environ key made once for each name (a write hook's, on every POST)"),
    Speedup("usersvc.request:base_url_of", "usersvc.fast.headers:base_url_of",
            "the base URL made once for the few hosts a server is sent"),
    Speedup("usersvc.app:good_host", "usersvc.fast.headers:good_host",
            "the Host header checked once for each host"),
    Speedup("usersvc.request:Request.parameters", "usersvc.fast.queries:parameters",
            "a query with nothing to decode (limit=100&after=7) split in 1.1 µs, not 1.3"),
    Speedup("usersvc.routing:Route.match", "usersvc.fast.routes:match",
            "/users/7's id read, the first two segments not compared again: 1,240 "
            "instructions of a GET of one user (3%)"),
    Speedup("usersvc.listing:_sparse", "usersvc.fast.imports:sparse",
            "sparse, imported by the first request with fields=, found at once after: "
            "an import statement in the function cost such a request 3,000 to 6,000 "
            "instructions each time"),
    Speedup("usersvc.listing:quoted", "usersvc.fast.queries:quoted",
            "a text with nothing to escape written as it is, the others kept"),
    Speedup("usersvc.storage.memory.collection:Indexes.move",
            "usersvc.fast.memory:indexes_move",
            "5.3% of a user's POST: a new record's entries without move's comparisons "
            "with a record that is not there; 5% of a PUT: an update's, each index "
            "looked at only where its value changed"),
    Speedup("usersvc.storage.memory.walks:Sorted.DEFAULT_LOAD_FACTOR",
            "usersvc.fast.memory:LOAD_FACTOR",
            "1% of a user's POST over 1,000 users: an entry put in the middle of an index "
            "moves half as many"),
    Speedup("usersvc.storage.memory.walks:Sorted.add", "usersvc.fast.memory:sorted_add",
            "1.8% of a user's POST, 2.6% of a task's: SortedList.add's steps in one method, "
            "an entry above every other appended (issue 47's)"),
    Speedup("usersvc.storage.memory.bulk:MemoryBulk.list", "usersvc.fast.memory:bulk_list",
            "4.9% of a page of 20: a page without conditions walked straight from its order"),
    Speedup("usersvc.storage.memory.collection:MemoryRecords.get",
            "usersvc.fast.memory:records_get",
            "about 420 instructions of a GET of one user (0.9%): the record read without "
            "a call to _checked"),
    Speedup("usersvc.storage.memory.collection:MemoryRecords.position_and_list",
            "usersvc.fast.memory:records_position_and_list",
            "about 270 instructions of a page of 20 (0.1%): the feed's position read "
            "without a call to the bulk's position"),
    Speedup("usersvc.storage.memory.store:MemoryStorage.atomically",
            "usersvc.fast.memory:atomically",
            "a step with nothing to undo takes its locks, found once, without an ExitStack "
            "(a task's POST, a keyed POST)"),
    Speedup("usersvc.storage.sqlite.connections:Connections.commit",
            "usersvc.fast.sqlite:commit",
            "SQLite's writes made by one writer thread, in groups sharing one sync to disk "
            "(bench/group_commit.py: with 8 writers, several times the writes a second)"),
    Speedup("usersvc.storage.sqlite.store:SQLiteStorage.atomically",
            "usersvc.fast.sqlite:atomically",
            "a step as one write of the writer's groups, its error handed back"),
    Speedup("usersvc.storage.sqlite.connections:Connections.read", "usersvc.fast.sqlite:read",
            "a read answered again while nothing is committed: one PRAGMA data_version "
            "in place of a SELECT"),
    Speedup("usersvc.storage.sql.collection:Table.row", "usersvc.fast.sql:row",
            "a write's columns from the values' places, without row_of's dicts "
            "(a third of its work)"),
    Speedup("usersvc.storage.sql.collection:Table.terms_value", "usersvc.fast.sql:terms_value",
            "SQLite's words column written without the JSON encoder (a tenth of its work)"),
    Speedup("usersvc.storage.sql.collection:SQLRecords.bound", "usersvc.fast.sql:bound",
            "a step on the last one's connection given the same records: 1,500 "
            "instructions a step"),
    Speedup("usersvc.storage.sql.bulk:SQLBulk._page", "usersvc.fast.sqlite:page",
            "a SQLite page built from records kept by version: only those not built at "
            "their version are read whole"),
    Speedup("usersvc.listing:known_parameters", "usersvc.fast.asking:known_parameters",
            "a list's parameters made once for each schema: 0.1 µs a page, not 0.6"),
    Speedup("usersvc.listing:_asking", "usersvc.fast.asking:_asking",
            "asking found at once (500 instructions), not by an import statement (3,000 "
            "to 6,000) on each page with a filter or a condition"),
    Speedup("usersvc.asking:read", "usersvc.fast.asking:read",
            "a condition read once for each text: 0.1 µs, not 3.6 (email[ne]=a@b.org)"),
    Speedup("usersvc.fields:fold", "usersvc.fast.search:fold",
            "ASCII text folded by str.lower: 0.2 µs an address, not 4 through Unicode's "
            "decompositions"),
    Speedup("usersvc.fields:words", "usersvc.fast.search:words",
            "ASCII text split into words by a table: 0.9 µs a name, not 6.5"),
    Speedup("usersvc.kinds.dates:_offset", "usersvc.fast.dates:_offset",
            "a date-time's offset read once for each offset: 0.1 µs, not 2.9"),
    Speedup("usersvc.kinds.dates:now", "usersvc.fast.dates:now",
            "a stamp's second written once a second: 0.5 µs a write, not 2.8"),
    Speedup("usersvc.schema:Schema.values", "usersvc.fast.schema:values",
            "a write that gives every field read in one pass: 60 of a user's POST's "
            "1,950 Python operations (the plain one checks names, then reads)"),
    Speedup("usersvc.features.idempotency:KeyedWrite.__call__",
            "usersvc.fast.idempotency:keyed_write",
            "a keyed write on memory made with no step (4,500 instructions, 2% of a "
            "keyed POST), elsewhere on the step's records with no call between"),
)

#: A feature's module is never imported to swap in its fast path: it is
#: swapped in when an app that plugs the feature in is built (``build_app``
#: installs again once its features are plugged in).
_FEATURES = "usersvc.features."


_lock = threading.RLock()      # (a fast module asks for plain definitions as install imports it)
_plain: dict[str, Any] = {}         # each plain definition, kept when first swapped out
_on: bool | None = None             # what is in place: None, as imported (plain)


def _owner(where: str) -> tuple[Any, str]:
    """The module or class that holds ``module:name`` (``module:Class.name``),
    and the name."""
    module_name, _, path = where.partition(":")
    owner: Any = importlib.import_module(module_name)
    *classes, name = path.split(".")
    for cls in classes:
        owner = getattr(owner, cls)
    return owner, name


def plain(where: str) -> Any:
    """The plain definition at ``where`` (``Speedup.plain``), whatever is in
    place now: the reference a fast path is held to, or builds on."""
    with _lock:
        return _kept(where)


def _kept(where: str) -> Any:
    if where not in _plain:
        owner, name = _owner(where)
        _plain[where] = owner.__dict__[name]     # (as defined: a method is a function)
    return _plain[where]


def fast(speedup: Speedup) -> Any:
    """The fast definition of ``speedup``."""
    module_name, _, name = speedup.fast.partition(":")
    return getattr(importlib.import_module(module_name), name)


def install(on: bool) -> None:
    """Put every fast path in place (``on``) or every plain definition: what
    ``build_app`` does with the app's ``speedups`` setting."""
    global _on
    with _lock:
        for speedup in SPEEDUPS:
            module = speedup.plain.partition(":")[0]
            if module not in sys.modules and (not on or module.startswith(_FEATURES)):
                continue    # (never imported, never swapped: loaded as defined, when needed)
            original = _kept(speedup.plain)
            owner, name = _owner(speedup.plain)
            setattr(owner, name, fast(speedup) if on else original)
        _on = on


def installed() -> bool:
    """Whether the fast paths are in place."""
    return bool(_on)


__all__ = ["SPEEDUPS", "Speedup", "fast", "install", "installed", "plain"]
