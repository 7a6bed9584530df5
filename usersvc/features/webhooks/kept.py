"""Where subscriptions are kept: the feature's own, never a collection's
(docs/decisions.md, "Webhooks: the feed is the outbox": a collection's
records reach its feed, pages and metrics, and a secret must reach none).

- ``MemoryKept``: a dict under one lock, as long as the app lives
  (``memory://``).
- ``SQLKept``: two tables of the feature's, in the store the app serves
  from, reached through a step of the store's (``Storage.atomically``,
  ``step.db``; the SQL its ``dialect`` speaks): ``usersvc_webhooks``, one
  row a subscription, and ``usersvc_webhook_positions``, one row a
  subscription and collection, the last position delivered. Made when the
  feature first uses the store (``prepare``). Every change a commit.

Several processes on one store share its subscriptions: each is held by
one at a time (``holder``, until ``lease``, Unix time), taken by a
conditional write when nobody holds it or its lease ran out (``claim``),
and only its holder writes where its deliveries are (``delivered``,
``failed``), a position never going back.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, TypeVar

T = TypeVar("T")

#: The columns of ``usersvc_webhooks`` a subscription is read from, in ``Subscription``'s order.
COLUMNS = ("id", "url", "collections", "secret", "created", "enabled", "failures",
           "next_attempt", "failed_status", "failed_error", "failed_at", "disabled_reason",
           "version")


@dataclass
class Subscription:
    """A subscription: where (``url``), to what (``collections``;
    ``None``: every collection the app serves), signed with what
    (``secret``), whether it is on (``enabled``; ``disabled_reason``: why
    not, when the sender turned it off), the last position delivered in
    each collection (``delivered``), the failures in a row, when the next
    attempt may be made (``next_attempt``, Unix time; ``None``: at once),
    the last failure (its status, or its error, and when), and its
    ``version``, which each change made to it (a ``PATCH``) moves on."""

    id: int
    url: str
    collections: tuple[str, ...] | None
    secret: str
    created: float
    enabled: bool = True
    failures: int = 0
    next_attempt: float | None = None
    failed_status: int | None = None
    failed_error: str | None = None
    failed_at: float | None = None
    disabled_reason: str | None = None
    version: int = 1
    delivered: dict[str, int] = field(default_factory=dict)

    def covers(self, plural: str) -> bool:
        return self.collections is None or plural in self.collections


class Kept(Protocol):
    """What the sender and the routes ask of where subscriptions are kept."""

    #: Whether other processes may make subscriptions here (a look at the
    #: store finds them), or only this one's routes (which tell the sender).
    shared: bool

    def create(self, made: Subscription) -> Subscription: ...
    def get(self, subscription_id: int) -> Subscription | None: ...
    def all(self) -> list[Subscription]: ...
    def change(self, subscription_id: int,
               change: Callable[[Subscription], Subscription]) -> Subscription | None: ...
    def delete(self, subscription_id: int) -> bool: ...
    def claim(self, holder: str, now: float, lease: float, renew: bool) -> list[Subscription]: ...
    def delivered(self, subscription_id: int, holder: str, plural: str, seq: int,
                  reset: bool, version: int) -> bool: ...
    def failed(self, subscription_id: int, holder: str, state: Subscription) -> bool: ...
    def release(self, holder: str) -> None: ...


def _copy(subscription: Subscription) -> Subscription:
    return replace(subscription, delivered=dict(subscription.delivered))


#: What ``failed`` writes of a subscription's state.
_FAILURE = ("failures", "next_attempt", "failed_status", "failed_error", "failed_at", "enabled",
            "disabled_reason")


class SQLKept:
    """Subscriptions in a SQL store's tables, reached through its steps
    (``storage.atomically``; ``mark``: its driver's placeholder;
    ``postgres``: which of the two it is)."""

    shared = True

    def __init__(self, storage: Any, mark: str, postgres: bool) -> None:
        self.storage, self.postgres = storage, postgres
        self.prepared = False       # (its tables: made when first used)
        m = mark
        self.m = m
        self.select = f"SELECT {', '.join(COLUMNS)} FROM usersvc_webhooks"
        self.positions = "SELECT subscription, plural, seq FROM usersvc_webhook_positions"
        self.insert = (f"INSERT INTO usersvc_webhooks ({', '.join(COLUMNS[1:])}, lease) "
                       f"VALUES ({', '.join([m] * (len(COLUMNS) - 1))}, 0) RETURNING id")
        self.start = (f"INSERT INTO usersvc_webhook_positions (subscription, plural, seq) "
                      f"VALUES ({m}, {m}, {m}) ON CONFLICT (subscription, plural) "
                      "DO UPDATE SET seq = excluded.seq")
        self.advance = (f"INSERT INTO usersvc_webhook_positions (subscription, plural, seq) "
                        f"VALUES ({m}, {m}, {m}) ON CONFLICT (subscription, plural) "
                        "DO UPDATE SET seq = excluded.seq "
                        "WHERE usersvc_webhook_positions.seq < excluded.seq")
        self.update = (f"UPDATE usersvc_webhooks SET url = {m}, collections = {m}, "
                       f"enabled = {m}, failures = {m}, next_attempt = {m}, "
                       f"disabled_reason = {m}, version = version + 1 WHERE id = {m}")
        self.fail = ("UPDATE usersvc_webhooks SET "
                     + ", ".join(f"{name} = {m}" for name in _FAILURE)
                     + f", holder = {m} WHERE id = {m} AND holder = {m} AND version = {m}")

    # -- making the tables -------------------------------------------------

    def prepare(self) -> None:
        """The feature's tables, made if the store has none yet, when a
        route first uses the store (not as the app is built, nor by the
        sender, which finds no subscription in tables not made: a store
        that is read-only serves all the same; on PostgreSQL under a lock,
        so that processes starting at once wait for the first rather than
        race in its catalogue)."""
        if not self.found():
            def made(db: Any) -> None:
                if self.postgres:
                    db.execute("SELECT pg_advisory_xact_lock(hashtext('usersvc_webhooks'))")
                for statement in tables(self.postgres):
                    db.execute(statement)
            self._atomically(made, reads_only=False)
            self.prepared = True

    def found(self) -> bool:
        """Whether the tables are there (looked at in a read until they are)."""
        if not self.prepared:
            self.prepared = bool(self._atomically(lambda db: db.execute(
                "SELECT to_regclass('usersvc_webhook_positions') IS NOT NULL" if self.postgres
                else "SELECT count(*) FROM sqlite_master "
                     "WHERE name = 'usersvc_webhook_positions'").fetchone()[0]))
        return self.prepared

    # -- the routes' ----------------------------------------------------------

    def create(self, made: Subscription) -> Subscription:
        def run(db: Any) -> int:
            (made_id,) = db.execute(self.insert, _row(made)[1:]).fetchone()
            for plural, seq in made.delivered.items():
                db.execute(self.start, (made_id, plural, seq))
            return int(made_id)
        return replace(made, id=self._step(run, reads_only=False))

    def get(self, subscription_id: int) -> Subscription | None:
        found = self._step(lambda db: self._read(db, f"WHERE id = {self.m}", (subscription_id,)))
        return found[0] if found else None

    def all(self) -> list[Subscription]:
        return self._step(lambda db: self._read(db, "ORDER BY id", ()))

    def change(self, subscription_id: int,
               change: Callable[[Subscription], Subscription]) -> Subscription | None:
        """``change`` of the subscription as it is, written in the same step
        (on PostgreSQL its row locked first: two changes one after the other)."""
        lock = " FOR UPDATE" if self.postgres else ""

        def run(db: Any) -> Subscription | None:
            found = self._read(db, f"WHERE id = {self.m}{lock}", (subscription_id,))
            if not found:
                return None
            before, after = found[0], change(_copy(found[0]))
            db.execute(self.update, (after.url, _collections(after.collections),
                                     int(after.enabled), after.failures, after.next_attempt,
                                     after.disabled_reason, subscription_id))
            for plural in before.delivered.keys() - after.delivered.keys():
                db.execute(f"DELETE FROM usersvc_webhook_positions WHERE subscription = {self.m} "
                           f"AND plural = {self.m}", (subscription_id, plural))
            for plural in after.delivered.keys() - before.delivered.keys():
                db.execute(self.start, (subscription_id, plural, after.delivered[plural]))
            after.version = before.version + 1
            return after
        return self._step(run, reads_only=False)

    def delete(self, subscription_id: int) -> bool:
        def run(db: Any) -> bool:
            db.execute(f"DELETE FROM usersvc_webhook_positions WHERE subscription = {self.m}",
                       (subscription_id,))
            deleted = db.execute(f"DELETE FROM usersvc_webhooks WHERE id = {self.m}",
                                 (subscription_id,)).rowcount
            return bool(deleted)
        return self._step(run, reads_only=False)

    # -- the sender's ---------------------------------------------------------

    def claim(self, holder: str, now: float, lease: float, renew: bool) -> list[Subscription]:
        """The subscriptions ``holder`` holds, after taking each enabled one
        nobody holds or whose lease ran out (and, with ``renew``, holding
        all it has until ``lease``), giving back the disabled ones. A look
        that would change nothing (the usual one: no subscription, or all
        held and no renewal due) writes nothing: it reads."""
        if not self.found():
            return []       # (no table yet: no subscription)
        m = self.m
        to_do = (f"SELECT count(*) FROM usersvc_webhooks WHERE (holder = {m} AND "
                 f"(enabled = 0 OR {m} = 1)) OR (enabled = 1 AND (holder IS NULL OR lease < {m}))")
        if not self._step(lambda db: db.execute(to_do, (holder, int(renew), now)).fetchone()[0]):
            return self._step(lambda db: self._read(db, f"WHERE holder = {m} ORDER BY id",
                                                    (holder,)))

        def run(db: Any) -> list[Subscription]:
            db.execute(f"UPDATE usersvc_webhooks SET holder = NULL, lease = 0 "
                       f"WHERE holder = {m} AND enabled = 0", (holder,))
            db.execute(f"UPDATE usersvc_webhooks SET holder = {m}, lease = {m} WHERE enabled = 1 "
                       f"AND (holder IS NULL OR lease < {m})", (holder, lease, now))
            if renew:
                db.execute(f"UPDATE usersvc_webhooks SET lease = {m} WHERE holder = {m}",
                           (lease, holder))
            return self._read(db, f"WHERE holder = {m} ORDER BY id", (holder,))
        return self._step(run, reads_only=False)

    def delivered(self, subscription_id: int, holder: str, plural: str, seq: int,
                  reset: bool, version: int) -> bool:
        """``seq`` delivered to the subscription in ``plural`` (never
        going back), if ``holder`` still holds it and it still covers
        ``plural`` (a PATCH may have dropped it since the sender last
        looked: its position is not written back), and it is as it was at
        ``version`` (no PATCH since, one that disabled it say: the change
        is then sent again, and a collection's start is not moved on);
        ``reset``: its failures forgotten too. Whether it was written: the
        runner goes on."""
        m = self.m

        def run(db: Any) -> bool:
            found = db.execute(f"SELECT collections FROM usersvc_webhooks "
                               f"WHERE id = {m} AND holder = {m} AND version = {m}",
                               (subscription_id, holder, version)).fetchone()
            if found is None or (found[0] is not None and plural not in json.loads(found[0])):
                return False
            db.execute(self.advance, (subscription_id, plural, seq))
            if reset:
                db.execute(f"UPDATE usersvc_webhooks SET failures = 0, next_attempt = NULL "
                           f"WHERE id = {m}", (subscription_id,))
            return True
        return self._step(run, reads_only=not reset)

    def failed(self, subscription_id: int, holder: str, state: Subscription) -> bool:
        """A failure's state written (``_FAILURE``'s fields of ``state``),
        if ``holder`` still holds the subscription as it was at
        ``state.version`` (a PATCH since, one that disabled it say, is not
        undone); one disabled given back. Whether it was written."""
        values = [getattr(state, name) for name in _FAILURE]
        values[_FAILURE.index("enabled")] = int(state.enabled)
        return bool(self._step(lambda db: db.execute(self.fail, (
            *values, holder if state.enabled else None, subscription_id, holder,
            state.version)).rowcount))

    def release(self, holder: str) -> None:
        """Every subscription ``holder`` holds, given back (it stops; no
        table yet: none held, and none made now)."""
        if not self.found():
            return
        self._step(lambda db: db.execute(
            f"UPDATE usersvc_webhooks SET holder = NULL, lease = 0 WHERE holder = {self.m}",
            (holder,)))

    # -- reading and steps ----------------------------------------------------

    def _read(self, db: Any, where: str, parameters: tuple[Any, ...]) -> list[Subscription]:
        found = [_subscription(row) for row in db.execute(f"{self.select} {where}", parameters)]
        if found:
            by_id = {s.id: s for s in found}
            ids = sorted(by_id)
            rows = db.execute(f"{self.positions} WHERE subscription IN "
                              f"({', '.join([self.m] * len(ids))})", ids).fetchall()
            for subscription_id, plural, seq in rows:
                by_id[subscription_id].delivered[plural] = seq
        return found

    def _step(self, run: Callable[[Any], T], reads_only: bool = True) -> T:
        """``run(db)`` in a step of the store's (``reads_only``: it reads,
        then makes one write at most, so the store need keep nothing to
        undo), the tables made first if this is the first."""
        if not self.prepared:
            self.prepare()
        return self._atomically(run, reads_only)

    def _atomically(self, run: Callable[[Any], T], reads_only: bool = True) -> T:
        result: T = self.storage.atomically((), lambda step: run(step.db),
                                            nothing_to_undo=reads_only)
        return result


def tables(postgres: bool) -> list[str]:
    """The feature's two tables, made if missing."""
    text, real, integer, big = (("text", "double precision", "integer", "bigint") if postgres
                                else ("TEXT", "REAL", "INTEGER", "INTEGER"))
    key = ("id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY" if postgres
           else "id INTEGER PRIMARY KEY AUTOINCREMENT")     # (an id never given again)
    return [f"""CREATE TABLE IF NOT EXISTS usersvc_webhooks (
                    {key},
                    url             {text} NOT NULL,
                    collections     {text},             -- a JSON list; NULL: every one
                    secret          {text} NOT NULL,
                    created         {real} NOT NULL,    -- Unix time
                    enabled         {integer} NOT NULL,
                    failures        {integer} NOT NULL, -- in a row
                    next_attempt    {real},             -- Unix time; NULL: at once
                    failed_status   {integer},          -- the last failure's answer,
                    failed_error    {text},             -- or what went wrong,
                    failed_at       {real},             -- and when
                    disabled_reason {text},
                    version         {integer} NOT NULL, -- moved on by each PATCH
                    holder          {text},             -- the process delivering it,
                    lease           {real} NOT NULL     -- until then (Unix time)
                )""",
            f"""CREATE TABLE IF NOT EXISTS usersvc_webhook_positions (
                    subscription {big} NOT NULL,
                    plural       {text} NOT NULL,
                    seq          {big} NOT NULL,        -- the last position delivered
                    PRIMARY KEY (subscription, plural)
                ){"" if postgres else " WITHOUT ROWID"}"""]


def _collections(collections: Iterable[str] | None) -> str | None:
    return None if collections is None else json.dumps(list(collections))


def _row(s: Subscription) -> tuple[Any, ...]:
    """A subscription as ``COLUMNS``' values."""
    return (s.id, s.url, _collections(s.collections), s.secret, s.created, int(s.enabled),
            s.failures, s.next_attempt, s.failed_status, s.failed_error, s.failed_at,
            s.disabled_reason, s.version)


def _subscription(row: tuple[Any, ...]) -> Subscription:
    (subscription_id, url, collections, secret, created, enabled, failures, next_attempt,
     failed_status, failed_error, failed_at, disabled_reason, version) = row
    return Subscription(int(subscription_id), url,
                        None if collections is None else tuple(json.loads(collections)),
                        secret, created, bool(enabled), failures, next_attempt, failed_status,
                        failed_error, failed_at, disabled_reason, version)
