"""Bytes on the wire: the only layer that knows them.

- here: choosing the format to answer in, from ``Accept`` (or 406), and
  the format that reads a request body, from ``Content-Type`` (or 415);
- ``format``: what a wire format is (``Format``), and the media types;
- ``json_format`` and ``xml_format``: JSON and XML, both ways;
- ``html_format``: HTML rows and problem lines for the pages (``usersvc.pages``);
- ``kept``: each record's encodings kept while it is unchanged, pages made
  from them, and the ETags that name them.

**Negotiation** (RFC 9110 §12.5.1). ``negotiate(req, offers)`` gives the
format the client prefers by its q-values among what a route offers, or
raises a 406 problem before anything is done; ``problem_format(req)``
never fails (RFC 9110 §12.1 lets an error ignore ``Accept``, and JSON is
what it falls back to). WebOb parses the header; ties go to the offer
listed first, so JSON wins them.

**Request bodies.** POST and PUT read JSON (``application/json`` and any
``+json`` type) and XML (``application/xml``, ``text/xml`` and any ``+xml``
type); PATCH reads JSON Merge Patch (RFC 7396:
``application/merge-patch+json`` or ``application/json``) and XML.
Anything else is a 415 that names what is read, in ``Accept-Post`` /
``Accept-Patch`` (RFC 9110 §15.5.16, RFC 5789 §3.1). Only UTF-8 is read.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from webob.acceptparse import create_accept_header

from ..problems import Problem
from ..request import Request
from ..validation import Schema
from .format import JSON_TYPE, XML_TYPE, Format
from .html_format import HTML, HTML_TYPE
from .json_format import JSON
from .kept import Representations, etag, version_in
from .xml_format import XML

__all__ = ["AVAILABLE", "BODY_TYPES", "HTML", "JSON", "PAGES", "JSON_TYPE", "PATCH_TYPES", "XML",
           "XML_TYPE", "Format", "Offers", "Representations", "body_format", "etag", "negotiate",
           "problem_format", "read_document", "version_in"]


# -- negotiation ---------------------------------------------------------------

class Offers:
    """The media types a route answers in, each with its format, in order
    of preference (the first wins a tie)."""

    def __init__(self, offers: dict[str, Format]) -> None:
        self.types = tuple(offers)
        self.formats = tuple(offers.values())
        #: The types as one string, the cache's key (a string keeps its hash).
        self.key = "\n".join(self.types)
        #: What a 406 lists: the types, without their parameters.
        self.available = [t for t in self.types if ";" not in t]


# Each type is also offered with charset=utf-8, so that a client asking for
# exactly that (as our own XML Content-Type says) is not refused: WebOb
# matches parameters.
DEFAULT = Offers({JSON_TYPE: JSON, f"{JSON_TYPE};charset=utf-8": JSON,
                  XML_TYPE: XML, f"{XML_TYPE};charset=utf-8": XML,
                  "text/xml": XML, "text/xml;charset=utf-8": XML})
#: What a resource with pages for people offers (``/``, a collection, a
#: record): HTML last, so JSON, then XML, win a tie (``*/*``), and a
#: browser, which asks for ``text/html`` first, gets the page.
PAGES = Offers({**dict(zip(DEFAULT.types, DEFAULT.formats)),
                HTML_TYPE: HTML, f"{HTML_TYPE};charset=utf-8": HTML})
PROBLEMS = Offers({**dict(zip(PAGES.types, PAGES.formats)),
                   "application/problem+json": JSON, "application/problem+xml": XML})
AVAILABLE = PAGES.available

# Charset names are case-insensitive (RFC 9110 §8.3.2); WebOb compares
# parameter values exactly, so spell UTF-8 one way before it looks.
_UTF8_PARAMETER = re.compile(r'charset\s*=\s*"?utf-?8"?', re.IGNORECASE)


# PERF: WebOb parses `Accept: application/json` in 34 µs and a browser's
# Accept in 48, where the kept answer takes 0.2 (bench/fastpaths.py,
# 2026-11-22; a whole in-process GET of one user took 8 µs in that day's
# bench/run.sh). Clients send the same few headers again and again, so each
# answer is kept, by the header's text.
@lru_cache(maxsize=512)
def best_offer(header: str, types: str) -> int | None:
    """The index of the type ``header`` prefers among ``types`` (one per
    line), or ``None`` if it accepts none of them. No ``Accept`` (or an
    empty one) accepts anything: the first type."""
    if not header or header.isspace():
        return 0
    offered = types.split("\n")
    accept = create_accept_header(_UTF8_PARAMETER.sub("charset=utf-8", header.strip()))
    acceptable = accept.acceptable_offers(offered)
    return offered.index(acceptable[0][0]) if acceptable else None


def negotiate(req: Request, offers: Offers = DEFAULT) -> Format:
    """The format to answer in, by ``Accept`` and its q-values; 406 if none."""
    best = best_offer(req.accept, offers.key)
    if best is None:
        raise Problem(406, "None of the available media types is acceptable: "
                           + ", ".join(offers.available) + ".", available=offers.available)
    return offers.formats[best]


def problem_format(req: Request) -> Format:
    """The format for an error: as negotiated, and JSON when nothing fits."""
    best = best_offer(req.accept, PROBLEMS.key)
    return JSON if best is None else PROBLEMS.formats[best]


# -- request bodies ------------------------------------------------------------

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
