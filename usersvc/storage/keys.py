"""Idempotency keys: a write's answer kept with the write, for its retries
(the HTTP side is ``usersvc.features.idempotency``, which alone imports
this module: the stores know nothing of keys).

The feature wraps the write's atomic step (``Storage.atomically``): the
answer is looked for, the write made, and the answer kept, per ``(owner,
key)`` with the request's fingerprint, in that one step, so a crash keeps
both or neither. How depends on the store (the feature's ``keeping``,
from its ``dialect``, ``protocol.Transactional``): memory, a dict of the feature's
own under one lock held around the step (``MemoryKeys``: memory keeps
nothing past the process, nor do its keys); SQLite, the layout's table
``usersvc_keys``, read then written in the step's transaction (its writer
makes one step at a time); PostgreSQL, the same table, the key's row taken
first in the step (``claimed``), so a retry that comes meanwhile waits for
the commit, the write in a savepoint (``Step.attempt``: a refused
statement ends a transaction there), then the row filled. An answer given
without a change (``Conflict``, ``StaleVersion``, ``NotFound``) is kept
too, the step's writes undone; an unavailable store keeps nothing.
Expired keys are purged in small steps, at most every ``PURGE_EVERY``
seconds a process while the steps find little: the memory store its
oldest, ``PURGE_BATCH`` a step; a SQL store sweeps its table in key order,
``SWEEP`` keys a step of its own (one index, the key's: a second would
cost each keyed write).
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, NamedTuple

from .errors import Conflict, Contradiction, NotFound, StaleVersion, StoreError

if TYPE_CHECKING:
    from .protocol import Atomic
    from .served import Step

log = logging.getLogger("usersvc.storage")

#: The errors with which a store answers without changing anything: kept.
KEPT_ERRORS = (Conflict, NotFound, StaleVersion)
#: How many expired keys the memory store forgets at most a step; how
#: many keys a SQL store's sweep looks at a step; how often a process
#: takes a step while the steps find little.
PURGE_BATCH = 100
SWEEP = 1000
PURGE_EVERY = 60.0

Run = Callable[["Step"], Any]   # ``run(step)``: a key's step's writes (``Storage.atomically``)

class Answer(NamedTuple):
    """What a write answered: status, headers, body and ``Vary``, replayed
    as they are."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes
    vary: str


class Key(NamedTuple):
    """One request's idempotency key: whose (``owner``: a token's digest,
    or ``""``), the key itself, the request's ``fingerprint``, when it may
    be forgotten (``expires``, Unix time), and how to make the answer from
    what the write did: ``answer(record, None)`` or ``answer(None, error)``."""

    owner: str
    value: str
    fingerprint: str
    expires: float
    answer: Callable[[Any, StoreError | None], Answer]

    def outcome(self, write: Callable[..., Any], *args: Any) -> Answer:
        """The answer to ``write(*args)``: its record's, or that of the
        error it raised having changed nothing."""
        try:
            record = write(*args)
        except KEPT_ERRORS as error:
            return self.answer(None, error)
        return self.answer(record, None)

    def replay(self, fingerprint: str, answer: Answer) -> Answer:
        """The kept answer, if this is the request it was given to."""
        if fingerprint != self.fingerprint:
            raise KeyReused(self.value)
        return answer


class KeyReused(Contradiction):
    """The key was used before with a different request (HTTP 422)."""

    def __init__(self, key: str) -> None:
        super().__init__("This Idempotency-Key was used with a different request; "
                         "a key names one request. Use a new key for a new request.")
        self.key = key


class Purges:
    """When this process may purge expired keys next: at most every
    ``PURGE_EVERY`` seconds, and again at once while a step finds much to
    delete (it is behind); and where a SQL store's sweep goes on from."""

    def __init__(self) -> None:
        self._next = 0.0
        self._lock = threading.Lock()
        self.after: tuple[str, str] = ("", "")      # the last key looked at

    def due(self) -> bool:
        now = time.monotonic()
        with self._lock:
            if now < self._next:
                return False
            self._next = now + PURGE_EVERY
            return True

    def more(self) -> None:
        """The last step found much to delete: the next may come at once."""
        self._next = 0.0


