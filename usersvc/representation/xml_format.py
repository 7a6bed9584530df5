"""XML, both ways (``application/xml``, ``text/xml``, any ``+xml`` type): a
record is ``<user><id>1</id><name>…</name>…</user>``, a list wraps them in
``<users>``, a problem is ``<problem xmlns="urn:ietf:rfc:7807">`` (RFC 9457
Appendix B); a body, one ``<user>``, is read by ``xml_reading`` (expat, no DOCTYPE)."""
from __future__ import annotations

import re
from typing import Any
from xml.sax.saxutils import escape

from ..schema import Schema
from .json_format import Format

# Characters XML 1.0 cannot carry at all (§2.2), not even as references.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _text(value: object) -> str:
    """A value as character data: escaped, what XML cannot carry as U+FFFD."""
    return escape(_NOT_XML.sub("\ufffd", str(value)))


class XMLFormat(Format):
    name = "xml"
    media_type = "application/xml; charset=utf-8"
    problem_type = "application/problem+xml; charset=utf-8"

    def render(self, schema: Schema, record: dict[str, Any]) -> bytes:
        inner = "".join(f"<{k}>{_text(schema.text_of(k, v))}</{k}>" for k, v in record.items())
        return f"<{schema.name}>{inner}</{schema.name}>".encode()

    def join(self, schema: Schema, rendered: list[bytes]) -> bytes:
        return b"<%s>%s</%s>" % (schema.plural.encode(), b"".join(rendered), schema.plural.encode())

    def render_change(self, schema: Schema, seq: int, id: int, rendered: bytes | None) -> bytes:
        return b"<change><seq>%d</seq><id>%d</id>%s</change>" % (
            seq, id, b"<deleted>true</deleted>" if rendered is None else rendered)

    def join_changes(self, rendered: list[bytes]) -> bytes:
        return b"<changes>%s</changes>" % b"".join(rendered)

    def render_problem(self, problem: dict[str, Any]) -> bytes:
        parts = []
        for key, value in problem.items():
            if key == "errors":     # each a field's: its pointer, its detail
                value = "".join(f"<error><pointer>{_text(e['pointer'])}</pointer>"
                                f"<detail>{_text(e['detail'])}</detail></error>" for e in value)
            else:       # a list's items each an <i> (RFC 9457 App. B)
                value = ("".join(f"<i>{_text(v)}</i>" for v in value)
                         if isinstance(value, (list, tuple)) else _text(value))
            parts.append(f"<{key}>{value}</{key}>")
        return f'<problem xmlns="urn:ietf:rfc:7807">{"".join(parts)}</problem>'.encode()

    def parse(self, text: str, schema: Schema) -> dict[str, Any]:
        from . import xml_reading  # (loaded when an XML body first comes)
        return xml_reading.read(text, schema)


XML = XMLFormat()
