"""The change feed's parts every store shares: a change, the SQL stores'
reads of the feed, and waiting for a change (long-poll).

Every change to a user (create, replace, patch, delete) gets a position
``seq``, in the same transaction as the change: a number that grows with
every change and is never handed out twice. A store keeps one entry per
user, at the position of its latest change: the user as it is, or a
tombstone once it is deleted (tombstones are kept). The feed after a
position is those entries past it, oldest first: O(log N + limit) in every
store, a walk of one index. (The SQL stores keep a copy of each user's
fields in its entry, written by the same trigger: a page of the feed then
reads no other table, where looking each user up would descend the users'
index once per entry.)

**Never missing a change.** A reader must never pass a position whose
change is not yet visible, or it would skip it for good. Positions are
therefore handed out in the order changes commit:

- memory: under the store's lock, with the change;
- SQLite: by a trigger, inside the write transaction, and SQLite lets one
  writer in at a time (``AUTOINCREMENT``: never reused);
- PostgreSQL: by a trigger that takes a lock the transaction holds until
  it ends, then the next value of a sequence, so a later writer waits for
  the one before to commit: a plain sequence would let a later transaction
  commit a larger position first, and a reader pass the smaller one before
  it is visible. The position is the largest one committed
  (``max(seq)``, read from the index), never the sequence's last value.

**Waiting.** ``Watch.wait`` returns as soon as a change past a position is
committed: a write in this process wakes the waiters at once; a write by
another process is seen by asking the store for its position every
``interval`` seconds (SQLite: 0.2), or, on PostgreSQL, by the NOTIFY it
sends at its commit (``postgres_notify``; asking every 0.5 s covers a lost
listener). ``close`` wakes every waiter.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

from . import User
from .sql import Dialect


class Change(NamedTuple):
    """The feed's entry for one user: at ``seq``, its latest change; the
    user as it is, or ``None`` for one deleted (a tombstone)."""

    seq: int
    id: int
    user: User | None


class ChangeFeed(Protocol):
    """What a store with a change feed adds to ``UserStore`` (every user
    store here has one; the app serves ``/<plural>/changes`` for a store
    that has ``changes``)."""

    def changes(self, *, after: int = 0, limit: int = 100) -> list[Change]:
        """Up to ``limit`` entries past the position ``after``, oldest first."""

    def position(self) -> int:
        """The last position committed (0: no change yet)."""

    def position_and_list(self, **arguments: Any) -> tuple[int, list[User]]:
        """``position()``, then ``list(**arguments)``: a page and where the
        feed stood before it was read (one call, for stores that save by it)."""

    def wait(self, after: int, timeout: float) -> None:
        """Until a change past ``after`` is committed, by any process, or
        ``timeout`` seconds pass, or ``stop_waiting`` is called."""

    def stop_waiting(self) -> None:
        """Wake every waiting call, and answer every later one at once."""


#: How often a waiting request asks a SQLite file for its position (other
#: processes may have committed: SQLite cannot tell them).
POLL_INTERVAL = 0.2


class Watch:
    """Requests waiting for the store's position to pass theirs."""

    def __init__(self, position: Callable[[], int], interval: float | None = None) -> None:
        self._position = position
        self._interval = interval
        self._changed = threading.Condition()
        self._notified = 0          # how many times notify was called
        self._closed = False

    def notify(self) -> None:
        """A change was committed (by this process, or another announced
        one): wake the waiters, who look at the position again."""
        with self._changed:
            self._notified += 1
            self._changed.notify_all()

    def wait(self, after: int, timeout: float) -> None:
        """Until the store's position is past ``after``, ``timeout``
        seconds pass, or the store closes. (The position is read outside
        the lock, so a notify that comes meanwhile is counted, not lost.)"""
        deadline = time.monotonic() + timeout
        with self._changed:
            seen = self._notified
        while not self._closed and self._position() <= after:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            with self._changed:
                if self._notified == seen and not self._closed:
                    self._changed.wait(left if self._interval is None
                                       else min(left, self._interval))
                seen = self._notified

    def close(self) -> None:
        with self._changed:
            self._closed = True
            self._changed.notify_all()


def changes_sql(dialect: Dialect) -> str:
    """The feed past a position: one walk of ``user_changes`` in position
    order, whose rows hold each user as it is (``NULL``: a tombstone).
    O(log N + limit)."""
    return ("SELECT seq, id, name, email, version FROM user_changes"
            f" WHERE seq > {dialect.mark} ORDER BY seq LIMIT {dialect.mark}")


class SQLChanges:
    """The feed of a SQL store, from the ``user_changes`` table its triggers
    keep (``sql``): the store gives ``_dialect``, ``_watch`` and
    ``_read(query, params) -> rows``."""

    _dialect: Dialect
    _watch: Watch

    def _read(self, query: str, params: tuple[Any, ...]) -> list[Any]:
        raise NotImplementedError

    def changes(self, *, after: int = 0, limit: int = 100) -> list[Change]:
        rows = self._read(changes_sql(self._dialect), (after, limit))
        return [Change(seq, user_id, None if version is None else User(user_id, name, email, version))
                for seq, user_id, name, email, version in rows]

    def position(self) -> int:
        return int(self._read(self._dialect.position, ())[0][0])

    def position_and_list(self, **arguments: Any) -> tuple[int, list[User]]:
        return self.position(), self.list(**arguments)      # type: ignore[attr-defined]

    def wait(self, after: int, timeout: float) -> None:
        self._watch.wait(after, timeout)

    def stop_waiting(self) -> None:
        self._watch.close()
