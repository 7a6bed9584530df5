"""Running usersvc: ``server`` (``serve.py``'s options, a waitress server;
``main``), ``ops`` (request ids and the access log), ``cli`` (the
``usersvc`` command), ``transfer`` (``usersvc copy``) and ``mount`` (``Mount``:
the app under a path prefix).
``usersvc.wsgi`` is the app a WSGI server (gunicorn, uWSGI, granian) is
named. ``main`` is imported when first asked for, so that a host that
wraps an app in ``Mount`` does not load waitress."""
from __future__ import annotations

from typing import Any

__all__ = ["main"]


def __getattr__(name: str) -> Any:
    """``usersvc.serving.main``: ``server.main``, imported when asked for."""
    if name != "main":
        raise AttributeError(f"module 'usersvc.serving' has no attribute {name!r}")
    from .server import main
    return main
