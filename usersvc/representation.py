"""Bytes on the wire: choosing a format, and JSON and XML in both directions.

- ``negotiate(req)`` picks the response format from ``Accept`` (RFC 9110
  §12.5.1), or raises a 406 problem; ``problem_format(req)`` never fails.
- ``read_document(req, body, schema)`` picks the parser from
  ``Content-Type`` (415 if none fits) and parses (400 for bad syntax).
- A ``Format`` renders a record and a problem, and joins rendered records into a list.
- ``etag(record, fmt)`` names a version of a representation; ``version_in``
  reads the version back out of an ETag a client sends.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, Protocol
from xml.parsers import expat
from xml.sax.saxutils import escape

from webob.acceptparse import create_accept_header

from .problems import Problem
from .validation import Invalid, Schema, pointer

JSON_TYPE = "application/json"
XML_TYPE = "application/xml"


class Format(Protocol):
    """One wire format: its media types and its renderers."""

    name: str
    media_type: str        # Content-Type of a record or a list
    problem_type: str      # Content-Type of a problem document

    def render(self, schema: Schema, record: Mapping[str, Any]) -> bytes: ...
    def render_record(self, schema: Schema, record: Any) -> bytes:
        """A stored record (``User``): ``render`` of its fields."""
        return self.render(schema, schema.as_dict(record))
    def join(self, schema: Schema, rendered: list[bytes]) -> bytes:
        """A list of records, each already rendered by ``render``."""
    def render_problem(self, problem: Mapping[str, Any]) -> bytes: ...
    def parse(self, body: bytes, schema: Schema) -> Any: ...


# -- JSON ----------------------------------------------------------------

class _DuplicateKey(Exception):
    pass


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, refusing a name given twice (RFC 8259 §4: "SHOULD be
    unique"; which one would the client mean?)."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return obj


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


# Built once: json.dumps and json.loads with options build a new encoder or
# decoder on every call.
_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_STRING = json.encoder.encode_basestring     # "..." with JSON escapes (the C one)
_TEMPLATES: dict[tuple[str, ...], str] = {}   # field names -> '{"id":%s,"name":%s,...}'
_SCAN = json.JSONDecoder(object_pairs_hook=_object,
                         parse_constant=_no_constant).scan_once  # type: ignore[attr-defined]
_WHITE = re.compile(r"[ \t\n\r]*")


def _DECODE(text: str) -> Any:
    """``JSONDecoder.decode``, less its Python layers: the same result and
    the same errors."""
    start = 0 if text[:1] == "{" else _WHITE.match(text, 0).end()   # type: ignore[union-attr]
    try:
        value, end = _SCAN(text, start)
    except StopIteration as e:
        raise json.JSONDecodeError("Expecting value", text, e.value) from None
    if end != len(text):
        end = _WHITE.match(text, end).end()     # type: ignore[union-attr]
        if end != len(text):
            raise json.JSONDecodeError("Extra data", text, end)
    return value


class JSONFormat(Format):
    name = "json"
    media_type = JSON_TYPE
    problem_type = "application/problem+json"

    def render(self, schema, record):
        return self._flat(tuple(record), record.values()) or _ENCODE(record).encode()

    def render_record(self, schema, record):
        # The fields straight from the record: no dict in between.
        return (self._flat(schema.field_names, schema.values(record))
                or self.render(schema, schema.as_dict(record)))

    @staticmethod
    def _flat(keys: tuple[str, ...], values: Iterable[Any]) -> bytes | None:
        """A flat record of strings and ints, written here: the same bytes as
        json.dumps(ensure_ascii=False, separators=(",", ":")) gives, at a
        third of its cost (test_representation checks they agree); ``None``
        for any other value."""
        parts = []
        for value in values:
            kind = type(value)
            if kind is str:
                parts.append(_STRING(value))
            elif kind is int:
                parts.append(str(value))
            else:
                return None
        template = _TEMPLATES.get(keys)
        if template is None:
            template = _TEMPLATES[keys] = "{" + ",".join(f"{_STRING(k)}:%s" for k in keys) + "}"
        return (template % tuple(parts)).encode()

    def join(self, schema, rendered):
        return b"[" + b",".join(rendered) + b"]"

    def render_problem(self, problem):
        # ASCII escapes: a problem may quote client input that cannot be
        # encoded as UTF-8 (a lone surrogate in a field's name).
        return json.dumps(problem, separators=(",", ":")).encode()

    def parse(self, body, schema):
        text = _utf8(body)
        try:
            return _DECODE(text)
        except _DuplicateKey as e:
            raise Invalid("The body names a member more than once.",
                          [(pointer(e.args[0]), "appears more than once")]) from None
        except RecursionError:
            raise Problem(400, "The JSON body is nested too deeply.") from None
        except ValueError as e:
            # JSONDecodeError, NaN/Infinity, and integers longer than
            # sys.get_int_max_str_digits() all land here.
            raise Problem(400, f"The body is not valid JSON: {e}.") from None


# -- XML -----------------------------------------------------------------

# Characters XML 1.0 cannot carry at all (§2.2), not even as references.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_XML_INT = re.compile(r"-?[0-9]{1,20}")   # longer is no id, and costly to convert


def _text(value: Any) -> str:
    return escape(_NOT_XML.sub("\ufffd", str(value)))


class _RefusedDoctype(Exception):
    pass


def _refuse_doctype(*args: Any) -> None:
    raise _RefusedDoctype


class XMLFormat(Format):
    name = "xml"
    media_type = "application/xml; charset=utf-8"
    problem_type = "application/problem+xml; charset=utf-8"

    def render(self, schema, record):
        return self._element(schema.name, record).encode()

    def join(self, schema, rendered):
        return b"".join([b"<%s>" % schema.plural.encode(), *rendered, b"</%s>" % schema.plural.encode()])

    def render_problem(self, problem):
        parts = []
        for key, value in problem.items():
            if key == "errors":
                value = "".join(
                    f"<error><pointer>{_text(e['pointer'])}</pointer>"
                    f"<detail>{_text(e['detail'])}</detail></error>" for e in value)
            elif isinstance(value, (list, tuple)):
                value = "".join(f"<i>{_text(v)}</i>" for v in value)  # RFC 9457 App. B
            else:
                value = _text(value)
            parts.append(f"<{key}>{value}</{key}>")
        return f'<problem xmlns="urn:ietf:rfc:7807">{"".join(parts)}</problem>'.encode()

    @staticmethod
    def _element(name: str, record: Mapping[str, Any]) -> str:
        inner = "".join(f"<{k}>{_text(v)}</{k}>" for k, v in record.items())
        return f"<{name}>{inner}</{name}>"

    def parse(self, body, schema):
        """A ``<user>`` element (no namespace) of text-only children, as a
        dict of field name to text (``id`` to an int when it is one).

        DOCTYPEs are refused outright: no DTD is read and no entity declared,
        so neither entity-expansion bombs nor external entities can act.
        """
        _utf8(body)
        parser = expat.ParserCreate(encoding="UTF-8", namespace_separator=" ")
        parser.StartDoctypeDeclHandler = _refuse_doctype
        parser.buffer_text = True
        doc = _XMLDocument(parser)
        try:
            parser.Parse(body, True)
        except _RefusedDoctype:
            raise Problem(400, "XML bodies may not contain a DOCTYPE.") from None
        except expat.ExpatError as e:
            raise Problem(400, f"The body is not well-formed XML: {e}.") from None
        return doc.result(schema)


class _XMLDocument:
    """Expat handlers that collect a flat ``<user>``'s children."""

    def __init__(self, parser: Any) -> None:
        self.root: str | None = None
        self.root_has_attributes = False
        self.fields: dict[str, list[str]] = {}
        self.errors: list[tuple[str, str]] = []
        self.path: list[str] = []
        parser.StartElementHandler = self.start
        parser.EndElementHandler = self.end
        parser.CharacterDataHandler = self.text

    def start(self, name: str, attributes: dict[str, str]) -> None:
        depth = len(self.path)
        self.path.append(name)
        if depth == 0:
            self.root, self.root_has_attributes = name, bool(attributes)
        elif depth == 1:
            if name in self.fields:
                self.errors.append((pointer(name), "appears more than once"))
            self.fields[name] = []
            if attributes:
                self.errors.append((pointer(name), "must not have attributes"))
        elif depth == 2:
            self.errors.append((pointer(self.path[1]), "must be text, not elements"))

    def end(self, name: str) -> None:
        self.path.pop()

    def text(self, data: str) -> None:
        depth = len(self.path)
        if depth == 2:
            self.fields[self.path[1]].append(data)
        elif depth == 1 and data.strip():
            self.errors.append(("", "must hold elements, not text"))

    def result(self, schema: Schema) -> dict[str, Any]:
        if self.root != schema.name:
            raise Invalid(f"The body must be a <{schema.name}> element without a namespace.",
                          [("", f"must be a <{schema.name}> element")])
        if self.root_has_attributes:
            self.errors.append(("", "must not have attributes"))
        if self.errors:
            raise Invalid(f"The {schema.name} document is not a valid {schema.name}.",
                          self.errors)
        doc: dict[str, Any] = {}
        for name, chunks in self.fields.items():
            value = "".join(chunks)
            doc[name] = int(value) if name == "id" and _XML_INT.fullmatch(value) else value
        return doc


