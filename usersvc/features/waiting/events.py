"""``/<plural>/changes`` pushed as it happens: Server-Sent Events (WHATWG
HTML, "Server-sent events"), what a browser's ``EventSource`` reads and
reconnects to by itself (docs/api.md, "Live changes").

A GET that prefers ``text/event-stream`` gets a stream: first ``retry:``
(how long a client waits before it reconnects) and ``id:`` the place it
starts from (``places``), with no data (so a client that reconnects before
any change resumes there, not from the end), then each change after that
position, oldest first, as an event: ``id:`` its place, ``event: change``
(or ``delete``, a tombstone), ``data:`` the feed's JSON entry. The start
is ``Last-Event-ID`` (which ``EventSource`` sends when it reconnects),
else ``after``, else the feed's end; a place another history of the store
gave starts from 0, after ``event: reset`` (``start``). Between changes a comment every
``KEEP_ALIVE`` seconds keeps proxies from closing the connection; after
``stream_seconds`` the stream ends and the client resumes from its last
event, missing nothing.

A stream waits as a long-poll does, on its feed's ``watch.Watch``, and holds one
of the same slots (``slots.Slots``) for its life: past them, the answer is a
200 with a ``retry:`` and an event ``busy`` (``busy``; a 503 would make
``EventSource`` give up for good). A server without threads holds no
stream: the changes so far, then the end. When the server stops
(``App.stop_waiting``) every stream ends.
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable, Generator, Iterator
from typing import Any

from ... import places
from ...places import Place
from ...problems import Problem
from ...representation.json_format import JSONFormat
from ...request import Request
from .watch import Nudge

EVENT_STREAM = "text/event-stream"
#: Seconds between keep-alive comments while nothing changes (proxies
#: close a connection idle for 60 s by default: nginx, AWS's balancers).
KEEP_ALIVE = 15.0
#: What a client waits, in milliseconds, before it connects again: after a
#: stream's end; and when every waiting slot was taken (``busy``).
RETRY_MS = 2000
#: Keep-alives written a moment apart when a stream is nudged: the first
#: write to a client that has gone is taken by the kernel (its reset comes
#: back), and one a round trip later fails.
PROBES, PROBE_SECONDS = 4, 0.2
#: The most changes read from the store at once.
READ_AT_ONCE = 1000


class EventStreamFormat(JSONFormat):
    """What negotiation picks for ``Accept: text/event-stream`` on a feed:
    the events' data is the feed's JSON entries."""

    name = "events"
    media_type = EVENT_STREAM


EVENTS = EventStreamFormat()


def start(req: Request, after: Place | None, feed: Any) -> tuple[int, bytes]:
    """Where a stream starts, and its first block: ``Last-Event-ID``, else
    ``after``, else the feed's end; 400 for a ``Last-Event-ID`` that is
    not a place (``places``).

    A place another history of the store gave (a memory store since
    restarted, a file put back from an older copy: ``places.found``)
    starts the stream from 0, and its first block is ``event: reset``: the
    client drops every record it holds, and is sent every record as it is.
    A bare ``after`` is taken as asked, as the JSON feed takes it: a client
    chose that number; a browser's reconnection did not."""
    last = req.header("Last-Event-ID")
    given = after if last is None else places.read(last)
    if given is None and last is not None:
        raise Problem(400, f"The Last-Event-ID header must be {places.SAID}.")
    if given is None:
        return opening(feed, feed.position())
    seq = given.seq if last is None and given.history is None else places.found(given, feed)
    if seq is None:
        return 0, b"retry: %d\nid: %s\nevent: reset\ndata: {}\n\n" % (
            RETRY_MS, places.at(0, feed.history).encode())
    return (seq, b"retry: %d\nid: %s\n\n" % (RETRY_MS, str(given).encode())) \
        if given.history is not None else opening(feed, seq)


