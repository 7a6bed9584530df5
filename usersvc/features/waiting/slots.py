"""The waiting places: how many requests may wait for changes at once
(long-polls and streams alike), for the ``waiting`` feature (``App.waiting``)."""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from ...problems import Problem
from .watch import Nudge


class Slots:
    """At most ``most`` requests waiting for changes at once: long-polls and
    streams (``events``) alike; ``stopped`` once the server is stopping.

    A stream whose client has gone (a browser tab closed, a page left)
    learns it only when a write fails, and holds its slot until then: up
    to two keep-alives. So a request that finds every slot taken nudges
    each stream holding one to write at once (``events.PROBES``), and is
    turned away at once: it does not wait, so that it never holds a thread
    an ordinary request needs. A gone stream's write fails a moment later,
    and its slot goes to the next request that asks (a page turned away
    asks again after its ``retry``)."""

    def __init__(self, most: int) -> None:
        if most < 0:
            raise ValueError("the number of waiting requests cannot be negative")
        self.most = most
        self.now = 0                        # requests waiting (for metrics),
        self.streams = 0                    # of which streams
        self.stopped = False
        #: Told of each change to them: ``watcher(n, stream)``.
        self.watchers: list[Callable[[int, bool], None]] = []
        self._slots = threading.BoundedSemaphore(most) if most else None
        self._counting = threading.Lock()
        self._nudges: set[Nudge] = set()    # the streams', while they hold a slot

    def take(self, stream: bool = False) -> Nudge | None:
        """One of the slots, if one is free: with the ``Nudge`` that asks
        its holder to write, if a stream (hand it back with ``give_back``,
        as the request ends). ``None`` at once if none is free, the streams
        holding them nudged."""
        if self._slots is None:
            return None
        if not self._slots.acquire(blocking=False):
            with self._counting:
                nudges = list(self._nudges)
            for nudge in nudges:
                nudge.set()
            return None
        nudge = Nudge()
        try:
            self._count(1, stream, nudge)
        except BaseException:           # a watcher failed (a metrics file): the slot is free
            self.give_back(nudge, stream)
            raise
        return nudge

    def give_back(self, nudge: Nudge, stream: bool = False) -> None:
        """The slot ``take`` gave, free again, whatever a watcher does."""
        try:
            self._count(-1, stream, nudge)
        finally:
            self._slots.release()           # type: ignore[union-attr]  # (set whenever a slot was taken)

    @contextmanager
    def slot(self) -> Iterator[None]:
        """Hold one of the slots while waiting; 503 if none is free."""
        nudge = self.take()
        if nudge is None:
            if not self.most:       # (never: trying again is no use)
                raise Problem(503, f"{self.full()} Ask without wait.")
            raise Problem(503, f"{self.full()} Try again, or ask without wait.",
                          headers=[("Retry-After", "1")])
        try:
            yield
        finally:
            self.give_back(nudge)

    def full(self) -> str:
        """Why a request may not wait for changes now, as its client is told."""
        if not self.most:
            return "This server lets no request wait for changes (its max_waiting is 0)."
        return (f"{self.most} requests are already waiting for changes, as many as may wait "
                f"at once.")

    def _count(self, n: int, stream: bool, nudge: Nudge) -> None:
        """One more (``n`` 1) or one fewer (-1) waiting, then the watchers told."""
        with self._counting:
            self.now += n
            self.streams += n if stream else 0
            if n > 0 and stream:
                self._nudges.add(nudge)
            elif n < 0:
                self._nudges.discard(nudge)
        for watcher in self.watchers:
            watcher(n, stream)
