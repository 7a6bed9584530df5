"""What names something elsewhere: ``url``, an absolute http or https URL,
and ``ref("plural")``, the id of a record of another collection of the
store."""
from __future__ import annotations

import re
from typing import Any

from ..fields import Field, FieldError, MAX_INTEGER
from ..declaration import is_name

MAX_URL = 2048
# A scheme, an authority (user, host, port) and the rest: nothing blank, no
# control characters, nothing UTF-8 cannot encode (``fields.UNENCODABLE``).
_NOT = "\x00-\x20\x7f-\x9f\ud800-\udfff\ufffe\uffff"
_URL = re.compile(f"[Hh][Tt][Tt][Pp][Ss]?://(?:[^{_NOT}/?#@]*@)?"
                  f"(?:\\[[0-9A-Fa-f:.]+\\]|[^{_NOT}/?#@:\\[\\]]+)(?::[0-9]*)?"
                  f"(?:[/?#][^{_NOT}]*)?")


class Url(Field):
    """An absolute ``http`` or ``https`` URL with a host, at most 2,048
    characters, kept exactly as sent (in XML, the element's text trimmed);
    compared as sent, not case-folded."""

    type = "url"
    input_type = "url"
    noun = "URL"

    def __call__(self, value: Any) -> str:
        if type(value) is str and len(value) <= MAX_URL and _URL.fullmatch(value):
            return value
        if type(value) is str and len(value) > MAX_URL:
            raise FieldError(f"must be at most {MAX_URL} characters long")
        raise FieldError("must be an absolute http or https URL")

    def describe(self, in_xml: bool = False) -> dict[str, Any]:
        return {"type": "string", "format": "uri", "maxLength": MAX_URL,
                "pattern": "^[Hh][Tt][Tt][Pp][Ss]?://[^/?#\\s]+\\S*$"}


#: An absolute http or https URL (a kind with no parameters: ``{"link": url}``).
url = Url()


_ID = re.compile(r"[0-9]{1,19}")      # (longer is no id: checked before int())


class Ref(Field):
    """The id of a record of ``plural`` in the same store, which must exist
    when the write is made and cannot be deleted while records name it
    (``storage.references``); always a filter (``?owner=5``)."""

    type = "ref"
    input_type = "number"
    input_attributes = f' min="1" max="{MAX_INTEGER}"'

    def __init__(self, plural: str) -> None:
        if not is_name(plural):
            raise ValueError(f"ref(plural) names a collection: {plural!r}")
        self.refers_to = plural

    def __call__(self, value: Any) -> int:
        if type(value) is int and 0 < value <= MAX_INTEGER:
            return value
        raise FieldError(f"must be the id of one of the {self.refers_to}")

    def from_xml(self, text: str) -> Any:
        stripped = text.strip()
        return int(stripped) if _ID.fullmatch(stripped) else text

    def is_collated(self, value: Any) -> bool:
        return type(value) is int and 0 < value <= MAX_INTEGER

    def column_type(self, dialect: str) -> str:
        return "bigint" if dialect == "postgres" else "INTEGER"

    def describe(self, in_xml: bool = False) -> dict[str, Any]:
        return {"type": "integer", "minimum": 1, "maximum": MAX_INTEGER,
                "description": f"The id of one of the {self.refers_to}."}

    def __repr__(self) -> str:
        return f"ref({self.refers_to!r})"


#: The name a declaration uses: ``ref("users")``.
ref = Ref
