"""A change as a webhook's message: its ``webhook-id`` and its body, made
once from the feed's entry and sent as made on each retry (signed as it
is sent: ``signing``)."""
from __future__ import annotations

import time
from typing import NamedTuple

from ...changes import Changes
from ...representation.json_format import JSON
from ...storage.feed import Change


def rfc3339(when: float) -> str:
    """A Unix time as RFC 3339 UTC, to the millisecond."""
    milliseconds = int(when * 1000)
    seconds = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(milliseconds // 1000))
    return f"{seconds}.{milliseconds % 1000:03d}Z"


class Pending(NamedTuple):
    """A change being delivered: its collection and position, its
    ``webhook-id`` and its body, made once and sent as made on each retry."""

    plural: str
    seq: int
    message_id: str
    body: bytes


def pending(changes: Changes, change: Change) -> Pending:
    """The message for one feed entry: ``{"type", "timestamp", "data"}``,
    ``data`` the entry as ``GET /<plural>/changes`` gives it."""
    schema, plural = changes.schema, changes.schema.plural
    kind = "deleted" if change.record is None else "changed"
    body = b'{"type":"%s.%s","timestamp":"%s","data":%s}' % (
        schema.name.encode(), kind.encode(), rfc3339(time.time()).encode(),
        changes.entry(JSON, change, None))
    return Pending(plural, change.seq, f"{plural}.{change.seq}.{changes.records.history}", body)

