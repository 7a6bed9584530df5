"""A collection's pages as last answered (``KeptPages``), for ``GET
/<plural>``: a page asked for again, of the very records (the memory store
hands back the same objects: identity checks) or of equal ones, is its kept
bytes and ETag. A page made anew joins its records' kept encodings
(``Representations``); its strong ETag is a hash of their digests, each
made when its record is first on a page, not on every write.
"""
from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:       # (only named: the package imports this module)
    from . import Representations
    from .json_format import Format


class KeptPages:
    """The last ``size`` pages of one collection's (when full, all let go
    and kept again as asked for), each by its format, first id and count."""

    def __init__(self, representations: Representations, size: int = 64) -> None:
        self.representations, self.size = representations, size
        # (format, first id, count) -> (records, body, tag)
        self._kept: dict[tuple[str, int, int], tuple[list[Any], bytes, str]] = {}

    def of(self, records: list[Any], fmt: Format) -> tuple[bytes, str]:
        """The page of these records: its bytes, and a strong ETag for them."""
        key = (fmt.name, records[0].id if records else 0, len(records))
        page = self._kept.get(key)
        if page is not None and page[0] == records:
            return page[1], page[2]
        parts, digests = [], [fmt.name.encode()]
        for record in records:
            encoding = self.representations.encoding(record, fmt)
            if encoding[2] is None:
                encoding[2] = hashlib.sha256(encoding[1]).digest()[:16]
            parts.append(encoding[1])
            digests.append(encoding[2])
        body = fmt.join(self.representations.schema, parts)
        tag = '"' + hashlib.sha256(b"".join(digests)).hexdigest()[:24] + '"'
        if len(self._kept) >= self.size:
            self._kept.clear()
        self._kept[key] = (records, body, tag)
        return body, tag
