"""Hearing other processes' commits, for the store's listeners
(``protocol.CommitsAnnounced``): PostgreSQL's ``LISTEN``/``NOTIFY``.

The feed's trigger calls ``pg_notify(ddl.CHANNEL)`` with the collection's
plural, delivered at commit. A ``Listener`` listens on a connection of its
own, in a thread, from the store's first listener until the store closes,
and tells the store which collection changed: one connection per process,
however many requests or streams wait. A lost connection is logged once
and tried again every second; once it listens again, it tells of every
collection, whose listeners read what changed (nothing committed
meanwhile is missed, only seen later).
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import psycopg

from ..sql.ddl import CHANNEL

log = logging.getLogger("usersvc.storage")


class Listener:
    """Calls ``wake(plural)`` for every change announced, and ``wake(None)``
    (every collection) whenever it starts listening."""

    def __init__(self, conninfo: str, wake: Callable[[str | None], None]) -> None:
        self._conninfo = conninfo
        self._wake = wake
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Listen, if not already listening (a thread of its own)."""
        with self._lock:
            if self._thread is None and not self._stopping.is_set():
                self._thread = threading.Thread(target=self._listen, daemon=True,
                                                name="usersvc-listen")
                self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        with self._lock:
            thread = self._thread
        if thread is not None:
            thread.join(timeout=5)

    def _listen(self) -> None:
        failed = False
        while not self._stopping.is_set():
            try:
                with psycopg.connect(self._conninfo, autocommit=True) as db:
                    db.execute(f"LISTEN {CHANNEL}")
                    failed = False
                    self._wake(None)    # whatever was committed before it listened
                    while not self._stopping.is_set():
                        # (a short look, so that closing the store waits
                        # 0.1 s at most for this thread to see it)
                        for notice in db.notifies(timeout=0.1):
                            self._wake(notice.payload)
            except psycopg.Error as e:
                if not failed:
                    log.warning("cannot listen for changes (waiting requests are woken "
                                "once it listens again): %s", " ".join(str(e).split()))
                failed = True
                self._stopping.wait(1.0)
