"""``/<plural>/changes``: the change feed over HTTP, for clients that keep a
copy of a collection (docs/api.md, "Changes").

``GET`` takes ``after`` (a place, ``places``; default 0), ``limit`` (1 to 1,000, default 100)
and ``wait`` (0 to 30 seconds): the records changed after ``after``,
oldest first, each once, in its latest state or as a tombstone, and a
``rel="next"`` link to follow. With ``wait``, an empty answer is held until
a change is committed or the seconds pass; at most ``Waiting.most``
requests wait at once (then 503), and a server without threads does not
wait. The next link names the last entry and the store's history; a
place given by another history of the store is a 410 (``_found``). Every page of the collection links here too (``FEED_RELATION``), at
the position read before the page, so a client misses no change. Asked
for ``text/event-stream``, the same feed is pushed as it happens
(``events``), each stream holding one of the waiting slots.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from . import events, places, sparse
from .listing import parameters, query_of, whole_number
from .places import Place
from .problems import Problem
from .representation import DEFAULT, JSON, Format, Representations
from .request import Request, Response, Streamed
from .settings import DEFAULT_STREAM_SECONDS
from .storage import Nudge
from .storage.feed import Change
from .validation import Schema

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
MAX_WAIT = 30
KNOWN = ["after", "limit", "wait", "fields"]

#: The relation type of a page's link to the feed: an extension relation
#: type (RFC 8288 §2.1.2), a URI that names it and nothing else. A tag URI
#: (RFC 4151) needs no registry and is never fetched.
FEED_RELATION = "tag:usersvc.example,2026:changes"
#: The problem type (RFC 9457 §3.1.1: a tag URI, never fetched) of a place
#: in the feed another history of the store gave: drop what you hold.
ANOTHER_HISTORY = "tag:usersvc.example,2026:another-history"


class Waiting:
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
            self._slots.release()           # type: ignore[union-attr]

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


def feed_url(req: Request, schema: Schema, after: str, limit: int | None = None) -> str:
    """The feed's URL from the place ``after`` (``places``)."""
    url = f"{req.base_url}/{schema.plural}/changes?after={after}"
    return url if limit is None else f"{url}&limit={limit}"


#: How ``Changes`` answers in a representation: ``answer(req, fmt, one,
#: limit, wait, names)``, from the query's parameters (``one``), checked.
Answer = Callable[[Request, Format, dict[str, str], int, int, tuple[str, ...] | None], Response]