def _utf8(body: bytes) -> str:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Problem(400, f"The body is not valid UTF-8 (byte {e.start}).") from None


JSON = JSONFormat()
XML = XMLFormat()

# -- negotiation ---------------------------------------------------------

# Offer order breaks ties: JSON first, so JSON wins them. Each type is also
# offered with charset=utf-8, so that a client asking for exactly that (as
# our own XML Content-Type says) is not refused: WebOb matches parameters.
_OFFERS = {JSON_TYPE: JSON, f"{JSON_TYPE};charset=utf-8": JSON,
           XML_TYPE: XML, f"{XML_TYPE};charset=utf-8": XML,
           "text/xml": XML, "text/xml;charset=utf-8": XML}
_PROBLEM_OFFERS = {**_OFFERS, "application/problem+json": JSON,
                   "application/problem+xml": XML}
AVAILABLE = [JSON_TYPE, XML_TYPE, "text/xml"]

# Charset names are case-insensitive (RFC 9110 §8.3.2); WebOb compares
# parameter values exactly, so spell UTF-8 one way before it looks.
_UTF8_PARAMETER = re.compile(r'charset\s*=\s*"?utf-?8"?', re.IGNORECASE)


# Parsing Accept costs far more than the rest of a GET; clients send the same
# few headers again and again, so each answer is kept (up to _KEEP of them).
_ACCEPTABLE: dict[tuple[int, str], list[Format]] = {}
_KEEP = 512


