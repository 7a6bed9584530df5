"""What every wire format is (``Format``), and JSON (RFC 8259), both ways:
a record is an object of its fields, a list an array of records; a body is
read strictly (``_object``, ``no_constant``; numbers too long, a 400)."""
from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ..problems import Problem, not_json
from ..request import Request, Response
from ..schema import Invalid, Schema, pointer

if TYPE_CHECKING:       # (only named: the package imports this module)
    from . import Representations

JSON_TYPE = "application/json"
XML_TYPE = "application/xml"


class Format(Protocol):
    """One wire format: its media types, its bytes both ways (``parse``: 400 for bad
    syntax, 422 for the wrong shape; a feed's entries: ``changes.FeedFormat``), and
    the answers that carry them (here: the bytes as they are)."""

    name: str
    media_type: str        # Content-Type of a record or a list
    problem_type: str      # Content-Type of a problem document
    #: Whether ``fields=`` answers some of each record's fields in it
    #: (``sparse.view``): a page for a person (HTML) shows whole records.
    sparse: bool = True
    def render(self, schema: Schema, record: dict[str, Any]) -> bytes: ...  # fields, in order
    def join(self, schema: Schema, rendered: list[bytes]) -> bytes: ...  # a list of them
    def render_problem(self, problem: dict[str, Any]) -> bytes: ...     # an RFC 9457 problem
    def parse(self, text: str, schema: Schema) -> Any: ...  # a body, a document for ``schema``

    @property
    def tag_suffix(self) -> str:
        """What a record's ETag has after its version (``etag``): ``-xml``
        (no dot: a sparse view's names follow it, ``"7-3-xml.name"``)."""
        return "-" + self.name

    def render_record(self, schema: Schema, record: Any) -> bytes:
        """A stored record (``User``): ``render`` of its fields."""
        return self.render(schema, schema.as_dict(record))

    def answer(self, req: Request, status: int, representations: Representations,
               record: Any, tag: str) -> Response:
        """A record's answer (``representations``: its kept encodings; ``tag``: its ETag)."""
        return Response(status, representations.one(record, self),
                        [("Content-Type", self.media_type)])

    def answer_list(self, req: Request, representations: Representations, records: list[Any],
                    next_url: str | None, q: str | None) -> tuple[Response, str | None]:
        """A page's answer and its ETag (``None``: made from its bytes; ``q``: the search)."""
        body, tag = representations.pages.of(records, self)
        return Response(200, body, [("Content-Type", self.media_type)]), tag

    def answer_problem(self, req: Request, problem: dict[str, Any],
                       schemas: Sequence[Schema]) -> Response:
        """A problem document's answer (``schemas``: what the app serves)."""
        return Response(problem["status"], self.render_problem(problem),
                        [("Content-Type", self.problem_type)])


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, refusing a name given twice (RFC 8259 §4: names
    "SHOULD be unique"): a 422 (``Invalid``)."""
    obj = dict(pairs)
    if len(obj) != len(pairs):      # the first name given again (each name's first place)
        first = {key: i for i, (key, _) in reversed(list(enumerate(pairs)))}
        twice = next(key for i, (key, _) in enumerate(pairs) if first[key] != i)
        raise Invalid("The body names a member more than once.",
                      [(pointer(twice), "appears more than once")])
    return obj


def no_constant(name: str) -> Any:
    """A strict reader's ``parse_constant`` (here and ``batch``'s): ``NaN`` and
    ``Infinity`` are no JSON numbers (RFC 8259 §6)."""
    raise ValueError(f"{name} is not a JSON number")


# Made once (json.dumps and json.loads with options make one on every call).
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
_DECODER = json.JSONDecoder(object_pairs_hook=_object, parse_constant=no_constant)


class JSONFormat(Format):
    name = "json"
    tag_suffix = ""         # (the first format: "7-3")
    media_type = JSON_TYPE
    problem_type = "application/problem+json"

    def render(self, schema: Schema, record: dict[str, Any]) -> bytes:
        return _ENCODER.encode(record).encode()

    def render_record(self, schema: Schema, record: Any) -> bytes:
        return self.render(schema, schema.as_dict(record))     # (the version, last, has no member)

    def join(self, schema: Schema, rendered: list[bytes]) -> bytes:
        return b"[" + b",".join(rendered) + b"]"

    def render_change(self, schema: Schema, seq: int, id: int, rendered: bytes | None) -> bytes:
        key, value = (b"deleted", b"true") if rendered is None else (schema.name.encode(), rendered)
        return b'{"seq":%d,"id":%d,"%s":%s}' % (seq, id, key, value)

    def join_changes(self, rendered: list[bytes]) -> bytes:
        return b"[" + b",".join(rendered) + b"]"

    def render_problem(self, problem: dict[str, Any]) -> bytes:
        # ASCII escapes: a problem may quote client input that cannot be
        # encoded as UTF-8 (a lone surrogate in a field's name).
        return json.dumps(problem, separators=(",", ":")).encode()

    def decode(self, text: str) -> Any:
        """The value a JSON text holds, strictly (``_object``, ``no_constant``)."""
        return _DECODER.decode(text)

    def parse(self, text: str, schema: Schema) -> Any:
        try:
            return self.decode(text)
        except RecursionError:
            raise Problem(400, "The JSON body is nested too deeply.") from None
        except ValueError as e:
            raise not_json(e) from None


JSON = JSONFormat()
