"""The media types: which a route offers (``Offers``), which ``Accept``
prefers (``best_offer``) and which ``Content-Type`` a body is read as
(``body_format``). (``usersvc.fast`` keeps each reading by the header's
text, so that a server pays for it once per distinct header.)
"""
from __future__ import annotations

import re

from webob.acceptparse import create_accept_header

from .json_format import JSON, JSON_TYPE, XML_TYPE, Format
from .xml_format import XML


# -- negotiation ---------------------------------------------------------------

class Offers:
    """The media types a route answers in, with their formats, the first preferred."""

    def __init__(self, offers: dict[str, Format]) -> None:
        self.types = tuple(offers)
        self.formats = tuple(offers.values())
        #: The types as one string, the cache's key (a string keeps its hash).
        self.key = "\n".join(self.types)
        #: What a 406 lists: the types, without their parameters.
        self.available = [t for t in self.types if ";" not in t]
        #: What a record's ETag may have after its version in one of these
        #: formats (``Format.tag_suffix``), for ``version_in`` to read.
        self.tag_suffixes = frozenset(fmt.tag_suffix for fmt in self.formats)

    def plus(self, offers: dict[str, Format]) -> Offers:
        """These offers, and then more (a tie goes to the first listed)."""
        return Offers({**dict(zip(self.types, self.formats)), **offers})


# Each type is also offered with charset=utf-8, so that a client asking for
# exactly that (as our own XML Content-Type says) is not refused: WebOb
# matches parameters.
DEFAULT = Offers({JSON_TYPE: JSON, f"{JSON_TYPE};charset=utf-8": JSON,
                  XML_TYPE: XML, f"{XML_TYPE};charset=utf-8": XML,
                  "text/xml": XML, "text/xml;charset=utf-8": XML})
#: What a problem document may be answered in (an app's may offer more).
PROBLEMS = DEFAULT.plus({"application/problem+json": JSON, "application/problem+xml": XML})

# Charset names are case-insensitive (RFC 9110 §8.3.2); WebOb compares
# parameter values exactly, so spell UTF-8 one way before it looks.
_UTF8_PARAMETER = re.compile(r'charset\s*=\s*"?utf-?8"?', re.IGNORECASE)


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


# -- request bodies ------------------------------------------------------------

#: The types named in Accept-Post and Accept-Patch. POST and PUT also read
#: any ``application/...+json`` or ``application/...+xml`` type.
BODY_TYPES = [JSON_TYPE, XML_TYPE, "text/xml"]
PATCH_TYPES = ["application/merge-patch+json", JSON_TYPE, XML_TYPE, "text/xml"]

_JSON_SUFFIX = re.compile(r"application/[!#$&^_.+\w-]+\+json")
_XML_SUFFIX = re.compile(r"application/[!#$&^_.+\w-]+\+xml")
_CHARSET = re.compile(r"charset\s*=\s*\"?([^\s;\"]+)", re.IGNORECASE)


def body_format(content_type: str | None, *, patch: bool = False) -> Format | None:
    """The parser for a body of this Content-Type, in UTF-8, or ``None``:
    POST and PUT read JSON (and any ``+json`` type) and XML (``text/xml``,
    any ``+xml`` type); PATCH reads JSON Merge Patch (RFC 7396; so not JSON
    Patch) and XML. A body without a type is refused: a page on any site can
    send one without asking first (``no-cors`` fetch), as it can form types."""
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
