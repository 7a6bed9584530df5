"""Sparse representations: ``fields=a,b`` (docs/api.md, "Asking"), on a
record, a page and the change feed, in JSON and XML: ``id`` and the named
fields only (an absent optional field left out, as in a whole record).

A sparse representation is another representation of the same version,
so it has an ETag of its own: the whole record's with the names after it
(``"7-3.name"``, ``"7-3-xml.name.email"``: ``Fields.tag_suffix``), which ``version_in`` reads as
version 3, so ``If-Match`` with it on a write means what the whole
record's tag means. A format may have none (``Format.sparse``: the pages'
HTML shows whole records).

The parameter is read with the others (``listing.fields_named``), and
this module imported when a request first asks for ``fields=``
(``listing._sparse``): a server whose clients never do never loads it.
"""
from __future__ import annotations

from typing import Any

from .representation import Format
from .request import Response
from .schema import Schema


def render(fmt: Format, schema: Schema, record: Any, names: tuple[str, ...]) -> bytes:
    """``record`` in ``fmt``, ``id`` and ``names`` only."""
    return fmt.render(schema, schema.some_of(record, names))


class Fields:
    """``fmt``, each record holding ``id`` and ``names`` only: what a
    record's or a page's GET answers in with ``fields=`` (``view``). Its
    answers are made, not kept (the kept encodings are whole records'); a
    page's tag is made from its bytes."""

    def __init__(self, fmt: Format, names: tuple[str, ...]) -> None:
        self.fmt, self.names = fmt, names
        self.name, self.media_type = fmt.name, fmt.media_type
        self.tag_suffix = f'{fmt.tag_suffix}.{".".join(names)}'   # "7-3-xml.name"

    def answer(self, req: Any, status: int, kept: Any, record: Any, tag: str) -> Response:
        return Response(status, render(self.fmt, kept.schema, record, self.names),
                        [("Content-Type", self.fmt.media_type)])

    def answer_list(self, req: Any, kept: Any, records: list[Any], next_url: str | None,
                    q: str | None) -> tuple[Response, None]:
        return Response(200, page(self.fmt, kept.schema, records, self.names),
                        [("Content-Type", self.fmt.media_type)]), None


def view(fmt: Format, names: tuple[str, ...] | None) -> Format | Fields:
    """``fmt``, or with ``fields=`` (``names``), its ``Fields``, if the
    format has sparse views (``Format.sparse``: the pages' HTML shows whole
    records)."""
    return fmt if names is None or not fmt.sparse else Fields(fmt, names)


def page(fmt: Format, schema: Schema, records: list[Any], names: tuple[str, ...]) -> bytes:
    """A page of ``records``, ``id`` and ``names`` of each."""
    return fmt.join(schema, [render(fmt, schema, record, names) for record in records])
