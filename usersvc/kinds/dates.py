"""``date`` and ``datetime``: a calendar date, and an instant (RFC 3339)."""
from __future__ import annotations

import re
import time
from datetime import date as Day, datetime as Instant, timedelta, timezone
from typing import Any

from ..fields import Field, FieldError

_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
# RFC 3339 §5.6's date-time, with at most 6 fraction digits (a microsecond).
_DATETIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}"
                       r"(?:\.([0-9]+))?(?:[Zz]|([+-][0-9]{2}:[0-9]{2}))")
# A stamp as the store writes it: UTC, milliseconds.
_STAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z")
# What a date-time must be, and an example; a query's has its + written
# %2B, as a URL must carry it (a bare + in a query is a space).
_SHAPE = "must be a date and time with an offset (RFC 3339): 2026-11-25T20:57:01Z or "
_SAID, _SAID_IN_URL = _SHAPE + "2026-11-25T21:57:01+01:00", _SHAPE + "2026-11-25T21:57:01%2B01:00"
_EPOCH = Instant(1970, 1, 1, tzinfo=timezone.utc)
_MICROSECOND = timedelta(microseconds=1)


class Date(Field):
    """A calendar date, ``YYYY-MM-DD`` (RFC 3339's full-date), that exists
    (no 2026-02-30); ordered by date."""

    type = "date"
    ordered = True
    input_type = "date"

    def __call__(self, value: Any) -> str:
        if type(value) is str and _DATE.fullmatch(value):
            try:
                Day.fromisoformat(value)
            except ValueError:
                raise FieldError("must be a date that exists") from None
            return value
        raise FieldError("must be a date: YYYY-MM-DD")

    def is_collated(self, value: Any) -> bool:
        return type(value) is str and _DATE.fullmatch(value) is not None

    def describe(self, in_xml: bool = False) -> dict[str, Any]:
        return {"type": "string", "format": "date"}


class DateTime(Field):
    """An instant: RFC 3339's date-time with an offset (``Z`` or ``+hh:mm``),
    a fraction of at most 6 digits; written in UTC, the fraction without
    trailing zeros (``2026-11-25T21:57:01.5+01:00`` is
    ``2026-11-25T20:57:01.5Z``); ordered by instant; not a filter."""

    type = "datetime"
    ordered = True
    input_type = "datetime-local"   # in UTC: the page says so, and its script adds the Z
    input_attributes = ' step="any"'
    input_hint = "in UTC"
    filterable = False
    collated_type = "integer"            # microseconds since 1970 (before it: below zero)

    def __call__(self, value: Any) -> str:
        m = _DATETIME.fullmatch(value) if type(value) is str else None
        if m is None:
            raise FieldError(_SAID)
        fraction, offset = m[1], m[2]
        if fraction is not None:
            if len(fraction) > 6:
                raise FieldError("must have at most 6 digits after the seconds")
            fraction = fraction.rstrip("0")
        try:    # the regex checked its shape; fromisoformat, that the time exists
            at = Instant.fromisoformat(value[:19])
            if offset is not None:      # naive arithmetic: the time as written, less its offset
                at -= _offset(offset)
        except (ValueError, OverflowError):
            raise FieldError("must be a date and time that exists, in UTC from year 1 "
                             "to 9999") from None
        written = at.isoformat()        # (whole seconds: the fraction is the text's)
        return f"{written}.{fraction}Z" if fraction else f"{written}Z"

    def from_query(self, text: str) -> Any:
        """As ``Field.from_query``, but a refusal's example is written as a
        URL carries it (``%2B01:00``), to work pasted into one."""
        try:
            return super().from_query(text)
        except FieldError as e:
            if str(e) == _SAID:
                raise FieldError(_SAID_IN_URL) from None
            raise

    def input_value(self, value: Any) -> str:
        return value[:-1]       # datetime-local has no offset: the page shows UTC

    def collate(self, value: str) -> int:
        return (Instant.fromisoformat(value[:-1] + "+00:00") - _EPOCH) // _MICROSECOND

    def is_collated(self, value: Any) -> bool:
        return type(value) is int and -2**62 < value < 2**62

    def describe(self, in_xml: bool = False) -> dict[str, Any]:
        return {"type": "string", "format": "date-time"}


#: A calendar date, and an instant (kinds with no parameters: ``{"due": date}``).
date, datetime = Date(), DateTime()


def _offset(offset: str) -> timedelta:
    """``+hh:mm`` or ``-hh:mm`` as a timedelta (``ValueError``: no offset)."""
    hours, minutes = int(offset[1:3]), int(offset[4:])
    if hours > 23 or minutes > 59:
        raise ValueError(f"no offset {offset}")
    return timedelta(hours=hours, minutes=minutes) * (1 if offset[0] == "+" else -1)


class Stamp(DateTime):
    """When the store wrote a record (``created``, ``updated``): in UTC with
    three fraction digits (``2026-11-25T20:57:01.120Z``), ordered as
    written (every instant's text is as long: it orders as the instant)."""

    collate = Field.collate         # type: ignore[assignment]
    collated_type = "text"

    def is_collated(self, value: Any) -> bool:
        return type(value) is str and _STAMP.fullmatch(value) is not None

    def __call__(self, value: Any) -> str:
        """A value a client sent back: the same instant, written as a stamp
        (an instant with more precision than a millisecond is none)."""
        instant = super().__call__(value)
        seconds, _, fraction = instant[:-1].partition(".")
        if len(fraction) > 3:
            raise FieldError("must be a time the service wrote (milliseconds)")
        return f"{seconds}.{fraction:0<3}Z"

    def __repr__(self) -> str:
        return "stamp"


def now() -> str:
    """This instant, as a stamp: UTC, to the millisecond."""
    ns = time.time_ns()
    second = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ns // 1_000_000_000))
    return f"{second}.{ns // 1_000_000 % 1000:03d}Z"


#: ``created`` and ``updated`` (``Schema(..., timestamps=True)``).
stamp = Stamp()
