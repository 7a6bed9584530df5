"""The OpenAPI parameters of what a client may ask beyond a page's order
and filters: each ``field[op]`` (``asking``) a parameter of its own,
named as a client sends it (``due[lt]``), its value typed by the field's
kind, so that a generated client can send it; and ``fields=`` (``sparse``).

A value sent as text (a date, a choice, an ``in`` list) has a pattern
that says what its kind reads (``value_pattern``): the document refuses
what the service refuses, but for what no pattern can say
(docs/conformance.md): a number's range, a URL's length, an instant
that an offset takes past year 1 or 9999. A value is said as sent,
without the white space around it the service trims."""
from __future__ import annotations

from typing import Any

from ... import asking
from ...fields import Field, Folded
from ...kinds import Boolean, Choice, Number, Ref, Url
from ...kinds.dates import Date, DateTime
from ...kinds.integers import Integer
from ...kinds.stamp import Stamp
from ...schema import Schema
from ...storage import MAX_ID

_NOT_PLAIN = "\\u0000-\\u001f\\u007f-\\u009f\\ufffe\\uffff"     # (``asking.not_plain``)
#: Any text but what no value holds (``asking.not_plain``): a text condition's value.
PLAIN = {"type": "string", "pattern": f"^[^{_NOT_PLAIN}]*$"}

# A date that exists, years 0001 to 9999 (``Date``): a leap year's 29 February too.
_YEAR = "(?:[0-9]{3}[1-9]|[0-9]{2}[1-9]0|[0-9][1-9]00|[1-9]000)"
_DAY = ("(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
        "|02-(?:0[1-9]|1[0-9]|2[0-8]))")
_FOURS = "(?:0[48]|[2468][048]|[13579][26])"
DATE = f"(?:{_YEAR}-{_DAY}|(?:[0-9]{{2}}{_FOURS}|{_FOURS}00)-02-29)"
_TIME = "(?:[01][0-9]|2[0-3]):[0-5][0-9]"
_OFFSET = f"(?:[Zz]|[+-]{_TIME})"

_SAYS = {"eq": "equal to", "ne": "not equal to (and with a value)", "gt": "after",
         "gte": "at or after", "lt": "before", "lte": "at or before"}


def _instant(fraction: str) -> str:
    """RFC 3339's date-time as ``DateTime`` reads it, its fraction ``fraction``."""
    return f"{DATE}[Tt]{_TIME}:[0-5][0-9](?:\\.{fraction})?{_OFFSET}"


def _literal(text: str) -> str:
    """``text`` in a pattern: its syntax characters escaped (only those:
    ECMA-262 refuses other escapes in Unicode mode)."""
    return "".join("\\" + c if c in "^$\\.*+?()[]{}|/" else c for c in text)


def _url(excluded: str) -> str:
    """An absolute http or https URL as ``Url`` reads it (its length aside),
    without the characters ``excluded`` (an ``in`` list's separators)."""
    no = _NOT_PLAIN + "\\u0020" + excluded
    return (f"[Hh][Tt][Tt][Pp][Ss]?://(?:[^{no}/?#@]*@)?"
            f"(?:\\[[0-9A-Fa-f:.]+\\]|[^{no}/?#@:\\[\\]]+)(?::[0-9]*)?(?:[/?#][^{no}]*)?")


def value_pattern(kind: Field, form: str = "alone") -> str | None:
    """One value of ``kind`` as a query carries it (``from_query`` reads
    it), a pattern without anchors: ``alone``, or in an ``in`` list
    ``bare`` (no comma or quote) or ``quoted`` (between double quotes, a
    quote or a backslash in it after a backslash); ``None`` for what no
    pattern says (any text; an embedder's kind)."""
    if isinstance(kind, Boolean):
        return "(?:true|false|1|0)"
    if isinstance(kind, Choice):
        options = ([o for o in kind.options if not {",", '"'} & set(o)] if form == "bare" else
                   [o.replace("\\", "\\\\").replace('"', '\\"') for o in kind.options]
                   if form == "quoted" else kind.options)
        return f"(?:{'|'.join(map(_literal, options))})" if options else None
    if isinstance(kind, Integer):
        return "-?[0-9]+"                   # (its range: no pattern says it)
    if isinstance(kind, Ref):
        return "[0-9]{1,19}"                # (an id, from 1: no pattern says it)
    if isinstance(kind, Number):
        return "-?(?:0|[1-9][0-9]*)(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
    if isinstance(kind, Stamp):             # (milliseconds, and zeros after them)
        return _instant("[0-9]{1,3}0{0,3}")
    if isinstance(kind, DateTime):
        return _instant("[0-9]{1,6}")
    if isinstance(kind, Date):
        return DATE
    if isinstance(kind, Url):               # (a quoted one's quotes and backslashes: left out)
        return _url({"alone": "", "bare": ',"', "quoted": '"\\\\'}[form])
    return None


def query_schema(kind: Field) -> dict[str, Any]:
    """The schema of one value of ``kind`` in a query (a filter, ``eq``, a
    range): its ``describe``, and a value sent as text its pattern too."""
    described = kind.describe()
    pattern = value_pattern(kind)
    if described.get("type") != "string" or "enum" in described or pattern is None:
        return described
    return {**described, "pattern": f"^{pattern}$"}


def in_schema(kind: Field) -> dict[str, Any]:
    """The schema of an ``in`` list of ``kind``'s values (``asking._items``):
    1 to ``MAX_IN`` of them, comma-separated, a value in double quotes
    (a quote or a backslash in it escaped by a backslash) or bare (no comma
    or quote); each as its kind reads it."""
    bare, quoted = value_pattern(kind, "bare"), value_pattern(kind, "quoted")
    said = bare is not None or quoted is not None
    if not said:            # any text (any item but a text kind's may be refused)
        bare, quoted = f'[^,"{_NOT_PLAIN}]*', f'(?:[^"\\\\{_NOT_PLAIN}]|\\\\[^{_NOT_PLAIN}])*'
    item = "|".join(filter(None, (bare, quoted and f'"{quoted}"')))
    listed = {"type": "string",
              "pattern": f"^(?:{item})(?:,(?:{item})){{0,{asking.MAX_IN - 1}}}$"}
    # (an empty value: no text matches it; of an embedder's kind, a 400 we know of)
    return listed if said or isinstance(kind, Folded) else {**listed, "minLength": 1}


def asked_parameters(schema: Schema, query: Any) -> list[dict[str, Any]]:
    """Each ``field[op]`` a page takes (``asking.takes``), a parameter of its
    own, named as sent, its value typed by the field's kind."""
    found = []
    for field in ("id", *schema.fields):
        kind = None if field == "id" else schema.fields[field]
        value = ({"type": "integer", "minimum": 0, "maximum": MAX_ID} if kind is None else
                 PLAIN if isinstance(kind, Folded) else query_schema(kind))
        for op in asking.takes(schema, field):
            if op == "exists":
                found.append(query(f"{field}[exists]", {"type": "boolean"},
                                   f"true: only the {schema.plural} with a {field}; "
                                   f"false: only those without."))
            elif op == "in":
                found.append(query(f"{field}[in]", in_schema(schema.fields[field]),
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
