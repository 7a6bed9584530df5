"""Choosing the format to answer in, from ``Accept`` (RFC 9110 §12.5.1).

``negotiate(req, offers)`` gives the format the client prefers by its
q-values among what a route offers, or raises a 406 problem before anything
is done; ``problem_format(req)`` never fails (RFC 9110 §12.1 lets an error
ignore ``Accept``, and JSON is what it falls back to). WebOb parses the
header; ties go to the offer listed first, so JSON wins them.
"""
from __future__ import annotations

import re
from functools import lru_cache

from webob.acceptparse import create_accept_header

from ..problems import Problem
from ..request import Request
from .format import JSON_TYPE, XML_TYPE, Format
from .html_format import HTML, HTML_TYPE
from .json_format import JSON
from .xml_format import XML


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
