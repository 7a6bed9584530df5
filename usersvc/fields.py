"""What a kind of field is (``Field``), and users' kinds, ``text(n)`` and ``email`` (the
others: ``usersvc.kinds``). Each rule tests first the value most requests send: a valid one
costs one test, only a failing one is looked at again. Then how ``q`` reads text (``fold``,
``words``; ``usersvc.fast.search`` reads ASCII text by a table)."""
from __future__ import annotations

import re
import unicodedata
from typing import Any

#: The largest integer any store keeps: SQLite's (and PostgreSQL's bigint).
MAX_INTEGER = 2**63 - 1


class FieldError(ValueError):
    """One field's value breaks a rule; ``str()`` completes "<field> ..."."""


# Lone surrogates (JSON "\ud800" escapes) are not UTF-8; U+FFFE/U+FFFF not XML 1.0.
UNENCODABLE = re.compile("[\ud800-\udfff\ufffe\uffff]")
# Either, or a control character (category Cc: \x00-\x1f, \x7f-\x9f; test_schema).
_NOT_PLAIN = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


def as_text(value: Any) -> str:
    if not isinstance(value, str):
        raise FieldError("must be a string")
    return value.strip()


#: The SQL column that keeps each ``Field.type``, per dialect (any other: text's).
COLUMN_TYPES = {"text": {"sqlite": "TEXT", "postgres": "text"},
                "integer": {"sqlite": "INTEGER", "postgres": "bigint"},
                "ref": {"sqlite": "INTEGER", "postgres": "bigint"},
                "number": {"sqlite": "REAL", "postgres": "double precision"},
                "boolean": {"sqlite": "INTEGER", "postgres": "boolean"}}


