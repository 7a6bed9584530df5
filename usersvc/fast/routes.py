"""The route's fast path (``usersvc.fast``), beside ``Route.match``
(``routing``), which compares every segment of a path: for a template of
one parameter after its first segment (``/users/{id:int}``, every
collection's item), the parameter alone, since the router found the route
by the path's first two parts and its length. Held to the plain one on
the paths the router hands it (``tests/test_fast_paths.py``).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..routing import canonical_int
from . import plain

_match: Callable[[Any, list[str]], dict[str, int] | None] = plain("usersvc.routing:Route.match")


def match(self: Any, parts: list[str]) -> dict[str, int] | None:
    """``Route.match``: ``/users/7``'s ``7`` read, not ``""`` and ``users``
    compared again (1,240 instructions of a GET of one user, 3%: the
    plain loop over three segments against this, bench/instructions.py);
    any other template as the plain one reads it."""
    segments = self.segments
    if len(segments) != 3 or not segments[2][1]:
        return _match(self, parts)
    value = canonical_int(parts[2])
    return None if value is None else {segments[2][0]: value}