def _acceptable(req: Any, offers: dict[str, Format]) -> list[Format]:
    header = req.environ.get("HTTP_ACCEPT", "")
    if not header or header.isspace():        # no Accept (or an empty one): anything goes
        return [JSON]
    key = (id(offers), header)
    found = _ACCEPTABLE.get(key)
    if found is None:
        accept = create_accept_header(_UTF8_PARAMETER.sub("charset=utf-8", header.strip()))
        found = [offers[offer] for offer, _ in accept.acceptable_offers(list(offers))]
        if len(_ACCEPTABLE) >= _KEEP:
            _ACCEPTABLE.clear()
        _ACCEPTABLE[key] = found
    return found


def negotiate(req: Any, offers: dict[str, Format] | None = None) -> Format:
    """The format to answer in, by ``Accept`` and its q-values; 406 if none.
    ``offers`` maps media types to formats (default: JSON and XML)."""
    acceptable = _acceptable(req, offers or _OFFERS)
    if not acceptable:
        available = AVAILABLE if offers is None else [t for t in offers if ";" not in t]
        raise Problem(406, "None of the available media types is acceptable: "
                           + ", ".join(available) + ".", available=available)
    return acceptable[0]


def problem_format(req: Any) -> Format:
    """The format for an error: as negotiated, and JSON when nothing fits
    (RFC 9110 §12.1 lets an error ignore ``Accept``)."""
    acceptable = _acceptable(req, _PROBLEM_OFFERS)
    return acceptable[0] if acceptable else JSON


# -- request bodies ------------------------------------------------------

_JSON_SUFFIX = re.compile(r"application/[!#$&^_.+\w-]+\+json")
_XML_SUFFIX = re.compile(r"application/[!#$&^_.+\w-]+\+xml")

#: The types named in Accept-Post and Accept-Patch. POST and PUT also read
#: any ``application/...+json`` or ``application/...+xml`` type.
BODY_TYPES = [JSON_TYPE, XML_TYPE, "text/xml"]
PATCH_TYPES = ["application/merge-patch+json", JSON_TYPE, XML_TYPE, "text/xml"]


def body_format(content_type: str | None, *, patch: bool = False) -> Format | None:
    """The parser for a body of this Content-Type, or ``None`` if there is
    none. A body without a type is JSON. PATCH bodies are JSON Merge Patch
    (RFC 7396), so other ``+json`` types (JSON Patch!) are refused there."""
    if content_type is None or content_type == JSON_TYPE:
        return JSON
    media_type, _, params = content_type.partition(";")
    media_type = media_type.strip().lower()
    charset = re.search(r"charset\s*=\s*\"?([^\s;\"]+)", params, re.I)
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


