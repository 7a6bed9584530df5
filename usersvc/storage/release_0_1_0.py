"""Release 0.1.0 as it was, frozen, for both stores' migrations
(``sqlite_migrations``, ``postgres_migrations``): its word splitting and
its users' declaration. History: it imports nothing of today's code, and
never changes when today's schemas or word splitting do."""
from __future__ import annotations

import json
import re
import unicodedata

_NOT_WORD = re.compile(r"[\W_]")


def words(text: str) -> list[str]:
    """A name's words, as release 0.1.0 split them."""
    def separator(m: re.Match[str]) -> str:
        return m.group() if unicodedata.category(m.group())[0] == "M" else " "
    return sorted(set(_NOT_WORD.sub(separator, text.casefold()).split()))


#: Release 0.1.0's users, as ``evolution`` records a declaration.
USERS = json.dumps({
    "name": "user", "plural": "users", "order": ["name", "email"],
    "fields": {"name": {"type": "text", "optional": False},
               "email": {"type": "text", "optional": False}},
    "unique": ["email"], "filters": ["email"], "sorts": ["email", "name"],
    "words": ["name"], "prefixes": ["email"]}, sort_keys=True)
