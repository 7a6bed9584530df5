"""``number(minimum, maximum)``: a finite number within bounds."""
from __future__ import annotations

import math
import re
from typing import Any

from ..fields import Field, FieldError

# JSON's number, as XML and a query string may write one (100 characters at most).
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_EXACT = 2**53          # every whole number below it is a double exactly


def shortest(value: float) -> int | float:
    """A double as the service keeps and writes it: a whole one as an int
    (``7.0`` is ``7``), any other as the float (``repr``: its shortest text)."""
    return int(value) if value.is_integer() and -_EXACT < value < _EXACT else value


class Number(Field):
    """A finite JSON number (not a boolean or a string) from ``minimum`` to
    ``maximum``, kept as a double (``shortest``); ordered; not a filter."""

    type = "number"
    ordered = True
    input_type = "number"
    input_attributes = ' step="any"'
    filterable = False

    def __init__(self, minimum: float, maximum: float) -> None:
        if not (math.isfinite(minimum) and math.isfinite(maximum) and minimum <= maximum):
            raise ValueError(f"number(minimum, maximum) needs finite bounds, minimum <= "
                             f"maximum, not {minimum}, {maximum}")
        self.minimum, self.maximum = shortest(float(minimum)), shortest(float(maximum))
        self.input_attributes = f' step="any" min="{self.minimum!r}" max="{self.maximum!r}"'

    def __call__(self, value: Any) -> int | float:
        if type(value) in (int, float) and self.minimum <= value <= self.maximum:
            return shortest(float(value))       # (within finite bounds: finite)
        if type(value) not in (int, float):
            raise FieldError("must be a number")
        raise FieldError(f"must be a number from {self.minimum!r} to {self.maximum!r}")

    def from_xml(self, text: str) -> Any:
        stripped = text.strip()
        return float(stripped) if len(stripped) <= 100 and _JSON_NUMBER.fullmatch(stripped) else text

    def from_stored(self, value: Any) -> int | float:
        return shortest(float(value))

    def to_text(self, value: Any) -> str:
        return repr(value)

    def is_collated(self, value: Any) -> bool:
        return type(value) in (int, float) and self.minimum <= value <= self.maximum

    def column_type(self, dialect: str) -> str:
        return "double precision" if dialect == "postgres" else "REAL"

    def describe(self, in_xml: bool = False) -> dict[str, Any]:
        return {"type": "number", "minimum": self.minimum, "maximum": self.maximum}

    def __repr__(self) -> str:
        return f"number({self.minimum!r}, {self.maximum!r})"


#: The name a declaration uses: ``number(0, 1000)``.
number = Number
