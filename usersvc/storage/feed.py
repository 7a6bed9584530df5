"""The change feed's parts every store shares: a change, a feed's history,
and the listeners a store tells of each commit (what a store that keeps a
feed promises is ``protocol.ChangeFeed``; docs/decisions.md, "The change
feed").

Every change to a record gets a position ``seq`` in its collection, in the
same transaction as the change, never handed out twice. A store keeps one
entry per record, at the position of its latest change: the record as it
is, or a tombstone. The feed after a position is those entries past it,
oldest first: O(log N + limit) in every store, a walk of one index.
Positions are handed out in the order changes commit (memory: under the
store's lock; SQLite: by a trigger, one writer at a time; PostgreSQL: by a
trigger that takes a lock held until commit), so no reader passes a
position whose change is not yet visible.

Who follows the feed learns of new positions from the store's
announcements (``protocol.CommitsAnnounced``: a callback on every commit,
of this process or another; each store tells its ``Listeners``), never by
asking the feed over and over:
waiting for changes (``wait=``, the stream) is a feature's
(``usersvc.features.waiting``), which the feed knows nothing of.

A store's feed has a ``history``: a token made at random when the feed
begins (memory: each time the store is made; SQL: with the database, kept
in it), so that a position given by another history of the store (a
memory store since restarted, a database rebuilt) is not taken for one of
this history's (``usersvc.places``; docs/decisions.md, "The change feed").
"""
from __future__ import annotations

import logging
import secrets
import threading
from collections.abc import Callable
from typing import Any, NamedTuple

_log = logging.getLogger("usersvc.storage")

#: What a store tells of each commit (``listener(plural)``; ``None``: the
#: store closed), and what stops it being told (``stop()``).
Listener = Callable[[str | None], None]
Stop = Callable[[], None]


class Change(NamedTuple):
    """The feed's entry for one record: at ``seq``, its latest change; the
    record as it is, or ``None`` for one deleted (a tombstone)."""

    seq: int
    id: int
    record: Any


def new_history() -> str:
    """A history token: 48 random bits, as 12 lowercase hex digits."""
    return secrets.token_hex(6)


class Listeners:
    """The listeners of a store's commits (``protocol.CommitsAnnounced``):
    ``add`` one, ``announce`` a collection's commit to every one, ``close``.
    ``listeners`` is a tuple, replaced whole when one is added or removed,
    so that a write reads it without a lock, and announces only when it
    holds one (``if commits.listeners``): in the plain core none listens."""

    def __init__(self) -> None:
        self.listeners: tuple[Listener, ...] = ()
        self.closed = False
        self._lock = threading.Lock()

    def add(self, listener: Listener) -> Stop:
        """``listener`` told from now on, until the ``stop()`` returned is
        called; told ``None`` at once if the store is closed already."""
        with self._lock:
            if not self.closed:
                self.listeners += (listener,)
                return lambda: self._remove(listener)
        _tell(listener, None)
        return lambda: None

    def _remove(self, listener: Listener) -> None:
        with self._lock:
            self.listeners = tuple(told for told in self.listeners if told is not listener)

    def announce(self, plural: str) -> None:
        """A commit changed the collection ``plural``: every listener told."""
        for listener in self.listeners:
            _tell(listener, plural)

    def close(self) -> None:
        """The store closes: every listener told ``None``, once, and forgotten."""
        with self._lock:
            self.closed, told, self.listeners = True, self.listeners, ()
        for listener in told:
            _tell(listener, None)


def _tell(listener: Listener, plural: str | None) -> None:
    """``listener(plural)``; what it raises logged, so that the others are
    told all the same and the write that announced it is not undone."""
    try:
        listener(plural)
    except Exception:
        _log.exception("a listener of commits failed, told of %s",
                       plural if plural is not None else "the store's close")
