"""``integer(minimum, maximum)``: a whole number within bounds. Its own
module, imported for a declaration that names it (``usersvc.integer``,
a stored declaration's ``integer(...)``): tasks have none."""
from __future__ import annotations

import re
from typing import Any

from ..fields import MAX_INTEGER, Field, FieldError

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
        self.minimum, self.maximum = self.arguments = minimum, maximum
        self.schema = {"type": "integer", "minimum": minimum, "maximum": maximum}
        self.input_attributes = f' min="{minimum}" max="{maximum}"'   # the browser checks them too

    def __call__(self, value: Any) -> int:
        if type(value) is int and self.minimum <= value <= self.maximum:
            return value
        if type(value) is not int:
            raise FieldError("must be a whole number")
        raise FieldError(f"must be from {self.minimum} to {self.maximum}")

    def from_xml(self, text: str) -> Any:
        stripped = text.strip()     # its trimmed decimal text, zeros before it left out
        if not _DIGITS.fullmatch(stripped):
            return text
        digits, negative = stripped.lstrip("-").lstrip("0") or "0", stripped[0] == "-"
        if len(digits) > 20:    # past every bound (never made an int: costly): out of range
            return self.minimum - 1 if negative else self.maximum + 1
        return -int(digits) if negative else int(digits)

    def is_collated(self, value: Any) -> bool:
        return type(value) is int and -MAX_INTEGER <= value <= MAX_INTEGER


#: The name a declaration uses: ``{"year": integer(0, 9999)}``.
integer = Integer
