"""The webhooks feature's settings: what each may be, read from a value
or a server's text (``read``), and where an app's are found (``of``).

``webhooks_allow_private`` (targets on loopback and private networks
allowed), ``webhooks_retries`` (the seconds before each retry after a
failure; after the last, the subscription is disabled), ``webhooks_timeout``
(seconds an attempt may take). They are the feature's own (``Settings``
has no field of theirs: ``usersvc.hooks``, "Its settings"): given as
``make_app(webhooks_timeout=2)``, ``--webhooks-timeout 2`` or
``USERSVC_WEBHOOKS_TIMEOUT=2``, read here, found in ``settings.own``.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, NamedTuple

#: The default schedule: the first retry within seconds, the whole at
#: least a day (27.7 hours), as the contract asks.
DEFAULT_RETRIES = (5.0, 30.0, 120.0, 600.0, 1800.0, 3600.0, 7200.0, 14400.0, 28800.0, 43200.0)
DEFAULT_TIMEOUT = 10.0
#: The most retries a schedule may hold, and the longest time-out.
MOST_RETRIES = 100
LONGEST_TIMEOUT = 300.0

NAMES = ("webhooks_allow_private", "webhooks_retries", "webhooks_timeout")
#: How a server shows each (``usersvc.hooks``): its metavar (``None``: a switch), its help.
OPTIONS = {
    "webhooks_allow_private": (None, "let webhooks deliver to targets on loopback, private, "
                                     "link-local or reserved addresses (an internal network, "
                                     "a test; default: refused)"),
    "webhooks_retries": ("SECONDS,...", "the seconds before each retry of a failed webhook "
                                        "delivery; after the last, the subscription is "
                                        "disabled (default: "
                                        + ",".join(f"{d:g}" for d in DEFAULT_RETRIES)
                                        + ", 27.7 hours in all)"),
    "webhooks_timeout": ("SECONDS", f"how long one webhook delivery may take before it is "
                                    f"tried again (default: {DEFAULT_TIMEOUT:g})"),
}
_SWITCH = {"1": True, "on": True, "true": True, "0": False, "off": False, "false": False}


class Options(NamedTuple):
    """One app's webhooks settings, read."""

    allow_private: bool = False
    retries: tuple[float, ...] = DEFAULT_RETRIES
    timeout: float = DEFAULT_TIMEOUT

    @classmethod
    def of(cls, settings: Any) -> Options:
        """An app's: those its settings were given (``settings.own``, read
        as they were made), the defaults for the rest."""
        return cls(**{name.removeprefix("webhooks_"): settings.own[name]
                      for name in NAMES if name in settings.own})


def read(name: str, value: Any) -> Any:
    """A setting's value as the feature uses it, from a value or a text; a
    ``ValueError`` that says why it cannot be."""
    if name == "webhooks_allow_private":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in _SWITCH:
            return _SWITCH[value.strip().lower()]
        raise ValueError(f"must be true or false (1 or 0), not {value!r}")
    if name == "webhooks_retries":
        delays = _numbers(value.split(",") if isinstance(value, str) else value, name)
        if not 1 <= len(delays) <= MOST_RETRIES or any(d < 0 for d in delays):
            raise ValueError(f"must be 1 to {MOST_RETRIES} delays of 0 seconds or more, "
                             f"separated by commas, not {value!r}")
        return delays
    if name == "webhooks_timeout":
        (seconds,) = _numbers([value], name)
        if not 0 < seconds <= LONGEST_TIMEOUT:
            raise ValueError(f"must be more than 0 seconds and at most {LONGEST_TIMEOUT:g}, "
                             f"not {value!r}")
        return seconds
    raise ValueError(f"{name} is not a setting of the webhooks feature")


def _numbers(values: Iterable[Any], name: str) -> tuple[float, ...]:
    """Each value as a finite number of seconds (a number, or its text)."""
    try:
        found = tuple(float(v.strip() if isinstance(v, str) else v) for v in values
                      if not isinstance(v, bool))
    except (TypeError, ValueError):
        found = ()
    if not found or not all(map(math.isfinite, found)):
        raise ValueError(f"must be seconds (a number, or numbers separated by commas), "
                         f"not {values!r}")
    return found
