"""Request and Response: the only code that reads the WSGI environ (PEP 3333).

A header is parsed only when asked. WebOb's classes do much more, at
microseconds a request: usersvc uses WebOb to parse ``Accept`` and entity
tags, and its tests build requests with ``webob.Request.blank``.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import quote, unquote_plus

from webob.etag import ETagMatcher

from .problems import TITLES, Problem

#: What a path may hold unescaped in a URL the service writes (as WebOb).
PATH_SAFE = "/~!$&'()*+,;=:@"
#: Where ``serving.ops.AccessLog`` puts a request's id in the environ.
REQUEST_ID_KEY = "usersvc.request_id"
_WITH_BODY = frozenset({"POST", "PUT", "PATCH"})        # whose body the service reads
_DEFAULT_PORTS = {"http": ":80", "https": ":443"}      # which a URL leaves out
#: Every answer is what it says it is (no browser guesses another type).
NOSNIFF = ("X-Content-Type-Options", "nosniff")


def status_line(status: int) -> str:
    """``"201 Created"``: the reason phrase is the problem title (RFC 9110's names)."""
    return f"{status} {TITLES[status]}"


def base_url_of(scheme: str, host: str | None, server: str, port: str | None, script: str) -> str:
    """What every URL the app writes starts with, from the request's
    scheme, ``Host`` (``None``: not sent), server name and port, and
    ``SCRIPT_NAME``."""
    default = _DEFAULT_PORTS.get(scheme)
    if host is None:
        host = f"{server}:{port}" if port and f":{port}" != default else server
    elif default:
        host = host.removesuffix(default)
    mount = quote(script.encode("latin-1"), safe=PATH_SAFE) if script else ""    # ("": the root)
    return f"{scheme}://{host}{mount}"


class Request:
    """One request: its method, its path, the headers the app reads, and
    its body once read (``read_body``, which ``App`` asks before any resource runs)."""

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
        self.route = ""         # the route's template, for metrics (``/users/{id}``; ``""``: none)

    def header(self, name: str) -> str | None:
        """Any request header by its name (``X-Request-ID``), or ``None``;
        those below, read on most requests, are looked up directly."""
        return self.environ.get("HTTP_" + name.upper().replace("-", "_"))

    @property
    def content_type(self) -> str | None:
        return self.environ.get("CONTENT_TYPE") or None

    @property
    def origin(self) -> str | None:
        return self.environ.get("HTTP_ORIGIN")

    @property
    def fetch_site(self) -> str | None:
        """``Sec-Fetch-Site``: where the browser says the request comes from."""
        return self.environ.get("HTTP_SEC_FETCH_SITE")

    @property
    def query_string(self) -> str:
        """The raw query (WSGI's latin-1 str of the bytes received)."""
        return self.environ.get("QUERY_STRING", "")  # type: ignore[no-any-return]  # (PEP 3333)

    def parameters(self) -> dict[str, list[str]]:
        """The query's parameters, each name with its values in order, as
        ``urllib.parse.parse_qsl(..., keep_blank_values=True)`` gives them (``test_request``
        checks they agree), but 400 for bytes or percent-escapes that are not UTF-8."""
        query: dict[str, list[str]] = {}
        try:
            text = self.query_string.encode("latin-1").decode("utf-8")     # WSGI's latin-1 str
            for name, _, value in (pair.partition("=") for pair in text.split("&") if pair):
                query.setdefault(unquote_plus(name, errors="strict"), []).append(
                    unquote_plus(value, errors="strict"))
        except UnicodeError:
            raise Problem(400, "The query string is not valid UTF-8.") from None
        return query

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

    @property
    def script_name(self) -> str:
        """Where the app is mounted (``""``: at the root)."""
        return self.environ.get("SCRIPT_NAME", "")  # type: ignore[no-any-return]  # (PEP 3333)

    @property
    def base_url(self) -> str:
        """``base_url_of`` this request: WebOb's ``application_url``."""
        e = self.environ
        return base_url_of(e.get("wsgi.url_scheme", "http"), self.host,
                           e.get("SERVER_NAME", "localhost"), e.get("SERVER_PORT"),
                           e.get("SCRIPT_NAME", ""))

    def read_body(self, limit: int) -> None:
        """The body read into ``body``, once, never past ``limit`` bytes (as
        Werkzeug's request bounds itself): 413 by ``Content-Length`` before
        reading, or, for a body of unknown length, by reading one byte more at
        most. Only a POST's, PUT's or PATCH's body is read, and only one with a
        length, chunked or marked terminated (RFC 9112 §6.3)."""
        e = self.environ
        declared = e.get("CONTENT_LENGTH")
        if not declared and self.method not in _WITH_BODY:
            self.body = b""         # (no length, a GET's: nothing to read or refuse)
            return
        if declared and not declared.isdigit():
            raise Problem(400, "The Content-Length is not a whole number.")
        length = int(declared) if declared else None
        body = b""
        if self.method in _WITH_BODY and (length or 0) <= limit and (
                length is not None or e.get("HTTP_TRANSFER_ENCODING", "").lower() == "chunked"
                or e.get("wsgi.input_terminated")):
            body = e["wsgi.input"].read(limit + 1 if length is None else length)
        if max(len(body), length or 0) > limit:
            raise Problem(413, f"The request body is over the limit of {limit} bytes.",
                          max_body_size=limit)
        self.body = body

    @property
    def request_id(self) -> str:
        """The id ``serving.ops.AccessLog`` gave it (``"-"``: none), for the error log."""
        return self.environ.get(REQUEST_ID_KEY, "-")  # type: ignore[no-any-return]  # (a str)


class Response:
    """A status, headers and a body. Every answer may differ by ``Accept``,
    so every one says ``Vary: Accept``; ``vary`` names more request headers
    that one depends on (``Prefer``)."""

    __slots__ = ("status", "headers", "body", "vary")

    def __init__(self, status: int, body: bytes = b"",
                 headers: list[tuple[str, str]] | None = None) -> None:
        self.status, self.body, self.vary = status, body, "Accept"
        self.headers = headers if headers is not None else []

    def __call__(self, environ: dict[str, Any],
                 start_response: Callable[..., Any]) -> Iterable[bytes]:
        headers, body = self.headers, self.body
        if self.vary:
            headers.append(("Vary", self.vary))
        headers.append(NOSNIFF)
        if body or self.status not in (204, 304):
            headers.append(("Content-Length", str(len(body))))
        start_response(status_line(self.status), headers)
        return [body] if body and environ.get("REQUEST_METHOD") != "HEAD" else []

