"""SQLiteStorage: every collection in one SQLite file, shared by threads and processes
(docs/decisions.md, "Storage"): each write one statement (``sql``) in a ``BEGIN IMMEDIATE``
transaction, so a precondition and its write are one atomic step across processes
(``connections``; the fast build groups them, one sync to disk a group: ``usersvc.fast.sqlite``).
WAL (readers never wait), a busy timeout (writers queue), ``synchronous=FULL`` (a 201 survives
a power cut), ``AUTOINCREMENT`` (never an id again). Opening: ``opening``."""
from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Literal

from ...schema import Schema
from ..errors import WriteHealth
from ..feed import Listeners
from ..served import Collections, Step
from ..sql.collection import SQLRecords
from ..sql.dialects import SQLITE
from .connections import Connections
from .errors import T, is_lasting, retrying, savepoint
from .opening import Connection, prepare

if TYPE_CHECKING:       # (loaded for the store's first listener: ``announce_commits``)
    from .poll import Poller


class SQLiteStorage(Collections):
    unique_violation = sqlite3.IntegrityError
    dialect = SQLITE        # what a step's ``db`` speaks (``protocol.Transactional``)
    poller: Poller | Literal[False] | None      # (``poll.look``'s; ``False``: closing)

    def __init__(self, path: str, schemas: Iterable[Schema] | None, *,
                 busy_timeout: float = 10.0, synchronous: str = "full") -> None:
        """``schemas``: the collections to serve (``None``: those the file
        holds); ``synchronous``: ``full`` or ``normal`` (``open_store``)."""
        self.path, self.health = path, WriteHealth(path)
        self.connections = Connections(path, busy_timeout, self.health, synchronous)
        try:    # (the file made or brought up to date, then each collection)
            self.history, tables = retrying(prepare, busy_timeout, self.connections, schemas)
        except BaseException:
            self.connections.close()
            raise
        self.schemas = tuple(t.schema for t in tables)
        self.commits = Listeners()          # told of every commit (``announce_commits``)
        self.collections = {t.name: SQLRecords(self, t, self.connections) for t in tables}
        self.poller, self.polling = None, threading.Lock()  # (``poll.look``'s)
        self.serve()

    def transaction(self) -> Any:
        """A write transaction (``Connections.transaction``)."""
        return self.connections.transaction()

    def atomically(self, plurals: Iterable[str], run: Callable[[Step], T], *,
                   nothing_to_undo: bool = False) -> Any:
        """``Storage.atomically``: one write transaction, in which ``run`` makes its writes
        inside a savepoint, undone if it raises: the transaction then commits nothing of
        ``run`` but the ids it took (``errors.savepoint``), and its error is raised once
        committed. ``nothing_to_undo``: no savepoint (one statement refused undoes itself)."""
        def step(db: Connection) -> tuple[Any, Exception | None]:
            made = Step(self, db, (), nothing_to_undo)
            try:
                return made.attempt(run, made), None
            except Exception as e:      # undone to the savepoint: raised once committed
                if nothing_to_undo or is_lasting(e) or not db.in_transaction:
                    raise               # (no savepoint; SQLite may have undone the transaction)
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
        with savepoint(step.db, "attempt"):
            return part(*args)

    def observe_commits(self, observer: Callable[[float, int], None]) -> bool:
        """``protocol.CommitsObservable``: ``observer`` told of each commit
        (its seconds, its writes); whether it will (a private database: no)."""
        if self.connections.one is None:
            self.connections.observers.append(observer)
        return self.connections.one is None

    def announce_commits(self, listener: Callable[[str | None], None]) -> Callable[[], None]:
        """``protocol.CommitsAnnounced``: other processes' commits looked for
        from the first listener on (``poll.look``)."""
        stop = self.commits.add(listener)
        if self.connections.one is None:    # (a private database has no other process)
            from .poll import look
            look(self)
        return stop

    def close(self) -> None:
        with self.polling:
            self.poller, poller = False, self.poller    # (False: none made once closing)
        if poller:
            poller.stop()           # (first: no listener is told anything after ``None``)
        self.commits.close()
        self.connections.close()     # (the fast build's writer first: the writes handed to it)
