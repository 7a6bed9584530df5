"""The media types: which a route offers (``Offers``), which ``Accept``
prefers (``best_offer``) and which ``Content-Type`` a body is read as
(``body_format``). (``usersvc.fast`` keeps each reading by the header's
text, so that a server pays for it once per distinct header.)
"""
from __future__ import annotations

import re

from webob.acceptparse import Accept

from .json_format import JSON, JSON_TYPE, XML_TYPE, Format
from .xml_format import XML


# -- negotiation ---------------------------------------------------------------

class Offers:
    """The media types a route answers in, with their formats, the first preferred."""

    def __init__(self, offers: dict[str, Format]) -> None:
        self.types = tuple(offers)
        self.formats = tuple(offers.values())
        #: Each type as ``best_offer`` compares it: its type/subtype, its
        #: ``type/*``, and its parameters as sent in a range.
        self.ranges = tuple((media_type, media_type.partition("/")[0] + "/*", parameters)
                            for media_type, _, parameters in (t.partition(";") for t in self.types))
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

# Charset names are case-insensitive (RFC 9110 §8.3.2); parameter values
# are compared exactly, so spell UTF-8 one way before they are.
_UTF8_PARAMETER = re.compile(r'charset\s*=\s*"?utf-?8"?', re.IGNORECASE)
# RFC 9110's grammar of Accept, as WebOb writes it: the whole field; one
# media range with its parameters and weight; a parameter.
_ACCEPT = Accept.accept_compiled_re
_RANGE = Accept.media_range_n_accept_params_compiled_re
_PARAMETER = Accept.parameters_compiled_re
_ESCAPED = re.compile(r"\\(.)")


def best_offer(header: str, offers: Offers) -> int | None:
    """The index of the type ``header`` prefers among ``offers``, or
    ``None`` if it accepts none of them (RFC 9110 §12.5.1): each type takes
    the weight of the most specific range that matches it (the type with
    its parameters, the type, ``type/*``, ``*/*``), and the heaviest above
    0 wins, a tie going to the first listed. No ``Accept``, an empty one,
    or one that breaks the grammar accepts anything: the first type."""
    header = header.strip()
    if ";" in header:
        header = _UTF8_PARAMETER.sub("charset=utf-8", header)
    if not header or _ACCEPT.match(header) is None:
        return 0
    ranges: dict[str, list[tuple[str, float]]] = {}     # type/subtype: (parameters, weight)
    if ";" not in header:       # types alone, each of weight 1
        for media_range in header.split(","):
            ranges.setdefault(media_range.strip().lower(), [("", 1.0)])
    else:
        for found in _RANGE.finditer(header):
            ranges.setdefault(found.group(1).lower(), []).append(
                (found.group(2), float(found.group(3) or 1)))
    best, heaviest = None, 0.0
    for index, (media_type, star, parameters) in enumerate(offers.ranges):
        named = ranges.get(media_type)
        weight = None if named is None else _named(named, parameters)
        if weight is None:
            wildcard = ranges.get(star) or ranges.get("*/*")
            weight = wildcard[0][1] if wildcard else 0.0
        if weight > heaviest:
            best, heaviest = index, weight
    return best


def _named(ranges: list[tuple[str, float]], parameters: str) -> float | None:
    """The weight of the first range naming a type with these parameters,
    else of the first naming it with none; ``None``: no range names it so."""
    bare = None
    for named, weight in ranges:
        if not named:
            bare = weight if bare is None else bare
        elif _parameters(named) == _parameters(";" + parameters):
            return weight
    return bare


def _parameters(segment: str) -> tuple[tuple[str, str], ...]:
    """``;charset=utf-8``'s parameters: names lowercased, values unquoted."""
    return tuple((name.lower(), _ESCAPED.sub(r"\1", value[1:-1]) if value[:1] == '"' else value)
                 for name, value in _PARAMETER.findall(segment))


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
