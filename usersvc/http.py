"""The request and response objects the app works with: small on purpose.

``Request`` reads what the app needs straight from the WSGI environ, and
parses a header only when asked; ``Response`` is a status, a header list and
the body bytes, and knows how to hand itself to a WSGI server. WebOb's own
``Request`` and ``Response`` do much more, and cost several microseconds per
request doing it; usersvc still uses WebOb for what it does best, parsing
``Accept`` and entity-tag lists (``webob.acceptparse``, ``webob.etag``).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import quote

from webob.etag import ETagMatcher

from .problems import title

#: What a path may hold unescaped in a URL the service writes (as WebOb).
PATH_SAFE = "/~!$&'()*+,;=:@"

_STATUS_LINES: dict[int, str] = {}


def status_line(status: int) -> str:
    """``"201 Created"``: the reason phrase is the problem title (RFC 9110's names)."""
    line = _STATUS_LINES.get(status)
    if line is None:
        line = _STATUS_LINES[status] = f"{status} {title(status)}"
    return line


class Request:
    """One request: the environ, its method, and its body once the app has
    read it (``App`` bounds and reads it before any resource runs)."""

    __slots__ = ("environ", "method", "body")

    def __init__(self, environ: dict[str, Any]) -> None:
        self.environ = environ
        self.method: str = environ.get("REQUEST_METHOD", "GET")
        self.body = b""

    @property
    def content_type(self) -> str | None:
        return self.environ.get("CONTENT_TYPE") or None

    @property
    def base_url(self) -> str:
        """Scheme, host and ``SCRIPT_NAME``: what every URL the app writes
        starts with (the same as WebOb's ``application_url``)."""
        e = self.environ
        scheme = e.get("wsgi.url_scheme", "http")
        host = e.get("HTTP_HOST")
        if host is None:
            host, port = e.get("SERVER_NAME", "localhost"), e.get("SERVER_PORT")
            if port and (scheme, port) not in (("http", "80"), ("https", "443")):
                host = f"{host}:{port}"
        elif (scheme == "http" and host.endswith(":80")) or (scheme == "https" and host.endswith(":443")):
            host = host.rsplit(":", 1)[0]
        script = e.get("SCRIPT_NAME", "")
        if script:
            script = quote(script.encode("latin-1"), safe=PATH_SAFE)
        return f"{scheme}://{host}{script}"

    def if_match(self) -> Any:
        """``If-Match`` as WebOb parses it (strong tags only), or ``None``."""
        value = self.environ.get("HTTP_IF_MATCH")
        return ETagMatcher.parse(value, strong=True) if value else None

    def if_none_match(self) -> Any:
        """``If-None-Match`` as WebOb parses it (weak comparison), or ``None``."""
        value = self.environ.get("HTTP_IF_NONE_MATCH")
        return ETagMatcher.parse(value, strong=False) if value else None


class Response:
    """A status, headers and a body. Every answer may differ by ``Accept``,
    so every one says ``Vary: Accept``."""

    __slots__ = ("status", "headers", "body")

    def __init__(self, status: int, body: bytes = b"",
                 headers: list[tuple[str, str]] | None = None) -> None:
        self.status = status
        self.body = body
        self.headers = headers if headers is not None else []

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        headers = self.headers
        headers.append(("Vary", "Accept"))
        if self.status not in (204, 304):
            headers.append(("Content-Length", str(len(self.body))))
        start_response(status_line(self.status), headers)
        if environ.get("REQUEST_METHOD") == "HEAD" or not self.body:
            return []
        return [self.body]
