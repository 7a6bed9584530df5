"""A collection page's "Find" section: what the page was asked, each
condition with a link that takes it away; links for each value of a
filter with few values (a choice, a boolean) and for each order; and
small GET forms, one condition each, for the other filters and the ranges
(docs/api.md, "Pages for people").

Everything works without script: a link or a form carries the page's
other parameters (not its position: a new question starts at its first
page), and each form has one required input, so it never sends an empty
value (which the service refuses, as it refuses any value its field does
not take).
"""
from __future__ import annotations

from html import escape
from typing import Any
from urllib.parse import urlencode

from ... import asking
from ...schema import Schema

_POSITION = ("after", "cursor")
_LABELS = {"gte": "from", "lt": "before"}       # the ranges a page's forms offer
#: Kinds whose inputs a browser fills in a form of their own, and what to type
#: where it has none that writes the service's text (an instant with its offset).
_TYPED = {"date", "number", "url", "email"}


def find_section(schema: Schema, url: str, query: dict[str, list[str]]) -> str:
    """The section's HTML, every value escaped."""
    asked = [(name, value) for name, values in query.items() for value in values
             if name not in _POSITION]
    parts = ['<section class="find" aria-labelledby="find-heading">',
             '<h2 id="find-heading">Find</h2>']
    if any(name != "limit" for name, _ in asked):
        parts.append('<p class="asked">Asked: ' + " ".join(
            f'<span class="condition">{escape(name)} = {escape(value)} '
            f'<a href="{_link(url, asked, drop=name)}" title="Take away {escape(name)}">'
            f'(take away)</a></span>' for name, value in asked if name != "limit") + "</p>")
    for name in schema.filters:
        values = _few_values(schema.fields[name])
        if values:
            parts.append(_choices(name, [(v, _link(url, asked, drop=name, add=(name, v)))
                                         for v in values], asked))
    orders = [o for sort in schema.sorts for o in (sort, "-" + sort)]
    parts.append(_choices("sort", [(o, _link(url, asked, drop="sort", add=("sort", o)))
                                   for o in orders], asked))
    forms = [_form(url, asked, name, name, schema.fields[name]) for name in schema.filters
             if not _few_values(schema.fields[name])]
    for name in ("id", *schema.fields):
        if "gte" in asking.takes(schema, name):
            kind = schema.fields.get(name)
            forms += [_form(url, asked, f"{name}[{op}]", f"{name} {label}", kind)
                      for op, label in _LABELS.items()]
    if forms:
        parts += ["<details><summary>More conditions</summary>", *forms, "</details>"]
    parts.append("</section>")
    return "\n".join(parts) + "\n"


def _few_values(kind: Any) -> tuple[str, ...]:
    """A choice's values, a boolean's two; other kinds have too many to list."""
    return kind.options or (("true", "false") if kind.input_type == "checkbox" else ())


def _choices(name: str, links: list[tuple[str, str]], asked: list[tuple[str, str]]) -> str:
    current = dict(asked).get(name)
    return (f'<p class="choices"><span class="name">{escape(name)}</span> ' + " ".join(
        f'<a href="{href}"{" aria-current=true" * (value == current)}>{escape(value)}</a>'
        for value, href in links) + "</p>")


def _form(url: str, asked: list[tuple[str, str]], name: str, label: str, kind: Any) -> str:
    """A GET form for one condition: the page's other parameters hidden,
    one required input."""
    kept = "".join(f'<input type="hidden" name="{escape(k)}" value="{escape(v)}">'
                   for k, v in asked if k != name)
    field_id = "find-" + name.replace("[", "-").replace("]", "")
    if kind is not None and kind.options:       # a choice: one of its values
        field = (f'<select id="{field_id}" name="{escape(name)}" required>' + "".join(
            f'<option>{escape(o)}</option>' for o in kind.options) + "</select>")
    else:
        typed = kind is not None and kind.input_type in _TYPED
        kind_type = "number" if kind is None else kind.input_type if typed else "text"
        hint = (' placeholder="2026-11-27T09:00:00Z"'
                if kind is not None and kind.type == "datetime" else "")
        more = kind.input_attributes if typed else ""       # (a number's bounds and step)
        field = (f'<input id="{field_id}" name="{escape(name)}" type="{kind_type}" '
                 f'required{more}{hint}>')
    return (f'<form class="condition" method="get" action="{escape(url)}">{kept}'
            f'<label for="{field_id}">{escape(label)}</label>{field}'
            f'<button>Apply</button></form>')


def _link(url: str, asked: list[tuple[str, str]], drop: str,
          add: tuple[str, str] | None = None) -> str:
    """The page's URL with its parameters but ``drop``, and ``add``, escaped for an attribute."""
    kept = [(k, v) for k, v in asked if k != drop] + ([add] if add else [])
    return escape(f"{url}?{urlencode(kept)}" if kept else url)
