"""CORS, for the origins a deployment allows (``make_app(cors_origins=...)``,
``--cors-origin``), plugged in (``CORS.plug``) only when origins are named.

An allowed origin's answers say so (``Access-Control-Allow-Origin``, and
the headers its script may read), and its preflight is answered first,
before any token is asked for. Other origins get no ``Access-Control-*``
header; no origin gets ``Allow-Credentials`` (no cookies here). Refusing
writes from other sites' pages is the core's (``app``), always on: CORS
tells it which origins to let write (``app.allowed_origins``).
"""
from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from ..problems import Problem
from ..request import Request, Response
from ..settings import parse_origins

log = logging.getLogger("usersvc")

EXPOSED = "ETag, Location, Link, Retry-After, X-Total-Count, Preference-Applied, X-Request-ID"
ALLOWED_HEADERS = (
    "Content-Type, If-Match, If-None-Match, Authorization, Prefer, Idempotency-Key, Last-Event-ID")
MAX_AGE = "7200"


class CORS:
    """The origins whose pages may call the service (``*``: any)."""

    def __init__(self, origins: Iterable[str]) -> None:
        self.origins = parse_origins(origins)
        if "*" in self.origins:
            log.warning("CORS allows every origin ('*'): a page on any site can call this "
                        "service from a visitor's browser")

    def plug(self, app: Any) -> None:
        """Its origins allowed to write past the core's cross-origin check
        (``app.allowed_origins``), their preflights answered before every
        other check, every answer told."""
        app.allowed_origins.update(self.origins)
        app.checks.insert(0, self.preflight)
        app.finishers.append(self.decorate)

    def allowed(self, origin: str | None) -> bool:
        return origin is not None and ("*" in self.origins or origin in self.origins)

    def preflight(self, req: Request, found: Any) -> Response | None:
        """The answer to a preflight (``OPTIONS`` with ``Origin`` and
        ``Access-Control-Request-Method``); ``None`` for any other request."""
        if not (req.method == "OPTIONS" and req.header("Origin") is not None
                and req.header("Access-Control-Request-Method") is not None):
            return None
        if found is None:
            raise Problem(404, "There is nothing at this path.")
        allow = found[0].allow
        response = Response(204, headers=[("Allow", allow)])
        if self.allowed(req.header("Origin")):
            response.headers += [("Access-Control-Allow-Methods", allow),
                                 ("Access-Control-Allow-Headers", ALLOWED_HEADERS),
                                 ("Access-Control-Max-Age", MAX_AGE)]
        return response

    def decorate(self, req: Request, response: Response) -> None:
        """The CORS headers of an answer to ``req``."""
        response.vary = f"{response.vary}, Origin" if response.vary else "Origin"
        origin = req.header("Origin")
        if self.allowed(origin):
            response.headers += [("Access-Control-Allow-Origin", origin or ""),
                                 ("Access-Control-Expose-Headers", EXPOSED)]


class CORSFeature:
    """The ``cors`` feature (``usersvc.hooks``): CORS for the origins the
    settings name (``cors_origins``), if any."""

    name = "cors"

    def plug(self, app: Any, storage: Any, plugged: dict[str, Any]) -> CORS | None:
        if not app.settings.cors_origins:
            return None
        cors = CORS(app.settings.cors_origins)
        cors.plug(app)
        return cors


FEATURE = CORSFeature()
