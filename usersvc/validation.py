"""What a valid record is: ``Schema`` and the field rules, ``USER`` among them.

A schema checks a whole request document and collects every problem it
finds (``Invalid``), rather than stopping at the first, so that a client can
fix its request in one go. Rules take the value as decoded (JSON types, or
text from XML) and return it cleaned (trimmed), or raise ``FieldError``.
"""
from __future__ import annotations

import operator
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from typing import Any

Rule = Callable[[Any], Any]


class FieldError(ValueError):
    """One field's value breaks a rule; ``str()`` completes "<field> ..."."""


class Invalid(Exception):
    """A document is well-formed but not a valid record (HTTP 422).

    ``errors`` holds ``(pointer, detail)`` pairs, one per problem, with an
    RFC 6901 JSON Pointer to the member at fault.
    """

    def __init__(self, detail: str, errors: Iterable[tuple[str, str]] = ()):
        super().__init__(detail)
        self.detail = detail
        self.errors = list(errors)


def pointer(*names: str) -> str:
    """The JSON Pointer (RFC 6901 §3) to a member: ``~`` and ``/`` escaped."""
    return "".join("/" + n.replace("~", "~0").replace("/", "~1") for n in names)


# -- rules ---------------------------------------------------------------
#
# Each rule checks the value that most requests send first, so that a valid
# value costs one test, and only a failing one is looked at again to say
# which rule it breaks.

# Lone surrogates (from JSON "\ud800" escapes) cannot be stored or sent as
# UTF-8, and U+FFFE/U+FFFF cannot be written in XML 1.0 (§2.2).
_UNENCODABLE = re.compile("[\ud800-\udfff\ufffe\uffff]")
# Either of those, or a control character: Unicode category Cc is exactly
# \x00-\x1f and \x7f-\x9f, 65 code points (test_validation checks).
_NOT_PLAIN = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


def _trimmed(value: Any) -> str:
    if not isinstance(value, str):
        raise FieldError("must be a string")
    return value.strip()


def text(max_length: int) -> Rule:
    """A required string: trimmed, 1 to ``max_length`` code points, and no
    control characters (Unicode category Cc) inside."""
    def rule(value: Any) -> str:
        trimmed = _trimmed(value)
        if trimmed and len(trimmed) <= max_length and not _NOT_PLAIN.search(trimmed):
            return trimmed
        if _UNENCODABLE.search(trimmed):
            raise FieldError("must be Unicode text (no surrogates or non-characters)")
        if not trimmed:
            raise FieldError("must not be empty")
        if len(trimmed) > max_length:
            raise FieldError(f"must be at most {max_length} characters long")
        raise FieldError("must not contain control characters")   # what _NOT_PLAIN found
    rule.describe = lambda in_xml=False: _text_schema(max_length, in_xml)  # type: ignore[attr-defined]
    return rule


# The "valid e-mail address" of the WHATWG HTML standard, §4.10.5.1.5
# (<input type=email>): deliberately simpler than RFC 5322, and ASCII only.
_EMAIL = re.compile(
    r"[a-zA-Z0-9.!#$%&'*+/=?^_`{|}~-]+"
    r"@[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?"
    r"(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*"
)
EMAIL_MAX_LENGTH = 254


def email(value: Any) -> str:
    """A required e-mail address: trimmed, at most 254 characters, and valid
    as the WHATWG HTML standard defines it for ``<input type=email>``."""
    trimmed = _trimmed(value)
    if len(trimmed) <= EMAIL_MAX_LENGTH and _EMAIL.fullmatch(trimmed):
        return trimmed
    if _UNENCODABLE.search(trimmed):
        raise FieldError("must be Unicode text (no surrogates or non-characters)")
    if len(trimmed) > EMAIL_MAX_LENGTH:
        raise FieldError(f"must be at most {EMAIL_MAX_LENGTH} characters long")
    raise FieldError("is not a valid e-mail address")


