"""Bytes on the wire: the only layer that knows them. Here: the media types a route offers
(``Offers``) and the format ``Accept`` picks from them (RFC 9110 §12.5.1, or 406; a tie goes
to the offer listed first, so JSON wins); the format ``Content-Type`` names to read a body (or
415); each record's encodings, kept while it is unchanged, and the ETags that name them."""
from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from webob.acceptparse import Accept

from ..problems import Problem
from ..request import Request
from ..schema import Schema
from .json_format import JSON, JSON_TYPE, XML_TYPE, Format
from .lists import KeptPages
from .xml_format import XML

__all__ = ["BODY_TYPES", "DEFAULT", "JSON", "JSON_TYPE", "PATCH_TYPES", "PROBLEMS", "XML",
           "XML_TYPE", "Format", "Offers", "Representations", "best_offer", "body_format",
           "etag", "negotiate", "problem_format", "read_document", "version_in"]


class Offers:
    """The media types a route answers in, with their formats, the first
    preferred; ``available``: what a 406 lists, the types without their
    parameters; ``tag_suffixes``: what a record's ETag may have after its
    version in one of these formats (``Format.tag_suffix``, for ``version_in``)."""

    def __init__(self, offers: Mapping[str, Format]) -> None:
        self.types = tuple(offers)
        self.formats = tuple(offers.values())
        #: Each type as ``best_offer`` compares it: its type/subtype, its
        #: ``type/*``, and its parameters as read in a range.
        self.ranges = tuple((t.partition(";")[0], t.partition("/")[0] + "/*", _parameters(t))
                            for t in self.types)
        self.available = [t for t in self.types if ";" not in t]
        self.tag_suffixes = frozenset(fmt.tag_suffix for fmt in self.formats)

    def plus(self, offers: Mapping[str, Format]) -> Offers:
        """These offers, and then more (a tie goes to the first listed)."""
        return Offers({**dict(zip(self.types, self.formats, strict=True)), **offers})


# Charset names are case-insensitive (RFC 9110 §8.3.2); parameter values
# are compared exactly, so spell UTF-8 one way before they are.
_UTF8_PARAMETER = re.compile(r'charset\s*=\s*"?utf-?8"?', re.IGNORECASE)
# RFC 9110's grammar of Accept, as WebOb writes it (types-WebOb's stubs leave these out):
# the whole field; one media range with its parameters and weight; a parameter.
_ACCEPT = Accept.accept_compiled_re  # type: ignore[attr-defined]
_RANGE = Accept.media_range_n_accept_params_compiled_re  # type: ignore[attr-defined]
_PARAMETER = Accept.parameters_compiled_re  # type: ignore[attr-defined]
_ESCAPED = re.compile(r"\\(.)")


def best_offer(header: str, offers: Offers) -> int | None:
    """The index of the type ``header`` prefers among ``offers``, or ``None`` if it accepts
    none of them (RFC 9110 §12.5.1): each type takes the weight of the most specific range
    that matches it (the type with its parameters, the type, ``type/*``, ``*/*``), and the
    heaviest above 0 wins, a tie going to the first listed. No ``Accept``, an empty one, or
    one that breaks the grammar accepts anything: the first type."""
    header = header.strip()
    if ";" in header:       # (a parameter to spell one way)
        header = _UTF8_PARAMETER.sub("charset=utf-8", header)
    if not header or _ACCEPT.match(header) is None:
        return 0
    if ";" not in header:   # types alone, each weighing 1: the first offer one names wins
        named = {media_range.strip().lower() for media_range in header.split(",")}
        for index, (media_type, star, _) in enumerate(offers.ranges):
            if media_type in named or star in named or "*/*" in named:
                return index
        return None
    # The first weight each range is given with its parameters, and (None) with any (type/*).
    weights: dict[tuple[str, Any], float] = {}
    for found in _RANGE.finditer(header):
        media_range, q = found.group(1).lower(), float(found.group(3) or 1)
        weights.setdefault((media_range, _parameters(found.group(2))), q)
        weights.setdefault((media_range, None), q)
    best, heaviest = None, 0.0
    for index, (media_type, star, parameters) in enumerate(offers.ranges):
        weight = weights.get((media_type, parameters), weights.get((media_type, ())))
        if weight is None:
            weight = weights.get((star, None), weights.get(("*/*", None), 0.0))
        if weight > heaviest:
            best, heaviest = index, weight
            if weight == 1.0:       # (none weighs more: the first to weigh 1 wins)
                break
    return best


def _parameters(text: str) -> tuple[tuple[str, str], ...]:
    """``;charset=utf-8``'s parameters: names lowercased, values unquoted."""
    return tuple((name.lower(), _ESCAPED.sub(r"\1", value[1:-1]) if value[:1] == '"' else value)
                 for name, value in _PARAMETER.findall(text))


# Each type is also offered with charset=utf-8: a client asking for exactly
# that (as our own XML Content-Type says) is not refused (parameters match).
DEFAULT = Offers({JSON_TYPE: JSON, f"{JSON_TYPE};charset=utf-8": JSON,
                  XML_TYPE: XML, f"{XML_TYPE};charset=utf-8": XML,
                  "text/xml": XML, "text/xml;charset=utf-8": XML})
