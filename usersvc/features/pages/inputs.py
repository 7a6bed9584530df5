"""The parts of a page its templates make (``fill``, with every value
escaped unless it is ``Html``), and the inputs that ask for each field
(``inputs``): the kind's input type, a ``<select>`` for a choice, and for
a reference the records it may name, offered (a ``<datalist>``).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from html import escape
from importlib.resources import files
from string import Template
from typing import Any

from ...schema import Schema

#: The records a reference may name, for its input: ``offered(plural)``
#: gives ``(id, label)`` pairs (at most ``OFFERED``), or none.
Offered = Callable[[str], list[tuple[int, str]]]
OFFERED = 100

_TEMPLATES = {name: Template(files(__package__).joinpath(f"{name}.html")
                             .read_text(encoding="utf-8"))
              for name in ("layout", "root", "collection", "search", "record", "field", "select",
                           "problem", "token", "webhooks", "webhook")}


class Html(str):
    """Markup made from escaped parts: ``fill`` puts it in as it is."""


def fill(template: str, **values: Any) -> Html:
    """The template with each value escaped, except ``Html``."""
    return Html(_TEMPLATES[template].substitute(
        {k: v if isinstance(v, Html) else escape(str(v)) for k, v in values.items()}))


def inputs(schema: Schema, form: str, values: Mapping[str, Any],
           offered: Offered | None = None) -> Html:
    """An input for each field a client sends, named after it, and the
    place for its error; an optional one may be left empty. The service
    checks every rule; the browser only those an input type checks the same
    way (the field kind's ``input_type``), since ``maxlength`` would count
    UTF-16 units, not characters. A kind with ``options`` is a ``<select>``
    (an optional one's first option: "(none)"); a checkbox is never required
    (unticked is false), so an optional one is a ``<select>`` of none,
    true and false: it can be left without a value, or cleared. A ``ref``'s
    input offers the records it may name (``offered``), by id and label."""
    return Html("".join(_input(f"{form}-{name}", name, kind, values.get(name),
                               name in schema.optional, offered)
                        for name, kind in schema.fields.items() if name not in schema.read_only))


def _input(id: str, name: str, kind: Any, value: Any, optional: bool,
           offered: Offered | None) -> Html:
    required = "" if optional else " required"
    choices = kind.options or (("true", "false") if optional and kind.input_type == "checkbox"
                               else ())
    if choices:     # (the page's script sends a boolean's as one: data-type)
        chosen = None if value is None else kind.input_value(value)
        options = [*[""] * (optional or chosen is None), *choices]
        return fill("select", id=id, name=name, attributes=Html(
            f'{required} data-type="{escape(kind.type)}"'), options=Html("".join(
                f'<option{" selected" * (o == chosen)} value="{escape(o)}">'
                f'{escape(o or "(none)" * optional)}</option>' for o in options)))
    if kind.input_type == "checkbox":
        attributes = ' value="true"' + " checked" * bool(value)
    else:
        text = "" if value is None else kind.input_value(value)
        attributes = f' value="{escape(text)}"{required}'
    hint = f'<span class="hint">{escape(kind.input_hint)}</span>' if kind.input_hint else ""
    attributes += kind.input_attributes
    records = offered(kind.refers_to) if kind.refers_to and offered else []
    if records:         # (a browser offers them as the person types; any id may be typed)
        attributes += f' list="{id}-records"'
        hint += (f'<datalist id="{id}-records">' + "".join(
            f'<option value="{record_id}">{escape(label)}</option>'
            for record_id, label in records) + "</datalist>")
    return fill("field", id=id, name=name, type=kind.input_type, hint=Html(hint),
                attributes=Html(attributes))


