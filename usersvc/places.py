"""A place in a collection's change feed, as a client is given it and gives
it back: an event's ``id:`` (``Last-Event-ID``), the feed's ``after=``
(docs/api.md, "Changes"; docs/decisions.md, "The change feed").

A store's positions start again in another history of it: a ``memory://``
store restarted, a SQLite file put back from an older copy, a database
rebuilt. So a place names its history (the feed's ``history`` token) and,
where it can, the entry it points at:

- ``<seq>.<id>.<version>.<history>``: position ``seq``, where record ``id``
  was at ``version`` (``d``: a tombstone), e.g. ``9.1.2.3f2a9c61d0b7``;
- ``<seq>.<history>``: a position alone (a page's, a stream's start where
  no entry is there), e.g. ``8.3f2a9c61d0b7``;
- ``<seq>``: a bare number, as every place was before; still read.

``found`` says where a place given back is in a store's feed, or that it
is another history's: then the client starts again from 0, and drops what
it holds.
"""
from __future__ import annotations

import math
import re
from typing import Any, NamedTuple

from .storage import MAX_ID
from .storage.feed import Change

_NAMED = re.compile(r"([0-9]{1,19})(?:\.([0-9]{1,19})\.([0-9]{1,19}|d))?\.([0-9a-f]{12})")
_BARE = re.compile(r"[0-9]{1,20}")
#: How a place is described in a 400.
SAID = (f"a place this feed gave (an event's id, a link's after), or a position: "
        f"a whole number from 0 to {MAX_ID}")


class Place(NamedTuple):
    """A place as read: ``history`` and ``id`` are ``None`` when not named,
    ``version`` ``None`` (with an id) for a tombstone."""

    seq: int
    history: str | None = None
    id: int | None = None
    version: int | None = None

    def __str__(self) -> str:
        if self.history is None:
            return str(self.seq)
        if self.id is None:
            return at(self.seq, self.history)
        version = "d" if self.version is None else self.version     # (d: deleted)
        return f"{self.seq}.{self.id}.{version}.{self.history}"


def read(text: str) -> Place | None:
    """The place ``text`` names, or ``None`` if it names none."""
    if _BARE.fullmatch(text):
        return Place(int(text)) if int(text) <= MAX_ID else None
    named = _NAMED.fullmatch(text)
    if named is None:
        return None
    seq, record_id, version, history = named.groups()
    if int(seq) > MAX_ID or (record_id is not None and int(record_id) > MAX_ID):
        return None
    return Place(int(seq), history, None if record_id is None else int(record_id),
                 None if version in (None, "d") else int(version))


def named(change: Change, history: str) -> str:
    """The place of a feed's entry: its position, its record and version."""
    version = "d" if change.record is None else change.record.version
    return f"{change.seq}.{change.id}.{version}.{history}"


def at(seq: int, history: str) -> str:
    """A position of ``history``, naming no entry."""
    return f"{seq}.{history}"


def of(feed: Any, seq: int) -> str:
    """The place of position ``seq`` of ``feed``, naming the entry there if
    one is (one read: for a stream's start, not on every request)."""
    if seq:
        there = feed.changes(after=seq - 1, limit=1)
        if there and there[0].seq == seq:
            return named(there[0], feed.history)
    return at(seq, feed.history)


def found(place: Place, feed: Any) -> int | None:
    """Where ``place`` is in ``feed`` (a ``ChangeFeed``): its position, or
    ``None`` if another history of the store gave it.

    Another history's: a place of another token; a position past the
    feed's end; an entry the feed contradicts. Within one history, a
    record's entry only moves on, each move with a new version: the record
    named is at ``seq`` with that version, or past ``seq`` with a later one
    (a tombstone, the last, never moves). A history that rewrote the feed
    from the same token (a file put back from an older copy, written past
    the place) is caught by its entry there, unless its entry for that
    record happens to agree (docs/decisions.md says when). A bare number
    or a place naming no entry is checked against the feed's end alone."""
    if place.history is not None and place.history != feed.history:
        return None
    if place.id is None:
        return place.seq if place.seq <= feed.position() else None
    entry = feed.entry(place.id)
    if entry is None or entry.seq < place.seq:
        return None
    now = math.inf if entry.record is None else entry.record.version
    then = math.inf if place.version is None else place.version
    agrees = now == then if entry.seq == place.seq else now > then
    return place.seq if agrees else None


__all__ = ["SAID", "Place", "at", "found", "named", "of", "read"]