def read_document(req: Any, schema: Schema) -> Any:
    """Parse a request's body into a document for ``schema`` to check."""
    patch = req.method == "PATCH"
    body = req.body
    fmt = body_format(req.content_type, patch=patch)
    if fmt is None:
        accepted = ", ".join(PATCH_TYPES if patch else BODY_TYPES)
        readable = accepted if patch else accepted + ", or any +json or +xml type"
        # Accept-Post and Accept-Patch (RFC 5789 §3.1) name what would work.
        header = {"POST": "Accept-Post", "PATCH": "Accept-Patch"}.get(req.method)
        raise Problem(415, f"The body must be {readable}, in UTF-8.",
                      headers=[(header, accepted)] if header else [])
    if not body:
        raise Problem(400, "The request needs a body.")
    return fmt.parse(body, schema)


# -- kept encodings ------------------------------------------------------

class Representations:
    """Each record's encoded representation in each format, kept while its
    version is current (a new version is a new encoding). At most ``size``
    per format: when full, they are all let go and kept again as asked for.

    With each encoding goes a short digest of it, so that a page's ETag is a
    hash of its records' digests (a few hundred bytes) rather than of the
    whole page: the same bytes make the same tag, and different bytes a
    different one, as surely as SHA-256 tells them apart.

    The last pages made are kept too (``pages`` per format), each with the
    records it was made from: a page whose records are equal to a kept
    page's, the same ids at the same versions with the same values, is the
    same bytes, and is served from it. The records are always the store's
    answer to this request; only the encoding is reused."""

    def __init__(self, schema: Schema, size: int = 100_000, pages: int = 64) -> None:
        self.schema = schema
        self.size = size
        self.pages = pages
        self._kept: dict[str, dict[int, tuple[int, bytes, bytes | None]]] = {}
        # (format, first id, count) -> (records, body, tag)
        self._pages: dict[tuple[str, int, int], tuple[list[Any], bytes, str]] = {}

    def one(self, record: Any, fmt: Format) -> bytes:
        kept = self._kept.get(fmt.name)
        if kept is None:
            kept = self._kept[fmt.name] = {}
        found = kept.get(record.id)
        if found is not None and found[0] == record.version:
            return found[1]
        return self._render(kept, record, fmt)[1]

    def many(self, records: list[Any], fmt: Format) -> tuple[bytes, str]:
        """A page: its bytes, and a strong ETag for them."""
        if not records:
            return self._many(records, fmt)
        key = (fmt.name, records[0].id, len(records))
        page = self._pages.get(key)
        # Equal lists: the memory store hands back the very same records, so
        # this is mostly identity checks; other stores' rows compare by value.
        if page is not None and page[0] == records:
            return page[1], page[2]
        body, tag = self._many(records, fmt)
        if len(self._pages) >= self.pages:
            self._pages.clear()
        self._pages[key] = (records, body, tag)
        return body, tag

    def _many(self, records: Iterable[Any], fmt: Format) -> tuple[bytes, str]:
        kept = self._kept.get(fmt.name)
        if kept is None:
            kept = self._kept[fmt.name] = {}
        parts: list[bytes] = []
        digests = [fmt.name.encode()]
        append, digest, get = parts.append, digests.append, kept.get
        for record in records:      # one()'s work, inline: this loop is a page's cost
            found = get(record.id)
            if found is None or found[0] != record.version:
                found = self._render(kept, record, fmt)
            mark = found[2]
            if mark is None:        # digested when first on a page, not on every write
                mark = hashlib.sha256(found[1]).digest()[:16]
                kept[record.id] = (found[0], found[1], mark)
            append(found[1])
            digest(mark)
        tag = '"' + hashlib.sha256(b"".join(digests)).hexdigest()[:24] + '"'
        return fmt.join(self.schema, parts), tag

    def _render(self, kept: dict[int, tuple[int, bytes, bytes | None]], record: Any,
                fmt: Format) -> tuple[int, bytes, bytes | None]:
        body = fmt.render_record(self.schema, record)
        if len(kept) >= self.size:
            kept.clear()
        found = kept[record.id] = (record.version, body, None)
        return found


# -- entity tags ---------------------------------------------------------

def etag(record: Any, fmt: Format) -> str:
    """A strong ETag (RFC 9110 §8.8.3) for this version in this format:
    ``"7-3"`` is user 7 at version 3 in JSON, ``"7-3-xml"`` in XML."""
    suffix = "" if fmt is JSON else "-" + fmt.name
    return f'"{record.id}-{record.version}{suffix}"'


_ETAG = re.compile(r"([0-9]+)-([0-9]+)(?:-xml)?")


def version_in(tag: str, record_id: int) -> int | None:
    """The version an (unquoted) ETag names for this record, in either
    format, or ``None`` if it names none."""
    m = _ETAG.fullmatch(tag)
    if m and int(m.group(1)) == record_id:
        return int(m.group(2))
    return None
