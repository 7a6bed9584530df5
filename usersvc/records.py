"""What one stored version of a record is in Python: ``record_type``; and how
one is spoken of (``with_article``)."""
from __future__ import annotations

import re
from collections import namedtuple
from collections.abc import Callable, Iterable, Mapping
from typing import Any

# A field's name (``validation._NAME``): what SQL statements may hold as it is.
_NAME = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")


def _is_name(name: Any) -> bool:
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


def migrations(schema: Any, renamed: Mapping[str, str] | None, dropped: Iterable[str],
               converted: Mapping[str, Callable[[Any], Any]] | None,
               defaults: Mapping[str, Any] | None) -> None:
    """The explicit migrations a schema declares (done by a SQL store at
    open: ``storage.reshape``), checked and kept on it; ``ValueError``
    naming what cannot be one."""
    plural, fields = schema.plural, schema.fields
    schema.renamed = dict(renamed or {})
    for field, old in schema.renamed.items():
        if field not in fields or old in fields or not _is_name(old):
            raise ValueError(f"{plural}: renamed maps a field to the name it had, "
                             f"which is no longer a field: {field!r}: {old!r}")
    schema.dropped = tuple([dropped] if isinstance(dropped, str) else dropped)
    for field in schema.dropped:
        if field in fields or not _is_name(field):
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