# <input type=email> checks the same rule in a browser, before sending.
email.input_type = "email"  # type: ignore[attr-defined]
email.describe = lambda in_xml=False: {  # type: ignore[attr-defined]
    "type": "string",
    # The limit holds after trimming, which maxLength cannot say: a padded
    # address may be longer on the wire (docs/conformance.md).
    "maxLength": EMAIL_MAX_LENGTH,
    "pattern": f"^{_space(in_xml)}*{_EMAIL.pattern}{_space(in_xml)}*$",
    "description": "A valid e-mail address (WHATWG HTML, <input type=email>); "
                   "surrounding white space is trimmed; unique, ignoring case.",
}


# -- the rules, described as JSON Schema (for the OpenAPI document) --------
#
# A request is judged after trimming, so each pattern allows white space
# around the value (what ``str.strip`` removes) and describes the value
# inside it exactly. XML 1.0 cannot carry most C0 controls at all (§2.2),
# so the XML patterns leave those out even where trimming would remove them.

_WHITE = "".join(chr(c) for c in range(0x110000) if chr(c).isspace())
_CONTROL = r"\x00-\x1f\x7f-\x9f"                  # Unicode category Cc
# U+FFFE and U+FFFF (see _UNENCODABLE). Lone surrogates are refused too, but
# no pattern can name them: JSON Schema strings are Unicode scalar values.
_NOT_TEXT = r"\ufffe\uffff"
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f]")


def _escaped(chars: str) -> str:
    """A character class's body for these characters: runs as ranges."""
    codes, runs = sorted(map(ord, chars)), []  # type: list[int], list[list[int]]
    for code in codes:
        if runs and runs[-1][1] == code - 1:
            runs[-1][1] = code
        else:
            runs.append([code, code])
    return "".join(f"\\u{a:04x}" + (f"-\\u{b:04x}" if b > a else "") for a, b in runs)


def _space(in_xml: bool) -> str:
    white = _NOT_XML.sub("", _WHITE) if in_xml else _WHITE
    return f"[{_escaped(white)}]"


def _text_schema(max_length: int, in_xml: bool) -> dict[str, Any]:
    inner = f"[^{_CONTROL}{_NOT_TEXT}]"                       # no controls inside
    edge = f"[^{_escaped(_WHITE)}{_CONTROL}{_NOT_TEXT}]"      # and no space at the ends
    value = edge if max_length == 1 else f"{edge}(?:{inner}{{0,{max_length - 2}}}{edge})?"
    return {
        "type": "string",
        "pattern": f"^{_space(in_xml)}*{value}{_space(in_xml)}*$",
        "description": f"1 to {max_length} characters after trimming surrounding "
                       "white space; no control characters.",
    }


def describe(rule: Rule, *, in_xml: bool = False) -> dict[str, Any]:
    """A rule's JSON Schema, as a request may send it; ``{}`` (anything)
    for a rule that does not describe itself."""
    describe = getattr(rule, "describe", None)
    return describe(in_xml) if describe else {}


# -- schemas -------------------------------------------------------------

# -- search ----------------------------------------------------------------

# Any one character that is not part of a word: Python's \W, and "_".
# Combining marks are \W to Python's re but part of the letter before them
# (an accent, a Devanagari vowel sign), so ``words`` keeps them.
_NOT_WORD = re.compile(r"[\W_]")


def _separator(m: re.Match[str]) -> str:
    return m.group() if unicodedata.category(m.group())[0] == "M" else " "


def words(text: str) -> list[str]:
    """The case-folded words of ``text``: split at anything that is not a
    letter, a digit or a mark (``"Ada Lovelace-Byron"`` is ``ada``,
    ``lovelace``, ``byron``)."""
    return _NOT_WORD.sub(_separator, text.casefold()).split()


# -- schemas -------------------------------------------------------------

