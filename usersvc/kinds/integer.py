"""``integer(minimum, maximum)``: a whole number within bounds."""
from __future__ import annotations

import re
from typing import Any

from ..fields import MAX_INTEGER, XML_INTEGER, Field, FieldError

_DIGITS = re.compile(r"-?[0-9]+")


class Integer(Field):
    """A whole number from ``minimum`` to ``maximum``: a JSON integer (not a
    boolean, a float or a string), or in XML the element's decimal text."""

    type = "integer"
    ordered = True
    input_type = "number"

    def __init__(self, minimum: int, maximum: int) -> None:
        if not -MAX_INTEGER <= minimum <= maximum <= MAX_INTEGER:
            raise ValueError(f"integer(minimum, maximum) needs -2**63 < minimum <= "
                             f"maximum < 2**63, not {minimum}, {maximum}")
        self.minimum = minimum
        self.maximum = maximum
        self.input_attributes = f' min="{minimum}" max="{maximum}"'   # the browser checks them too

    def __call__(self, value: Any) -> int:
        if type(value) is int and self.minimum <= value <= self.maximum:
            return value
        if type(value) is not int:
            raise FieldError("must be a whole number")
        raise FieldError(f"must be from {self.minimum} to {self.maximum}")

    def from_xml(self, text: str) -> Any:
        stripped = text.strip()     # its trimmed decimal text (20 digits at most: no longer int)
        if XML_INTEGER.fullmatch(stripped):
            return int(stripped)
        if _DIGITS.fullmatch(stripped):     # longer: a whole number all the same
            negative, digits = stripped.startswith("-"), stripped.lstrip("-").lstrip("0")
            if len(digits) <= 20:           # (zeros before it)
                return -int(digits or "0") if negative else int(digits or "0")
            # Past every bound (never made an int: costly): out of range, as __call__ says.
            return self.minimum - 1 if negative else self.maximum + 1
        return text

    def describe(self, in_xml: bool = False) -> dict[str, Any]:
        return {"type": "integer", "minimum": self.minimum, "maximum": self.maximum}

    def __repr__(self) -> str:
        return f"integer({self.minimum}, {self.maximum})"

    def is_collated(self, value: Any) -> bool:
        return type(value) is int and -MAX_INTEGER <= value <= MAX_INTEGER


#: The name a declaration uses: ``integer(0, 9999)``.
integer = Integer
