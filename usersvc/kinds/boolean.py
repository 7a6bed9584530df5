"""``boolean``: true or false."""
from __future__ import annotations

from typing import Any

from ..fields import Field, FieldError

_XML = {"true": True, "false": False, "1": True, "0": False}


class Boolean(Field):
    """True or false: in JSON ``true`` or ``false`` only (not 0, 1,
    ``"true"`` or null); in XML and a query string ``true`` or ``false``
    (``1`` and ``0`` too), written ``true`` or ``false``. Kept as 0 or 1 in
    SQLite and as a boolean in PostgreSQL; false orders first."""

    type = "boolean"
    input_type = "checkbox"

    def __call__(self, value: Any) -> bool:
        if type(value) is bool:
            return value
        raise FieldError("must be true or false")

    def from_xml(self, text: str) -> Any:
        return _XML.get(text.strip(), text)

    def to_text(self, value: Any) -> str:
        return "true" if value else "false"

    def from_stored(self, value: Any) -> bool:
        return bool(value)

    def is_key(self, key: Any) -> bool:
        return type(key) is bool

    def column_type(self, dialect: str) -> str:
        return "boolean" if dialect == "postgres" else "INTEGER"

    def describe(self, in_xml: bool = False) -> dict[str, Any]:
        return {"type": "boolean"}

    def describe_stored(self) -> dict[str, Any]:
        return self.describe()


#: True or false (a kind with no parameters: ``{"done": boolean}``).
boolean = Boolean()
