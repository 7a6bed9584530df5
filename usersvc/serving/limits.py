"""waitress's limits as serve.py sets them, and what it answers past them:
each limit set here rather than left to waitress's defaults
(docs/security.md says why each; the request line's made room for the
longest query a page of the app's collections takes, ``longest_query``),
and waitress's own refusals (a request
line and header fields past the cap, a body past its ceiling, a request it
cannot parse) made RFC 9457 problem documents, as every other error is;
and the threads a server gives requests waiting for changes (``waiting_threads``)."""
from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from typing import Any

from waitress.channel import HTTPChannel
from waitress.server import BaseWSGIServer
from waitress.task import ErrorTask
from waitress.utilities import Error

from .. import asking
from ..fields import EMAIL_MAX_LENGTH, Email
from ..hooks import name_of
from ..listing import MAX_CURSOR, MAX_Q
from ..schema import Schema

#: The server refuses bodies over this many bytes (or 4x --max-body-size, if
#: larger) before the app sees them; the app's own limit is the real one.
SERVER_BODY_CAP = 1024 * 1024

#: waitress's own limits, set here rather than left to its defaults
#: (docs/security.md says why each).
SERVER_LIMITS = {
    "channel_timeout": 30,              # seconds a connection may sit idle, mid-request too
    "connection_limit": 200,            # open connections at once (or twice the threads: streams
                                        # hold theirs); more wait in the backlog
    "max_request_header_size": 16384,   # request line and headers: server_limits adds the
                                        # longest query; more is a 431 (ProblemErrors)
    "cleanup_interval": 10,             # how often idle connections are looked for
    "asyncore_use_poll": True,          # poll(), not select(): no 1,024-descriptor ceiling
}


def server_limits(schemas: Iterable[Schema]) -> dict[str, Any]:
    """``SERVER_LIMITS``, with room in the request line for the longest query
    a page of any of ``schemas`` takes within its documented limits
    (``longest_query``: an ``in`` of 100 long values): the request
    line and the header fields together may take 16 KiB more than it."""
    longest = max((longest_query(schema) for schema in schemas), default=0)
    return {**SERVER_LIMITS,
            "max_request_header_size": SERVER_LIMITS["max_request_header_size"] + longest}


_ENCODED = 12       # characters a code point takes in a URL at most: 4 bytes, each %XX


def _longest_value(kind: Any) -> int:
    """The most characters one value of ``kind`` takes in a query, within its
    documented bounds, percent-encoded, in an ``in``'s double quotes."""
    longest = (getattr(kind, "max_length", None) or (2048 if kind.type == "url" else 0)
               or max(map(len, kind.options), default=0) or 100)    # (100: a number's text)
    return 6 + (EMAIL_MAX_LENGTH * 3 if isinstance(kind, Email) else longest * _ENCODED)


def longest_query(schema: Schema) -> int:
    """The longest query string a page of ``schema`` takes within the
    documented limits: every parameter at once, each value its longest,
    percent-encoded, an ``in`` with ``asking.MAX_IN`` of them. The server
    admits a request line this long (``server_limits``)."""
    total = 200 + MAX_CURSOR + (MAX_Q * _ENCODED if schema.searchable else 0) + sum(
        len(name) + 3 for name in schema.field_names)      # limit, sort, after; fields=
    for name in schema.filters:
        total += len(name) + 2 + _longest_value(schema.fields[name])
    for name in ("id", *schema.fields):
        one = 20 if name == "id" else _longest_value(schema.fields[name])
        for op in asking.takes(schema, name):
            value = 5 if op == "exists" else asking.MAX_IN * (one + 3) if op == "in" else one
            total += len(name) + len(op) + 8 + value        # &name%5Bop%5D=value
    return total


class ProblemErrors(ErrorTask):
    """What waitress answers itself, before the app sees a request (a
    request line and header fields past ``max_request_header_size``: 431;
    a body past ``max_request_body_size``: 413; a request it cannot parse:
    400), as an RFC 9457 problem document, as every other error is, where
    waitress writes text. In JSON: the request's ``Accept`` is not read,
    since its header fields may be what was refused."""

    def execute(self) -> None:
        # (types-waitress says a task's request is an Error: it is the parser, this its error.)
        error: Error = self.request.error  # type: ignore[attr-defined]
        body = json.dumps({"type": "about:blank", "title": error.reason, "status": error.code,
                           "detail": error.body}, separators=(",", ":")).encode()
        self.status = f"{error.code} {error.reason}"
        self.response_headers += [  # type: ignore[operator]  # (a list; the stubs: a Sequence)
            ("Content-Type", "application/problem+json"), ("X-Content-Type-Options", "nosniff")]
        self.set_close_on_finish()
        self.content_length = len(body)
        self.write(body)


class _Channel(HTTPChannel):
    error_task_class = ProblemErrors


def answer_errors_as_problems(server: Any) -> Any:
    """``server`` (what ``waitress.create_server`` made: one server, or one
    for each address it listens on) answering its own errors with
    ``ProblemErrors``."""
    for dispatcher in [server, *getattr(server, "map", {}).values()]:
        if isinstance(dispatcher, BaseWSGIServer):
            dispatcher.channel_class = _Channel
    return server


def waits(settings: Any) -> bool:
    """Whether the waiting feature is among the features ``settings`` plug in."""
    return any(name_of(feature) == "waiting" for feature in settings.features)


def waiting_threads(settings: Any) -> int:
    """The threads a server gives requests waiting for changes beside
    ``--threads``: one per waiting place, with the waiting feature (else none)."""
    return settings.max_waiting if waits(settings) else 0


def warn_if_no_waiting(settings: Any) -> None:
    """One line at start when no request may wait for changes: every page
    would be "not live" for good, and it would be found only by a client."""
    if settings.max_waiting == 0 and waits(settings):
        logging.getLogger("usersvc").warning(
            "--max-waiting 0: no request may wait for changes: every stream is told to come "
            "back later and every long-poll with wait= gets a 503 (--max-waiting N lets N wait)")


__all__ = ["SERVER_BODY_CAP", "SERVER_LIMITS", "ProblemErrors", "answer_errors_as_problems",
           "server_limits", "waiting_threads", "waits", "warn_if_no_waiting"]