class Schema:
    """A kind of record: its names, its fields' rules, and how a list of
    them may be filtered, sorted and searched.

    ``id`` is every record's first field: assigned by the store, read-only.
    ``fields`` maps each other field, in representation order, to its rule.
    ``filters`` are fields a list may be filtered by (exact, ignoring case);
    ``sorts`` fields it may be ordered by (case-folded, then by id) beside
    ``id``; the search ``q`` matches the start of any word of a ``words``
    field and the start of a whole ``prefixes`` field, case-folded.
    """

    def __init__(self, name: str, plural: str, fields: Mapping[str, Rule],
                 *, filters: Iterable[str] = (), sorts: Iterable[str] = (),
                 words: Iterable[str] = (), prefixes: Iterable[str] = ()) -> None:
        self.name = name
        self.plural = plural
        self.fields = dict(fields)
        self.field_names = ("id", *self.fields)
        self.filters = tuple(filters)
        self.sorts = ("id", *sorts)
        self.words = tuple(words)
        self.prefixes = tuple(prefixes)
        self.searchable = bool(self.words or self.prefixes)
        self._values = operator.attrgetter(*self.field_names)

    def search_keys(self, record: Any) -> set[str]:
        """What ``q`` is matched against, as a prefix: every word of the
        ``words`` fields and each ``prefixes`` field whole, case-folded."""
        keys = {getattr(record, f).casefold() for f in self.prefixes}
        for field in self.words:
            keys.update(words(getattr(record, field)))
        return keys

    def as_dict(self, record: Any) -> dict[str, Any]:
        """The record's representation, field by field."""
        return dict(zip(self.field_names, self.values(record)))

    def values(self, record: Any) -> tuple[Any, ...]:
        """The record's fields' values, in ``field_names`` order."""
        values = self._values(record)
        return values if len(self.field_names) > 1 else (values,)

    def for_create(self, document: Any) -> dict[str, Any]:
        """The fields of a new record: all required, no ``id``."""
        return self._check(document, record_id=None, partial=False)

    def for_replace(self, document: Any, record_id: int) -> dict[str, Any]:
        """The fields of a full replacement: all required; ``id`` only if it
        is the record's own."""
        return self._check(document, record_id, partial=False)

    def for_patch(self, document: Any, record_id: int) -> dict[str, Any]:
        """The fields a JSON Merge Patch (RFC 7396) changes: any subset; a
        ``null`` would remove a field, and every field is required."""
        return self._check(document, record_id, partial=True)

    def _check(self, document: Any, record_id: int | None,
               partial: bool) -> dict[str, Any]:
        if not isinstance(document, dict):
            raise Invalid(f"The body must be a {self.name} object.",
                          [("", f"must be a {self.name} object")])
        errors: list[tuple[str, str]] = []
        cleaned: dict[str, Any] = {}
        fields = self.fields
        for key, value in document.items():
            rule = fields.get(key)
            if rule is not None and (value is not None or not partial):
                try:
                    cleaned[key] = rule(value)
                except FieldError as e:
                    errors.append((pointer(key), str(e)))
            elif key == "id":
                problem = self._id_problem(value, record_id)
                if problem:
                    errors.append((pointer(key), problem))
            elif rule is None:
                errors.append((pointer(key), f"is not a field of a {self.name}"))
            else:
                errors.append((pointer(key), "is required and cannot be removed"))
        if not partial and len(cleaned) < len(fields):     # some field missing or invalid
            errors += [(pointer(f), "is required") for f in fields if f not in document]
        if errors:
            n = len(errors)
            raise Invalid(f"The {self.name} has {n} invalid field{'s' * (n != 1)}.",
                          errors)
        return cleaned

    def _id_problem(self, value: Any, record_id: int | None) -> str | None:
        if record_id is None:
            return "is assigned by the service and cannot be sent"
        if type(value) is not int or value != record_id:
            return f"must be {record_id}, the id in the path, if it is sent"
        return None


USER = Schema("user", "users", {"name": text(200), "email": email},
              filters=("email",), sorts=("name", "email"),
              words=("name",), prefixes=("email",))
