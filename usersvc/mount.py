"""``Mount``: an app served under a path prefix (``--prefix /v1``)."""
from __future__ import annotations

from collections.abc import Callable, Iterable

from .app import App
from .problems import Problem
from .request import Request


class Mount:
    """Serve ``app`` under a path ``prefix`` (``/v1``); any other path is a
    404 problem. ``SCRIPT_NAME`` grows by the prefix, so every URL the app
    writes carries it."""

    def __init__(self, prefix: str, app: App) -> None:
        if not prefix.strip("/"):
            raise ValueError(f"not a path prefix: {prefix!r}")
        self.prefix = "/" + prefix.strip("/")
        self.app = app

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        req = Request(environ)
        if req.mount(self.prefix):
            return self.app(environ, start_response)
        response = self.app.refuse(      # with no route (for metrics: http_route="")
            req, Problem(404, f"This server serves only paths under {self.prefix}/."))
        return response(environ, start_response)
