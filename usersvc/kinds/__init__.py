"""The kinds of field beyond users' ``text`` and ``email``: what a kind is,
and how to write one, is ``fields.Field``. Here, one class each, the small
ones: ``integer`` and ``number``; ``choice`` and ``boolean``, a value out
of a few; ``url`` and ``ref``, what names something elsewhere. The dates,
``date`` and ``datetime`` (and the timestamps' ``stamp``), are ``dates``'.
Every kind, an embedder's too, is in ``Field.kinds`` once its class is
defined, where ``kind_of`` finds the kind a stored declaration names.

The core imports this package only for a collection that declares one of
its kinds (``usersvc.integer`` and the others are imported when first
asked for, and a stored declaration's kinds when it is read): an app
serving users alone never loads it.
"""
from __future__ import annotations

import ast
import math
import re
from typing import Any

from ..declaration import is_name
from ..fields import _NOT_PLAIN, MAX_INTEGER, XML_INTEGER, Field, FieldError
from .dates import date, datetime

# -- integer(minimum, maximum): a whole number within bounds -----------------

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


# -- a value out of a few: choice(a, b, ...), one of the strings listed;
#    boolean, true or false ----------------------------------------------------

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


# -- what names something elsewhere: url, an absolute http or https URL;
#    ref("plural"), the id of a record of another collection of the store ------

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


# -- the kind a stored declaration names -------------------------------------

def kind_of(rule: str) -> Any:
    """The kind a stored declaration's rule (a kind's ``repr``) names:
    ``text(200)``, ``boolean``, ``choice('low', 'high')``, an embedder's
    ``money`` (``Field.kinds``: its module imported); ``ValueError`` for
    another."""
    name, _, arguments = rule.partition("(")
    made = Field.kinds.get(name)
    try:
        if made is not None:
            kind = made(*ast.literal_eval(f"({arguments[:-1]},)")) if arguments else made()
            if repr(kind) == rule:
                return kind
    except (SyntaxError, ValueError, TypeError):
        pass
    raise ValueError(f"a stored field's kind that usersvc does not know: {rule} (a kind of "
                     "your own: import the module that defines it first, as usersvc copy --kinds "
                     "MODULE does)")


__all__ = ["boolean", "choice", "date", "datetime", "integer", "number", "ref", "url"]