def opening(feed: Any, seq: int) -> tuple[int, bytes]:
    """A stream from ``seq``, and its first block: ``retry:`` and the place
    of ``seq``, with no data."""
    return seq, b"retry: %d\nid: %s\n\n" % (RETRY_MS, places.of(feed, seq).encode())


class Events:
    """One stream's body (``request.Streamed``'s chunks): the events from
    ``after`` on, as they happen, until ``seconds`` pass or the server
    stops (``stopped()``), waiting between them with ``wait(after,
    seconds, nudge)`` (``Waits.wait``); without ``release`` (the waiting slot it holds:
    a server without threads), only those there are now. Nudged
    (``nudge``: another request wants a slot), it writes ``PROBES``
    keep-alives at once, a moment apart: a client that has gone is found by
    the write that fails (a WSGI app learns it no other way), and its slot
    handed back. ``Streamed`` logs what fails while it is made, and calls
    ``close`` once, whatever happens: the slot is handed back there."""

    def __init__(self, feed: Any, render: Callable[[Any], bytes], start: tuple[int, bytes], *,
                 seconds: float, stopped: Callable[[], bool],
                 wait: Callable[[int, float, Nudge | None], bool],
                 release: Callable[[], None] | None, nudge: Nudge | None = None) -> None:
        self.feed, self.render, self.wait = feed, render, wait
        self.after, self.first = start         # (``start``: where from, and the first block)
        self.seconds, self.stopped, self.nudge = seconds, stopped, nudge
        self.hold, self.release = release is not None, release
        self._events = self._made()

    def __iter__(self) -> Iterator[bytes]:
        return self._events

    def close(self) -> None:
        self._events.close()
        if self.release is not None:
            self.release()

    def _made(self) -> Generator[bytes, None, None]:
        yield self.first
        ends = time.monotonic() + self.seconds
        spoke = time.monotonic()
        after, probes = self.after, 0
        while True:
            found = self.feed.changes(after=after, limit=READ_AT_ONCE)
            if found:
                yield b"".join(map(self.render, found))
                after, spoke = found[-1].seq, time.monotonic()
                if len(found) == READ_AT_ONCE:
                    continue
            now = time.monotonic()
            if not self.hold or self.stopped() or now >= ends:
                return
            if probes or now - spoke >= KEEP_ALIVE:
                yield b": keep-alive\n\n"
                spoke, probes = now, max(probes - 1, 0)
            until = now + PROBE_SECONDS if probes else spoke + KEEP_ALIVE
            if not self.wait(after, min(ends, until) - now, self.nudge):
                return          # the server stops, or the store closed: nothing will come
            if self.nudge is not None and self.nudge.is_set:
                self.nudge.clear()
                probes = PROBES     # is its client still there? the writes will say


def busy(waiting: Any) -> list[bytes]:
    """A stream turned away, every one of the ``waiting`` places taken
    (``slots.Slots``; or none at all): when to come back (``retry:``)
    and an event ``busy`` that says so, with how many places there are
    (with no ``id:``: a client's last event id stays where it was), then
    the end. A page shows it ("not live") until a stream gets a place; an
    ``EventSource`` dispatches it to a ``busy`` listener, and comes back."""
    detail = waiting.full() + (" Come back after the retry." if waiting.most else
                               " Read the feed without waiting to follow it.")
    return [b"retry: %d\nevent: busy\ndata: %s\n\n"
            % (RETRY_MS, json.dumps({"detail": detail, "places": waiting.most}).encode())]


def event(change: Any, entry: bytes, history: str) -> bytes:
    """One change as an event: its place (``places.named``), its kind, the
    feed's entry."""
    kind = b"delete" if change.record is None else b"change"
    return b"id: %s\nevent: %s\ndata: %s\n\n" % (
        places.named(change, history).encode(), kind, entry)


__all__ = ["EVENTS", "EVENT_STREAM", "Events", "busy", "event", "opening", "start"]
