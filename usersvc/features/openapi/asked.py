"""The OpenAPI parameters of what a client may ask beyond a page's order
and filters: each ``field[op]`` (``asking``) a parameter of its own,
named as a client sends it (``due[lt]``), its value typed by the field's
kind, so that a generated client can send it; and ``fields=`` (``sparse``)."""
from __future__ import annotations

from typing import Any

from ... import asking
from ...fields import Folded
from ...storage import MAX_ID
from ...validation import Schema

#: Any text but what no value holds (``fields.not_plain``): a text condition's value.
PLAIN = {"type": "string", "pattern": "^[^\\u0000-\\u001f\\u007f-\\u009f\\ufffe\\uffff]*$"}

_SAYS = {"eq": "equal to", "ne": "not equal to (and with a value)", "gt": "after",
         "gte": "at or after", "lt": "before", "lte": "at or before"}


def asked_parameters(schema: Schema, query: Any) -> list[dict[str, Any]]:
    """Each ``field[op]`` a page takes (``asking.takes``), a parameter of its
    own, named as sent, its value typed by the field's kind."""
    found = []
    for field in ("id", *schema.fields):
        kind = None if field == "id" else schema.fields[field]
        value = ({"type": "integer", "minimum": 0, "maximum": MAX_ID} if kind is None else
                 PLAIN if isinstance(kind, Folded) else kind.describe())
        for op in asking.takes(schema, field):
            if op == "exists":
                found.append(query(f"{field}[exists]", {"type": "boolean"},
                                   f"true: only the {schema.plural} with a {field}; "
                                   f"false: only those without."))
            elif op == "in":
                # (an empty value: no text matches it; of any other kind, a 400)
                listed = PLAIN if isinstance(kind, Folded) else {**PLAIN, "minLength": 1}
                found.append(query(f"{field}[in]", listed,
                                   f"Only the {schema.plural} whose {field} is one of these, "
                                   f"comma-separated (at most {asking.MAX_IN}; a value with a "
                                   'comma in double quotes, a quote in it as \\").'))
            else:
                order = "" if op in ("eq", "ne") else " in its order"
                found.append(query(f"{field}[{op}]", value,
                                   f"Only the {schema.plural} whose {field} is {_SAYS[op]} "
                                   f"this{order}."))
    return found


def fields_parameter(schema: Schema) -> dict[str, Any]:
    """``fields=a,b`` (``sparse``): which fields a record's representation holds."""
    names = "|".join(schema.field_names)
    return {"name": "fields", "in": "query", "required": False,
            "schema": {"type": "string", "pattern": f"^({names})(,({names}))*$"},
            "description": f"Only these fields of each {schema.name}, comma-separated (and "
                           "`id`): a representation of its own, with an ETag of its own, "
                           "which `If-Match` takes as the whole record's version. A name "
                           "that is not a field is a 400. Pages for people show whole records."}
