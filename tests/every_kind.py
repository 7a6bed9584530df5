"""A collection that says everything a ``Schema`` can: every kind of field,
optional and required, unique, filtered, sorted and searched.

    THINGS + USER (its ``owner``: a user): ``test_every_kind_store`` holds
    it to ``store_contract`` on every store, beside its own questions.
"""
from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

from usersvc import Schema, boolean, choice, date, datetime, email, integer, number, ref, text, url

THINGS = Schema(
    "thing", "things",
    {"title": text(100), "code": text(20), "contact": email, "count": integer(-5, 5000),
     "done": boolean, "weight": number(0, 1000), "due": date, "at": datetime,
     "level": choice("low", "normal", "high"), "link": url, "note": text(200),
     "owner": ref("users")},
    optional=("contact", "weight", "due", "link", "note", "owner"),
    unique=("code", "contact", "at", "link"),
    filters=("code", "contact", "count", "done", "due", "level", "link"),
    sorts=("title", "count", "done", "at", "level", "due", "weight"),     # (two optional)
    filtered_sorts={"done": ("title", "at", "level", "weight"), "count": ("title",),
                    "level": ("count",), "due": ("title",)},
    words=("title", "note"), prefixes=("code",))


def thing_maker(start: int = 1) -> Callable[[str], dict[str, Any]]:
    """``fields(text)``: a new thing's required fields, each call's unique
    values unused before, ``text`` its title."""
    numbers: Iterator[int] = itertools.count(start)

    def fields(text: str) -> dict[str, Any]:
        n = next(numbers)
        return {"title": text, "code": f"c-{n}", "count": n % 7, "done": n % 2 == 0,
                "at": f"2026-01-{1 + n // 86400 % 28:02d}T{n // 3600 % 24:02d}:"
                      f"{n // 60 % 60:02d}:{n % 60:02d}.5Z",
                "level": THINGS.fields["level"].options[n % 3]}
    return fields
