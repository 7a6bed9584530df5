"""``url``: an absolute http or https URL."""
from __future__ import annotations

import re
from typing import Any

from ..fields import Field, FieldError

MAX_URL = 2048
# A scheme, an authority (user information, a host, a port of digits), and
# the rest (a path, a query, a fragment): nothing blank, no control
# characters, nothing UTF-8 cannot encode (``fields.UNENCODABLE``'s).
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

    def from_xml(self, text: str) -> Any:
        return text.strip()

    def describe(self, in_xml: bool = False) -> dict[str, Any]:
        return {"type": "string", "format": "uri", "maxLength": MAX_URL,
                "pattern": "^[Hh][Tt][Tt][Pp][Ss]?://[^/?#\\s]+\\S*$"}

    def describe_stored(self) -> dict[str, Any]:
        return self.describe()


#: An absolute http or https URL (a kind with no parameters: ``{"link": url}``).
url = Url()
