"""Bytes on the wire: the only layer that knows them.

- here: choosing the format to answer in, from ``Accept`` (or 406), and
  the format that reads a request body, from ``Content-Type`` (or 415);
- ``format``: what a wire format is (``Format``), and the media types;
- ``json_format`` and ``xml_format``: JSON and XML, both ways;
- ``html_format``: HTML rows and problem lines for the pages (``usersvc.pages``);
- here too: each record's encodings kept while it is unchanged, pages
  made from them, and the ETags that name them (``Representations``).

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

import hashlib
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
    try:
        text = req.body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Problem(400, f"The body is not valid UTF-8 (byte {e.start}).") from None
    return fmt.parse(text, schema)


# -- kept encodings and ETags ------------------------------------------------
#
# Kept encodings, and the ETags that name representations.
#
# ``Representations`` keeps each record's encoding in each format, with the
# record it was made from; it is used again only for a record equal to that
# one (``==``: the same id, fields and version), so it can never be another
# record's bytes, or an old version's, whatever the store hands back. A page
# of 100 users is then 100 look-ups and a join, not 100 encodings.
#
# With each encoding goes a short digest of it, so that a page's ETag is a
# hash of its records' digests (a few hundred bytes) rather than of the
# whole page: the same bytes make the same tag, and different bytes a
# different one, as surely as SHA-256 tells them apart.
#
# The last pages made are kept too, each with the records it was made from:
# a page whose records are equal to a kept page's is the same bytes, and is
# served from it. The records are always the store's answer to this request;
# only the encoding is reused.
#
# ``etag(record, fmt)`` names one record's version in one format;
# ``version_in`` reads the version back out of an ETag a client sends.

#: [record, its encoding, the encoding's digest (made when first on a page)]
Encoding = list


class Representations:
    """The kept encodings of one collection's records: at most ``size`` per
    format (when full, they are all let go and kept again as asked for),
    and the last ``pages`` pages."""

    def __init__(self, schema: Schema, size: int = 100_000, pages: int = 64) -> None:
        self.schema = schema
        self.size = size
        self.pages = pages
        self._kept: dict[str, dict[int, Encoding]] = {}
        # (format, first id, count) -> (records, body, tag)
        self._pages: dict[tuple[str, int, int], tuple[list[Any], bytes, str]] = {}

    def one(self, record: Any, fmt: Format) -> bytes:
        """A record's representation."""
        return self._encoding(record, fmt)[1]

    def many(self, records: list[Any], fmt: Format) -> tuple[bytes, str]:
        """A page: its bytes, and a strong ETag for them."""
        key = (fmt.name, records[0].id if records else 0, len(records))
        page = self._pages.get(key)
        # Equal lists: the memory store hands back the very same records, so
        # this is mostly identity checks; other stores' rows compare by value.
        if page is not None and page[0] == records:
            return page[1], page[2]
        parts, digests = [], [fmt.name.encode()]
        for record in records:
            encoding = self._encoding(record, fmt)
            if encoding[2] is None:     # digested when first on a page, not on every write
                encoding[2] = hashlib.sha256(encoding[1]).digest()[:16]
            parts.append(encoding[1])
            digests.append(encoding[2])
        body = fmt.join(self.schema, parts)
        tag = '"' + hashlib.sha256(b"".join(digests)).hexdigest()[:24] + '"'
        if len(self._pages) >= self.pages:
            self._pages.clear()
        self._pages[key] = (records, body, tag)
        return body, tag

    def _encoding(self, record: Any, fmt: Format) -> Encoding:
        kept = self._kept.get(fmt.name)
        if kept is None:
            kept = self._kept[fmt.name] = {}
        found = kept.get(record.id)
        if found is not None and found[0] == record:
            return found
        if len(kept) >= self.size:
            kept.clear()
        found = kept[record.id] = [record, fmt.render_record(self.schema, record), None]
        return found


def etag(record: Any, fmt: Format) -> str:
    """A strong ETag (RFC 9110 §8.8.3) for this version in this format:
    ``"7-3"`` is user 7 at version 3 in JSON, ``"7-3-xml"`` in XML,
    ``"7-3-html"`` its page."""
    suffix = "" if fmt is JSON else "-" + fmt.name
    return f'"{record.id}-{record.version}{suffix}"'


_ETAG = re.compile(r"([0-9]+)-([0-9]+)(?:-xml|-html)?")


def version_in(tag: str, record_id: int) -> int | None:
    """The version an (unquoted) ETag names for this record, in either
    format, or ``None`` if it names none."""
    m = _ETAG.fullmatch(tag)
    if m and int(m.group(1)) == record_id:
        return int(m.group(2))
    return None
