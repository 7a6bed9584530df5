"""The text kinds' rules as JSON Schema patterns, for the OpenAPI document
(``fields.Text.describe``, ``fields.Email.describe``).

A request is judged after trimming, so each pattern allows white space
around the value (what ``str.strip`` removes) and describes the value
inside it exactly. XML 1.0 cannot carry most C0 controls at all (§2.2),
so the XML patterns leave those out even where trimming would remove them.
"""
from __future__ import annotations

import re
from typing import Any

_WHITE = "".join(chr(c) for c in range(0x110000) if chr(c).isspace())
_CONTROL = r"\x00-\x1f\x7f-\x9f"                  # Unicode category Cc
# U+FFFE and U+FFFF (see UNENCODABLE). Lone surrogates are refused too, but
# no pattern can name them: JSON Schema strings are Unicode scalar values.
_NOT_TEXT = r"\ufffe\uffff"
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f]")


def _escaped(chars: str) -> str:
    """A character class's body for these characters: runs as ranges."""
    codes, runs = sorted(map(ord, chars)), []  # type: list[int], list[list[int]]
    for code in codes:
        if runs and runs[-1][1] == code - 1:
            runs[-1][1] = code
        else:
            runs.append([code, code])
    return "".join(f"\\u{a:04x}" + (f"-\\u{b:04x}" if b > a else "") for a, b in runs)


def white_space(in_xml: bool) -> str:
    white = _NOT_XML.sub("", _WHITE) if in_xml else _WHITE
    return f"[{_escaped(white)}]"


def text_schema(max_length: int, in_xml: bool) -> dict[str, Any]:
    inner = f"[^{_CONTROL}{_NOT_TEXT}]"                       # no controls inside
    edge = f"[^{_escaped(_WHITE)}{_CONTROL}{_NOT_TEXT}]"      # and no space at the ends
    value = edge if max_length == 1 else f"{edge}(?:{inner}{{0,{max_length - 2}}}{edge})?"
    return {
        "type": "string",
        "pattern": f"^{white_space(in_xml)}*{value}{white_space(in_xml)}*$",
        "description": f"1 to {max_length} characters after trimming surrounding "
                       "white space; no control characters.",
    }


def email_schema(pattern: str, max_length: int, in_xml: bool) -> dict[str, Any]:
    around = white_space(in_xml)
    return {
        "type": "string",
        # The limit holds after trimming, which maxLength cannot say: a
        # padded address may be longer on the wire (docs/conformance.md).
        "maxLength": max_length,
        "pattern": f"^{around}*{pattern}{around}*$",
        "description": "A valid e-mail address (WHATWG HTML, <input type=email>); "
                       "surrounding white space is trimmed.",
    }