class MemoryKeys:
    """The memory store's keys, the feature's own: a dict in the order they
    were kept (and so, as every key lives as long, in the order they
    expire), under one lock held around a keyed step (before the step's
    own locks: docs/architecture.md, "One lock order")."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._kept: dict[tuple[str, str], tuple[str, float, Answer]] = {}
        self.purges = Purges()

    def once(self, storage: Atomic, plurals: tuple[str, ...], key: Key, run: Run,
             nothing_to_undo: bool) -> Answer:
        """The answer to ``run``, in an atomic step of ``storage`` (``run``'s
        own, undone if it raises), kept; or the answer kept for ``key``."""
        return self.kept(key, lambda: storage.atomically(
            plurals, run, nothing_to_undo=nothing_to_undo))

    def kept(self, key: Key, write: Callable[[], Any]) -> Answer:
        """The answer to ``write()`` (a step, or a write that is one: the
        step is under the lock), kept; or the answer kept for ``key``."""
        where = (key.owner, key.value)
        with self.lock:
            if self.purges.due():
                self._purge()
            found = self._kept.get(where)
            if found is not None and found[1] > time.time():
                return key.replay(found[0], found[2])
            answer = key.outcome(write)
            self._kept.pop(where, None)         # an expired one: kept again, at the end
            self._kept[where] = (key.fingerprint, key.expires, answer)
            return answer

    def _purge(self) -> None:
        """Forget up to ``PURGE_BATCH`` expired keys, the oldest first."""
        now = time.time()
        expired: list[tuple[str, str]] = []
        for where, (_, expires, _) in self._kept.items():
            if expires > now or len(expired) == PURGE_BATCH:
                break
            expired.append(where)
        for where in expired:
            del self._kept[where]
        if len(expired) == PURGE_BATCH:
            self.purges.more()

    def __len__(self) -> int:
        return len(self._kept)


class SQLKeys:
    """The keys of a SQL store: the table ``usersvc_keys`` (made by the
    layout's migrations), read and written inside the step's transaction.
    ``claims``: where steps run at once (PostgreSQL), the key's row is
    taken before the write, not read (``claimed``)."""

    def __init__(self, mark: str, claims: bool = False) -> None:
        self.claims = claims
        m = mark
        self.select = (f"SELECT fingerprint, status, headers, body, vary FROM usersvc_keys "
                       f"WHERE owner = {m} AND key = {m} AND expires > {m}")
        # Where steps run at once (PostgreSQL): the key's row taken first (a
        # live one is left alone, a retry meanwhile waiting on it), then filled in.
        self.claim = (f"INSERT INTO usersvc_keys (owner, key, fingerprint, expires, status, "
                      f"headers, body, vary) VALUES ({m}, {m}, {m}, {m}, 0, '', {m}, '') "
                      "ON CONFLICT (owner, key) DO UPDATE SET fingerprint = excluded.fingerprint, "
                      f"expires = excluded.expires WHERE usersvc_keys.expires <= {m} RETURNING 1")
        self.fill = (f"UPDATE usersvc_keys SET status = {m}, headers = {m}, body = {m}, vary = {m} "
                     f"WHERE owner = {m} AND key = {m}")
        self.taken = (f"SELECT fingerprint, status, headers, body, vary FROM usersvc_keys "
                      f"WHERE owner = {m} AND key = {m}")
        self.keep = (f"INSERT INTO usersvc_keys (owner, key, fingerprint, expires, status, "
                     f"headers, body, vary) VALUES ({', '.join([m] * 8)}) "
                     "ON CONFLICT (owner, key) DO UPDATE SET fingerprint = excluded.fingerprint, "
                     "expires = excluded.expires, status = excluded.status, "
                     "headers = excluded.headers, body = excluded.body, vary = excluded.vary")
        # A sweep step: the SWEEP-th key past where the last one ended, and
        # the expired keys up to it (or to the end, with fewer left).
        self.sweep_to = (f"SELECT owner, key FROM usersvc_keys WHERE (owner, key) > ({m}, {m}) "
                         f"ORDER BY owner, key LIMIT 1 OFFSET {SWEEP - 1}")
        self.forget_to = (f"DELETE FROM usersvc_keys WHERE (owner, key) > ({m}, {m}) "
                          f"AND (owner, key) <= ({m}, {m}) AND expires <= {m}")
        self.forget_rest = (f"DELETE FROM usersvc_keys WHERE (owner, key) > ({m}, {m}) "
                            f"AND expires <= {m}")
        self.purges = Purges()

    def once(self, storage: Atomic, plurals: tuple[str, ...], key: Key, run: Run,
             nothing_to_undo: bool) -> Answer:
        """The answer to ``run``, in an atomic step of ``storage`` (``run``'s
        writes undone if it raises: ``Step.attempt``), kept in that step; or
        the answer kept for ``key``. Then a step of the sweep, if one is due."""
        # ``nothing_to_undo`` holds for the step as for ``run``: a refused write
        # of run's is undone (itself, or to the attempt's savepoint) before the
        # answer's row is written; should that fail, SQLite's writer fails its
        # group, PostgreSQL's transaction ends.
        answer = storage.atomically(plurals, partial(
            self.claimed_in if self.claims else self.read_or_keep, key, run),
            nothing_to_undo=nothing_to_undo)
        if self.purges.due():
            self.sweep(storage)
        return answer

    def read_or_keep(self, key: Key, run: Run, step: Step) -> Answer:
        """In ``step``'s transaction: the answer kept for ``key``, or
        ``run(step)``'s, as a part of the step (``Step.attempt``), kept."""
        db = step.db
        owner, value, fingerprint, expires, _ = key
        row = db.execute(self.select, (owner, value, time.time())).fetchone()
        if row is not None:
            kept, status, headers, body, vary = row
            return key.replay(kept, Answer(status, _headers(headers), bytes(body), vary))
        answer = key.outcome(step.attempt, run, step)
        status, headers, body, vary = answer
        db.execute(self.keep, (owner, value, fingerprint, expires, status,
                               _encode_headers(headers), body, vary))
        return answer

    def claimed_in(self, key: Key, run: Run, step: Step) -> Answer:
        """In ``step``'s transaction, where steps run at once: the key's row
        claimed (``claimed``), then ``run(step)``'s answer, as a part of
        the step (``Step.attempt``: on PostgreSQL, a savepoint), filled in;
        or the answer kept for ``key``."""
        kept = self.claimed(step.db, key)
        return kept if kept is not None else self.filled(
            step.db, key, key.outcome(step.attempt, run, step))

    def claimed(self, db: Any, key: Key) -> Answer | None:
        """In ``db``'s transaction, for a database where a refused statement
        ends the transaction: take the key's row (a request with the key
        that comes meanwhile waits on it until the commit), and ``None``;
        or, if it is taken, the answer kept for it."""
        if db.execute(self.claim, (key.owner, key.value, key.fingerprint, key.expires, b"",
                                   time.time())).fetchone() is not None:
            return None
        fingerprint, status, headers, body, vary = db.execute(
            self.taken, (key.owner, key.value)).fetchone()
        return key.replay(fingerprint, Answer(status, _headers(headers), bytes(body), vary))

    def filled(self, db: Any, key: Key, answer: Answer) -> Answer:
        """The claimed row given its answer."""
        db.execute(self.fill, (answer.status, _encode_headers(answer.headers), answer.body,
                               answer.vary, key.owner, key.value))
        return answer

    def sweep(self, storage: Atomic) -> None:
        """A step of the expired keys' sweep, after a keyed write, when one
        is due (``purges``): a step of its own (``purged``), whose failure
        is not the write's (the next step tries again)."""
        try:
            storage.atomically((), lambda step: self.purged(step.db), nothing_to_undo=True)
        except Exception:
            log.warning("could not purge expired idempotency keys (the next sweep will)",
                        exc_info=True)

    def purged(self, db: Any) -> None:
        """One step of the sweep, a write of its own (one change, in its
        last statement): the expired among the next ``SWEEP`` keys in key
        order are deleted; after the last key, from the first again."""
        after, now = self.purges.after, time.time()
        to = db.execute(self.sweep_to, after).fetchone()
        if to is None:
            deleted = db.execute(self.forget_rest, (*after, now)).rowcount
            self.purges.after = ("", "")
        else:
            deleted = db.execute(self.forget_to, (*after, *to, now)).rowcount
            self.purges.after = (to[0], to[1])
        if deleted * 2 >= SWEEP:
            self.purges.more()


def _encode_headers(headers: tuple[tuple[str, str], ...]) -> str:
    # Header names and values hold no line breaks (RFC 9110 §5.5): one a
    # line, "name: value".
    return "\n".join(map(": ".join, headers))


def _headers(text: str) -> tuple[tuple[str, str], ...]:
    return tuple(tuple(line.split(": ", 1)) for line in text.split("\n") if line)  # type: ignore[misc]  # (two parts: written so)
