"""``Mount``: an app served under a path prefix (``--prefix /v1``).

A server's wrapping, as the access log is (``ops.AccessLog``): WSGI around
the app, which the app itself never needs. Not a feature: it plugs into
no hook, it wraps (``usersvc.Mount``; its old name,
``usersvc.features.mount``, is kept for this release, deprecated)."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..app import App
from ..problems import Problem
from ..request import Request


class Mount:
    """Serve ``app`` under a path ``prefix`` (``/v1``); any other path is a
    404 problem. ``SCRIPT_NAME`` grows by the prefix, so every URL the app
    writes carries it."""

    def __init__(self, prefix: str, app: App) -> None:
        if not prefix.strip("/"):
            raise ValueError(f"not a path prefix: {prefix!r}")
        self.prefix = "/" + prefix.strip("/")
        self.app = app

    def __call__(self, environ: dict[str, Any],
                 start_response: Callable[..., Any]) -> Iterable[bytes]:
        req = Request(environ)
        if moved_under(req, self.prefix):
            return self.app(environ, start_response)
        # Refused before the app takes it, with no route (metrics:
        # http_route=""), seen by the starters and finishers as any answer is.
        for start in self.app.starters:
            start(req)
        response = self.app.problem_response(
            req, Problem(404, f"This server serves only paths under {self.prefix}/."))
        for finish in self.app.finishers:
            finish(req, response)
        return response(environ, start_response)


def moved_under(req: Request, prefix: str) -> bool:
    """If the path is under ``prefix``, move the prefix from the path to
    ``SCRIPT_NAME`` (as a dispatcher does) and say so."""
    path = req.environ.get("PATH_INFO", "")
    if path != prefix and not path.startswith(prefix + "/"):
        return False
    req.environ["SCRIPT_NAME"] = req.script_name + prefix
    req.environ["PATH_INFO"] = path[len(prefix):]
    req.path = req.environ["PATH_INFO"] or "/"
    return True
