"""HTML, for people in browsers: the parts of a page that come from data.

A record is a table row (``render``), a list the rows (``join``), and a
problem the lines that say what went wrong (``render_problem``). They know
nothing of the request, so they can be kept like any encoding; the page
around them (``usersvc.pages``) adds the links, the forms and the script.

Every value goes through ``html.escape``: a name ``<script>`` is the text
``&lt;script&gt;``. The links are relative (``users/7`` from ``/users``),
so the same row is right under any mount prefix. HTML is never read as a
request body.
"""
from __future__ import annotations

from html import escape
from typing import Any

from ..problems import Problem
from .format import Format

HTML_TYPE = "text/html"


class HTMLFormat(Format):
    name = "html"
    media_type = "text/html; charset=utf-8"
    problem_type = media_type

    def render(self, schema, record):
        """One row: each field, the id and the first other field linking
        to the record's page."""
        link = f'<a href="{escape(schema.plural)}/{record["id"]}">'
        cells = [escape(str(record.get(name, ""))) for name in schema.field_names]
        cells[0] = link + cells[0] + "</a>"
        if len(cells) > 1:
            cells[1] = link + cells[1] + "</a>"
        return ("<tr>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>\n").encode()

    def join(self, schema, rendered):
        return b"".join(rendered)

    def render_problem(self, problem: dict[str, Any]) -> bytes:
        """The status and title, the sentence, and each field error beside
        the name of the field it is about."""
        lines = [f'<p class="detail">{escape(str(problem["detail"]))}</p>']
        errors = problem.get("errors") or ()
        if errors:
            lines.append('<dl class="field-errors">')
            for error in errors:
                field = error["pointer"].lstrip("/") or "(the whole body)"
                lines.append(f'<dt>{escape(field)}</dt><dd>{escape(error["detail"])}</dd>')
            lines.append("</dl>")
        extra = {k: v for k, v in problem.items()
                 if k not in ("type", "title", "status", "detail", "errors")}
        if extra:
            lines.append('<dl class="extensions">')
            lines += [f"<dt>{escape(k)}</dt><dd>{escape(_text(v))}</dd>" for k, v in extra.items()]
            lines.append("</dl>")
        return "\n".join(lines).encode()

    def parse(self, body, schema):
        raise Problem(415, "HTML is never read as a request body.")


def _text(value: Any) -> str:
    return ", ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


HTML = HTMLFormat()