class Field:
    """A kind of field: each attribute and method below says one thing a store, a format, a
    page or the OpenAPI document asks of its values (docs/architecture.md says them all)."""

    #: Every kind by name ("boolean", "money"): a subclass joins when defined (``kind_of``).
    kinds: dict[str, type[Field]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        Field.kinds[cls.__name__.lower()] = cls

    type = "text"           # what a store keeps: changing it is a migration (``converted``)
    input_type = "text"     # the HTML input that asks for it
    input_attributes = ""   # and what else it needs (' step="any"'),
    input_hint = ""         # and what a person should know beside it
    noun = ""               # what a sentence calls a value ("": the field's name)
    filterable = True       # a list may be filtered by it (equality)
    ordered = False         # a declared sort of it takes ranges (``asking.takes``)
    collated_type = "text"  # ``collate``'s column (kinds that override it): or "integer"
    collated_is_folded = False      # its collated value is its search term (``fold``)
    options: tuple[str, ...] = ()
    refers_to: str | None = None    # a ``ref``'s collection (``storage.references``)
    arguments: tuple[Any, ...] = ()     # what a declaration writes in its (): ``text(200)``
    schema: dict[str, Any]          # the JSON Schema ``describe`` gives, where it is one

    def __call__(self, value: Any) -> Any:      # a value as sent, clean; else FieldError
        raise NotImplementedError

    def from_xml(self, text: str) -> Any:       # an XML element's, for __call__: trimmed
        return text.strip()

    def from_query(self, text: str) -> Any:     # a filter's, written as XML writes it
        return self(self.from_xml(text))

    def to_text(self, value: Any) -> str:       # as XML and the pages write it
        return str(value)

    def input_value(self, value: Any) -> str:   # as a page's input holds it
        return self.to_text(value)

    def to_stored(self, value: Any) -> Any:     # a clean value (never None) as SQL keeps it
        return value

    def from_stored(self, value: Any) -> Any:   # a SQL column's (an earlier release's too)
        return value

    def collate(self, value: Any) -> Any:       # as the stores compare and order it
        return value

    def is_collated(self, value: Any) -> bool:  # a cursor's value (a client's): collate's?
        return type(value) is str and not UNENCODABLE.search(value) and "\x00" not in value

    def column_type(self, dialect: str) -> str:     # in "sqlite" or "postgres"
        return COLUMN_TYPES.get(self.type, COLUMN_TYPES["text"])[dialect]

    def describe(self, in_xml: bool = False) -> dict[str, Any]:     # a request's JSON Schema
        return dict(self.schema)

    def describe_stored(self) -> dict[str, Any]:    # the JSON Schema of what it sends
        return self.describe()

    def __repr__(self) -> str:
        """As a declaration names it (``text(200)``, ``boolean``): ``kinds``' key."""
        name = type(self).__name__.lower()
        return f"{name}({', '.join(map(repr, self.arguments))})" if self.arguments else name


class Folded(Field):
    """A text kind, compared and ordered case-folded (``str.casefold``)."""

    collate = staticmethod(str.casefold)        # type: ignore[assignment]  # (a function as the kind's method)
    # Any text matches or not (control characters, SQL's NUL too: refused by asking.query_value).
    from_query = staticmethod(str)          # type: ignore[assignment]  # (a function as the kind's method)

    def is_collated(self, value: Any) -> bool:
        return type(value) is str and not _NOT_PLAIN.search(value)

    def refusal(self, trimmed: str, longest: int, otherwise: str) -> FieldError:
        """Why ``trimmed`` breaks the rule: a second look, which a valid value never needs."""
        if UNENCODABLE.search(trimmed):
            return FieldError("must be Unicode text (no surrogates or non-characters)")
        if len(trimmed) > longest:
            return FieldError(f"must be at most {longest} characters long")
        return FieldError(otherwise)

    def describe_stored(self) -> dict[str, Any]:
        return {"type": "string", "minLength": 1}     # (what was sent: trimmed, never empty)


class Text(Folded):
    """A string: trimmed, 1 to ``max_length`` code points, no control character (Cc) inside."""

    ordered = True

    def __init__(self, max_length: int) -> None:
        if not max_length >= 1:
            raise ValueError("text(n) needs n of at least 1")
        self.max_length, self.arguments = max_length, (max_length,)

    def __call__(self, value: Any) -> str:
        trimmed = as_text(value)
        if trimmed and len(trimmed) <= self.max_length and not _NOT_PLAIN.search(trimmed):
            return trimmed
        raise self.refusal(trimmed, self.max_length, "must not contain control characters"
                           if trimmed else "must not be empty")

    def describe(self, in_xml: bool = False) -> dict[str, Any]:
        from .patterns import text_schema  # the OpenAPI document's, loaded when it is made
        return text_schema(self.max_length, in_xml)


_EMAIL = re.compile(r"[a-zA-Z0-9.!#$%&'*+/=?^_`{|}~-]+"
                    r"@[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?"
                    r"(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*")
EMAIL_MAX_LENGTH = 254


class Email(Folded):
    """An e-mail address: trimmed, at most 254 characters, valid as the WHATWG HTML standard
    says for ``<input type=email>`` (§4.10.5.1.5): simpler than RFC 5322, and ASCII only."""

    input_type = "email"      # the browser checks the same rule before sending
    noun = "e-mail address"
    collated_is_folded = True   # ASCII only: case-folded is folded (q searches its order)

    def __call__(self, value: Any) -> str:
        trimmed = as_text(value)
        if len(trimmed) <= EMAIL_MAX_LENGTH and _EMAIL.fullmatch(trimmed):
            return trimmed
        raise self.refusal(trimmed, EMAIL_MAX_LENGTH, "is not a valid e-mail address")

    def describe(self, in_xml: bool = False) -> dict[str, Any]:
        from .patterns import email_schema  # the OpenAPI document's, loaded when it is made
        return email_schema(_EMAIL.pattern, EMAIL_MAX_LENGTH, in_xml)


#: The names a declaration uses: ``text(200)``; ``email``, a kind with no parameters.
text, email = Text, Email()

#: The folding's version: a SQL store's terms folded by another are indexed again at open.
FOLDING = 1

# The letters NFKD leaves whole, as a reader searching without them types them.
_WHOLE = str.maketrans({"ø": "o", "ł": "l", "đ": "d", "æ": "ae", "œ": "oe", "ð": "d",
                        "þ": "th", "ħ": "h", "ı": "i", "ŧ": "t", "ŋ": "n", "ĸ": "k"})


def fold(text: str) -> str:
    """``text`` as ``q`` compares it: case-folded, its marks removed after NFKD (``é``
    is ``e``, ``ß`` ``ss``, ``ﬁ`` ``fi``), the letters NFKD leaves whole mapped (``ø``
    ``o``). NFKD again after case-folding: folding can make a letter that decomposes."""
    if text.isascii():      # (NFKD leaves ASCII as it is, folding lowers it: no mark, none mapped)
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", unicodedata.normalize("NFKD", text).casefold())
    return "".join(c for c in decomposed if unicodedata.category(c) != "Mn").translate(_WHOLE)


# What is not part of a word: Python's \W, and "_"; a mark is \W to re but
# part of the letter before it (a vowel sign, which folding keeps).
_NOT_WORD = re.compile(r"[\W_]")


def _separator(m: re.Match[str]) -> str:
    return m.group() if unicodedata.category(m.group())[0] == "M" else " "


def words(value: str) -> list[str]:
    """The folded words of ``value``, split at what is not a letter, a digit or
    a mark: ``"Émile Zoła-Byron"``: ``emile zola byron``."""
    return _NOT_WORD.sub(_separator, fold(value)).split()


def search_terms(value: str, by_words: bool, whole: bool) -> list[str]:
    """What ``q`` is matched against in one field's value, each as a prefix,
    folded: its words (a ``words`` field) and the whole of it (``prefixes``)."""
    found = words(value) if by_words else []
    return [*found, fold(value)] if whole else found
