"""Reading a request body: the format ``Content-Type`` names, then its parser.

POST and PUT read JSON (``application/json`` and any ``+json`` type) and
XML (``application/xml``, ``text/xml`` and any ``+xml`` type); PATCH reads
JSON Merge Patch (RFC 7396: ``application/merge-patch+json`` or
``application/json``) and XML. Anything else is a 415 that names what is
read, in ``Accept-Post`` / ``Accept-Patch`` (RFC 9110 §15.5.16, RFC 5789
§3.1). Only UTF-8 is read.
"""
from __future__ import annotations

import re
from typing import Any

from ..problems import Problem
from ..request import Request
from ..validation import Schema
from .format import JSON_TYPE, XML_TYPE, Format
from .json_format import JSON
from .xml_format import XML

#: The types named in Accept-Post and Accept-Patch. POST and PUT also read
#: any ``application/...+json`` or ``application/...+xml`` type.
BODY_TYPES = [JSON_TYPE, XML_TYPE, "text/xml"]
PATCH_TYPES = ["application/merge-patch+json", JSON_TYPE, XML_TYPE, "text/xml"]

_JSON_SUFFIX = re.compile(r"application/[!#$&^_.+\w-]+\+json")
_XML_SUFFIX = re.compile(r"application/[!#$&^_.+\w-]+\+xml")
_CHARSET = re.compile(r"charset\s*=\s*\"?([^\s;\"]+)", re.IGNORECASE)


def body_format(content_type: str | None, *, patch: bool = False) -> Format | None:
    """The parser for a body of this Content-Type, or ``None`` if there is
    none. A body without a type is refused: a page on any site can send one
    without asking first (``fetch`` with ``no-cors``, ``sendBeacon``), as it
    can ``text/plain`` and form types. PATCH bodies are JSON Merge Patch, so
    other ``+json`` types (JSON Patch!) are refused there."""
    if content_type is None:
        return None
    media_type, _, params = content_type.partition(";")
    media_type = media_type.strip().lower()
    charset = _CHARSET.search(params)
    if charset and charset.group(1).lower() not in ("utf-8", "utf8"):
        return None
    if media_type in (XML_TYPE, "text/xml"):
        return XML
    if patch:
        return JSON if media_type in ("application/merge-patch+json", JSON_TYPE) else None
    if media_type == JSON_TYPE or _JSON_SUFFIX.fullmatch(media_type):
        return JSON
    if _XML_SUFFIX.fullmatch(media_type):
        return XML
    return None


def read_document(req: Request, schema: Schema) -> Any:
    """Parse a request's body into a document for ``schema`` to check."""
    patch = req.method == "PATCH"
    fmt = body_format(req.content_type, patch=patch)
    if fmt is None:
        accepted = ", ".join(PATCH_TYPES if patch else BODY_TYPES)
        readable = accepted if patch else accepted + ", or any +json or +xml type"
        header = {"POST": "Accept-Post", "PATCH": "Accept-Patch"}.get(req.method)
        raise Problem(415, f"The body must be {readable}, in UTF-8.",
                      headers=[(header, accepted)] if header else [])
    if not req.body:
        raise Problem(400, "The request needs a body.")
    return fmt.parse(req.body, schema)
