"""``choice(a, b, ...)``: one of the strings listed."""
from __future__ import annotations

from typing import Any

from ..fields import Field, FieldError, _NOT_PLAIN


class Choice(Field):
    """One of the strings listed, exactly (in XML, the element's text
    trimmed); ordered as listed, not alphabetically. A page asks with a
    ``<select>``."""

    type = "choice"
    key_type = "integer"        # its place in the list

    def __init__(self, *options: str) -> None:
        if not options or len(set(options)) != len(options) or not all(
                type(o) is str and o.strip() == o and o and not _NOT_PLAIN.search(o)
                for o in options):
            raise ValueError(f"choice(...) needs one or more distinct, non-empty strings "
                             f"without surrounding spaces or control characters: {options!r}")
        self.options = options
        self._places = {option: place for place, option in enumerate(options)}

    def __call__(self, value: Any) -> str:
        if type(value) is str and value in self._places:
            return value
        raise FieldError(f"must be one of {', '.join(self.options)}")

    def from_xml(self, text: str) -> Any:
        return text.strip()

    def key(self, value: str) -> int:
        return self._places[value]

    def is_key(self, key: Any) -> bool:
        return type(key) is int and 0 <= key < len(self.options)

    def describe(self, in_xml: bool = False) -> dict[str, Any]:
        return {"type": "string", "enum": list(self.options)}

    def describe_stored(self) -> dict[str, Any]:
        return self.describe()

    def __repr__(self) -> str:
        return f"choice({', '.join(map(repr, self.options))})"


#: The name a declaration uses: ``choice("low", "normal", "high")``.
choice = Choice
