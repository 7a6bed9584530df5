"""Pages of other sites: cross-origin protection, always on, and CORS for
the origins a deployment allows.

**Protection.** A page on any site can make a browser send a POST without
asking first (a form, ``fetch(url, {mode: "no-cors"})``, ``sendBeacon``).
``CrossOrigin.check`` refuses such a write with 403 before its body is
read, by the rule of Go 1.25's ``http.CrossOriginProtection``:

1. GET, HEAD and OPTIONS are never refused (they change nothing);
2. an ``Origin`` among the allowed origins passes;
3. with ``Sec-Fetch-Site`` (every current browser sends it), only
   ``same-origin`` and ``none`` (the user's own navigation) pass;
4. without it, an ``Origin`` whose host and port differ from ``Host`` is
   refused; a request with neither header (curl, another server) passes.

**CORS**, off until origins are allowed (``make_app(cors_origins=...)``,
``--cors-origin``): to an allowed origin every answer says so
(``Access-Control-Allow-Origin``, and the headers a page's script may
read), and a preflight is answered with what may be sent, before any token
is asked for (a browser sends none on a preflight). Never
``Access-Control-Allow-Credentials``: the service uses no cookies.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Iterable

from .problems import Problem
from .request import Request, Response

log = logging.getLogger("usersvc")

_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_ORIGIN = re.compile(r"https?://[^/\s]+")
EXPOSED = "ETag, Location, Link, Retry-After, X-Total-Count, Preference-Applied, X-Request-ID"
ALLOWED_HEADERS = "Content-Type, If-Match, If-None-Match, Authorization, Prefer, Idempotency-Key"
MAX_AGE = "7200"


def parse_origins(origins: Iterable[str]) -> frozenset[str]:
    """The origins given, each ``scheme://host[:port]`` or ``*``; a
    ``ValueError`` names the first that is not."""
    parsed = frozenset(origin.rstrip("/") for origin in origins)
    for origin in sorted(parsed):
        if origin != "*" and not _ORIGIN.fullmatch(origin):
            raise ValueError(f"not an origin (scheme://host[:port]): {origin!r}")
    return parsed


class CrossOrigin:
    """The origins whose pages may call the service (``*``: any)."""

    def __init__(self, origins: Iterable[str] = ()) -> None:
        self.origins = parse_origins(origins)
        if "*" in self.origins:
            log.warning("CORS allows every origin ('*'): a page on any site can call this "
                        "service from a visitor's browser")

    def allowed(self, origin: str | None) -> bool:
        return origin is not None and ("*" in self.origins or origin in self.origins)

    def check(self, req: Request) -> None:
        """403 for a write sent by a page of another origin (the rule above;
        a same-origin page, the usual case, is let through first)."""
        if req.method in _SAFE_METHODS:
            return
        site = req.fetch_site
        if site == "same-origin" or site == "none":
            return
        origin = req.origin
        if self.allowed(origin):
            return
        if site is None and (origin is None or _host(origin) == _host("http://" + (req.host or ""))):
            return
        raise Problem(403, "A page of another site cannot make changes here "
                           "(cross-origin request refused).")

    def is_preflight(self, req: Request) -> bool:
        return (req.method == "OPTIONS" and req.header("Origin") is not None
                and req.header("Access-Control-Request-Method") is not None)

    def preflight(self, req: Request, allow: str) -> Response:
        """The answer to a preflight for a path whose methods are ``allow``."""
        response = Response(204, headers=[("Allow", allow)])
        if self.allowed(req.header("Origin")):
            response.headers += [("Access-Control-Allow-Methods", allow),
                                 ("Access-Control-Allow-Headers", ALLOWED_HEADERS),
                                 ("Access-Control-Max-Age", MAX_AGE)]
        return response

    def decorate(self, req: Request, response: Response) -> None:
        """The CORS headers of an answer to ``req``, if CORS is on."""
        if not self.origins:
            return
        response.vary = f"{response.vary}, Origin" if response.vary else "Origin"
        origin = req.header("Origin")
        if self.allowed(origin):
            response.headers += [("Access-Control-Allow-Origin", origin or ""),
                                 ("Access-Control-Expose-Headers", EXPOSED)]


def _host(origin: str) -> str:
    """``host[:port]`` of an origin, lower case, without a default port
    (``:80``, ``:443``), as a ``Host`` header may name it either way."""
    host = origin.partition("://")[2].lower()
    for default in (":80", ":443"):
        if host.endswith(default):
            return host[: -len(default)]
    return host
