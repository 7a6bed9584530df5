"""A page's query read once for each schema and text (``usersvc.fast``):
``listing.known_parameters``, ``listing._asking`` and ``asking.read``,
kept by their arguments, which are the reference
(``tests/test_fast_paths.py``). A schema is hashed by identity: an app's
schemas live as long as it does.
"""
from __future__ import annotations

from functools import lru_cache

from . import plain

#: The parameters a collection's list takes, made once for each schema:
#: every page asks (0.1 µs, not 0.6: bench/fastpaths.py).
known_parameters = lru_cache(maxsize=None)(plain("usersvc.listing:known_parameters"))
#: The ``asking`` module, found at once: 500 instructions, where an import
#: statement takes 3,000 to 6,000.
_asking = lru_cache(maxsize=None)(plain("usersvc.listing:_asking"))
#: A condition (``due[lt]=2026-12-01``) read once for each text: pages
#: followed by their next links ask alike (0.1 µs, not 3.6, for
#: ``email[ne]=a@b.org``: bench/fastpaths.py). A refused one (400) is not kept.
read = lru_cache(maxsize=1024)(plain("usersvc.asking:read"))
