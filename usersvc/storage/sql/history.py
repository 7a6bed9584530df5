"""Past releases as they were, frozen, for both stores' migrations
(``sqlite.migrations``, ``postgres.migrations``): release 0.1.0's word
splitting and users' declaration, and the tables layouts 4, 5 and 6 added,
in either dialect. History: it imports nothing of today's code, and never
changes when today's schemas or word splitting do."""
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


def collections_table(text: str) -> str:
    """Layout 4's table of declarations, in a dialect whose text type is ``text``."""
    return f"""CREATE TABLE usersvc_collections (
                   plural      {text} PRIMARY KEY,
                   declaration {text} NOT NULL,   -- stored.declaration(), JSON
                   objects     {text} NOT NULL    -- {{name: [kind, table, statement]}}
               )"""


def keys_table(text: str, real: str, integer: str, blob: str, suffix: str = "") -> str:
    """Layout 5's table of idempotency keys, in a dialect's types."""
    return f"""CREATE TABLE usersvc_keys (
           owner       {text} NOT NULL,   -- a token's digest, or ''
           key         {text} NOT NULL,   -- the Idempotency-Key
           fingerprint {text} NOT NULL,   -- the request's
           expires     {real} NOT NULL,   -- Unix time
           status      {integer} NOT NULL,   -- the answer
           headers     {text} NOT NULL,
           body        {blob} NOT NULL,
           vary        {text} NOT NULL,
           PRIMARY KEY (owner, key)
       ){suffix}"""


def history_table(random_token: str) -> list[str]:
    """Layout 6's table of the store's history: one row, a token made at
    random (``random_token``: the dialect's expression for 12 hex digits)
    when the table is made, which names the feed's history in the ids a
    client is given (``usersvc.places``)."""
    return ["CREATE TABLE usersvc_history (token text NOT NULL)",
            f"INSERT INTO usersvc_history (token) VALUES ({random_token})"]