class Changes:
    """``/<plural>/changes``: the records changed after a position.

    Negotiation picks the representation (``offers``), and ``answers``
    says how the feed is answered in it: a page of changes (JSON, XML), or
    the changes pushed as they happen (``text/event-stream``, ``events``);
    ``offer`` adds one, and how it is answered, together."""

    def __init__(self, schema: Schema, store: Any, representations: Representations,
                 waiting: Waiting, stream_seconds: float = DEFAULT_STREAM_SECONDS) -> None:
        self.schema, self.store, self.representations = schema, store, representations
        self.waiting, self.stream_seconds = waiting, stream_seconds
        #: What ``Accept`` may ask for, and how each format picked is answered.
        self.offers = DEFAULT
        self.answers: dict[Format, Answer] = dict.fromkeys(DEFAULT.formats, self._page)
        self.offer({events.EVENT_STREAM: events.EVENTS}, self._stream)

    def offer(self, offers: dict[str, Format], answer: Answer) -> None:
        """The feed in more representations (``offers``: media type and
        format, as ``Offers``), each format picked answered by ``answer``."""
        self.offers = self.offers.plus(offers)
        self.answers.update(dict.fromkeys(offers.values(), answer))

    def on_get(self, req: Request, fmt: Format) -> Response:
        one = parameters(query_of(req), KNOWN, f"/{self.schema.plural}/changes")
        limit = whole_number(one, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT)
        wait = whole_number(one, "wait", 0, 0, MAX_WAIT)
        names = sparse.named(self.schema, one)       # fields=: id and those
        return self.answers[fmt](req, fmt, one, limit, wait, names)

    def _page(self, req: Request, fmt: Format, one: dict[str, str], limit: int, wait: int,
              names: tuple[str, ...] | None) -> Response:
        """A page of the feed: the changes after ``after``, waited for up to
        ``wait`` seconds when there are none."""
        place = self._after(one)
        after = self._found(req, place, limit)
        found = self.store.changes(after=after, limit=limit)
        if not found and wait and req.environ.get("wsgi.multithread", True):
            with self.waiting.slot():
                self.store.wait(after, wait)
            found = self.store.changes(after=after, limit=limit)
        body = fmt.join_changes([self._entry(fmt, change, names) for change in found])
        last = places.named(found[-1], self.store.history) if found else str(place)
        return Response(200, body, [
            ("Content-Type", fmt.media_type),
            ("Link", f'<{feed_url(req, self.schema, last, limit)}>; rel="next"'),
            # The same URL answers more as changes come: never reuse an answer.
            ("Cache-Control", "no-store")])

    @staticmethod
    def _after(one: dict[str, str]) -> Place:
        """The place ``after`` names (default 0); 400 if it names none."""
        place = places.read(one.get("after", "0"))
        if place is None:
            raise Problem(400, f"The query parameter after must be {places.SAID}.")
        return place

    def _found(self, req: Request, place: Place, limit: int) -> int:
        """Where the feed is read from: a bare number as asked (no read);
        a named place checked (``places.found``): another history's is a
        410 whose ``Link`` is the feed from the start of this one, where
        the client goes once it has dropped every record it holds."""
        if place.history is None:
            return place.seq
        seq = places.found(place, self.store)
        if seq is None:
            start = feed_url(req, self.schema, places.at(0, self.store.history), limit)
            raise Problem(410, "This place in the feed was given by another history of the "
                               "store (restarted, or put back from an older copy): drop every "
                               "record you hold and read the feed again from the start, "
                               f"{start}.", type=ANOTHER_HISTORY,
                          headers=[("Link", f'<{start}>; rel="next"'),
                                   ("Cache-Control", "no-store")])
        return seq

    def _entry(self, fmt: Format, change: Change, names: tuple[str, ...] | None) -> bytes:
        """A change as the feed's entry in ``fmt``: the record as a GET
        gives it (its kept encoding; ``fields=``: id and those), or a tombstone."""
        record = change.record
        return fmt.render_change(
            self.schema, change.seq, change.id,
            None if record is None else self.representations.one(record, fmt) if names is None
            else sparse.render(fmt, self.schema, record, names))

    def _stream(self, req: Request, fmt: Format, one: dict[str, str], limit: int, wait: int,
                names: tuple[str, ...] | None) -> Response:
        """The feed as Server-Sent Events (``events``), holding a waiting slot
        for its life: past them, ``events.busy`` (come back after the
        retry); without threads, the changes so far. ``limit`` and ``wait``
        are checked, and a stream needs neither: it reads as it goes, and
        waits for its life (``stream_seconds``)."""
        after = self._after(one) if "after" in one else None
        start = events.start(req, after, self.store)
        history = self.store.history
        headers = [("Content-Type", events.EVENT_STREAM), ("Cache-Control", "no-store"),
                   ("X-Accel-Buffering", "no")]     # (nginx: send each event as it comes)
        threads = req.environ.get("wsgi.multithread", True)
        nudge = self.waiting.take(stream=True) if threads else None
        if threads and nudge is None:
            return Streamed(req, events.busy(self.waiting), headers)
        release = None if nudge is None else lambda: self.waiting.give_back(nudge, stream=True)
        return Streamed(req, events.Events(
            self.store, lambda change: events.event(change, self._entry(JSON, change, names), history),
            start, seconds=self.stream_seconds, stopped=lambda: self.waiting.stopped,
            release=release, nudge=nudge), headers)
