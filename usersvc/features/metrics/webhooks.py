"""The webhooks feature's deliveries in a scrape (issue 60, "Seen"):
``usersvc_webhook_deliveries_total``, attempts by outcome (the sender's
``OUTCOMES``: delivered, failed, gone, exhausted), and
``usersvc_webhook_lag``, each subscription's positions behind the end of
the feeds it covers, summed over them.

What is read is what the webhooks feature plugged in
(``app.plugged["webhooks"]``: its ``sender`` counts the outcomes, its
``kept`` holds where each subscription is), found at a scrape: the
webhooks feature plugs in after this one, and this module imports none of
its modules. A lag is read from the store at the scrape, so any process
serving it tells every subscription's, whichever process delivers it
(``shared``); the outcomes are counted where the attempts are made: in the
sender's ``outcomes`` (``prometheus``), or in the files of the process
that made them (``shared``, as a watcher of the sender). No label holds a
URL or a secret: an outcome, a subscription's id.
"""
from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

log = logging.getLogger("usersvc")

DELIVERIES, LAG = "usersvc_webhook_deliveries", "usersvc_webhook_lag"
#: What each is (as ``families.HELP`` says the others'; kept here, so that
#: ``families`` imports this module, and not the other way round).
HELP = {
    DELIVERIES: "Attempts to deliver a change to a webhook subscription's receiver, by "
                "outcome: delivered (2xx), failed (tried again), gone (410: disabled), "
                "exhausted (the last retry failed: disabled).",
    LAG: "Positions of the change feeds a webhook subscription covers past the last its "
         "receiver acknowledged, summed over them.",
}


def lags(webhooks: Any) -> dict[str, int] | None:
    """Each subscription's lag, by its id: for each collection it covers,
    the feed's last position less the last one its receiver acknowledged
    (positions, not changes: a record changed twice takes two, and is sent
    once), disabled subscriptions too (theirs grows). ``None`` when the
    store cannot be read now: the scrape answers without it."""
    try:
        ends = webhooks.ends()
        subscriptions = webhooks.kept.all()
    except Exception as e:      # (the store down, busy: the next scrape tries again)
        log.warning("metrics: the webhooks' lag cannot be read (%s)", type(e).__name__)
        return None
    # (a collection covered with no position yet starts at the feed's end: 0 behind)
    return {str(s.id): sum(max(0, end - s.delivered.get(plural, end))
                           for plural, end in ends.items() if s.covers(plural))
            for s in subscriptions}


def families_of(found: tuple[dict[str, float], dict[str, int] | None] | None) -> Iterator[Any]:
    """The two families, from ``(outcomes, lags)`` (``None``: no webhooks
    feature, no families)."""
    if found is None:
        return
    outcomes, lagging = found
    deliveries = CounterMetricFamily(DELIVERIES, HELP[DELIVERIES], labels=["outcome"])
    for outcome, count in outcomes.items():
        deliveries.add_metric([outcome], count)
    yield deliveries
    if lagging is not None:
        lag = GaugeMetricFamily(LAG, HELP[LAG], labels=["subscription"])
        for subscription, behind in sorted(lagging.items(), key=lambda kv: int(kv[0])):
            lag.add_metric([subscription], behind)
        yield lag
