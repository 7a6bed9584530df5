"""The kinds of field beyond users' ``text`` and ``email`` (what a kind
is, and how to write one: ``fields.Field``), one class each. Here the
small ones: ``number``; ``choice`` and ``boolean``, a value out of a few;
``url`` and ``ref``, what names something elsewhere. The others have a
module each, imported for a declaration that names them: ``integer``
(``integers``), ``date`` and ``datetime`` (``dates``), ``stamp``.

The core imports this package only for a collection that declares one of
its kinds: an app serving users alone never loads it.
"""
from __future__ import annotations

import math
import re
from typing import Any

from ..declaration import is_name
from ..fields import _NOT_PLAIN, MAX_INTEGER, Field, FieldError
from .dates import date, datetime

# -- number(minimum, maximum): a finite number within bounds -----------------

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
    filterable = False

    def __init__(self, minimum: float, maximum: float) -> None:
        if not (math.isfinite(minimum) and math.isfinite(maximum) and minimum <= maximum):
            raise ValueError(f"number(minimum, maximum) needs finite bounds, minimum <= "
                             f"maximum, not {minimum}, {maximum}")
        self.minimum, self.maximum = shortest(float(minimum)), shortest(float(maximum))
        self.arguments = (self.minimum, self.maximum)
        self.schema = {"type": "number", "minimum": self.minimum, "maximum": self.maximum}
        self.input_attributes = f' step="any" min="{self.minimum!r}" max="{self.maximum!r}"'

    def __call__(self, value: Any) -> int | float:
        if type(value) in (int, float) and self.minimum <= value <= self.maximum:
            return shortest(float(value))       # (within finite bounds: finite)
        if type(value) not in (int, float):
            raise FieldError("must be a number")
        raise FieldError(f"must be a number from {self.minimum!r} to {self.maximum!r}")

    def from_xml(self, text: str) -> Any:
        number = text.strip()
        return float(number) if len(number) <= 100 and _JSON_NUMBER.fullmatch(number) else text

    def from_stored(self, value: Any) -> int | float:
        return shortest(float(value))

    def to_text(self, value: Any) -> str:
        return repr(value)

    def is_collated(self, value: Any) -> bool:
        return type(value) in (int, float) and self.minimum <= value <= self.maximum


# -- a value out of a few: choice(a, b, ...), one of the strings listed; boolean --

class Choice(Field):
    """One of the strings listed, exactly (in XML, the element's text trimmed);
    ordered as listed, not alphabetically. A page asks with a ``<select>``."""

    type = "choice"
    collated_type = "integer"        # its place in the list
    ordered = True                   # as listed

    def __init__(self, *options: str) -> None:
        if not options or len(set(options)) != len(options) or not all(
                type(o) is str and o.strip() == o and o and not _NOT_PLAIN.search(o)
                for o in options):
            raise ValueError(f"choice(...) needs one or more distinct, non-empty strings "
                             f"without surrounding spaces or control characters: {options!r}")
        self.options = self.arguments = options
        self.schema = {"type": "string", "enum": list(options)}
        self._places = {option: place for place, option in enumerate(options)}

    def __call__(self, value: Any) -> str:
        if type(value) is str and value in self._places:
            return value
        raise FieldError(f"must be one of {', '.join(self.options)}")

    def collate(self, value: str) -> int:
        return self._places[value]

    def is_collated(self, value: Any) -> bool:
        return type(value) is int and 0 <= value < len(self.options)


class Boolean(Field):
    """True or false: in JSON ``true`` or ``false`` only; in XML and a query
    ``true``, ``false``, ``1`` or ``0``. Kept as 0 or 1 in SQLite, a boolean
    in PostgreSQL; false orders first."""

    type = "boolean"
    input_type = "checkbox"
    schema = {"type": "boolean"}

    def __call__(self, value: Any) -> bool:
        if type(value) is bool:
            return value
        raise FieldError("must be true or false")

    def from_xml(self, text: str) -> Any:
        return {"true": True, "false": False, "1": True, "0": False}.get(text.strip(), text)

    def to_text(self, value: Any) -> str:
        return "true" if value else "false"

    def from_stored(self, value: Any) -> bool:
        return bool(value)

    def is_collated(self, value: Any) -> bool:
        return type(value) is bool


# -- what names something elsewhere: url; ref("plural"), a record of another collection's id

MAX_URL = 2048
# A scheme, an authority (user, host, port) and the rest: nothing blank, no
# control characters, nothing UTF-8 cannot encode (``fields.UNENCODABLE``).
_NOT = "\x00-\x20\x7f-\x9f\ud800-\udfff\ufffe\uffff"
_URL = re.compile(f"[Hh][Tt][Tt][Pp][Ss]?://(?:[^{_NOT}/?#@]*@)?"
                  f"(?:\\[[0-9A-Fa-f:.]+\\]|[^{_NOT}/?#@:\\[\\]]+)(?::[0-9]*)?"
                  f"(?:[/?#][^{_NOT}]*)?")
_ID = re.compile(r"[0-9]{1,19}")      # a ref's (longer is no id: checked before int())


class Url(Field):
    """An absolute ``http`` or ``https`` URL with a host, at most 2,048
    characters, kept exactly as sent (in XML, the element's text trimmed);
    compared as sent, not case-folded."""

    type = "url"
    input_type = "url"
    noun = "URL"
    schema = {"type": "string", "format": "uri", "maxLength": MAX_URL,
              "pattern": "^[Hh][Tt][Tt][Pp][Ss]?://[^/?#\\s]+\\S*$"}

    def __call__(self, value: Any) -> str:
        if type(value) is str and len(value) <= MAX_URL and _URL.fullmatch(value):
            return value
        if type(value) is str and len(value) > MAX_URL:
            raise FieldError(f"must be at most {MAX_URL} characters long")
        raise FieldError("must be an absolute http or https URL")


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
        self.refers_to, self.arguments = plural, (plural,)
        self.schema = {"type": "integer", "minimum": 1, "maximum": MAX_INTEGER,
                       "description": f"The id of one of the {plural}."}

    def __call__(self, value: Any) -> int:
        if type(value) is int and 0 < value <= MAX_INTEGER:
            return value
        raise FieldError(f"must be the id of one of the {self.refers_to}")

    def from_xml(self, text: str) -> Any:
        stripped = text.strip()
        return int(stripped) if _ID.fullmatch(stripped) else text

    def is_collated(self, value: Any) -> bool:
        return type(value) is int and 0 < value <= MAX_INTEGER


#: The names a declaration uses: ``number(0, 1000)``,
#: ``choice("low", "normal", "high")``, ``ref("users")``; and the kinds with
#: no parameters, one value each: ``{"done": boolean, "link": url}``.
number, choice, ref = Number, Choice, Ref
boolean, url = Boolean(), Url()

__all__ = ["boolean", "choice", "date", "datetime", "number", "ref", "url"]
