"""Metrics for Prometheus, one folder: ``prometheus`` (one process's, in a
``prometheus_client`` registry), ``shared`` (every worker of a server's,
counted in files: ``files``), ``families`` (what a scrape says) and
``tally`` (counting without a lock). Needs the ``metrics`` extra."""
from __future__ import annotations

from typing import Any

from ...release import VERSION, install_hint


class MetricsFeature:
    """The ``metrics`` feature (``usersvc.hooks``), when the settings ask
    (``metrics``): ``prometheus.Metrics``, or, counted in files in
    ``metrics_dir`` with the other processes of a server,
    ``shared.SharedMetrics``; the last to see an answer. What it plugs
    in serves itself (``serve(host, port)``: ``/metrics`` on a port of its
    own), so that no server imports this feature. Without
    ``prometheus_client``, a one-line ``ImportError`` that says how to
    install it, whose ``name`` is ``"prometheus_client"`` (how serve.py
    knows it from a store's)."""

    name = "metrics"

    def plug(self, app: Any, storage: Any, plugged: dict[str, Any]) -> Any:
        settings = app.settings
        if not settings.metrics:
            return None
        try:
            if settings.metrics_dir is None:
                from .prometheus import Metrics
            else:
                from .shared import SharedMetrics
        except ImportError as e:
            raise ImportError(f"metrics need prometheus_client: {install_hint('metrics')} "
                              f"({e})", name="prometheus_client") from None
        waiting = NoWaiting() if app.waiting is None else app.waiting
        if settings.metrics_dir is None:
            return Metrics(VERSION, app.records, waiting).plug(app)
        return SharedMetrics(VERSION, app.records, waiting, settings.metrics_dir).plug(app)


class NoWaiting:
    """The waiting places of an app without the waiting feature (or with
    it plugged in after metrics): none, never taken, so the feed's gauges
    say 0."""

    now = most = streams = 0

    def __init__(self) -> None:
        self.watchers: list[Any] = []


FEATURE = MetricsFeature()
