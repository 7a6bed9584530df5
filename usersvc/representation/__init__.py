"""Bytes on the wire: the only layer that knows them.

- ``negotiation``: which format to answer in, from ``Accept`` (or 406);
- ``format``: what a wire format is (``Format``), and the media types;
- ``json_format`` and ``xml_format``: JSON and XML, both ways;
- ``html_format``: HTML rows and problem lines for the pages (``usersvc.pages``);
- ``bodies``: which format reads a request body, from ``Content-Type``
  (or 415), and reading it (400 for bad syntax);
- ``kept``: each record's encodings kept while it is unchanged, pages made
  from them, and the ETags that name them.
"""
from __future__ import annotations

from .bodies import BODY_TYPES, PATCH_TYPES, body_format, read_document
from .format import JSON_TYPE, XML_TYPE, Format
from .html_format import HTML
from .json_format import JSON
from .kept import Representations, etag, version_in
from .negotiation import AVAILABLE, PAGES, Offers, negotiate, problem_format
from .xml_format import XML

__all__ = ["AVAILABLE", "BODY_TYPES", "HTML", "JSON", "PAGES", "JSON_TYPE", "PATCH_TYPES", "XML", "XML_TYPE",
           "Format", "Offers", "Representations", "body_format", "etag", "negotiate",
           "problem_format", "read_document", "version_in"]
