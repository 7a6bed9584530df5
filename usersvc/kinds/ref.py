"""``ref("plural")``: the id of a record of another collection of the store."""
from __future__ import annotations

import re
from typing import Any

from ..fields import Field, FieldError, MAX_INTEGER

_DECIMAL = re.compile(r"[0-9]{1,19}")


class Ref(Field):
    """The id of a record of the collection ``plural`` names, in the same
    store: a JSON integer (in XML, its decimal text). The record must exist
    when the write is made, checked in the write's atomic step; while
    records refer to it, it cannot be deleted (``storage.references``). A
    list may always be filtered by it (``?owner=5``)."""

    type = "ref"
    input_type = "number"
    input_attributes = f' min="1" max="{MAX_INTEGER}"'

    def __init__(self, plural: str) -> None:
        if not isinstance(plural, str) or not re.fullmatch(r"[a-z][a-z0-9_]*", plural):
            raise ValueError(f"ref(plural) names a collection: {plural!r}")
        self.refers_to = plural

    def __call__(self, value: Any) -> int:
        if type(value) is int and 0 < value <= MAX_INTEGER:
            return value
        raise FieldError(f"must be the id of one of the {self.refers_to}")

    def from_xml(self, text: str) -> Any:
        stripped = text.strip()
        return int(stripped) if _DECIMAL.fullmatch(stripped) else text

    def is_key(self, key: Any) -> bool:
        return type(key) is int and 0 < key <= MAX_INTEGER

    def column_type(self, dialect: str) -> str:
        return "bigint" if dialect == "postgres" else "INTEGER"

    def describe(self, in_xml: bool = False) -> dict[str, Any]:
        return {"type": "integer", "minimum": 1, "maximum": MAX_INTEGER,
                "description": f"The id of one of the {self.refers_to}."}

    def describe_stored(self) -> dict[str, Any]:
        return self.describe()

    def __repr__(self) -> str:
        return f"ref({self.refers_to!r})"


#: The name a declaration uses: ``ref("users")``.
ref = Ref
