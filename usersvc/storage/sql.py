"""The SQL the SQLite and PostgreSQL stores share: a page and a count of
users in any order, filtered by ``email`` and ``q``.

Both schemas keep, beside each user's fields:

- ``name_key``, the case-folded name, indexed with ``id`` after it, for the
  name order (``email_key``, unique, serves the e-mail order);
- ``name_words``, the case-folded words of the name (``validation.words``),
  and a table ``user_words (word, user_id)`` keyed in that order, which the
  database's triggers keep in step with every insert, update and delete of a
  user: one row per word of the name, and one for the e-mail key. A ``q``
  search is one range of its key, ``q <= word < prefix_end(q)``.

Every key column compares in code point order (SQLite's ``BINARY``,
PostgreSQL's ``COLLATE "C"``), as Python's ``str`` does, so every store
gives the same order. A page in any order is a walk of one index from the
position of the last page (keyset paging): O(log N + limit). A search
starts from the words that match and sorts only those: O(log N + matches).

The text of each query depends only on its shape (which order, which
filters, whether it has a position); every value is a bound parameter.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any, NamedTuple, Union

from ..validation import words
from . import Position, email_key

COLUMNS = "u.id, u.name, u.email, u.version"
KEYS = "u.id, u.version"        # what names a user's version: enough to find it kept


class Dialect(NamedTuple):
    mark: str       # the driver's placeholder
    join: str       # how the matching words join their users
    position: str   # the change feed's last position (``feed``)


# SQLite's planner takes a CROSS JOIN's tables in the order written: the
# matching words first, then their users by id. PostgreSQL's needs no telling.
SQLITE = Dialect("?", "CROSS JOIN", "SELECT coalesce(max(seq), 0) FROM user_changes")
POSTGRES = Dialect("%s", "JOIN", "SELECT coalesce(max(seq), 0) FROM user_changes")

# The columns each order walks. ``email_key`` is unique, so it orders the
# users alone (the id after it could never decide).
ORDER_COLUMNS = {"id": ("u.id",), "name": ("u.name_key", "u.id"), "email": ("u.email_key",)}


#: One step of a migration: a statement, or a function of the connection
#: for what SQL cannot compute (Python's ``str.casefold``).
Step = Union[str, Callable[[Any], None]]


def apply(db: Any, steps: Sequence[Step]) -> None:
    """Run one migration's steps on a connection (sqlite3's or psycopg's)."""
    for step in steps:
        if isinstance(step, str):
            db.execute(step)
        else:
            step(db)


def prefix_end(prefix: str) -> str | None:
    """The least string above every string that starts with ``prefix``, for
    an index range ``prefix <= key < prefix_end(prefix)`` in code point order
    (``None``: there is none, every string from ``prefix`` on qualifies)."""
    stripped = prefix.rstrip("\U0010ffff")
    if not stripped:
        return None
    following = ord(stripped[-1]) + 1
    if 0xD800 <= following <= 0xDFFF:      # surrogates are not text: skip them
        following = 0xE000
    return stripped[:-1] + chr(following)


def name_words(name: str) -> list[str]:
    """The case-folded words of a name, each once, for ``name_words``."""
    return sorted(set(words(name)))


def page(dialect: Dialect, *, limit: int, sort: str = "id", reverse: bool = False,
         after: Position | None = None, email: str | None = None,
         q: str | None = None, columns: str = COLUMNS) -> tuple[str, list[Any]]:
    """The query for ``UserStore.list`` with these arguments, and its
    parameters; ``columns=KEYS`` asks only for each user's id and version."""
    params = _filter_params(email, q)
    if after is not None:
        if sort == "id":
            params.append(after)
        else:
            assert isinstance(after, tuple)
            params.extend(after[:len(ORDER_COLUMNS[sort])])
    params.append(limit)
    end = q is not None and prefix_end(q.casefold()) is not None
    return _page_sql(dialect, columns, sort, reverse, after is not None, email is not None,
                     q is not None, end), params


def count(dialect: Dialect, *, email: str | None = None, q: str | None = None) -> tuple[str, list[Any]]:
    """The query for ``UserStore.count`` with these filters, and its parameters."""
    end = q is not None and prefix_end(q.casefold()) is not None
    source, where = _filtered(dialect, email is not None, q is not None, end)
    return f"SELECT count(*) FROM {source}{_where(where)}", _filter_params(email, q)


def _filter_params(email: str | None, q: str | None) -> list[Any]:
    params: list[Any] = []
    if q is not None:
        prefix = q.casefold()
        end = prefix_end(prefix)
        params += [prefix] if end is None else [prefix, end]
    if email is not None:
        params.append(email_key(email))
    return params


@lru_cache(maxsize=None)
def _page_sql(dialect: Dialect, columns: str, sort: str, reverse: bool, has_after: bool,
              has_email: bool, has_q: bool, has_end: bool) -> str:
    mark = dialect.mark
    source, where = _filtered(dialect, has_email, has_q, has_end)
    keys = ORDER_COLUMNS[sort]
    if has_after:
        op = "<" if reverse else ">"
        if len(keys) == 1:
            where.append(f"{keys[0]} {op} {mark}")
        else:                       # a row value: (name_key, id) > (?, ?)
            where.append(f"({', '.join(keys)}) {op} ({', '.join(mark for _ in keys)})")
    direction = " DESC" if reverse else ""
    order = ", ".join(key + direction for key in keys)
    return f"SELECT {columns} FROM {source}{_where(where)} ORDER BY {order} LIMIT {mark}"


def _filtered(dialect: Dialect, has_email: bool, has_q: bool,
              has_end: bool) -> tuple[str, list[str]]:
    """The rows a query starts from, and its filters' conditions."""
    mark = dialect.mark
    source, where = "users AS u", []
    if has_q:
        words = f"word >= {mark}" + (f" AND word < {mark}" if has_end else "")
        source = (f"(SELECT DISTINCT user_id FROM user_words WHERE {words}) AS m "
                  f"{dialect.join} users AS u ON u.id = m.user_id")
    if has_email:
        where.append(f"u.email_key = {mark}")
    return source, where


def _where(conditions: list[str]) -> str:
    return " WHERE " + " AND ".join(conditions) if conditions else ""
