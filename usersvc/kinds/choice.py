"""A value out of a few: ``choice(a, b, ...)``, one of the strings listed,
and ``boolean``, true or false."""
from __future__ import annotations

from typing import Any

from ..fields import Field, FieldError, _NOT_PLAIN

_TRUTH = {"true": True, "false": False, "1": True, "0": False}


class Choice(Field):
    """One of the strings listed, exactly (in XML, the element's text
    trimmed); ordered as listed, not alphabetically. A page asks with a
    ``<select>``."""

    type = "choice"
    collated_type = "integer"        # its place in the list
    ordered = True                   # as listed

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

    def collate(self, value: str) -> int:
        return self._places[value]

    def is_collated(self, value: Any) -> bool:
        return type(value) is int and 0 <= value < len(self.options)

    def describe(self, in_xml: bool = False) -> dict[str, Any]:
        return {"type": "string", "enum": list(self.options)}

    def __repr__(self) -> str:
        return f"choice({', '.join(map(repr, self.options))})"


#: The name a declaration uses: ``choice("low", "normal", "high")``.
choice = Choice


class Boolean(Field):
    """True or false: in JSON ``true`` or ``false`` only; in XML and a query
    ``true``, ``false``, ``1`` or ``0``. Kept as 0 or 1 in SQLite, a boolean
    in PostgreSQL; false orders first."""

    type = "boolean"
    input_type = "checkbox"

    def __call__(self, value: Any) -> bool:
        if type(value) is bool:
            return value
        raise FieldError("must be true or false")

    def from_xml(self, text: str) -> Any:
        return _TRUTH.get(text.strip(), text)

    def to_text(self, value: Any) -> str:
        return "true" if value else "false"

    def from_stored(self, value: Any) -> bool:
        return bool(value)

    def is_collated(self, value: Any) -> bool:
        return type(value) is bool

    def column_type(self, dialect: str) -> str:
        return "boolean" if dialect == "postgres" else "INTEGER"

    def describe(self, in_xml: bool = False) -> dict[str, Any]:
        return {"type": "boolean"}


#: True or false (a kind with no parameters: ``{"done": boolean}``).
boolean = Boolean()
