"""``date`` and ``datetime``: a calendar date, and an instant (RFC 3339);
and ``now``, this instant as the store writes a timestamp (``kinds.stamp``)."""
from __future__ import annotations

import re
import time
from datetime import date as Day, datetime as Instant, timedelta
from typing import Any

from ..fields import Field, FieldError

_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")    # RFC 3339's full-date
# RFC 3339 §5.6's date-time, with at most 6 fraction digits (a microsecond).
_DATETIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}"
                       r"(?:\.([0-9]+))?(?:[Zz]|([+-][0-9]{2}:[0-9]{2}))")
_SAID = ("must be a date and time with an offset (RFC 3339): 2026-11-25T20:57:01Z or "
         "2026-11-25T21:57:01+01:00")


class Date(Field):
    """A calendar date, ``YYYY-MM-DD`` (RFC 3339's full-date), that exists (no 2026-02-30)."""

    type = "date"
    ordered = True
    input_type = "date"
    schema = {"type": "string", "format": "date"}

    def __call__(self, value: Any) -> str:
        if type(value) is not str or not _DATE.fullmatch(value):
            raise FieldError("must be a date: YYYY-MM-DD")
        try:
            return Day.fromisoformat(value).isoformat()     # (as sent: the regex's digits)
        except ValueError:
            raise FieldError("must be a date that exists") from None

    def is_collated(self, value: Any) -> bool:
        return type(value) is str and _DATE.fullmatch(value) is not None


class DateTime(Field):
    """An instant: RFC 3339's date-time with an offset (``Z`` or ``+hh:mm``) and
    at most 6 fraction digits, written in UTC without the fraction's trailing
    zeros (``2026-11-25T21:57:01.5+01:00`` is ``2026-11-25T20:57:01.5Z``)."""

    type = "datetime"
    ordered = True
    input_type = "datetime-local"   # in UTC: the page says so, and its script adds the Z
    input_attributes = ' step="any"'
    input_hint = "in UTC"
    filterable = False
    collated_type = "integer"            # microseconds since 1970 (before it: below zero)
    schema = {"type": "string", "format": "date-time"}

    def __call__(self, value: Any) -> str:
        m = _DATETIME.fullmatch(value) if type(value) is str else None
        if m is None or len(m[1] or "") > 6:
            raise FieldError(_SAID if m is None else "must have at most 6 digits after the seconds")
        try:    # the regex checked its shape; fromisoformat, that the time exists
            # naive arithmetic: the time as written, less its offset (Z: none)
            at = Instant.fromisoformat(value[:19]) - (_offset(m[2]) if m[2] else timedelta())
        except (ValueError, OverflowError):
            raise FieldError("must be a date and time that exists, in UTC from year 1 "
                             "to 9999") from None
        fraction = (m[1] or "").rstrip("0")     # (whole seconds from isoformat: the text's)
        return f"{at.isoformat()}.{fraction}Z" if fraction else f"{at.isoformat()}Z"

    def from_query(self, text: str) -> Any:
        """As ``Field.from_query``, but a refusal's example is written as a
        URL carries it (``%2B01:00``: a bare + in a query is a space)."""
        try:
            return super().from_query(text)
        except FieldError as e:
            raise FieldError(str(e).replace("+", "%2B")) from None

    def input_value(self, value: str) -> str:
        return value[:-1]       # datetime-local has no offset: the page shows UTC

    def collate(self, value: str) -> int:
        return (Instant.fromisoformat(value[:-1]) - Instant(1970, 1, 1)) // timedelta.resolution

    def is_collated(self, value: Any) -> bool:
        return type(value) is int and -2**62 < value < 2**62


#: A calendar date, and an instant (kinds with no parameters: ``{"due": date}``).
date, datetime = Date(), DateTime()


def _offset(offset: str) -> timedelta:
    """``+hh:mm`` or ``-hh:mm`` as a timedelta (``ValueError``: no offset)."""
    hours, minutes = int(offset[1:3]), int(offset[4:])
    if hours > 23 or minutes > 59:
        raise ValueError(f"no offset {offset}")
    return timedelta(hours=hours, minutes=minutes) * (1 if offset[0] == "+" else -1)


def now() -> str:
    """This instant, as a stamp: UTC, to the millisecond."""
    seconds, ns = divmod(time.time_ns(), 1_000_000_000)     # one read: the two parts agree
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{ns // 1_000_000:03d}Z"
