"""The ``waiting`` feature (``usersvc.hooks``): waiting for changes on
every change feed (docs/api.md, "Changes", "Live changes").

It adds to each feed, as the app adds it (``App.feed_hooks``): ``wait``
(0 to ``MAX_WAIT`` seconds), with which an empty page is held until a
change is committed or the seconds pass (a long-poll); and the feed
pushed as Server-Sent Events (``Accept: text/event-stream``, ``events``).
Both hold one of the app's waiting places (``slots.Slots``, ``App.waiting``:
``max_waiting`` of them; past them, a 503, or a stream told to come
back), and wait on the feed's ``watch.Watch``, which the store's
announcement of a commit of this process or another wakes (``watch``:
``CommitsAnnounced``, the one capability of a store it uses). When the
server stops (``App.stop_waiting``, through ``App.stoppers``) every wait
and stream ends. A server without threads holds no request: it answers
what there is. Its settings: ``max_waiting``, ``stream_seconds``.

Without it (the plain core) a feed answers at once, takes no ``wait``
(an unknown parameter: a 400) and offers no stream (a 406); nothing
listens to the store, so it never starts looking for other processes'
commits.
"""
from __future__ import annotations

from typing import Any

from ...changes import Changes, FeedFormat
from ...listing import whole_number
from ...representation.json_format import JSON, Format
from ...request import Request, Response
from . import events
from .slots import Slots
from .streamed import Streamed
from .watch import Nudge, Watches

#: The most seconds a request may wait for a change (``wait=``).
MAX_WAIT = 30


class WaitingFeature:
    """Plugs ``wait=`` and the stream into every feed, and ``App.waiting``."""

    name = "waiting"

    def plug(self, app: Any, storage: Any, plugged: dict[str, Any]) -> Slots:
        settings = app.settings
        waiting = app.waiting = Slots(settings.max_waiting)
        watches = Watches(storage)
        app.feed_hooks.append(lambda changes: Waits(changes, waiting, watches,
                                                    settings.stream_seconds))

        def stop() -> None:
            """The server stops: every wait and stream ends, every later one at once."""
            waiting.stopped = True
            watches.close()
        app.stoppers.append(stop)
        app.on_close(watches.stop)
        return waiting


class Waits:
    """What waiting adds to one feed (``changes.Changes``): its pages take
    ``wait``, and it is offered as a stream."""

    def __init__(self, changes: Changes, waiting: Slots, watches: Watches,
                 stream_seconds: float) -> None:
        self.changes, self.records = changes, changes.records
        self.waiting, self.stream_seconds = waiting, stream_seconds
        self.watches, self.watch = watches, watches.add(changes.schema.plural, changes.records)
        changes.parameters.insert(2, "wait")       # (after, limit, wait, fields: as named)
        for fmt in changes.offers.formats:
            changes.answers[fmt] = self.page
        changes.offer({events.EVENT_STREAM: events.EVENTS}, self.stream)

    def page(self, req: Request, fmt: FeedFormat, one: dict[str, str], limit: int,
             names: tuple[str, ...] | None) -> Response:
        """A page of the feed (``Changes.page``), held up to ``wait``
        seconds when it would be empty; at once without threads."""
        seconds = whole_number(one, "wait", 0, 0, MAX_WAIT)
        if not seconds or not req.environ.get("wsgi.multithread", True):
            return self.changes.page(req, fmt, one, limit, names)

        def wait(after: int) -> bool:
            with self.waiting.slot():
                self.wait(after, seconds)
            return True
        return self.changes.page(req, fmt, one, limit, names, wait)

    def wait(self, after: int, timeout: float, nudge: Nudge | None = None) -> bool:
        """Until a change past ``after`` (``Watch.wait``: false once the
        server stops or the store closes), the store listened to from now on."""
        self.watches.listen()
        return self.watch.wait(after, timeout, nudge)

    def stream(self, req: Request, fmt: Format, one: dict[str, str], limit: int,
               names: tuple[str, ...] | None) -> Response:
        """The feed as Server-Sent Events (``events``), holding a waiting slot
        for its life: past them, ``events.busy`` (come back after the
        retry); without threads, the changes so far. ``limit`` and ``wait``
        are checked, and a stream needs neither: it reads as it goes, and
        waits for its life (``stream_seconds``)."""
        whole_number(one, "wait", 0, 0, MAX_WAIT)
        changes, records = self.changes, self.records
        after = changes.place(one) if "after" in one else None
        start = events.start(req, after, records)
        history = records.history
        headers = [("Content-Type", events.EVENT_STREAM), ("Cache-Control", "no-store"),
                   ("X-Accel-Buffering", "no")]     # (nginx: send each event as it comes)
        threads = req.environ.get("wsgi.multithread", True)
        nudge = self.waiting.take(stream=True) if threads else None
        if threads and nudge is None:
            return Streamed(req, events.busy(self.waiting), headers)
        release = None if nudge is None else lambda: self.waiting.give_back(nudge, stream=True)
        return Streamed(req, events.Events(
            records,
            lambda change: events.event(change, changes.entry(JSON, change, names), history),
            start, seconds=self.stream_seconds, stopped=lambda: self.waiting.stopped,
            wait=self.wait, release=release, nudge=nudge), headers)


FEATURE = WaitingFeature()

__all__ = ["FEATURE", "MAX_WAIT", "Nudge", "Slots", "WaitingFeature", "Waits", "Watches"]
