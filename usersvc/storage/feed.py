"""The change feed's parts every store shares: a change, and waiting for
one (long-poll).

Every change to a record (create, replace, patch, delete) gets a position
``seq`` in its collection, in the same transaction as the change: a number
that grows with every change and is never handed out twice. A store keeps
one entry per record, at the position of its latest change: the record as
it is, or a tombstone once it is deleted (tombstones are kept). The feed after a
position is those entries past it, oldest first: O(log N + limit) in every
store, a walk of one index. (The SQL stores keep a copy of each record's
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

**Waiting** (``Watch``, beside the protocol: every write notifies it).
``Watch.wait`` returns as soon as a change past a position is
committed: a write in this process wakes the waiters at once; a write by
another process is seen by asking the store for its position every
``interval`` seconds (SQLite: ``sqlite.POLL_INTERVAL``), or, on PostgreSQL, by the NOTIFY it
sends at its commit (``postgres_notify``; asking every 0.5 s covers a lost
listener). ``close`` wakes every waiter.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple, Protocol, runtime_checkable


class Change(NamedTuple):
    """The feed's entry for one record: at ``seq``, its latest change; the
    record as it is, or ``None`` for one deleted (a tombstone)."""

    seq: int
    id: int
    record: Any


@runtime_checkable
class ChangeFeed(Protocol):
    """What a store with a change feed adds to ``RecordStore`` (every store
    here has one; the app serves ``/<plural>/changes``, and pages link to
    it, for a store that is one: checked once, when a collection is added)."""

    def changes(self, *, after: int = 0, limit: int = 100) -> list[Change]:
        """Up to ``limit`` entries past the position ``after``, oldest first."""

    def position(self) -> int:
        """The last position committed (0: no change yet)."""

    def position_and_list(self, **arguments: Any) -> tuple[int, list[Any]]:
        """``position()``, then ``list(**arguments)``: a page and where the
        feed stood before it was read (one call, for stores that save by it)."""

    def restore_changes(self, changes: Sequence[Change], *, last_id: int = 0) -> None:
        """``RecordStore.restore``, keeping the feed too (for ``usersvc
        copy``): each record, or tombstone, at its ``seq``, in one atomic
        step; later changes get positions above every one given. Raises
        ``Conflict`` as ``restore`` does, or if a position is not above the
        store's."""

    def wait(self, after: int, timeout: float) -> None:
        """Until a change past ``after`` is committed, by any process, or
        ``timeout`` seconds pass, or ``stop_waiting`` is called."""

    def stop_waiting(self) -> None:
        """Wake every waiting call, and answer every later one at once."""
