"""An XML request body (``application/xml``, ``text/xml``, any ``+xml``
type) read into a document for a schema to check: one ``<user>`` element
(no namespace) of text-only children; an integer field's trimmed decimal
text is its number, and an optional field's empty element is no value
(JSON's ``null``). DOCTYPEs are refused outright: no DTD is read and no
entity declared, so neither entity-expansion bombs nor external entities
can act. ``XMLFormat.parse`` imports it when an XML body first comes.
"""
from __future__ import annotations

import re
from typing import Any
from xml.parsers import expat

from ..problems import Problem
from ..schema import Invalid, Schema, pointer

#: A record's id as XML writes one (longer is none, and costly to convert).
XML_INTEGER = re.compile(r"-?[0-9]{1,20}")


def read(text: str, schema: Schema) -> dict[str, Any]:
    """The record element's children, as a dict of field name to text
    (``id`` to an int when it is one)."""
    parser = expat.ParserCreate(encoding="UTF-8", namespace_separator=" ")
    parser.StartDoctypeDeclHandler = _refuse_doctype
    parser.buffer_text = True
    doc = _Document(parser)
    try:
        parser.Parse(text, True)
    except _RefusedDoctype:
        raise Problem(400, "XML bodies may not contain a DOCTYPE.") from None
    except expat.ExpatError as e:
        raise Problem(400, f"The body is not well-formed XML: {e}.") from None
    return doc.result(schema)


class _RefusedDoctype(Exception):
    pass


def _refuse_doctype(*args: Any) -> None:
    raise _RefusedDoctype


class _Document:
    """Expat handlers that collect a flat record element's children."""

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
            if name == "id" and XML_INTEGER.fullmatch(value):
                doc[name] = int(value)
            elif not value.strip() and (name in schema.optional or name in schema.fields
                                        and schema.fields[name].type != "text"):
                doc[name] = None        # XML's null: an empty element is no value (a required
                                        # field's refused as JSON's null is; text's as empty)
            elif name in schema.fields:
                doc[name] = schema.fields[name].from_xml(value)     # as the kind reads it
            else:
                doc[name] = value
        return doc
