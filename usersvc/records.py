"""A declaration's parts, each checked and kept on its ``Schema``: its names
and fields (``declared_fields``), what is indexed (``indexes``) and its
explicit migrations (``migrations``); what one stored version of a record
is in Python (``record_type``); and how one is spoken of (``with_article``).
Each check raises ``ValueError`` naming what cannot be declared."""
from __future__ import annotations

import re
from collections import namedtuple
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .fields import Field

# A name that is a table, a column, an XML element and a path segment at
# once, which SQL statements may hold as it is: lower case, no "__" (the
# stores' derived columns are "<field>__key").
_NAME = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")
#: Names a field cannot have: a record's own, the feed's, the listing's and the store's.
RESERVED = frozenset({"id", "version", "seq", "limit", "sort", "after", "cursor", "q",
                      "reverse", "precondition", "where"})


def is_name(name: Any) -> bool:
    return isinstance(name, str) and _NAME.fullmatch(name) is not None


def record_type(name: str, names: tuple[str, ...], optional: Iterable[str]) -> type:
    """A named tuple of ``names`` made by name only (``User(id=1, name=...,
    email=..., version=1)``; an optional field left out is ``None``), so that
    a field added to a schema never shifts another's value. The stores make
    theirs from rows in this order with ``_make``."""
    base = namedtuple(name, names)      # type: ignore[misc]
    absent = dict.fromkeys(optional)

    def __new__(cls: type, **values: Any) -> Any:
        return base.__new__(cls, **{**absent, **values})
    return type(name, (base,), {"__slots__": (), "__new__": __new__})


def declared_fields(name: str, plural: str, fields: Mapping[str, Field]) -> dict[str, Field]:
    """A schema's names and its fields, checked."""
    for what, value in (("name", name), ("plural", plural)):
        if not is_name(value):
            raise ValueError(f"a schema's {what} must be lower case letters, digits "
                             f"and single underscores: {value!r}")
    if name == plural:
        raise ValueError(f"a schema's name and plural must differ: {name!r}")
    for field, kind in fields.items():
        if not is_name(field) or field in RESERVED:
            raise ValueError(f"{plural}: {field!r} cannot name a field (lower case "
                             f"letters, digits and single underscores; not "
                             f"{', '.join(sorted(RESERVED))})")
        if not isinstance(kind, Field):
            raise ValueError(f"{plural}.{field}: not a field kind (text(n), email, "
                             f"integer(minimum, maximum)... a Field): {kind!r}")
    return dict(fields)


def indexes(schema: Any, optional: Iterable[str], unique: Iterable[str], filters: Iterable[str],
            sorts: Iterable[str], words: Iterable[str], prefixes: Iterable[str],
            filtered_sorts: Mapping[str, Iterable[str]] | None = None) -> None:
    """What a schema says of its fields (``Schema``'s text), checked and kept on it:
    every ref is a filter too (what a delete looks up), timestamps are sorts."""
    def names(what: str, given: Iterable[str], text_only: bool = False) -> tuple[str, ...]:
        found = tuple(given)
        if len(set(found)) != len(found):
            raise ValueError(f"{schema.plural}: {what} must name each field once: {found!r}")
        for field in found:
            kind = schema.fields.get(field)
            if kind is None:
                raise ValueError(f"{schema.plural}: {what} names {field!r}, which is not a field")
            if text_only and kind.type != "text" or what == "filters" and not kind.filterable:
                raise ValueError(f"{schema.plural}.{field}: {what} cannot be {kind!r}")
        return found
    schema.optional = names("optional", optional)
    schema.unique = names("unique", unique)
    declared = names("filters", filters)
    schema.filters = declared + tuple(f for f, kind in schema.fields.items()
                                      if kind.refers_to and f not in declared)
    schema.sorts = ("id", *dict.fromkeys((*names("sorts", sorts), *sorted(schema.read_only))))
    schema.words = names("words", words, text_only=True)
    schema.prefixes = names("prefixes", prefixes, text_only=True)
    #: The prefix fields ``q`` searches in their collated index (their kind's
    #: collated value is folded: an e-mail address), and each other field it
    #: searches, with its own terms: (by its words, by its whole value).
    schema.prefixes_by_key = tuple(f for f in schema.prefixes
                                   if schema.fields[f].collated_is_folded)
    schema.searched = {f: (f in schema.words, f in schema.prefixes) for f in dict.fromkeys(
        (*schema.words, *schema.prefixes)) if f not in schema.prefixes_by_key}
    schema.filtered_sorts = {}
    for field, by in (filtered_sorts or {}).items():
        if field not in schema.filters or field in schema.unique:
            raise ValueError(f"{schema.plural}: filtered_sorts names {field!r}, which is not "
                             "a filter, or is unique (its pages hold one record at most)")
        schema.filtered_sorts[field] = names("filtered_sorts", [by] if isinstance(by, str) else by)
        for sort in schema.filtered_sorts[field]:
            if sort not in schema.sorts[1:]:
                raise ValueError(f"{schema.plural}: filtered_sorts[{field!r}] names {sort!r}, "
                                 "which is not a sort")


def migrations(schema: Any, renamed: Mapping[str, str] | None, dropped: Iterable[str],
               converted: Mapping[str, Callable[[Any], Any]] | None,
               defaults: Mapping[str, Any] | None) -> None:
    """The explicit migrations a schema declares (done by a SQL store at
    open: ``storage.reshape``), checked and kept on it; ``ValueError``
    naming what cannot be one."""
    plural, fields = schema.plural, schema.fields
    schema.renamed = dict(renamed or {})
    for field, old in schema.renamed.items():
        if field not in fields or old in fields or not is_name(old):
            raise ValueError(f"{plural}: renamed maps a field to the name it had, "
                             f"which is no longer a field: {field!r}: {old!r}")
    schema.dropped = tuple([dropped] if isinstance(dropped, str) else dropped)
    for field in schema.dropped:
        if field in fields or not is_name(field):
            raise ValueError(f"{plural}: dropped names a stored field that is no longer "
                             f"declared: {field!r}")
    schema.converted = dict(converted or {})
    for field, convert in schema.converted.items():
        if field not in fields or field in schema.read_only or not callable(convert):
            raise ValueError(f"{plural}: converted maps a field to a function of its stored "
                             f"value: {field!r}: {convert!r}")
    schema.defaults = {}
    for field, value in (defaults or {}).items():
        if field not in fields or field in schema.optional or field in schema.read_only:
            raise ValueError(f"{plural}: defaults gives a required field a value: {field!r}")
        try:
            schema.defaults[field] = fields[field](value)
        except ValueError as e:     # FieldError
            raise ValueError(f"{plural}.{field}: the default {value!r} {e}") from None


def with_article(noun: str) -> str:
    """``noun`` after its indefinite article, chosen by how it is said
    (as far as its letters tell): "a user", "an issue", "a unit"."""
    said_with_a_vowel = noun[:1] in "aeio" or (
        noun[:1] == "u" and not noun.startswith(("uni", "use", "usu", "uti", "ur", "uk")))
    return f"{'an' if said_with_a_vowel else 'a'} {noun}"
