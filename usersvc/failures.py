"""A bug met while answering a request, logged: ``App.__call__`` logs one
before its 500, and the waiting feature's ``Streamed`` one met while its
body is sent (its headers gone, it can only end). Imported when the first
bug is met: a request that meets none never loads this module.
"""
from __future__ import annotations

import logging

from .request import Request

log = logging.getLogger("usersvc")


def log_failure(req: Request, when: str = "") -> None:
    """A bug met while answering ``req`` (called in an ``except``), logged
    with its traceback: the method, the path and query as received (never
    fails), and the request's id (the access log's line has it too)."""
    query = req.query_string
    log.exception("%s %r failed%s (request %s)", req.method,
                  req.path + ("?" + query if query else ""), when, req.request_id)
