"""What a wire format is: ``Format``, and the media types the service speaks.

A format turns a record (or a problem document) into bytes, joins records
already rendered into a list, and parses a request body into a document
for a ``Schema`` to check. JSON (``json_format``) and XML (``xml_format``)
are the two there are.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from ..validation import Schema

JSON_TYPE = "application/json"
XML_TYPE = "application/xml"


class Format(Protocol):
    """One wire format: its media types and its renderers."""

    name: str
    media_type: str        # Content-Type of a record or a list
    problem_type: str      # Content-Type of a problem document

    def render(self, schema: Schema, record: Mapping[str, Any]) -> bytes:
        """A record given as its fields, by name, in order."""

    def render_record(self, schema: Schema, record: Any) -> bytes:
        """A stored record (``User``): ``render`` of its fields."""
        return self.render(schema, schema.as_dict(record))

    def join(self, schema: Schema, rendered: list[bytes]) -> bytes:
        """A list of records, each already rendered by ``render``."""

    def render_problem(self, problem: Mapping[str, Any]) -> bytes:
        """An RFC 9457 problem document's members."""

    def render_change(self, schema: Schema, seq: int, record_id: int,
                      rendered: bytes | None) -> bytes:
        """One entry of the change feed: its position and id, and the
        record as ``render`` made it, or ``None`` for one deleted."""
        raise NotImplementedError(f"{self.name} has no change feed")

    def join_changes(self, rendered: list[bytes]) -> bytes:
        """The feed's entries, each made by ``render_change``."""
        raise NotImplementedError(f"{self.name} has no change feed")

    def parse(self, text: str, schema: Schema) -> Any:
        """A request body (decoded: UTF-8 is the only charset read) as a
        document for ``schema`` to check: 400 for bad syntax, 422
        (``Invalid``) for a well-formed body of the wrong shape."""

