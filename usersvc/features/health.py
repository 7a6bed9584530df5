"""``/healthz``: whether every store answers, for load balancers and monitors
(the health feature's route; open without a token)."""
from __future__ import annotations

import logging
from typing import Any, Protocol, runtime_checkable

from ..problems import Problem
from ..release import VERSION
from ..representation.json_format import Format
from ..request import Request, Response
from ..schema import Schema

log = logging.getLogger("usersvc")


@runtime_checkable
class ReportsWriteHealth(Protocol):
    """A store that knows whether its writes are failing (the SQL stores)."""

    @property
    def writes_failing(self) -> str | None:
        """Why its writes are failing now (a full disk...), or ``None``."""


HEALTH_PATH = "/healthz"
_HEALTH = Schema("health", "health_checks", {})    # <health><status>ok</status><version>...
_NO_STORE = ("Cache-Control", "no-store")


class HealthCheck:
    """``/healthz``: 200 when every store answers a read and its writes are
    not failing, 503 when one does not or they are (from a write that found
    the disk full until one that works). Open without a token, for load
    balancers and monitors; never cached."""

    def __init__(self, collections: list[Any]) -> None:
        self.collections = collections      # each collection's records (``app.records``)

    def on_get(self, req: Request, fmt: Format) -> Response:
        for records in self.collections:
            try:
                records.list(limit=1)
            except Exception as e:    # whatever the store's failure, it is not answering
                log.warning("health check: the store does not answer: %s", type(e).__name__)
                raise Problem(503, "The store does not answer.",
                              headers=[("Retry-After", "1"), _NO_STORE]) from None
            failing = records.writes_failing if isinstance(records, ReportsWriteHealth) else None
            if failing is not None:
                raise Problem(503, f"The store's writes are failing: {failing}. Reads work.",
                              headers=[("Retry-After", "10"), _NO_STORE])
        return Response(200, fmt.render(_HEALTH, {"status": "ok", "version": VERSION}),
                        [("Content-Type", fmt.media_type), _NO_STORE])


class HealthFeature:
    """The ``health`` feature (``usersvc.hooks``): ``/healthz``, open
    without a token."""

    name = "health"

    def plug(self, app: Any, storage: Any, plugged: dict[str, Any]) -> HealthCheck:
        check = HealthCheck(app.records)
        app.router.add(HEALTH_PATH, check)
        app.open_paths.add(HEALTH_PATH)
        return check


FEATURE = HealthFeature()
