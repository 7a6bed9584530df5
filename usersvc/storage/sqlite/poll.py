"""Finding other processes' commits to a SQLite file, which SQLite does
not announce, for the store's listeners (``protocol.CommitsAnnounced``):
one thread per store looks every ``INTERVAL`` seconds, on a connection of
its own, whether anything was committed since it last looked (``PRAGMA
data_version`` changes when another connection commits), and if so says
so (``changed``: the store tells its listeners that every collection may
have changed; they read what did). One look per store however many
listen: a waiting request or an idle stream costs nothing between commits.
(This process's own writes are announced at once, by the thread that made
them; PostgreSQL's processes tell each other, ``postgres.notify``.) The
store makes it for its first listener (``look``): a store nobody listens
to has none.
"""
from __future__ import annotations

import functools
import logging
import os
import sqlite3
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:       # (the store's, held to it: it imports this module when first listened to)
    from collections.abc import Iterable

    from ..feed import Listeners

    class Forking(Protocol):      # (its ``Connections``: the busy timeout; told of a fork)
        busy_timeout: float
        forked: list[Callable[[], None]]

    class SQLiteStorage(Protocol):
        """What the look for other processes' commits asks of a ``SQLiteStorage``."""

        path: str
        poller: Poller | Literal[False] | None
        polling: threading.Lock
        commits: Listeners

        @property
        def connections(self) -> Forking: ...

        @property
        def collections(self) -> Iterable[str]: ...

log = logging.getLogger("usersvc.storage")

#: Seconds between two looks: how late another process's commit may be
#: announced (and a waiting request woken), at most.
INTERVAL = 0.2


def look(store: SQLiteStorage) -> None:
    """Other processes' commits to ``store``'s file looked for, from its
    first listener on (``SQLiteStorage.announce_commits``), by one
    ``Poller``, made then (none once the store is closing: ``poller`` is
    ``False``), and started again in a forked process at its first use
    (``Connections.forked``: the parent's thread is not there)."""
    if not store.commits.listeners:
        return
    with store.polling:
        if store.poller is None:
            store.poller = Poller(store.path, store.connections.busy_timeout,
                                  functools.partial(_changed, store))
            store.connections.forked.append(functools.partial(look, store))
        poller = store.poller
    if poller:
        poller.start()          # (a poller stopped stays stopped)


def _changed(store: SQLiteStorage) -> None:
    """Another process committed (``PRAGMA data_version`` cannot tell what):
    every collection of ``store`` told."""
    for plural in store.collections:
        store.commits.announce(plural)


class Poller:
    """Calls ``changed()`` whenever another connection has committed to the
    file at ``path``, and once when it starts looking (whatever was
    committed before); from ``start`` (the store's first listener; again
    in a forked process) until ``stop``."""

    def __init__(self, path: str, busy_timeout: float, changed: Callable[[], None],
                 interval: float = INTERVAL) -> None:
        self._path, self._busy_timeout = path, busy_timeout
        self._changed, self._interval = changed, interval
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()

    def start(self) -> None:
        """Look, if not already looking (a thread of its own, in this process)."""
        with self._lock:
            if self._pid != os.getpid():        # forked: the parent's thread is not here
                self._pid, self._thread = os.getpid(), None
            if self._thread is None and not self._stopping.is_set():
                self._thread = threading.Thread(target=self._look, daemon=True,
                                                name="usersvc-poll")
                self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        with self._lock:
            thread = self._thread if self._pid == os.getpid() else None
        if thread is not None:
            thread.join(timeout=5)

    def _look(self) -> None:
        db, seen = None, None
        while not self._stopping.is_set():
            try:
                if db is None:
                    db = sqlite3.connect(self._path, timeout=self._busy_timeout,
                                         isolation_level=None, check_same_thread=False)
                version = db.execute("PRAGMA data_version").fetchone()[0]
                if version != seen:
                    seen = version
                    self._changed()
            except sqlite3.Error as e:      # (a moment's lock, a file gone): look again
                log.debug("cannot look for other processes' commits: %s", e)
                if db is not None:
                    db.close()
                db, seen = None, None
            self._stopping.wait(self._interval)
        if db is not None:
            db.close()
