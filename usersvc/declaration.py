"""What a collection's declaration may say, part by part: each function
checks one part of a ``Schema`` being made and gives back what the schema
keeps (``declared_fields``, ``indexed``, ``filtered_sorts_of``,
``migrations``), raising ``ValueError`` naming what cannot be declared;
then what the stores derive from it (``searched``, ``collated``), what one
stored version of a record is in Python (``record_type``), and how one is
spoken of (``with_article``). What each part means: docs/api.md,
"Collections declared once"."""
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


def record_type(schema: Any) -> type:
    """One stored version of a record of ``schema``: a named tuple of ``id``,
    the fields and ``version``, made by name only (``User(id=1, name=...,
    email=..., version=1)``; an optional field left out is ``None``), so that
    a field added to a schema never shifts another's value. The stores make
    theirs from rows in this order with ``_make``."""
    name = schema.name.title().replace("_", "")
    base = namedtuple(name, ("id", *schema.fields, "version"))      # type: ignore[misc]  # (a name made at run time)
    absent = dict.fromkeys(schema.optional)

    def __new__(cls: type, **values: Any) -> Any:
        return base.__new__(cls, **{**absent, **values})
    return type(name, (base,), {"__slots__": (), "__new__": __new__})


def declared_fields(name: str, plural: str, fields: Mapping[str, Field], timestamps: bool
                    ) -> tuple[dict[str, Field], frozenset[str]]:
    """A schema's names and its fields, checked; with ``timestamps``, the
    read-only ``created`` and ``updated`` after them, set by the store
    (their kind is ``usersvc.kinds``': loaded for a schema that has them)."""
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
    read_only = frozenset(("created", "updated") if timestamps else ())
    if read_only & fields.keys():
        raise ValueError(f"{plural}: timestamps are the fields created and updated")
    if not timestamps:
        return dict(fields), read_only
    from .kinds.stamp import stamp
    return {**fields, **dict.fromkeys(sorted(read_only), stamp)}, read_only


def named(schema: Any, what: str, given: Iterable[str], text_only: bool = False) -> tuple[str, ...]:
    """The fields a part of ``schema`` names (``optional``, ``sorts``...):
    each a field of it, once, of a kind the part takes."""
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


def indexed(schema: Any, optional: Iterable[str], unique: Iterable[str],
            filters: Iterable[str], sorts: Iterable[str], words: Iterable[str],
            prefixes: Iterable[str]) -> tuple[tuple[str, ...], ...]:
    """What ``schema`` indexes, each part checked (``named``), as it keeps
    them: ``optional``, ``unique``, ``filters`` (every ref too: what a
    delete looks up), ``sorts`` (``id`` first, the timestamps too),
    ``words`` and ``prefixes``."""
    optional, unique = named(schema, "optional", optional), named(schema, "unique", unique)
    declared = named(schema, "filters", filters)
    filters = declared + tuple(f for f, kind in schema.fields.items()
                               if kind.refers_to and f not in declared)
    sorts = ("id", *dict.fromkeys((*named(schema, "sorts", sorts), *sorted(schema.read_only))))
    return (optional, unique, filters, sorts, named(schema, "words", words, text_only=True),
            named(schema, "prefixes", prefixes, text_only=True))


def searched(schema: Any) -> tuple[tuple[str, ...], dict[str, tuple[bool, bool]], bool]:
    """What ``q`` searches: the prefix fields it finds in their collated
    index (their kind's collated value is folded: an e-mail address), and
    each other field with terms of its own, ``(by its words, by its whole
    value)``; and whether it searches any (``searchable``)."""
    by_key = tuple(f for f in schema.prefixes if schema.fields[f].collated_is_folded)
    by_terms = {f: (f in schema.words, f in schema.prefixes) for f in dict.fromkeys(
        (*schema.words, *schema.prefixes)) if f not in by_key}
    return by_key, by_terms, bool(schema.words or schema.prefixes)


def collated(schema: Any) -> tuple[str, ...]:
    """The fields whose collated value the SQL stores keep too (not the
    value, or a value kept as another: ``to_stored``): compared, ordered or
    searched whole."""
    kept = {*schema.unique, *schema.filters, *schema.sorts, *schema.prefixes}
    return tuple(f for f, kind in schema.fields.items() if f in kept and (
        type(kind).collate is not Field.collate or type(kind).to_stored is not Field.to_stored))


def filtered_sorts_of(schema: Any, given: Mapping[str, Iterable[str] | str]
                      ) -> dict[str, tuple[str, ...]]:
    """``filtered_sorts``: each filter (not a unique one) and the sorts read
    from an index of their own in its pages."""
    checked = {}
    for field, by in given.items():
        if field not in schema.filters or field in schema.unique:
            raise ValueError(f"{schema.plural}: filtered_sorts names {field!r}, which is not "
                             "a filter, or is unique (its pages hold one record at most)")
        checked[field] = named(schema, "filtered_sorts", [by] if isinstance(by, str) else by)
        for sort in checked[field]:
            if sort not in schema.sorts[1:]:
                raise ValueError(f"{schema.plural}: filtered_sorts[{field!r}] names {sort!r}, "
                                 "which is not a sort")
    return checked


def migrations(schema: Any, renamed: Mapping[str, str], dropped: Iterable[str] | str,
               converted: Mapping[str, Callable[[Any], Any]], defaults: Mapping[str, Any]
               ) -> tuple[dict[str, str], tuple[str, ...], dict[str, Callable[[Any], Any]],
                          dict[str, Any]]:
    """The explicit migrations a schema declares (done by a SQL store at
    open: ``storage.reshape``), checked: ``renamed``, ``dropped``,
    ``converted`` and ``defaults``, each as the schema keeps it (a
    default made a clean value by its field's kind)."""
    plural, fields = schema.plural, schema.fields
    for field, old in renamed.items():
        if field not in fields or old in fields or not is_name(old):
            raise ValueError(f"{plural}: renamed maps a field to the name it had, "
                             f"which is no longer a field: {field!r}: {old!r}")
    dropped = tuple([dropped] if isinstance(dropped, str) else dropped)
    for field in dropped:
        if field in fields or not is_name(field):
            raise ValueError(f"{plural}: dropped names a stored field that is no longer "
                             f"declared: {field!r}")
    for field, convert in converted.items():
        if field not in fields or field in schema.read_only or not callable(convert):
            raise ValueError(f"{plural}: converted maps a field to a function of its stored "
                             f"value: {field!r}: {convert!r}")
    cleaned = {}
    for field, value in defaults.items():
        if field not in fields or field in schema.optional or field in schema.read_only:
            raise ValueError(f"{plural}: defaults gives a required field a value: {field!r}")
        try:
            cleaned[field] = fields[field](value)
        except ValueError as e:     # FieldError
            raise ValueError(f"{plural}.{field}: the default {value!r} {e}") from None
    return dict(renamed), dropped, dict(converted), cleaned


def with_article(noun: str) -> str:
    """``noun`` after its indefinite article, chosen by how it is said
    (as far as its letters tell): "a user", "an issue", "a unit"."""
    said_with_a_vowel = noun[:1] in "aeio" or (
        noun[:1] == "u" and not noun.startswith(("uni", "use", "usu", "uti", "ur", "uk")))
    return f"{'an' if said_with_a_vowel else 'a'} {noun}"
