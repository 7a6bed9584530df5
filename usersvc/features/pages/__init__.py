"""Pages for people: the HTML representation of ``/``, a collection, a
record and every problem, a format the app offers once ``plug`` adds it
(docs/api.md, "Pages for people"); and the pages of features that ask for
them: the webhooks' subscriptions (``webhooks``), linked from ``/``.

The parts of a page that come from data are the format's (``HTMLFormat``):
a record is a table row, a list the rows, a problem its lines; they know
nothing of the request, so they are kept like any encoding, and the page
around them (``answer``, ``answer_list``, ``answer_problem``) adds links,
forms and the script. Rows link relatively, right under any prefix.

Each page is a template of this folder filled by ``inputs.fill``, which escapes
every value unless it is ``Html`` made from escaped parts. A page reads as
plain HTML; its one script (``usersvc.js``) sends JSON, with the ETag the
page was shown at as ``If-Match``, and the tab's token. Everything a page
loads comes from the service (``ASSETS``), and ``CSP`` allows nothing else.
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from html import escape
from importlib.resources import files
from typing import TYPE_CHECKING, Any, NoReturn
from urllib.parse import urlsplit

from ...listing import MAX_Q, revalidated
from ...problems import Problem
from ...representation.json_format import JSON, Format
from ...representation.xml_format import XML
from ...request import Request, Response
from ...schema import Schema
from .finding import find_section
from .inputs import OFFERED, Html, Offered, fill, inputs

if TYPE_CHECKING:
    from ...representation import Representations

HTML_TYPE = "text/html"

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
       "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")

_FOLDER = files(__package__)

class Asset:
    """A file the pages load, served as it is in the package."""

    def __init__(self, name: str, media_type: str) -> None:
        self.media_type = media_type
        self.body = _FOLDER.joinpath(name).read_bytes()
        self.tag = '"' + hashlib.sha256(self.body).hexdigest()[:24] + '"'


class StaticFile:
    """A file the pages load (``ASSETS``): one representation for
    every client, so nothing to negotiate, and open without a token (a
    browser sends none for a style sheet)."""

    offers = None

    def __init__(self, asset: Asset) -> None:
        self.asset = asset

    def on_get(self, req: Request, fmt: None) -> Response:
        response = Response(200, self.asset.body, [("Content-Type", self.asset.media_type)])
        response.vary = ""
        return revalidated(req, response, self.asset.tag)


#: Path -> the file served there.
ASSETS = {"/assets/usersvc.css": Asset("usersvc.css", "text/css; charset=utf-8"),
          "/assets/usersvc.js": Asset("usersvc.js", "text/javascript; charset=utf-8"),
          "/assets/usersvc.svg": Asset("usersvc.svg", "image/svg+xml")}


def page(req: Request, status: int, title: str, main: Html,
         schemas: Sequence[Schema] = ()) -> Response:
    """A whole page: ``main`` in the layout, with the headers every page has."""
    base = _base(req)
    nav = Html("".join(f'<a href="{escape(base)}/{escape(s.plural)}">{escape(s.plural)}</a>'
                       for s in schemas))
    body = fill("layout", title=title, base=base, status=status, nav=nav, main=main)
    return Response(status, body.encode(), [("Content-Type", HTML.media_type),
                                            ("Content-Security-Policy", CSP)])


def root_page(req: Request, schemas: Sequence[Schema],
              places: Sequence[tuple[str, str]] = ()) -> Response:
    """``/``: a link to each collection, and to the other features' pages
    (``places``: ``HTMLFormat.places``)."""
    base = _base(req)
    items = Html("".join(
        f'<li><a href="{escape(base)}/{escape(s.plural)}">{escape(s.plural)}</a></li>\n'
        for s in schemas))
    more = Html("" if not places else '<h2>Also here</h2>\n<ul class="places">\n' + "".join(
        f'<li><a href="{escape(base)}{escape(path)}">{escape(title)}</a></li>\n'
        for path, title in places) + "</ul>\n")
    return page(req, 200, "usersvc", fill("root", collections=items, places=more), schemas)


def collection_page(req: Request, schema: Schema, rows: bytes, count: int,
                    next_url: str | None, q: str | None, schemas: Sequence[Schema] = (),
                    offered: Offered | None = None) -> Response:
    """A page of records: a table of ``rows`` (made by the HTML format), the
    link to the next page, the search box and what else may be asked
    (``finding``), the form to create one (``schemas``: as the nav's)."""
    url = f"{_base(req)}/{schema.plural}"
    title = schema.plural.capitalize()
    search = Html("")
    if schema.searchable:
        clear = Html(f'<a href="{escape(url)}">Show all</a>' if q else "")
        search = fill("search", url=url, q=q or "", max=MAX_Q, clear=clear,
                      hint=_search_hint(schema))
    search = Html(search + find_section(schema, url, req.parameters()))
    if count:
        summary = f"{count} {schema.plural if count > 1 else schema.name} on this page."
    else:
        summary = f"No {schema.plural} match “{q}”." if q else f"No {schema.plural} on this page."
    links = [f'<a href="{escape(url)}">First page</a>']
    if next_url:
        parts = urlsplit(next_url)      # the Link header's URL, without scheme and host
        links.append(f'<a rel="next" href="{escape(parts.path + "?" + parts.query)}">Next page</a>')
    headings = Html("".join(f'<th scope="col">{escape(n)}</th>' for n in schema.field_names))
    main = fill("collection", title=title, search=search, summary=summary, headings=headings,
                rows=Html(rows.decode()), pages=Html(" ".join(links)), name=schema.name,
                plural=schema.plural, url=url, inputs=inputs(schema, "new", {}, offered))
    return page(req, 200, f"{title}{' matching ' + q if q else ''}", main, schemas or (schema,))


def record_page(req: Request, schema: Schema, record: Any, tag: str,
                schemas: Sequence[Schema] = (), offered: Offered | None = None) -> Response:
    """One record: its fields and ETag, a form to edit it, a button to
    delete it, and its JSON and XML representations (``schemas``: as
    ``collection_page``'s)."""
    collection_url = f"{_base(req)}/{schema.plural}"
    values = schema.as_dict(record)
    first = next(iter(schema.fields), "id")
    heading = schema.text_of(first, values[first]) if first in values else str(record.id)
    fields = Html("".join(f"<dt>{escape(k)}</dt><dd>{_value(schema, k, v, _base(req) + '/')}</dd>\n"
                          for k, v in values.items()))
    main = fill("record", kind=schema.name, collection_url=collection_url, plural=schema.plural,
                heading=heading, fields=fields, etag=tag, url=f"{collection_url}/{record.id}",
                id=record.id,
                inputs=inputs(schema, "edit", values, offered),
                json=JSON.render_record(schema, record).decode(),
                xml=XML.render_record(schema, record).decode())
    return page(req, 200, f"{heading} ({schema.name} {record.id})", main, schemas or (schema,))


def problem_page(req: Request, problem: Mapping[str, Any],
                 schemas: Sequence[Schema] = ()) -> Response:
    """A problem document for a person: status, title, sentence, the field
    errors beside their fields; and on a 401 the form to enter a token, on
    a 403 to enter another (a page a ``read`` token may not see: the
    webhooks' need a ``write`` one; a write refused is the script's, in its form)."""
    status = problem["status"]
    main = fill("problem", status=status, title=problem["title"], base=_base(req),
                lines=Html(HTML.render_problem(problem).decode()),
                token=fill("token") if status in (401, 403) else Html(""))
    return page(req, status, f"{status} {problem['title']}", main, schemas)


def _search_hint(schema: Schema) -> str:
    """What ``q`` matches: "how a word of the title or the isbn starts"."""
    fields = [f"a word of the {f}" for f in schema.words] + [f"the {f}" for f in schema.prefixes]
    return f"how {' or '.join(fields)} starts"


def _value(schema: Schema, name: str, value: Any, base: str) -> str:
    """A value as a page shows it; a ``ref``'s links to its record (``base``: "" on a list)."""
    text = escape(schema.text_of(name, value))
    to = getattr(schema.fields.get(name), "refers_to", None)
    return text if to is None else f'<a href="{escape(base)}{escape(to)}/{text}">{text}</a>'


def _base(req: Request) -> str:
    """The path the app is mounted at, as URLs on the page begin with it."""
    return urlsplit(req.base_url).path


class HTMLFormat(Format):
    """HTML, for people in browsers: every value through ``html.escape``
    (a name ``<script>`` is the text ``&lt;script&gt;``). Each page's nav
    links to ``collections`` (an app's list, so those added later are
    there too), or to the page's own collection. ``places``: the pages
    other features serve, which the root page links to, as ``(path,
    title)``: a feature plugged in after the pages adds its own (webhooks)."""

    name = "html"           # its ETag: "7-3-html" (``Format.tag_suffix``)
    media_type = "text/html; charset=utf-8"
    problem_type = media_type
    sparse = False          # a record's page shows the whole record, fields= or not

    def __init__(self, collections: Sequence[Schema] = (),
                 offered: Offered | None = None) -> None:
        self.collections, self.offered = collections, offered
        self.places: list[tuple[str, str]] = []

    def render(self, schema: Schema, record: Mapping[str, Any]) -> bytes:
        """One row: each field, the id and the first other field linking
        to the record's page."""
        link = f'<a href="{escape(schema.plural)}/{record["id"]}">'
        cells = [_value(schema, name, record[name], "") if name in record else ""
                 for name in schema.field_names]
        cells[0] = link + cells[0] + "</a>"
        if len(cells) > 1:
            cells[1] = link + cells[1] + "</a>"
        return (f'<tr data-id="{record["id"]}">' + "".join(f"<td>{cell}</td>" for cell in cells)
                + "</tr>\n").encode()

    def join(self, schema: Schema, rendered: Iterable[bytes]) -> bytes:
        return b"".join(rendered)

    def render_problem(self, problem: Mapping[str, Any]) -> bytes:
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

    def parse(self, text: str, schema: Schema) -> NoReturn:
        raise Problem(415, "HTML is never read as a request body.")

    def answer(self, req: Request, status: int, kept: Representations, record: Any,
               tag: str) -> Response:
        response = record_page(req, kept.schema, record, tag, self.collections, self.offered)
        response.status = status
        return response

    def answer_list(self, req: Request, kept: Representations, records: list[Any],
                    next_url: str | None, q: str | None) -> tuple[Response, str | None]:
        rows, _ = kept.pages.of(records, self)
        # The page around the rows: its own tag, from its bytes.
        return (collection_page(req, kept.schema, rows, len(records), next_url, q,
                                self.collections, self.offered), None)

    def answer_problem(self, req: Request, problem: Mapping[str, Any],
                       schemas: Sequence[Schema]) -> Response:
        return problem_page(req, problem, schemas)


HTML = HTMLFormat()


def plug(app: Any) -> HTMLFormat:
    """Offer HTML for records, lists and problems, and serve the files the
    pages load (open without a token: a browser sends none for a style sheet).
    Before any collection is added: a collection's routes take the offers
    as they are then. HTML is offered last, so JSON, then XML, win a tie
    (``*/*``), and a browser, which asks for ``text/html`` first, gets the
    page; its pages' nav links to every collection of the app."""
    html = HTMLFormat(app.schemas, lambda plural: _offered(app, plural))
    offers = {HTML_TYPE: html, f"{HTML_TYPE};charset=utf-8": html}
    app.offers = app.offers.plus(offers)
    app.problem_offers = app.problem_offers.plus(offers)
    for path, asset in ASSETS.items():
        app.router.add(path, StaticFile(asset))
    app.open_paths.update(ASSETS)
    return html


class PagesFeature:
    """The ``pages`` feature (``usersvc.hooks``): HTML for people (``plug``)."""

    name = "pages"

    def plug(self, app: Any, storage: Any, plugged: dict[str, Any]) -> HTMLFormat:
        return plug(app)


FEATURE = PagesFeature()


def _offered(app: Any, plural: str) -> list[tuple[int, str]]:
    """The first records of ``plural`` (by id), for a reference's input:
    each id, and its first field's text (``inputs.OFFERED`` at most)."""
    for schema, records in zip(app.schemas, app.records, strict=False):  # (one being added)
        if schema.plural == plural:
            first = next(iter(schema.fields), None)
            return [(r.id, "" if first is None or getattr(r, first) is None
                     else schema.text_of(first, getattr(r, first)))
                    for r in records.list(limit=OFFERED)]
    return []


def _text(value: Any) -> str:
    return ", ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)
