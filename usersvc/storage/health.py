"""A store's write health (``WriteHealth``): whether its writes are
failing for a cause outside it (a full disk, an I/O error, a read-only
database: ``errors.WritesFailing``), for ``/healthz``, and told once in
the log when it starts and when it ends. The SQL stores keep one each
(memory's writes cannot fail so)."""
from __future__ import annotations

import logging
import threading

from .errors import WritesFailing

_log = logging.getLogger("usersvc.storage")


class WriteHealth:
    """Whether a store's writes are failing (``WritesFailing``), for
    ``/healthz``; logged once when it starts (ERROR, the cause) and ends."""

    def __init__(self, name: str) -> None:
        self.name = name                    # the file or database, for the log
        self.failing: str | None = None     # the reason, while it lasts
        self._lock = threading.Lock()

    def failed(self, reason: str, cause: str) -> WritesFailing:
        """The error to raise for a write that failed for ``cause``."""
        with self._lock:
            if self.failing is None:
                _log.error("writes are failing: %s: %s", cause, self.name)
            self.failing = reason
        return WritesFailing(reason)

    def worked(self) -> None:
        """A write was committed after writes failed (a store asks
        ``failing`` first: one attribute read a write while all is well)."""
        with self._lock:
            if self.failing is not None:
                _log.warning("writes work again: %s", self.name)
                self.failing = None


__all__ = ["WriteHealth"]
