"""One subscription's deliveries (``Runner``), in order, on a thread of
its own while its ``Sender`` holds it (``sender``; docs/decisions.md,
"Webhooks: the feed is the outbox"): the next entry past its position in
each collection it covers, in turn, POSTed until answered 2xx, then the
position written; otherwise the failure and the next attempt's time
(``options``' schedule, or ``Retry-After``), or the subscription
disabled (``410 Gone``, the schedule exhausted).
"""
from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING

from ...storage.errors import StoreUnavailable
from . import targets
from .kept import Subscription
from .messages import Pending, pending

if TYPE_CHECKING:       # (the sender makes its runners: it imports this module)
    from .sender import Sender

log = logging.getLogger("usersvc.webhooks")

#: Seconds between a runner's looks at its feeds when nothing woke it (and
#: the sender's looks for subscriptions to take).
LOOK = 1.0


class Runner:
    """One subscription's deliveries, in order, on a thread of its own,
    while its sender holds it and it is enabled."""

    def __init__(self, sender: Sender, subscription: Subscription) -> None:
        self.sender, self.id = sender, subscription.id
        self.state, self.version = subscription, subscription.version
        self.message: Pending | None = None     # being delivered: made once, retried as made
        self.turn = 0                           # the collection to look at first next time
        self.line = targets.Line()              # its connection, kept while it is busy
        self._woken = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True,
                                       name=f"usersvc-webhook-{subscription.id}")

    def nudge(self) -> None:
        self._woken.set()

    def run(self) -> None:
        try:
            self.deliver()
        except StoreUnavailable as e:   # (busy, down: the next look starts it again)
            if not self.sender.stopping:
                log.warning("webhook %d: the store cannot be written now (%s); delivering "
                            "goes on at the next look", self.id, e)
        except Exception:       # a bug's (or the store closing): the next look starts it again
            if not self.sender.stopping:
                log.exception("webhook %d: delivering failed", self.id)
        finally:
            self.line.close()
            self.sender.gone(self)

    def deliver(self) -> None:
        sender = self.sender
        while not sender.stopping and self.refresh():
            self._woken.clear()     # (a nudge from now on ends the next wait)
            if self.message is None:
                self.message = self.next_message()
            message = self.message
            wait = (self.state.next_attempt or 0.0) - time.time()
            if message is None or wait > 0 or not sender.may_attempt():
                if not self._woken.wait(min(wait, LOOK) if wait > 0 else LOOK):
                    self.line.close()       # (a whole look idle: its connection closed)
                continue
            outcome = sender.send(self.state, message, self.line)
            if outcome is None:
                continue        # (not sent: changed by a route since, or stopping)
            if sender.stopping and not outcome.delivered:
                return          # (abandoned as the server stops: not the receiver's failure)
            if not self.settle(message, outcome):
                return

    def refresh(self) -> bool:
        """The subscription as the scheduler last read it, if this sender
        still holds it and it is enabled; a change made to it (a ``PATCH``:
        its ``version``) taken in, positions never going back."""
        current = self.sender.held.get(self.id)
        if current is None or not current.enabled:
            return False
        if current.version != self.version:
            mine = self.state
            delivered = {plural: max(seq, mine.delivered.get(plural, seq))
                         for plural, seq in current.delivered.items()}
            if current.failures or current.next_attempt is not None:    # (not reset: ours)
                current.failures, current.next_attempt = mine.failures, mine.next_attempt
            current.delivered, self.state, self.version = delivered, current, current.version
            if self.message is not None and not current.covers(self.message.plural):
                self.message = None
        return True

    def next_message(self) -> Pending | None:
        """The next change to deliver: the first past the position in the
        collections covered, taken in turn from ``turn``; a collection
        covered and never delivered from (every collection's, served
        since) starts at its end, recorded. ``None``: nothing to deliver."""
        sender, state = self.sender, self.state
        plurals = [plural for plural in sender.feeds if state.covers(plural)]
        for n in range(len(plurals)):
            plural = plurals[(self.turn + n) % len(plurals)]
            changes = sender.feeds[plural]
            after = state.delivered.get(plural)
            if after is None:
                after = changes.records.position()
                if not sender.kept.delivered(self.id, sender.holder, plural, after, False,
                                             self.version):
                    return None
                state.delivered[plural] = after
            found = changes.records.changes(after=after, limit=1)
            if found:
                self.turn = (self.turn + n + 1) % len(plurals)
                return pending(changes, found[0])
        return None

    def settle(self, message: Pending, outcome: targets.Outcome) -> bool:
        """The outcome of an attempt to deliver ``message`` written: the
        position moved on, or the failure, the next attempt's time, the
        subscription disabled. Whether to go on (still held, still enabled)."""
        sender, state = self.sender, self.state
        now = time.time()
        if outcome.delivered:
            sender.counted("delivered")
            reset = state.failures > 0 or state.next_attempt is not None
            if not sender.kept.delivered(self.id, sender.holder, message.plural, message.seq,
                                         reset, self.version):
                return False
            state.delivered[message.plural] = message.seq
            state.failures, state.next_attempt, self.message = 0, None, None
            return True
        state.failures += 1
        state.failed_status, state.failed_error, state.failed_at = (
            outcome.status, outcome.error, now)
        said = f"HTTP {outcome.status}" if outcome.status is not None else outcome.error
        retries = sender.options.retries
        if outcome.status == 410:
            sender.counted("gone")
            self.disable("the receiver answered 410 Gone")
        elif state.failures > len(retries):
            sender.counted("exhausted")
            self.disable(f"{state.failures} attempts in a row failed, the last: {said}")
        else:
            sender.counted("failed")
            delay = max(retries[state.failures - 1], outcome.retry_after or 0.0)
            state.next_attempt = now + delay
            log.info("webhook %d: %s not delivered (%s); next attempt in %g s",
                     self.id, message.message_id, said, delay)
        return sender.kept.failed(self.id, sender.holder, state) and state.enabled

    def disable(self, reason: str) -> None:
        self.state.enabled, self.state.next_attempt = False, None
        self.state.disabled_reason = reason
        log.warning("webhook %d: disabled: %s", self.id, reason)
