"""The webhooks feature's settings: what each may be, read from a value
or a server's text (``read``), and where an app's are found (``of``).

``webhooks_allow_private`` (targets on loopback and private networks
allowed), ``webhooks_retries`` (the seconds before each retry after a
failure; after the last, the subscription is disabled), ``webhooks_timeout``
(seconds an attempt may take). The core's ``Settings`` has no field of
theirs yet (docs/decisions.md, "Webhooks: the feed is the outbox"):
``WebhooksSettings`` adds them, checked as the core checks its own.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

from ...hooks import named, resolved
from ...settings import SettingError, Settings

#: The default schedule: the first retry within seconds, the whole at
#: least a day (27.7 hours), as the contract asks.
DEFAULT_RETRIES = (5.0, 30.0, 120.0, 600.0, 1800.0, 3600.0, 7200.0, 14400.0, 28800.0, 43200.0)
DEFAULT_TIMEOUT = 10.0
#: The most retries a schedule may hold, and the longest time-out.
MOST_RETRIES = 100
LONGEST_TIMEOUT = 300.0

NAMES = ("webhooks_allow_private", "webhooks_retries", "webhooks_timeout")
_SWITCH = {"1": True, "on": True, "true": True, "0": False, "off": False, "false": False}


class Options(NamedTuple):
    """One app's webhooks settings, read."""

    allow_private: bool = False
    retries: tuple[float, ...] = DEFAULT_RETRIES
    timeout: float = DEFAULT_TIMEOUT

    @classmethod
    def of(cls, settings: Any) -> Options:
        """An app's: its settings' fields where it has them (read again:
        reading is idempotent), the defaults where it has none."""
        found = [getattr(settings, name, None) for name in NAMES]
        return cls(*(cls._field_defaults[name.removeprefix("webhooks_")] if value is None
                     else read(name, value) for name, value in zip(NAMES, found, strict=True)))


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


@dataclass(frozen=True)
class WebhooksSettings(Settings):
    """``Settings`` with the webhooks feature's three, until the core has
    them: ``build_app(WebhooksSettings(storage, features=(..., "webhooks"),
    webhooks_allow_private=True))``. Each one given (not its default) is
    read (``read``), and refused if the feature is not among the features,
    as the core refuses a setting of a feature left out."""

    webhooks_allow_private: Any = False
    webhooks_retries: Any = DEFAULT_RETRIES
    webhooks_timeout: Any = DEFAULT_TIMEOUT

    def __post_init__(self) -> None:
        super().__post_init__()
        names = named(self.features)
        for name in NAMES:
            value = getattr(self, name)
            if value == type(self).__dataclass_fields__[name].default:
                continue
            if "webhooks" not in names:
                raise SettingError(name, "is a setting of the webhooks feature, which is not "
                                         "among the features")
            feature = resolved([self.features[names.index("webhooks")]])[0]
            reader = getattr(feature, "read_setting", read)
            try:
                object.__setattr__(self, name, reader(name, value))
            except ValueError as e:
                raise SettingError(name, f"cannot be used: {e}") from None
