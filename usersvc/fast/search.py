"""Search's fast paths (``usersvc.fast``), beside ``fields.fold`` and
``fields.words``, which read every text through Unicode's decompositions
and are the reference (``tests/test_fast_paths.py``). ASCII text (most
names, every e-mail address) has no marks and decomposes to itself: its
folding is ``str.lower``, its words are what a table leaves between spaces.
"""
from __future__ import annotations

from collections.abc import Callable

from . import plain

_fold: Callable[[str], str] = plain("usersvc.fields:fold")
_words: Callable[[str], list[str]] = plain("usersvc.fields:words")

#: Each ASCII character as ``words`` reads it: itself if a letter or a
#: digit, else a space.
_ASCII_WORDS = "".join(c if c.isalnum() else " " for c in map(chr, range(128)))


def fold(text: str) -> str:
    """``fields.fold``: ASCII text lowered (0.2 µs for an address, not 4:
    bench/fastpaths.py, 2026-11-29); any other as the plain one folds it."""
    return text.lower() if text.isascii() else _fold(text)


def words(value: str) -> list[str]:
    """``fields.words``: ASCII text split by a table, a call per text rather
    than one per separator (0.9 µs for "Ada Lovelace-Byron", not 6.5:
    bench/fastpaths.py, 2026-11-29); any other as the plain one splits it."""
    if value.isascii():
        return value.lower().translate(_ASCII_WORDS).split()
    return _words(value)
