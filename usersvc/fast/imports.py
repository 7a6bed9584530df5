"""Modules imported when a request first needs them (``usersvc.fast``),
then found at once: ``from . import sparse`` in a function runs
importlib's Python each time (3,000 to 6,000 instructions: a user's
``GET /users/1?fields=name`` took 1.14 times as many), the kept module a
dict's look-up. Each is the plain function's module
(``tests/test_fast_paths.py``).
"""
from __future__ import annotations

from functools import lru_cache

from . import plain

#: ``listing._sparse``: the ``sparse`` module.
sparse = lru_cache(maxsize=None)(plain("usersvc.listing:_sparse"))
