"""Request and Response: the only code that reads the WSGI environ.

``Request`` names what the app needs from the environ (PEP 3333), parsing
a header only when asked; ``Response`` is a status, headers and the body
bytes, handed to the WSGI server (a body made as it is sent, a stream of
events, is the waiting feature's ``Streamed``); ``log_failure`` logs a
bug met while answering. WebOb's classes do much more, at
microseconds a request: usersvc uses WebOb to parse ``Accept`` and entity
tags, and its tests build requests with ``webob.Request.blank``.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import quote, unquote_plus

from webob.etag import ETagMatcher

from .problems import TITLES, Problem

#: What a path may hold unescaped in a URL the service writes (as WebOb).
PATH_SAFE = "/~!$&'()*+,;=:@"

#: Where ``ops.AccessLog`` keeps a request's id in the environ (for the error log).
REQUEST_ID_KEY = "usersvc.request_id"

log = logging.getLogger("usersvc")


def status_line(status: int) -> str:
    """``"201 Created"``: the reason phrase is the problem title (RFC 9110's names)."""
    return f"{status} {TITLES[status]}"


def base_url_of(scheme: str, host: str | None, server: str, port: str | None,
                script: str) -> str:
    """What every URL the app writes starts with, from the request's
    scheme, ``Host`` (``None``: not sent), server name and port, and
    ``SCRIPT_NAME``."""
    if host is None:
        host = server
        if port and (scheme, port) not in (("http", "80"), ("https", "443")):
            host = f"{host}:{port}"
    elif (scheme == "http" and host.endswith(":80")) or (scheme == "https" and host.endswith(":443")):
        host = host.rsplit(":", 1)[0]
    if script:
        script = quote(script.encode("latin-1"), safe=PATH_SAFE)
    return f"{scheme}://{host}{script}"


class Request:
    """One request: its method, its path, the headers the app reads, and
    its body once the app has read it (``App`` bounds and reads it before
    any resource runs)."""

    __slots__ = ("environ", "method", "path", "host", "accept", "body", "route")

    def __init__(self, environ: dict[str, Any]) -> None:
        self.environ = environ
        self.method: str = environ.get("REQUEST_METHOD", "GET")
        # The raw PATH_INFO (WSGI's latin-1 str; routes are ASCII: invalid
        # UTF-8 is simply a 404); empty, the mount point, is the app's root.
        self.path: str = environ.get("PATH_INFO") or "/"
        self.host: str | None = environ.get("HTTP_HOST")     # every request's: read once
        self.accept: str = environ.get("HTTP_ACCEPT", "")
        self.body = b""
        #: The template of the route that took the request, for metrics
        #: (``/users/{id}``); empty while none has (and for a 404).
        self.route = ""

    # -- headers --------------------------------------------------------

    @property
    def content_type(self) -> str | None:
        return self.environ.get("CONTENT_TYPE") or None

    @property
    def query_string(self) -> str:
        """The raw query (WSGI's latin-1 str of the bytes received)."""
        return self.environ.get("QUERY_STRING", "")

    def parameters(self) -> dict[str, list[str]]:
        """The query's parameters, each name with its values in order, as
        ``urllib.parse.parse_qsl(..., keep_blank_values=True)`` gives them
        (``test_request`` checks they agree), but 400 for bytes or
        percent-escapes that are not UTF-8."""
        query: dict[str, list[str]] = {}
        try:
            # WSGI hands over the raw bytes as a latin-1 str.
            text = self.query_string.encode("latin-1").decode("utf-8")
            for pair in text.split("&"):
                if pair:
                    name, _, value = pair.partition("=")
                    query.setdefault(unquote_plus(name, errors="strict"), []).append(
                        unquote_plus(value, errors="strict"))
        except UnicodeError:
            raise Problem(400, "The query string is not valid UTF-8.") from None
        return query

    def prefers(self, name: str) -> str | None:
        """The value of the preference ``name`` in ``Prefer`` (RFC 7240 §2:
        ``Prefer: count=exact, return=minimal``); ``""`` for one given
        without a value, ``None`` for one not given."""
        header = self.environ.get("HTTP_PREFER")
        if not header:
            return None
        for preference in header.split(","):
            token, _, value = preference.split(";", 1)[0].partition("=")
            if token.strip().lower() == name:
                return value.strip().strip('"')
        return None

    @property
    def target(self) -> str:
        """The path and query as received, for a log line: never fails."""
        query = self.query_string
        return self.path + ("?" + query if query else "")

    @property
    def request_id(self) -> str:
        return self.environ.get(REQUEST_ID_KEY, "-")

    @request_id.setter
    def request_id(self, value: str) -> None:
        self.environ[REQUEST_ID_KEY] = value

    def header(self, name: str) -> str | None:
        """Any request header by its name (``X-Request-ID``), or ``None``."""
        return self.environ.get("HTTP_" + name.upper().replace("-", "_"))

    # Read on every write, by the cross-origin check: looked up directly.
    @property
    def origin(self) -> str | None:
        return self.environ.get("HTTP_ORIGIN")

    @property
    def fetch_site(self) -> str | None:
        """``Sec-Fetch-Site``: where the browser says the request comes from."""
        return self.environ.get("HTTP_SEC_FETCH_SITE")

    @property
    def has_preconditions(self) -> bool:
        """Whether ``If-Match`` or ``If-None-Match`` was sent at all."""
        return "HTTP_IF_MATCH" in self.environ or "HTTP_IF_NONE_MATCH" in self.environ

    def if_match(self) -> Any:
        """``If-Match`` as WebOb parses it (strong tags only), or ``None``."""
        value = self.environ.get("HTTP_IF_MATCH")
        return ETagMatcher.parse(value, strong=True) if value else None

    def if_none_match(self) -> Any:
        """``If-None-Match`` as WebOb parses it (weak comparison), or ``None``."""
        value = self.environ.get("HTTP_IF_NONE_MATCH")
        return ETagMatcher.parse(value, strong=False) if value else None

    # -- where it was sent ----------------------------------------------

    @property
    def script_name(self) -> str:
        """Where the app is mounted (``""``: at the root)."""
        return self.environ.get("SCRIPT_NAME", "")

    @property
    def base_url(self) -> str:
        """Scheme, host and ``SCRIPT_NAME``: what every URL the app writes
        starts with (the same as WebOb's ``application_url``)."""
        e = self.environ
        return base_url_of(e.get("wsgi.url_scheme", "http"), self.host,
                           e.get("SERVER_NAME", "localhost"), e.get("SERVER_PORT"),
                           e.get("SCRIPT_NAME", ""))

    # -- the body ---------------------------------------------------------

    @property
    def content_length(self) -> int | None:
        """``Content-Length``: a number, ``None`` (not sent) or ``-1`` (not a number)."""
        declared = self.environ.get("CONTENT_LENGTH")
        if not declared:
            return None
        return int(declared) if declared.isdigit() else -1

    @property
    def body_follows(self) -> bool:
        """Whether a body of unknown length follows (chunked, or input the
        server marks terminated); else, without a length, none (RFC 9112 §6.3)."""
        e = self.environ
        return (e.get("HTTP_TRANSFER_ENCODING", "").lower() == "chunked"
                or bool(e.get("wsgi.input_terminated")))

    def read(self, size: int) -> bytes:
        """At most ``size`` bytes of the body, from the server's stream."""
        return self.environ["wsgi.input"].read(size)


#: Every answer is what it says it is (no browser guesses another type).
NOSNIFF = ("X-Content-Type-Options", "nosniff")


class Response:
    """A status, headers and a body. Every answer may differ by ``Accept``,
    so every one says ``Vary: Accept``; ``vary`` names more request headers
    that one depends on (``Prefer``)."""

    __slots__ = ("status", "headers", "body", "vary")

    def __init__(self, status: int, body: bytes = b"",
                 headers: list[tuple[str, str]] | None = None) -> None:
        self.status, self.body, self.vary = status, body, "Accept"
        self.headers = headers if headers is not None else []

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        headers, body = self.headers, self.body
        if self.vary:
            headers.append(("Vary", self.vary))
        headers.append(NOSNIFF)
        if body or self.status not in (204, 304):
            headers.append(("Content-Length", str(len(body))))
        start_response(status_line(self.status), headers)
        return [body] if body and environ.get("REQUEST_METHOD") != "HEAD" else []


def log_failure(req: Request, when: str = "") -> None:
    """A bug met while answering ``req`` (called in an ``except``), logged
    with its traceback: the method, the target as received and the
    request's id (the access log's line has it too: ``REQUEST_ID_KEY``)."""
    log.exception("%s %r failed%s (request %s)", req.method, req.target, when,
                  req.request_id)
