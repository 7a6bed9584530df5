"""Queries' fast paths (``usersvc.fast``), beside ``Request.parameters`` and
``listing.quoted``, which they replace with the same results
(``tests/test_fast_paths.py``).
"""
from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any
from urllib.parse import unquote

from . import plain

_parameters: Callable[[Any], dict[str, list[str]]] = plain("usersvc.request:Request.parameters")
_quoted: Callable[[str], str] = plain("usersvc.listing:quoted")

# Pairs of letters, digits and -._~ only, what unquote_plus leaves as it
# is, but for brackets in names, escaped or not (``due%5Blt%5D``).
_PAIR = r"(?:[A-Za-z0-9._~\[\]-]|%5[BbDd])+(?:=[A-Za-z0-9._~-]*)?"
_PLAIN_QUERY = re.compile(f"{_PAIR}(?:&{_PAIR})*")
_UNRESERVED = re.compile(r"[A-Za-z0-9._~-]*")


def parameters(req: Any) -> dict[str, list[str]]:
    """``Request.parameters``: a query with nothing to decode
    (``limit=100&after=7``) split in 0.6 µs rather than read in 1.8
    (bench/fastpaths.py); any other read as the plain one reads it."""
    raw = req.query_string
    if not _PLAIN_QUERY.fullmatch(raw):
        return _parameters(req)
    query: dict[str, list[str]] = {}
    for pair in raw.split("&"):
        name, _, value = pair.partition("=")
        query.setdefault(unquote(name) if "%" in name else name, []).append(value)
    return query


#: The texts with something to escape, kept: names with brackets
#: (``due[lt]``) come again on every page.
_escaped = lru_cache(maxsize=1024)(_quoted)


def quoted(text: str) -> str:
    """``listing.quoted``: a text with nothing to escape (most values, and
    names) written as it is; the others as the plain one writes them."""
    return text if _UNRESERVED.fullmatch(text) else _escaped(text)
