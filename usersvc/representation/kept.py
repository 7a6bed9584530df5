"""Kept encodings, and the ETags that name representations.

``Representations`` keeps each record's encoding in each format, with the
record it was made from; it is used again only for a record equal to that
one (``==``: the same id, fields and version), so it can never be another
record's bytes, or an old version's, whatever the store hands back. A page
of 100 users is then 100 look-ups and a join, not 100 encodings.

With each encoding goes a short digest of it, so that a page's ETag is a
hash of its records' digests (a few hundred bytes) rather than of the
whole page: the same bytes make the same tag, and different bytes a
different one, as surely as SHA-256 tells them apart.

The last pages made are kept too, each with the records it was made from:
a page whose records are equal to a kept page's is the same bytes, and is
served from it. The records are always the store's answer to this request;
only the encoding is reused.

``etag(record, fmt)`` names one record's version in one format;
``version_in`` reads the version back out of an ETag a client sends.
"""
from __future__ import annotations

import hashlib
import re
from typing import Any

from ..validation import Schema
from .format import Format
from .json_format import JSON

#: [record, its encoding, the encoding's digest (made when first on a page)]
Encoding = list


class Representations:
    """The kept encodings of one collection's records: at most ``size`` per
    format (when full, they are all let go and kept again as asked for),
    and the last ``pages`` pages."""

    def __init__(self, schema: Schema, size: int = 100_000, pages: int = 64) -> None:
        self.schema = schema
        self.size = size
        self.pages = pages
        self._kept: dict[str, dict[int, Encoding]] = {}
        # (format, first id, count) -> (records, body, tag)
        self._pages: dict[tuple[str, int, int], tuple[list[Any], bytes, str]] = {}

    def one(self, record: Any, fmt: Format) -> bytes:
        """A record's representation."""
        return self._encoding(record, fmt)[1]

    def many(self, records: list[Any], fmt: Format) -> tuple[bytes, str]:
        """A page: its bytes, and a strong ETag for them."""
        key = (fmt.name, records[0].id if records else 0, len(records))
        page = self._pages.get(key)
        # Equal lists: the memory store hands back the very same records, so
        # this is mostly identity checks; other stores' rows compare by value.
        if page is not None and page[0] == records:
            return page[1], page[2]
        parts, digests = [], [fmt.name.encode()]
        for record in records:
            encoding = self._encoding(record, fmt)
            if encoding[2] is None:     # digested when first on a page, not on every write
                encoding[2] = hashlib.sha256(encoding[1]).digest()[:16]
            parts.append(encoding[1])
            digests.append(encoding[2])
        body = fmt.join(self.schema, parts)
        tag = '"' + hashlib.sha256(b"".join(digests)).hexdigest()[:24] + '"'
        if len(self._pages) >= self.pages:
            self._pages.clear()
        self._pages[key] = (records, body, tag)
        return body, tag

    def _encoding(self, record: Any, fmt: Format) -> Encoding:
        kept = self._kept.get(fmt.name)
        if kept is None:
            kept = self._kept[fmt.name] = {}
        found = kept.get(record.id)
        if found is not None and found[0] == record:
            return found
        if len(kept) >= self.size:
            kept.clear()
        found = kept[record.id] = [record, fmt.render_record(self.schema, record), None]
        return found


def etag(record: Any, fmt: Format) -> str:
    """A strong ETag (RFC 9110 §8.8.3) for this version in this format:
    ``"7-3"`` is user 7 at version 3 in JSON, ``"7-3-xml"`` in XML,
    ``"7-3-html"`` its page."""
    suffix = "" if fmt is JSON else "-" + fmt.name
    return f'"{record.id}-{record.version}{suffix}"'


_ETAG = re.compile(r"([0-9]+)-([0-9]+)(?:-xml|-html)?")


def version_in(tag: str, record_id: int) -> int | None:
    """The version an (unquoted) ETag names for this record, in either
    format, or ``None`` if it names none."""
    m = _ETAG.fullmatch(tag)
    if m and int(m.group(1)) == record_id:
        return int(m.group(2))
    return None
