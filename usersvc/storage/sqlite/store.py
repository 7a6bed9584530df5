"""SQLiteStorage: every collection in one SQLite file, shared by threads and
processes (docs/decisions.md, "Storage"). Reads: each thread's own
connection (``connections``); a private in-memory database (``sqlite://``)
has one. Writes: one statement each (``sql``), in a ``BEGIN IMMEDIATE``
transaction on the connection for writes, one at a time, so a precondition
and its write are one atomic step across processes (the fast build makes
them in groups sharing one sync to disk: ``usersvc.fast.sqlite``). WAL
(readers never wait), a busy timeout (writers queue), ``synchronous=FULL``
(a 201 survives a power cut), ``AUTOINCREMENT`` (never an id again).
Opening makes a new file's layout and collections (``layout``), or brings
an older layout (``migrations``) and each collection recorded otherwise
(``evolution``) up to date, under one write lock. A lock held past the busy
timeout is ``StoreUnavailable``; a full disk, an I/O error or a read-only
file, ``WritesFailing`` (``errors``, ``WriteHealth``).
"""
from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from ...schema import Schema
from ..served import Collections, Step
from ..health import WriteHealth
from ..feed import Listeners
from ..sql.collection import SQLRecords, Table
from ..sql.dialects import SQLITE
from ..sql.layout import LAYOUT, declared, layout, opened, read_history
from ..stored import apply, references_of
from .connections import Connection, Connections
from .errors import is_lasting, retrying, undo_savepoint

T = TypeVar("T")


class SQLiteStorage(Collections):
    unique_violation = sqlite3.IntegrityError
    dialect = SQLITE        # what a step's ``db`` speaks (``protocol.Transactional``)

    def __init__(self, path: str, schemas: Iterable[Schema] | None, *,
                 busy_timeout: float = 10.0, synchronous: str = "full") -> None:
        """``schemas``: the collections to serve (``None``: those the file
        holds); ``synchronous``: ``full`` or ``normal`` (``open_store``)."""
        self.path = path
        self.health = WriteHealth(path)
        self.connections = Connections(path, busy_timeout, self.health, synchronous)
        tables: list[Table] = []
        try:
            retrying(lambda: self._open(schemas, tables), busy_timeout)
        except BaseException:
            self.connections.close()
            raise
        self.schemas = tuple(t.schema for t in tables)
        self.commits = Listeners()          # told of every commit (``announce_commits``)
        self.collections = {t.name: SQLRecords(self, t, self.connections) for t in tables}
        # Other processes' commits to a file are looked for by one thread,
        # made for the first listener (``announce_commits``; a private
        # database has no other process): a store nobody listens to has
        # none. A forked process looks again on its own, from its first use.
        self._busy_timeout = busy_timeout
        self._poller: Any = None
        self._polling = threading.Lock()
        self._closing = False               # (no poller made once closing)
        self.connections.forked.append(self._look)
        self.serve()

    def _open(self, schemas: Iterable[Schema] | None, tables: list[Table]) -> None:
        """WAL mode (for a file), the layout, and every collection."""
        if self.connections.one is None:
            with self.connections.session() as db:
                db.execute("PRAGMA journal_mode = WAL")
        with self.transaction() as db:
            found = db.execute("PRAGMA user_version").fetchone()[0]
            if found == 0:              # a new file: today's layout
                apply(db, layout(SQLITE))
                db.execute(f"PRAGMA user_version = {LAYOUT}")
            elif found != LAYOUT:       # an older release's (a newer one's is refused there)
                from .migrations import migrate     # (the history: loaded for such a file only)
                migrate(db)
            self.history = read_history(db)
            tables[:] = [Table(s, SQLITE) for s in (declared(db, SQLITE) if schemas is None else schemas)]
            references_of([t.schema for t in tables])  # each ref's collection here, or none made
            for table in tables if schemas is not None else ():    # as recorded: as it is
                recorded = opened(db, table)        # made if new; as declared, left so
                if recorded is not None:        # else compared (``evolution``: loaded then)
                    from ..sql.evolution import evolve
                    evolve(db, table, recorded)

    def transaction(self) -> Any:
        """A write transaction: ``BEGIN IMMEDIATE ... COMMIT``, or ``ROLLBACK``
        (``Connections.transaction``)."""
        return self.connections.transaction()

    def atomically(self, plurals: Iterable[str], run: Callable[[Step], T], *,
                   nothing_to_undo: bool = False) -> Any:
        """``Storage.atomically``: one write transaction, in which ``run``
        makes its writes inside a savepoint, undone if it raises: the
        transaction then commits nothing of ``run`` but the ids it took,
        which stay taken (``errors.undo_savepoint``), and its error is
        raised once committed. ``nothing_to_undo`` needs no savepoint (its
        one statement, refused, undoes itself)."""
        def step(db: Connection) -> tuple[Any, Exception | None]:
            made = Step(self, db, (), nothing_to_undo)
            if nothing_to_undo:
                return run(made), None
            try:
                return self.attempt(made, run, (made,)), None
            except Exception as e:      # undone to the savepoint: raised once committed
                if is_lasting(e) or not db.in_transaction:
                    raise               # (SQLite may have undone the transaction)
                return None, e
        result, error = self.connections.commit(step)
        if error is not None:
            raise error
        if self.commits.listeners:
            for plural in plurals:
                self.commits.announce(plural)
        return result

    def attempt(self, step: Step, part: Callable[..., T], args: tuple[Any, ...]) -> T:
        """``Step.attempt``: ``part(*args)`` in a savepoint, undone if it
        raises. (In a step with nothing to undo, ``Step`` runs it without:
        a statement SQLite refuses undoes itself, the transaction going on.)"""
        db = step.db
        db.execute("SAVEPOINT attempt")
        try:
            result = part(*args)
        except BaseException:
            undo_savepoint(db, "attempt")
            raise
        db.execute("RELEASE attempt")
        return result

    def observe_commits(self, observer: Callable[[float, int], None]) -> bool:
        """Tell ``observer`` of each commit (seconds from BEGIN to the end of
        COMMIT, writes); whether it will (a private database tells none):
        ``protocol.CommitsObservable``, which any feature may use."""
        if self.connections.one is None:
            self.connections.observers.append(observer)
        return self.connections.one is None

    def announce_commits(self, listener: Callable[[str | None], None]) -> Callable[[], None]:
        """``protocol.CommitsAnnounced``: this process's commits told by the
        thread that made each write, once committed; other processes', by
        the thread that looks at the file (``poll``), started now."""
        stop = self.commits.add(listener)
        self._look()
        return stop

    def _look(self) -> None:
        """Other processes' commits looked for (``poll``) from the first
        listener on, in this process (a forked one's connections call it at
        their first use: the parent's thread is not here), until ``close``."""
        if self.connections.one is not None or not self.commits.listeners:
            return
        with self._polling:
            if self._poller is None and not self._closing:
                from .poll import Poller
                self._poller = Poller(self.path, self._busy_timeout, self._changed)
            poller = self._poller
        if poller is not None:
            poller.start()          # (a poller stopped stays stopped)

    def _changed(self) -> None:
        """Another process committed (``poll`` cannot tell what): every collection told."""
        for plural in self.collections:
            self.commits.announce(plural)

    def close(self) -> None:
        with self._polling:
            self._closing, poller = True, self._poller
        if poller is not None:
            poller.stop()           # (first: no listener is told anything after ``None``)
        self.commits.close()
        self.connections.close()     # (the fast build's writer first: the writes handed to it)
