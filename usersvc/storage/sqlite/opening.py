"""Opening a SQLite file: the connections each process opens for itself
(``ProcessConnections``: a forked one, a worker after ``--preload``, must
not use its parent's), of a class of their own (``Connection``), and, at
start-up, the file readied to serve (``prepare``: WAL, its layout made or
brought up to date, each collection). What reads and writes do with the
connections is ``connections``'s.
"""
from __future__ import annotations

import os
import sqlite3
import threading
import weakref
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol

from ...schema import Schema
from ..sql.collection import Table
from ..sql.dialects import SQLITE
from ..sql.layout import LAYOUT, declared, layout, opened, read_history
from ..stored import apply, references_of

if TYPE_CHECKING:       # (``connections``'s, held to it; that module imports this one)
    from contextlib import AbstractContextManager

    class Connections(Protocol):
        """What ``prepare`` asks of a file's ``Connections``."""

        one: Connection | None

        def session(self) -> AbstractContextManager[Connection]: ...

        def transaction(self) -> AbstractContextManager[Connection]: ...


class Connection(sqlite3.Connection):
    """A connection weakly referenced (closing the store reaches live
    threads'; an ended thread's is freed with it), ``in_use`` while used."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.in_use = threading.Lock()


class ThreadConnection:
    """One thread's connection, in its ``threading.local``: closed when it ends."""

    def __init__(self, db: Connection) -> None:
        self.db = db

    def __del__(self) -> None:
        with self.db.in_use:     # store.close() may be closing it right now
            self.db.close()


class ProcessConnections:
    """The connections one process opened to a file (none yet when made):
    each thread's own for reads (``local.owner``) and the one for writes
    (``writes``, opened by the first write), closed together."""

    def __init__(self, path: str, busy_timeout: float, synchronous: str) -> None:
        self.path, self.busy_timeout, self.synchronous = path, busy_timeout, synchronous
        self.pid = os.getpid()
        self.local = threading.local()
        self.writes: Connection | None = None
        self.all: weakref.WeakSet[Connection] = weakref.WeakSet()
        self._lock = threading.Lock()

    def connect(self) -> Connection:
        """A new connection to the file, at the store's ``synchronous``."""
        db = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None,
                             check_same_thread=False, factory=Connection)
        db.execute(f"PRAGMA synchronous = {self.synchronous}")
        with self._lock:
            self.all.add(db)
        return db

    def close_writes(self) -> None:
        """The connection for writes closed (once no write uses it), for the
        next write to open another."""
        db, self.writes = self.writes, None
        if db is not None:
            with db.in_use:
                db.close()

    def close(self) -> None:
        """Every one closed, once no thread uses it (a thread's may be in use)."""
        with self._lock:
            connections = list(self.all)
            self.all.clear()
        for db in connections:
            with db.in_use:
                db.close()


def prepare(connections: Connections, schemas: Iterable[Schema] | None
            ) -> tuple[str, list[Table]]:
    """WAL mode (for a file), then, in one write transaction, the layout
    (a new file's, today's; an older release's brought up to date by its
    ``migrations``) and every collection of ``schemas`` (``None``: those
    the file holds), each made if new, or brought up to date if recorded
    otherwise (``evolution``): the feed's history token and the tables."""
    if connections.one is None:
        with connections.session() as db:
            db.execute("PRAGMA journal_mode = WAL")
    with connections.transaction() as db:
        found = db.execute("PRAGMA user_version").fetchone()[0]
        if found == 0:              # a new file: today's layout
            apply(db, layout(SQLITE))
            db.execute(f"PRAGMA user_version = {LAYOUT}")
        elif found != LAYOUT:       # an older release's (a newer one's is refused there)
            from .migrations import migrate  # (the history: loaded for such a file only)
            migrate(db)
        history = read_history(db)
        tables = [Table(s, SQLITE) for s in (declared(db, SQLITE) if schemas is None else schemas)]
        references_of([t.schema for t in tables])  # each ref's collection here, or none made
        for table in tables if schemas is not None else ():    # as recorded: as it is
            recorded = opened(db, table)        # made if new; as declared, left so
            if recorded is not None:        # else compared (``evolution``: loaded then)
                from ..sql.evolution import evolve
                evolve(db, table, recorded)
    return history, tables
