"""``stamp``: the kind of a record's timestamps, ``created`` and
``updated`` (``Schema(..., timestamps=True)``), which the store writes
(``dates.now``) and a client may only send back."""
from __future__ import annotations

import re
from typing import Any

from ..fields import Field, FieldError
from .dates import DateTime

# A stamp as the store writes it: UTC, milliseconds.
_STAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z")


class Stamp(DateTime):
    """When the store wrote a record (``created``, ``updated``): in UTC with
    three fraction digits (``2026-11-25T20:57:01.120Z``), ordered as
    written (every instant's text is as long: it orders as the instant)."""

    collate = Field.collate
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


#: ``created`` and ``updated``'s kind.
stamp = Stamp()
