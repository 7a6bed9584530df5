"""Delivering: each subscription's changes POSTed in feed order, each
until its receiver answers 2xx, on threads beside the server's workers
(docs/decisions.md, "Webhooks: the feed is the outbox").

``Sender``, one an app, runs the scheduler (a thread, ``usersvc-webhooks``):
every ``LOOK`` seconds, or at once when a route changed a subscription,
it takes the subscriptions nobody holds (``Kept.claim``), renews its
lease on those it holds every ``RENEW`` seconds, and starts a ``Runner``
for each it holds (``runner``); it also ends any attempt past its deadline. A
``Runner`` (a thread a subscription) reads the next entry past its
position in each collection the subscription covers, in turn, POSTs it
(``targets.post``, signed: ``signing``) and, once answered 2xx, writes
the new position; otherwise the failure and when to try again
(``options``' schedule, or ``Retry-After``), or disables the subscription
(``410 Gone``, the schedule exhausted). Runners wake on the store's
announcements of commits (``CommitsAnnounced``), and look anyway every
``LOOK`` seconds. An announcement (on the thread that committed, a
request's perhaps) sets a flag and wakes the scheduler, which wakes them.
"""
from __future__ import annotations

import contextlib
import logging
import queue
import secrets
import threading
import time
from collections.abc import Callable
from typing import Any

from ...changes import Changes
from ...storage.protocol import CommitsAnnounced
from . import signing, targets
from .kept import Kept, Subscription, _copy
from .messages import Pending
from .options import Options
from .runner import LOOK, Runner

log = logging.getLogger("usersvc.webhooks")

#: Seconds between two looks while this sender holds no subscription (while
#: it holds some: ``LOOK``, as a runner's): one made by another process is
#: taken within them (this one's routes say so at once); between two
#: renewals of the leases held; the shortest lease.
IDLE_LOOK = 5.0
RENEW = 5.0
SHORTEST_LEASE = 30.0
#: Seconds a stop waits for the threads to end.
STOP_WAIT = 3.0
#: What an attempt came to, as ``Sender.outcomes`` counts it (the metrics
#: show them): ``delivered`` (2xx), ``failed`` (to be tried again),
#: ``gone`` (a 410: the subscription disabled), ``exhausted`` (the last
#: retry failed: disabled). An attempt abandoned as the server stops is none.
OUTCOMES = ("delivered", "failed", "gone", "exhausted")


