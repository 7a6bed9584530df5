"""``/<plural>/changes``: the change feed over HTTP, for clients that keep a
copy of a collection (docs/api.md, "Changes").

``GET`` takes ``after`` (a place, ``places``; default 0) and ``limit`` (1
to 1,000, default 100): the records changed after ``after``, oldest
first, each once, in its latest state or as a tombstone, and a
``rel="next"`` link to follow. The next link names the last entry and the
store's history; a place given by another history of the store is a 410
(``_found``). Every page of the collection links here too
(``listing.FEED_RELATION``), at the position read before the page, so a client
misses no change.

The plain core answers at once. Waiting for changes (``wait=``, a
long-poll, and the feed pushed as Server-Sent Events) is a feature's
(``usersvc.features.waiting``): it adds the parameter (``parameters``),
the waiting (``page``'s ``wait``) and the representation (``offer``) to
each feed as the app adds it (``App.feed_hooks``, ``usersvc.hooks``).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from . import places
from .listing import feed_url, fields_named, parameters, whole_number
from .places import Place
from .problems import Problem
from .representation import DEFAULT, Format, Representations
from .request import Request, Response
from .schema import Schema
from .storage.feed import Change

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000

#: The problem type (RFC 9457 §3.1.1: a tag URI, never fetched) of a place
#: in the feed another history of the store gave: drop what you hold.
ANOTHER_HISTORY = "tag:usersvc.example,2026:another-history"


class FeedFormat(Format, Protocol):
    """A format a feed is offered in (JSON's, XML's): a ``Format`` that
    writes the feed's entries too, ``render_change(schema, seq, id,
    rendered)`` (``rendered``: the record's own bytes; ``None``: deleted),
    and a page of them, ``join_changes``."""

    def render_change(self, schema: Schema, seq: int, id: int, rendered: bytes | None) -> bytes: ...
    def join_changes(self, rendered: list[bytes]) -> bytes: ...


#: How ``Changes`` answers in a representation: ``answer(req, fmt, one,
#: limit, names)``, from the query's parameters (``one``), checked.
Answer = Callable[[Request, FeedFormat, dict[str, str], int, tuple[str, ...] | None], Response]


class Changes:
    """``/<plural>/changes``: the records changed after a position.

    Negotiation picks the representation (``offers``), and ``answers``
    says how the feed is answered in it: a page of changes (JSON, XML,
    ``page``); ``offer`` adds one, and how it is answered, together (the
    waiting feature's stream). ``parameters``: the query parameters it
    takes (a feature's added to them)."""

    def __init__(self, schema: Schema, records: Any, representations: Representations) -> None:
        self.schema, self.records, self.representations = schema, records, representations
        self.parameters = ["after", "limit", "fields"]
        #: What ``Accept`` may ask for, and how each format picked is answered.
        self.offers = DEFAULT
        self.answers: dict[Format, Answer] = dict.fromkeys(DEFAULT.formats, self.page)

    def offer(self, offers: Mapping[str, FeedFormat], answer: Answer) -> None:
        """The feed in more representations (``offers``: media type and
        format, as ``Offers``), each format picked answered by ``answer``."""
        self.offers = self.offers.plus(offers)
        self.answers.update(dict.fromkeys(offers.values(), answer))

    def on_get(self, req: Request, fmt: FeedFormat) -> Response:
        one = parameters(req.parameters(), self.parameters, f"/{self.schema.plural}/changes")
        limit = whole_number(one, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT)
        names = fields_named(self.schema, one)       # fields=: id and those
        return self.answers[fmt](req, fmt, one, limit, names)

    def page(self, req: Request, fmt: FeedFormat, one: dict[str, str], limit: int,
             names: tuple[str, ...] | None,
             wait: Callable[[int], bool] | None = None) -> Response:
        """A page of the feed: the changes after ``after``. When there are
        none, ``wait(after)`` (the waiting feature's: until a change past
        ``after``, or its seconds pass) may hold the request; the feed is
        read again if it says so."""
        place = self.place(one)
        after = self._found(req, place, limit)
        found = self.records.changes(after=after, limit=limit)
        if not found and wait is not None and wait(after):
            found = self.records.changes(after=after, limit=limit)
        body = fmt.join_changes([self.entry(fmt, change, names) for change in found])
        last = places.named(found[-1], self.records.history) if found else str(place)
        return Response(200, body, [
            ("Content-Type", fmt.media_type),
            ("Link", f'<{feed_url(req, self.schema, last, limit)}>; rel="next"'),
            # The same URL answers more as changes come: never reuse an answer.
            ("Cache-Control", "no-store")])

    @staticmethod
    def place(one: dict[str, str]) -> Place:
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
        seq = places.found(place, self.records)
        if seq is None:
            start = feed_url(req, self.schema, places.at(0, self.records.history), limit)
            raise Problem(410, "This place in the feed was given by another history of the "
                               "store (restarted, or put back from an older copy): drop every "
                               "record you hold and read the feed again from the start, "
                               f"{start}.", type=ANOTHER_HISTORY,
                          headers=[("Link", f'<{start}>; rel="next"'),
                                   ("Cache-Control", "no-store")])
        return seq

    def entry(self, fmt: FeedFormat, change: Change, names: tuple[str, ...] | None) -> bytes:
        """A change as the feed's entry in ``fmt``: the record as a GET
        gives it (its kept encoding; ``fields=``: id and those), or a tombstone."""
        record = change.record
        return fmt.render_change(
            self.schema, change.seq, change.id,
            None if record is None else self.representations.one(record, fmt) if names is None
            else fmt.render(self.schema, self.schema.some_of(record, names)))