#: What a problem document may be answered in (an app's may offer more).
PROBLEMS = DEFAULT.plus({"application/problem+json": JSON, "application/problem+xml": XML})


def negotiate(req: Request, offers: Offers = DEFAULT) -> Format:
    """The format to answer in, by ``Accept`` and its q-values; 406 if none."""
    best = best_offer(req.accept, offers)
    if best is None:
        raise Problem(406, "None of the available media types is acceptable: "
                           + ", ".join(offers.available) + ".", available=offers.available)
    return offers.formats[best]


def problem_format(req: Request, offers: Offers = PROBLEMS) -> Format:
    """The format for an error: as negotiated, and JSON when nothing fits
    (RFC 9110 §12.1 lets an error ignore ``Accept``): never a 406."""
    best = best_offer(req.accept, offers)
    return JSON if best is None else offers.formats[best]


#: The types named in Accept-Post and Accept-Patch. POST and PUT also read
#: any ``application/...+json`` or ``application/...+xml`` type.
BODY_TYPES = [JSON_TYPE, XML_TYPE, "text/xml"]
PATCH_TYPES = ["application/merge-patch+json", JSON_TYPE, XML_TYPE, "text/xml"]

_READS = {JSON_TYPE: JSON, XML_TYPE: XML, "text/xml": XML}
_SUFFIXED = re.compile(r"application/[!#$&^_.+\w-]+\+(json|xml)")
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
    if patch and media_type == "application/merge-patch+json":
        return JSON
    if media_type in _READS or patch:
        return _READS.get(media_type)
    suffixed = _SUFFIXED.fullmatch(media_type)      # (any +json, +xml type)
    return None if suffixed is None else _READS["application/" + suffixed[1]]


def read_document(req: Request, schema: Schema) -> Any:
    """Parse a request's body into a document for ``schema`` to check; a 415 names what
    is read (``Accept-Post``, ``Accept-Patch``: RFC 9110 §15.5.16, RFC 5789 §3.1)."""
    patch = req.method == "PATCH"
    fmt = body_format(req.content_type, patch=patch)
    if fmt is None:
        accepted = ", ".join(PATCH_TYPES if patch else BODY_TYPES)
        readable = accepted if patch else accepted + ", or any +json or +xml type"
        header = {"POST": "Accept-Post", "PATCH": "Accept-Patch"}.get(req.method)
        raise Problem(415, f"The body must be {readable}, in UTF-8.",
                      headers=[(header, accepted)] if header else [])
    return fmt.parse(body_text(req), schema)


def body_text(req: Request) -> str:
    """A request's body as text: a 400 for none, or for one not UTF-8."""
    if not req.body:
        raise Problem(400, "The request needs a body.")
    try:
        return req.body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Problem(400, f"The body is not valid UTF-8 (byte {e.start}).") from None


class Representations:
    """The kept encodings of one collection's records, each used again only for an equal
    record (same id, fields and version): at most ``size`` per format (when full, all let
    go and kept again as asked for); and its last ``pages`` pages (``lists.KeptPages``)."""

    def __init__(self, schema: Schema, size: int = 100_000, pages: int = 64) -> None:
        self.schema, self.size = schema, size
        # format -> id -> [record, its encoding, its digest (made when first on a page)]
        self._kept: defaultdict[str, dict[int, list[Any]]] = defaultdict(dict)
        self.pages = KeptPages(self, pages)

    def one(self, record: Any, fmt: Format) -> bytes:
        """A record's representation."""
        return self.encoding(record, fmt)[1]  # type: ignore[no-any-return]  # (its bytes)

    def encoding(self, record: Any, fmt: Format) -> list[Any]:
        """A record's kept encoding, made now if none is kept for it."""
        kept = self._kept[fmt.name]
        found = kept.get(record.id)
        if found is not None and found[0] == record:
            return found
        if len(kept) >= self.size:
            kept.clear()
        found = kept[record.id] = [record, fmt.render_record(self.schema, record), None]
        return found


def etag(record: Any, fmt: Format) -> str:
    """A strong ETag (RFC 9110 §8.8.3) for this version in this format:
    ``"7-3"`` is user 7 at version 3 in JSON, ``"7-3-xml"`` in XML, each
    format's ``tag_suffix`` after the version (the pages': ``"7-3-html"``)."""
    return f'"{record.id}-{record.version}{fmt.tag_suffix}"'


# id-version, a format's suffix (up to the first dot), .name: ``sparse``'s.
_ETAG = re.compile(r"([0-9]+)-([0-9]+)(-[^.]+)?(?:\.[a-z0-9_]+)*")


def version_in(tag: str, record_id: int, offers: Offers = DEFAULT) -> int | None:
    """The version an (unquoted) ETag names for this record, in any of the
    formats ``offers`` has (its ``tag_suffixes``), or ``None`` if it names none."""
    m = _ETAG.fullmatch(tag)
    if m and int(m.group(1)) == record_id and (m.group(3) or "") in offers.tag_suffixes:
        return int(m.group(2))
    return None
