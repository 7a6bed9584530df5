"""SQLiteStorage: every collection in one SQLite file, shared by threads and
processes (docs/decisions.md, "Storage"). Reads: each thread's own
connection (``connections``); a private in-memory database (``sqlite://``)
has one. Writes: one statement each (``sql``), made by one writer thread in
``BEGIN IMMEDIATE`` transactions, in groups sharing one sync to disk, so a
precondition and its write are one atomic step across processes. WAL
(readers never wait), a busy timeout (writers queue), ``synchronous=FULL``
(a 201 survives a power cut), ``AUTOINCREMENT`` (never an id again).
Opening makes a new file's layout and collections (``layout``), or brings
an older layout (``migrations``) and each collection recorded otherwise
(``evolution``) up to date, under one write lock. A lock held past the busy
timeout is ``StoreUnavailable``; a full disk, an I/O error or a read-only
file, ``WritesFailing`` for the whole group (``errors``, ``WriteHealth``).
"""
from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from ...schema import Schema
from ..served import Collections, Step, references_of
from ..shared import Listeners, WriteHealth
from ..sql.collection import Table
from ..sql.dialects import SQLITE
from ..sql.layout import LAYOUT, declared, layout, opened, read_history
from ..stored import apply
from .collection import SQLiteRecords
from .connections import Connection, Connections, Writer
from .errors import is_lasting, retrying, roll_back, undo_savepoint

T = TypeVar("T")
log = logging.getLogger("usersvc.storage")

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
        # A write waits for the lock (busy_timeout), then its group's sync.
        self.writer = (Writer(self.connections.connect, self.health, busy_timeout + 5)
                       if self.connections.one is None else None)
        self.schemas = tuple(t.schema for t in tables)
        self.commits = Listeners()          # told of every commit (``announce_commits``)
        self.collections = {t.name: SQLiteRecords(self, t) for t in tables}
        # Other processes' commits to a file are looked for by one thread,
        # made for the first listener (``announce_commits``; a private
        # database has no other process): a store nobody listens to has
        # none. A forked process looks again on its own, from its first use.
        self._busy_timeout = busy_timeout
        self._poller: Any = None
        self._polling = threading.Lock()
        self._closing = False               # (no poller made once closing)
        self.connections.forked.append(self._look)
        self._last_step: Step | None = None   # (``_step_on``)
        self.serve()
        # PERF: a read and a write go straight to what makes them: this
        # thread's connection, and the writer (a private database: none).
        self.read = self.connections.read
        self.commit = self.writer.commit if self.writer is not None else self._commit_alone

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

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """A write transaction: BEGIN IMMEDIATE ... COMMIT, or ROLLBACK."""
        with self.connections.session(writing=True) as db:
            if db.in_transaction:       # a ROLLBACK that failed last time (an I/O error)
                db.execute("ROLLBACK")
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                roll_back(db)
                raise
            db.execute("COMMIT")
            db.answers.clear()          # its own commit does not change its data_version
        self.health.worked()

    def _commit_alone(self, op: Callable[[Connection], T]) -> T:
        """``commit`` for a private in-memory database (no writer thread)."""
        with self.transaction() as db:
            return op(db)

    def atomically(self, plurals: Iterable[str], run: Callable[[Step], T], *,
                   nothing_to_undo: bool = False) -> Any:
        """``Storage.atomically``: one write of the writer, inside a savepoint
        that is undone if ``run`` raises (the rest of its group goes on);
        ``nothing_to_undo`` needs none (its one statement undoes itself):
        its error is handed back by the writer, which checks that it
        changed nothing (or fails the group: ``Writer._commit``)."""
        if nothing_to_undo:     # (PERF: its own path, no error handed back by the step)
            result = self.commit(lambda db: run(self._step_on(db)))
            for plural in plurals:
                self.commits.announce(plural)
            return result

        def step(db: Connection) -> tuple[Any, Exception | None]:
            made = Step(self, db)
            try:
                return self.attempt(made, run, (made,)), None
            except Exception as e:      # undone: handed back, not raised (``Writer``)
                if is_lasting(e) or not db.in_transaction:
                    raise
                return None, e
        result, error = self.commit(step)
        if error is not None:
            raise error
        for plural in plurals:
            self.commits.announce(plural)
        return result

    def _step_on(self, db: Connection) -> Step:
        """A step with nothing to undo on ``db``: the same for every step on
        one connection, a view that keeps nothing of its own (PERF: made
        once for the writer's, not each step: 1,000 instructions)."""
        last = self._last_step
        if last is None or last.db is not db:
            last = self._last_step = Step(self, db, (), True)
        return last

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

    @staticmethod
    def violated(error: sqlite3.IntegrityError) -> str:
        """"UNIQUE constraint failed: books.isbn__key": the column."""
        return str(error).rpartition(" ")[2]

    def observe_commits(self, observer: Callable[[float, int], None]) -> bool:
        """Tell ``observer`` of each commit (seconds from BEGIN to the end of
        COMMIT, writes); whether it will (a private database has no writer):
        ``protocol.CommitsObservable``, which any feature may use."""
        if self.writer is not None:
            self.writer.observers.append(observer)
        return self.writer is not None

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
        if self.writer is None or not self.commits.listeners:
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
        if self.writer is not None:
            # The writes already handed over are done first; a forked process
            # that never wrote has no writer of its own, nor figures to log.
            if self.writer.stop() and self.writer.commits:
                log.info("SQLite writer for %s: %s", self.path, _summary(self.writer))
        self.connections.close()


def _summary(writer: Writer) -> str:
    """One line for the log: how many writes shared a commit, what it took."""
    commits, writes = writer.commits, writer.writes
    return (f"{writes:,} writes in {commits:,} commits ({writes / commits:.2f} writes a "
            f"commit, {writer.seconds / commits * 1000:.3f} ms a commit)")
