"""The storage protocol, its records and its errors, and ``open_store(url)``.

Every store keeps the same promises, and ``tests/test_store_contract.py``
holds each implementation to them:

- ids are assigned by the store, increase with every create and are never
  reused, not even after a delete;
- every change to a user gives it a new ``version`` (the ETag is made of it);
- e-mail uniqueness and preconditions are enforced by the store itself, in
  the same atomic step as the write, never checked first by the caller.

Errors::

    StoreError
     +-- NotFound          no record with that id        (HTTP 404)
     |    +-- UserNotFound
     +-- Conflict          a unique field is taken       (HTTP 409)
     |    +-- EmailTaken
     +-- StaleVersion      a precondition does not hold  (HTTP 412)
     +-- StoreUnavailable  busy or down; try again later (HTTP 503)
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol, Union

from ..validation import pointer

__all__ = [
    "MAX_ID",
    "ORDERS",
    "Conflict",
    "EmailTaken",
    "NotFound",
    "Precondition",
    "SchemaTooNew",
    "StaleVersion",
    "StoreError",
    "StoreUnavailable",
    "Position",
    "User",
    "UserNotFound",
    "check_fresh_ids",
    "checked_id",
    "position",
    "UserStore",
    "open_store",
    "redact",
]

#: The largest id any store can hold: SQLite's (and PostgreSQL's) 64-bit integer.
MAX_ID = 2**63 - 1


def checked_id(user_id: int) -> int:
    """``user_id``, if it is one a store can hold (1 to ``MAX_ID``); every
    store asks before it looks, so that no id is out of range for one store
    and merely absent from another: raises ``UserNotFound``."""
    if not 0 < user_id <= MAX_ID:
        raise UserNotFound(user_id)
    return user_id


class User(NamedTuple):
    """One stored version of a user: immutable. (A named tuple rather than
    a frozen dataclass: made on every read and write, and three times
    cheaper to make.)"""

    id: int
    name: str
    email: str
    version: int


@dataclass(frozen=True, slots=True)
class Precondition:
    """``If-Match`` / ``If-None-Match``, reduced to the versions they name.

    ``match`` is the set of versions a write may replace (``None``: any);
    ``none_match`` the set it may not (``None``: every version, as ``*`` says).
    """

    match: frozenset[int] | None = None
    none_match: frozenset[int] | None = frozenset()

    def allows(self, version: int) -> bool:
        if self.match is not None and version not in self.match:
            return False
        if self.none_match is None or version in self.none_match:
            return False
        return True


#: Where a page starts: an id (id order), or a case-folded value and an id.
Position = Union[int, tuple[str, int]]

#: The orders every user store can list in.
ORDERS = ("id", "name", "email")


def position(user: User, sort: str) -> Position:
    """Where ``user`` stands in ``sort`` order, as ``list(after=...)`` takes it."""
    if sort == "id":
        return user.id
    return (getattr(user, sort).casefold(), user.id)


class StoreError(Exception):
    """Base of the errors a store raises; ``str()`` is a sentence for people,
    ``errors`` the fields at fault, as ``(JSON Pointer, detail)`` pairs."""

    @property
    def errors(self) -> list[tuple[str, str]]:
        return []


class NotFound(StoreError):
    """There is no record with that id (never was, or was deleted)."""


class UserNotFound(NotFound):
    def __init__(self, user_id: int):
        super().__init__(f"There is no user with id {user_id}.")
        self.user_id = user_id


class Conflict(StoreError):
    """A field that must be unique already belongs to another record."""

    field: str = ""

    @property
    def errors(self) -> list[tuple[str, str]]:
        return [(pointer(self.field), "is already taken")] if self.field else []


class EmailTaken(Conflict):
    field = "email"

    def __init__(self, email: str):
        super().__init__(f"The e-mail address {email} belongs to another user.")
        self.email = email


class StaleVersion(StoreError):
    """The record exists, but its version does not satisfy the precondition."""

    def __init__(self, record_id: int):
        super().__init__(
            f"The precondition failed: record {record_id} has changed or does not match."
        )
        self.record_id = record_id


class StoreUnavailable(StoreError):
    """The store cannot answer now (a lock held too long, a lost connection);
    the same call may succeed later. Nothing was changed."""


def check_fresh_ids(users: Sequence[User], handed_out: int) -> None:
    """``restore`` takes only ids above every id the store has handed out:
    ids are never reused (and a version, with its id, names one content
    for good, which the SQLite store's kept users rely on)."""
    if users and min(u.id for u in users) <= handed_out:
        raise Conflict(f"Ids are never reused: this store has handed out ids up to "
                       f"{handed_out}, and user {min(u.id for u in users)} is not above that.")


class SchemaTooNew(RuntimeError):
    """The database was written by a newer usersvc than this one."""

    @classmethod
    def check(cls, found: int, known: int) -> None:
        """Raise if a database's schema version ``found`` is above ``known``."""
        if found > known:
            raise cls(f"the database has schema version {found}; this usersvc "
                      f"knows versions up to {known}")


class UserStore(Protocol):
    """What the HTTP layer needs from a place that keeps users.

    Every method is safe to call from several threads at once. Names and
    e-mails arrive already validated and trimmed; the store compares e-mails
    case-insensitively (``str.casefold``). Every user store here also keeps
    a change feed (``feed.ChangeFeed``).
    """

    def get(self, user_id: int) -> User:
        """The user with that id; raises ``UserNotFound``."""

    def list(self, *, limit: int = 100, sort: str = "id", reverse: bool = False,
             after: Position | None = None, email: str | None = None,
             q: str | None = None) -> list[User]:
        """Up to ``limit`` users in ``sort`` order, backwards if ``reverse``,
        from just past ``after`` (``None``: from the first).

        Orders: ``id``; ``name`` and ``email``, by the case-folded value and
        then by id. A position is an id in id order and a ``(case-folded
        value, id)`` pair in the others (``position(user, sort)``). Filters,
        all of which must hold: ``email``, the user with that address
        (case-insensitive); ``q`` (case-folded), users with a word of the
        name, or the e-mail address, that starts with it
        (``validation.USER.search_keys``)."""

    def count(self, *, email: str | None = None, q: str | None = None) -> int:
        """How many users the filters of ``list`` keep, on all pages."""

    def create(self, *, name: str, email: str) -> User:
        """A new user with a fresh id and version 1; raises ``EmailTaken``."""

    def update(self, user_id: int, *, name: str | None = None,
               email: str | None = None,
               precondition: Precondition | None = None) -> User:
        """Change the given fields (``None``: keep) and the version, atomically
        with the precondition check; raises ``UserNotFound``, ``StaleVersion``,
        ``EmailTaken``."""

    def delete(self, user_id: int, *,
               precondition: Precondition | None = None) -> None:
        """Remove the user, atomically with the precondition check; raises
        ``UserNotFound``, ``StaleVersion``."""

    def last_id(self) -> int:
        """The highest id this store ever handed out, deleted or not (0: none)."""

    def restore(self, users: Sequence[User], *, last_id: int = 0) -> None:
        """Add users as they are, ids and versions kept, in one atomic step
        (for ``usersvc copy``); new ids afterwards are above ``last_id`` and
        every id given. Raises ``Conflict`` if an e-mail is taken or an id
        is not above every id the store ever handed out."""

    def close(self) -> None:
        """Release connections and files; the store is unusable afterwards."""


def open_store(url: str, *, create: bool = True) -> UserStore:
    """The store a URL names: ``memory://``, ``sqlite://`` (private, in memory),
    ``sqlite:///relative/path.db``, ``sqlite:////absolute/path.db``, or
    ``postgresql://user@host/dbname`` (needs the ``postgres`` extra).
    ``create=False``: a SQLite file that does not exist is an error (for a
    store to read from), rather than a new, empty database."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise ValueError(f"not a storage URL: {url!r} (try memory:// or sqlite:///users.db)")
    if scheme == "memory":
        if rest:
            raise ValueError(f"memory:// takes no path: {url!r}")
        from .memory import MemoryUserStore
        return MemoryUserStore()
    if scheme == "sqlite":
        from .sqlite import SQLiteUserStore
        if rest == "":
            return SQLiteUserStore(":memory:")
        if not rest.startswith("/") or rest == "/":
            raise ValueError(f"not a SQLite URL: {url!r} (try sqlite:///users.db)")
        path = rest[1:]
        if not create and not os.path.exists(path):
            raise ValueError(f"there is no database file at {path}")
        folder = os.path.dirname(path)
        if folder and not os.path.isdir(folder):
            raise ValueError(f"the folder {folder} does not exist")
        return SQLiteUserStore(path)
    if scheme in ("postgresql", "postgres"):
        try:
            from .postgres import PostgresUserStore
        except ImportError as e:
            raise ValueError(f"{scheme}:// needs psycopg: pip install -e '.[postgres]' "
                             f"in usersvc's folder ({e})") from None
        return PostgresUserStore(url)
    raise ValueError(f"unknown storage scheme {scheme!r} in {url!r}")


def redact(url: str) -> str:
    """``url`` with any password replaced by ``***``, for logs and messages."""
    scheme, sep, rest = url.partition("://")
    authority, slash, path = rest.partition("/")
    user, at, host = authority.rpartition("@")
    if sep and at and ":" in user:
        user = user.split(":", 1)[0] + ":***"
        return f"{scheme}{sep}{user}@{host}{slash}{path}"
    return url


def email_key(email: str) -> str:
    """The form e-mails are compared in: case-insensitive, as the contract says."""
    return email.casefold()
