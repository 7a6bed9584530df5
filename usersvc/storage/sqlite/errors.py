"""What a SQLite error means to usersvc, asked only when one is raised:
busy (another writer held the lock past the busy timeout: try again), a
lasting cause outside the store (a full disk, an I/O error, a read-only or
unopenable file: ``WritesFailing``, said once to the store's
``WriteHealth``), or a fault of usersvc's own (``None``: a 500); and
a savepoint, and how a failed one is undone (``savepoint``,
``undo_savepoint``; a transaction's ROLLBACK is ``connections.roll_back``)."""
from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

from ..errors import StoreUnavailable, WriteHealth

T = TypeVar("T")
P = ParamSpec("P")


#: SQLite's primary result codes for a cause outside the store that lasts
#: until it is put right, and what to tell a client (the message, for the
#: Python before 3.11 whose errors carry no code).
FAILING = {13: ("the disk is full", "database or disk is full"),
           10: ("the disk failed (an I/O error)", "disk I/O error"),
           8: ("the database is read-only", "readonly database"),
           14: ("the database file cannot be opened", "unable to open database file")}


#: SQLITE_IOERR_SHMSIZE: the shared-memory file beside a WAL database could
#: not be grown, which on Linux means no room for it: a full disk, not a
#: failing one (a store opened on a full disk meets it first).
_SHM_FULL = 10 | (19 << 8)


def _code(error: sqlite3.Error) -> int | None:
    code: int | None = getattr(error, "sqlite_errorcode", None)   # Python 3.11+
    if code == _SHM_FULL:
        return 13
    if code is not None:
        return code & 0xFF
    text = str(error)
    if "locked" in text or "busy" in text:
        return 5
    return next((c for c, (_, said) in FAILING.items() if said in text), None)


def is_busy(error: BaseException | None) -> bool:
    """Another connection held the lock past the busy timeout."""
    return isinstance(error, sqlite3.Error) and _code(error) in (5, 6)


def is_lasting(error: BaseException) -> bool:
    """A full disk, an I/O error, a read-only or unopenable file."""
    return isinstance(error, sqlite3.Error) and _code(error) in FAILING


def needs_reopening(error: BaseException) -> bool:
    """A file that was read-only (or could not be opened) when the
    connection opened it: SQLite keeps that connection read-only for good,
    so the next write must open another, in case the file is writable now."""
    return isinstance(error, sqlite3.Error) and _code(error) in (8, 14)


def unavailable(error: sqlite3.Error, health: WriteHealth | None) -> StoreUnavailable | None:
    """What a SQLite error means to a client, if it is not a fault of
    usersvc's: busy (try again), or a lasting cause (``WritesFailing``, said
    to ``health`` for a write; a read that fails so is simply unavailable);
    caused by ``error``, as ``raise ... from error`` would say, so that
    ``raise unavailable(e, health) or e`` raises either with its cause."""
    code = _code(error)
    if is_busy(error):         # another writer held the lock past the timeout
        meant = StoreUnavailable("The database is busy; try again.")
    elif code not in FAILING:
        return None
    elif health is None:
        meant = StoreUnavailable(f"The database cannot be read now: {FAILING[code][0]}.")
    else:
        meant = health.failed(FAILING[code][0], f"{error}")
    meant.__cause__ = error
    return meant


def retrying(open_: Callable[P, T], busy_timeout: float, *args: P.args, **kw: P.kwargs) -> T:
    """``open_(*args)``, run again until it does not find the file busy, or
    the busy timeout passes. Processes opening a new file together can find it
    locked without SQLite calling the busy handler (``StoreUnavailable``)."""
    deadline = time.monotonic() + busy_timeout
    pause = 0.001
    while True:
        try:
            return open_(*args, **kw)
        except StoreUnavailable as e:
            # Only a busy file is worth waiting for: one that cannot be
            # opened at all (a folder it may not write, /proc) is said at once.
            if not is_busy(e.__cause__) or time.monotonic() + pause > deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.1)


@contextmanager
def savepoint(db: sqlite3.Connection, name: str) -> Iterator[None]:
    """What the block does, in ``SAVEPOINT name``: released, or undone if it
    raises (``undo_savepoint``; the error goes on)."""
    db.execute(f"SAVEPOINT {name}")
    try:
        yield
    except BaseException:
        undo_savepoint(db, name)
        raise
    db.execute(f"RELEASE {name}")


def undo_savepoint(db: sqlite3.Connection, name: str) -> None:
    """Undo what was done since ``SAVEPOINT name``, and release it; the ids
    and positions it took stay taken, as PostgreSQL's sequences do: never
    handed out again."""
    taken = db.execute("SELECT name, seq FROM sqlite_sequence").fetchall()
    db.execute(f"ROLLBACK TO {name}")
    db.executemany("UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = ?",
                   [(seq, table) for table, seq in taken])
    db.executemany("INSERT INTO sqlite_sequence (name, seq) SELECT ?, ? WHERE NOT "
                   "EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = ?)",
                   [(table, seq, table) for table, seq in taken])
    db.execute(f"RELEASE {name}")
