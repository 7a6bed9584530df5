"""Headers read once per distinct text (``usersvc.fast``): clients send the
same few again and again, so each reading is kept by the header's text,
beside the plain functions that read them every time
(``representation``, ``request``, ``app``), which are the
reference (``tests/test_fast_paths.py``). Each cache is bounded; a header
never seen before costs what the plain reading costs.
"""
from __future__ import annotations

from functools import lru_cache

from ..request import Request
from . import plain

#: ``Accept``: WebOb parses ``application/json`` in 34 µs, a browser's in
#: 48; the kept answer takes 0.2 (bench/fastpaths.py).
best_offer = lru_cache(maxsize=512)(plain("usersvc.representation:best_offer"))
#: ``Content-Type``: its media type and charset.
body_format = lru_cache(maxsize=64)(plain("usersvc.representation:body_format"))
#: ``"201 Created"``, once for each status.
status_line = lru_cache(maxsize=64)(plain("usersvc.request:status_line"))
#: The base URL, once for the few hosts, ports and mounts a server is sent.
base_url_of = lru_cache(maxsize=64)(plain("usersvc.request:base_url_of"))
#: ``Host``, checked once for each.
good_host = lru_cache(maxsize=256)(plain("usersvc.app:good_host"))

#: Each header name's key in the environ (``HTTP_IDEMPOTENCY_KEY``): the
#: few names the code asks for.
_KEYS: dict[str, str] = {}


def header(self: Request, name: str) -> str | None:
    """``Request.header``: the environ's key for ``name`` made once for
    each name (a write hook's, on every POST: 700 instructions a request,
    bench/instructions.py)."""
    key = _KEYS.get(name)
    if key is None:
        if len(_KEYS) >= 64:
            _KEYS.clear()
        key = _KEYS[name] = "HTTP_" + name.upper().replace("-", "_")
    return self.environ.get(key)