class Sender:
    """One app's deliveries: ``kept`` where subscriptions are, ``options``
    its settings, ``storage`` the store whose commits wake it."""

    def __init__(self, kept: Kept, options: Options, storage: Any) -> None:
        self.kept, self.options, self.storage = kept, options, storage
        self.holder = ""        # this sender, as a lease names it: made as it starts, in
        #                         the process that serves (a master's forked workers share none)
        self.lease = max(SHORTEST_LEASE, 2 * options.timeout + 2 * RENEW)
        self.feeds: dict[str, Changes] = {}         # each collection's, as the app adds it
        self.held: dict[int, Subscription] = {}     # as the last look read them
        self.valid_until = 0.0                      # the leases held, renewed last (Unix time)
        self.stopping = False
        self._runners: dict[int, Runner] = {}
        self._looks = 0                             # looks begun
        self._ended: dict[int, int] = {}            # a runner's end: looks begun by then
        self._changed: dict[int, int] = {}          # a route's change here: looks begun by then
        self._attempts: set[targets.Attempt] = set()
        self._lock = threading.Lock()
        self._wake: queue.SimpleQueue[None] = queue.SimpleQueue()    # a put ends its wait
        self._poked = True                          # a look asked for now
        self._committed = False                     # a commit announced: runners to wake
        self._thread: threading.Thread | None = None
        self._stop_listening: Any = None
        #: Attempts made by this process, by outcome (``OUTCOMES``), and
        #: who is told of each (``counted``): what the metrics read.
        self.outcomes = dict.fromkeys(OUTCOMES, 0)
        self.watchers: list[Callable[[str], None]] = []

    # -- as the app is built and served ---------------------------------------

    def add_feed(self, changes: Changes) -> None:
        """A feed the app serves (``App.feed_hooks``): deliverable from now."""
        self.feeds[changes.schema.plural] = changes

    def serving(self) -> None:
        """This process serves (the feature's starter: its first request; or
        a server that says so as it starts): the first time, the scheduler starts
        where other processes may make subscriptions (else the first
        subscription made here starts it). Not as the app is built: a
        server's master (gunicorn's ``--preload``, uWSGI) builds it, serves
        nothing and forks its workers, which would be copied from it
        mid-write to the store."""
        if self._thread is None and self.kept.shared:
            self._start()

    def poke(self) -> None:
        """A subscription was made or changed here: look now."""
        self._poked = True
        self._wake.put(None)
        self._start()

    def changed(self, subscription_id: int, now: Subscription | None) -> None:
        """A route here changed a subscription (``now``; ``None``: deleted
        it). If this sender holds it, its runner takes the change in before
        its next attempt (only an attempt begun already may still land);
        a look is made at once (``poke``), and none begun before the change
        puts back what it read (``_hold``). Held by another process, that
        one learns of it at its next look, within ``LOOK`` seconds."""
        with self._lock:
            self._changed[subscription_id] = self._looks
            mine = self.held.get(subscription_id)
            if mine is not None and (now is None or now.version > mine.version):
                held = dict(self.held)      # (two PATCHes at once: the later one's kept)
                if now is None or not now.enabled:
                    del held[subscription_id]
                else:
                    held[subscription_id] = _copy(now)
                self.held = held
        self.poke()

    def _start(self) -> None:
        with self._lock:
            if self._thread is None and not self.stopping:
                self.holder = secrets.token_hex(8)
                self._thread = threading.Thread(target=self._schedule, daemon=True,
                                                name="usersvc-webhooks")
                self._thread.start()

    def stop(self) -> None:
        """The server stops, or the app closes (``App.stoppers``,
        ``on_close``): every wait ends, every attempt in flight is
        abandoned (it is sent again later), the threads end within a few
        seconds, and the leases are given back. Never raises."""
        self._stopping()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(STOP_WAIT)

    def _stopping(self) -> None:
        self.stopping = True
        self._wake.put(None)
        with self._lock:
            runners, attempts = list(self._runners.values()), list(self._attempts)
        for runner in runners:
            runner.nudge()
        for attempt in attempts:
            attempt.abandon()

    def _told(self, plural: str | None) -> None:
        """The store's announcement: a commit changed ``plural`` (``None``:
        the store closed), on the committing thread (a request's, perhaps).
        Quick: a flag raised, and the scheduler woken (one call in C) if it was down."""
        if plural is None:
            self._stopping()
        elif not self._committed:
            self._committed = True
            self._wake.put(None)

    # -- the scheduler ----------------------------------------------------------

    def _schedule(self) -> None:
        next_look, renewed, failing = 0.0, 0.0, False
        while not self.stopping:
            while not self._wake.empty():   # (a wake from now on ends the wait below at once)
                self._wake.get()
            if self._committed:     # (read after: a commit's wake is never lost)
                self._committed = False
                with self._lock:
                    runners = list(self._runners.values())
                for runner in runners:
                    runner.nudge()
            now, clock = time.time(), time.monotonic()
            if self._poked or clock >= next_look:
                self._poked, next_look = False, clock + LOOK
                renew = now - renewed >= RENEW
                with self._lock:
                    self._looks += 1
                    look = self._looks
                try:
                    held = self.kept.claim(self.holder, now, now + self.lease, renew)
                except Exception as e:   # the store down, busy: the next look tries again
                    if not failing:
                        log.warning("webhooks: cannot read the subscriptions (%s); "
                                    "trying again every %g s", type(e).__name__, LOOK)
                    failing = True
                else:
                    failing = False
                    if renew:
                        renewed, self.valid_until = now, now + self.lease
                    self._hold(held, look)
                    if not held:
                        next_look = clock + IDLE_LOOK
            deadline = self._end_overdue()
            with contextlib.suppress(queue.Empty):
                self._wake.get(timeout=max(0.0, min(next_look, deadline) - time.monotonic()))
        self._end()

    def _hold(self, held: list[Subscription], look: int) -> None:
        """The subscriptions this sender holds now, as the ``look``-th look
        read them: a runner for each, each told to look again (a route may
        have changed its subscription); none started again from a look
        begun before its last runner ended (that one disabled it, perhaps:
        the look may have read it before), and a subscription a route here
        changed after the look began kept as the route left it (``changed``)."""
        if held and self._stop_listening is None and isinstance(self.storage, CommitsAnnounced):
            self._stop_listening = self.storage.announce_commits(self._told)
        with self._lock:
            fresh = {s.id: s for s in held}
            for changed_id, begun in list(self._changed.items()):
                mine, read = self.held.get(changed_id), fresh.get(changed_id)
                if begun < look:            # (this look read the change)
                    del self._changed[changed_id]
                elif mine is None:          # (deleted, disabled, or not held here)
                    fresh.pop(changed_id, None)
                elif read is None or read.version <= mine.version:
                    fresh[changed_id] = mine
            self.held = fresh
            self._ended = {ended: n for ended, n in self._ended.items() if n >= look}
            for subscription in fresh.values():
                runner = self._runners.get(subscription.id)
                if runner is None and self._ended.get(subscription.id, 0) >= look:
                    continue
                if runner is None:
                    runner = self._runners[subscription.id] = Runner(self, subscription)
                    runner.thread.start()
                runner.nudge()

    def _end_overdue(self) -> float:
        """Every attempt past its deadline abandoned; the next deadline
        (``time.monotonic``), or ``inf``."""
        with self._lock:
            attempts = list(self._attempts)
        now, soonest = time.monotonic(), float("inf")
        for attempt in attempts:
            if attempt.deadline <= now:
                attempt.abandon()
            else:
                soonest = min(soonest, attempt.deadline)
        return soonest

    def _end(self) -> None:
        """The scheduler stops: the runners, then the leases given back."""
        deadline = time.monotonic() + STOP_WAIT
        with self._lock:
            runners = list(self._runners.values())
        for runner in runners:
            runner.thread.join(max(0.0, deadline - time.monotonic()))
        if self._stop_listening is not None:
            self._stop_listening()
        try:
            self.kept.release(self.holder)
        except Exception:       # (a store closed first: the leases run out)
            log.debug("webhooks: the leases could not be given back", exc_info=True)

    def gone(self, runner: Runner) -> None:
        """A runner ended: the next look starts another if it still holds
        (a PATCH since: one with what it says), within ``LOOK`` seconds."""
        with self._lock:
            if self._runners.get(runner.id) is runner:
                del self._runners[runner.id]
                self._ended[runner.id] = self._looks

    # -- attempts ------------------------------------------------------------------

    def counted(self, outcome: str) -> None:
        """An attempt's outcome, counted and told to each watcher (a
        watcher that fails stops no delivery)."""
        with self._lock:
            self.outcomes[outcome] += 1
        for watcher in self.watchers:
            try:
                watcher(outcome)
            except Exception:
                log.debug("webhooks: a watcher of outcomes failed", exc_info=True)

    def may_attempt(self) -> bool:
        """Whether an attempt begun now ends within the leases held."""
        return time.time() + self.options.timeout + RENEW < self.valid_until

    def send(self, subscription: Subscription, message: Pending,
             line: targets.Line) -> targets.Outcome | None:
        """One attempt to deliver ``message``, signed now, within the
        time-out (the scheduler abandons it past its deadline), on
        ``line``'s connection if it has one there (``targets.post``);
        ``None``, not sent, if the server stops or a route here has changed
        the subscription since ``subscription`` was read (``changed``: under
        the same lock, so that an attempt begun is one begun before it)."""
        attempt = targets.Attempt(time.monotonic() + self.options.timeout)
        with self._lock:
            held = self.held.get(subscription.id)
            if self.stopping or held is None or held.version != subscription.version:
                return None
            self._attempts.add(attempt)
        self._wake.put(None)        # (the scheduler's next wake: this deadline, if sooner)
        try:
            stamp = int(time.time())
            headers = signing.headers(signing.key_of(subscription.secret), message.message_id,
                                      stamp, message.body)
            return targets.post(subscription.url, message.body, headers,
                                self.options.allow_private, self.options.timeout, attempt, line)
        finally:
            with self._lock:
                self._attempts.discard(attempt)
