"""Asking: the conditions a page's query names with an operator,
``field[op]=value`` (docs/api.md, "Asking"), beside the plain
``field=value`` filters ``listing`` reads.

``takes(schema, field)`` says which operators a field takes: a declared
filter ``eq``, ``ne``, ``in``; an optional filter or sort ``exists``; a declared
sort of an ordered kind (``Field.ordered``), and ``id``, the ranges
``gt``, ``gte``, ``lt``, ``lte``, as do ``created`` and ``updated`` (a
time to the millisecond, as the store writes them). ``read(schema, name, text)`` makes one
query parameter a ``Condition``, its value checked by the field's kind,
or a 400 that names the parameter and says what it takes.
``Condition.holds`` is what each means, on a record's collated value: the
memory store asks it, and the SQL stores say the same in ``WHERE``
(``sql.bulk``). ``ne`` and the ranges never keep a record without a value.
"""
from __future__ import annotations

import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .fields import _NOT_PLAIN, UNENCODABLE, FieldError
from .problems import Problem
from .schema import Schema
from .storage import MAX_ID

RANGES = ("gt", "gte", "lt", "lte")
MAX_IN = 100            # values an ``in`` takes at most
_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "eq": operator.eq, "ne": operator.ne, "gt": operator.gt, "gte": operator.ge,
    "lt": operator.lt, "lte": operator.le}
ASKED = re.compile(r"([a-z][a-z0-9_]*)\[([a-z]+)\]")       # due[lt]
# One value of an ``in`` list: "a text, with \" inside", or anything to the next comma.
_ITEM = re.compile(r'"((?:[^"\\]|\\.)*)"(?=,|$)|([^,"]*)(?=,|$)')


@dataclass(frozen=True)
class Condition:
    """``field op value``: ``value`` as the kind cleaned it (``in``: a
    tuple of them; ``exists``: a bool), ``collated`` as the stores
    compare it (``in``: a tuple; ``exists``: ``None``)."""

    field: str
    op: str
    value: Any
    collated: Any

    def holds(self, collated: Any) -> bool:
        """Whether a record whose value collates to ``collated`` (``None``:
        it has none) is kept."""
        if self.op == "exists":
            return (collated is not None) is self.value
        if collated is None:
            return False
        if self.op == "in":
            return collated in self.collated
        return _COMPARE[self.op](collated, self.collated)


def takes(schema: Schema, field: str) -> tuple[str, ...]:
    """The operators ``field`` takes in a page's query (none: not a field)."""
    ops: tuple[str, ...] = ()
    if field in schema.filters:
        ops = ("eq", "ne", "in")
    if field in schema.optional and (field in schema.filters or field in schema.sorts):
        ops += ("exists",)      # (an optional sort's records without a value: its last)
    if field == "id" or field in schema.read_only or (
            field in schema.sorts and schema.fields[field].ordered):
        ops += RANGES
    return ops


def asked_parameters(schema: Schema) -> tuple[str, ...]:
    """Every ``field[op]`` a page of ``schema`` takes, as ``due[gt|lt]``."""
    fields = ("id", *(f for f in schema.fields if takes(schema, f)))
    return tuple(f"{field}[{'|'.join(takes(schema, field))}]" for field in fields)


def read(schema: Schema, name: str, text: str) -> Condition:
    """The condition of the query parameter ``name`` (``due[lt]``) with the
    value ``text``; else a 400 naming it and saying what it takes."""
    field, op = ASKED.fullmatch(name).groups()      # type: ignore[union-attr]  # (matched before: known names)
    ops = takes(schema, field)
    if op not in ops:
        what = (f"{field} takes {field}[{'|'.join(ops)}]" if ops else
                f"{field} is not a field it can be asked about; it takes "
                f"{', '.join(asked_parameters(schema))}")
        raise Problem(400, f"The query parameter {name} is not one /{schema.plural} "
                           f"takes: {what}.")
    if op == "exists":
        if text not in ("true", "false"):
            raise Problem(400, f"The query parameter {name} must be true or false.")
        return Condition(field, op, text == "true", None)
    if op == "in":
        values = tuple(_value(schema, name, field, item) for item in _items(name, text))
        return Condition(field, op, values, tuple(_collate(schema, field, v) for v in values))
    value = _value(schema, name, field, text)
    return Condition(field, op, value, _collate(schema, field, value))


def _items(name: str, text: str) -> list[str]:
    """An ``in`` list's values: comma-separated, a value with a comma in
    double quotes (a quote in it as ``\\"``); 1 to ``MAX_IN`` of them."""
    items, at = [], 0
    while True:
        m = _ITEM.match(text, at)
        if m is None:
            raise Problem(400, f"The query parameter {name} must be values separated by "
                               "commas, a value with a comma in double quotes, written %22 "
                               "in a URL (%22a,b%22).")
        items.append(m.group(2) if m.group(1) is None
                     else re.sub(r"\\(.)", r"\1", m.group(1)))
        at = m.end() + 1
        if at > len(text):
            break
    if len(items) > MAX_IN:
        raise Problem(400, f"The query parameter {name} takes at most {MAX_IN} values.")
    return items


def not_plain(text: str) -> str | None:
    """What no text value may hold and ``text`` does, said to complete
    "<field> ..." (a control character; a surrogate or a non-character),
    or ``None``: what a text condition and ``q`` are refused for."""
    if not _NOT_PLAIN.search(text):
        return None
    if UNENCODABLE.search(text):
        return "must be Unicode text (no surrogates or non-characters)"
    return "must not contain control characters"


def query_value(schema: Schema, name: str, field: str, text: str) -> Any:
    """The value of the query parameter ``name`` (``field=`` or
    ``field[op]=``), as ``field``'s kind reads it; else a 400 naming it.
    No value of any kind holds a control character (``not_plain``):
    one is refused first, alike on every store."""
    wrong = not_plain(text)
    if wrong is not None:
        raise Problem(400, f"The query parameter {name} {wrong}.")
    try:
        return schema.fields[field].from_query(text)
    except FieldError as e:
        raise Problem(400, f"The query parameter {name} {e}.") from None


def _value(schema: Schema, name: str, field: str, text: str) -> Any:
    if field == "id":
        if not (text.isascii() and text.isdigit() and len(text) <= 19 and int(text) <= MAX_ID):
            raise Problem(400, f"The query parameter {name} must be a whole number "
                               f"from 0 to {MAX_ID}.")
        return int(text)
    return query_value(schema, name, field, text)


def _collate(schema: Schema, field: str, value: Any) -> Any:
    return value if field == "id" else schema.fields[field].collate(value)
