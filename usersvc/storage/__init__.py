"""Storage: opening a store (``open_store``, here: the one place that
names every kind of store, each imported only when its URL is given);
what every store promises (``protocol``), the errors it answers with and
the precondition a write is held to (``errors``), its change feed and the
listeners of its commits (``feed``), how they serve their collections
(``served``) and what start-up checks (``stored``); each store in a
folder of its own (``memory``, ``sqlite``, ``postgres``; ``sql``, what
both SQL stores share). Every name below is importable from here."""
from __future__ import annotations

import os
from collections.abc import Iterable

from ..schema import USER, Schema
from .errors import (
    MAX_ID,
    Conflict,
    Contradiction,
    NotFound,
    Precondition,
    StaleVersion,
    StoreError,
    StoreUnavailable,
    WriteHealth,
    WritesFailing,
)
from .feed import Listeners
from .protocol import CommitsAnnounced, Keyset, RecordStore, Storage, keyset
from .stored import SchemaMismatch, SchemaTooNew, check_fresh_ids, redact

__all__ = ["MAX_ID", "CommitsAnnounced", "Conflict", "Contradiction", "Keyset", "Listeners",
           "NotFound", "Precondition", "RecordStore", "SchemaMismatch", "SchemaTooNew",
           "StaleVersion", "Storage", "StoreError", "StoreUnavailable", "WriteHealth",
           "WritesFailing", "check_collection", "check_fresh_ids", "keyset", "open_store",
           "redact"]


def open_store(url: str, collections: Iterable[Schema] | None = (USER,), *,
               create: bool = True) -> Storage:
    """The store a URL names, holding ``collections``: ``memory://``,
    ``sqlite://`` (private, in memory), ``sqlite:///relative/path.db``,
    ``sqlite:////absolute/path.db`` (``?synchronous=normal``: fewer syncs), or
    ``postgresql://user@host/dbname`` (needs the ``postgres`` extra).
    ``create=False``: a SQLite file that does not exist is an error (for a
    store to read from), rather than a new, empty database.
    ``collections=None``: the collections a SQL store holds, as it recorded
    them (``usersvc copy``). Raises ``SchemaMismatch`` for a stored
    collection its schema cannot open, ``ValueError`` for a URL it cannot."""
    schemas = None if collections is None else tuple(collections)
    if schemas is not None:
        plurals = [s.plural for s in schemas]
        if not schemas or len(set(plurals)) < len(plurals):
            raise ValueError(f"a store needs one schema per collection, each once: {plurals}")
        for schema in schemas:
            check_collection(schema)
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise ValueError(f"not a storage URL: {url!r} (try memory:// or sqlite:///users.db)")
    if scheme == "memory":
        if rest:
            raise ValueError(f"memory:// takes no path: {url!r}")
        from .memory.store import MemoryStorage
        return MemoryStorage(schemas)
    if scheme == "sqlite":
        from .sqlite.store import SQLiteStorage
        if rest == "":
            return SQLiteStorage(":memory:", schemas)
        if not rest.startswith("/") or rest == "/":
            raise ValueError(f"not a SQLite URL: {url!r} (try sqlite:///users.db)")
        path, _, query = rest[1:].partition("?")
        synchronous = _synchronous(query, url)
        if not create and not os.path.exists(path):
            raise ValueError(f"there is no database file at {path}")
        folder = os.path.dirname(path)
        if folder and not os.path.isdir(folder):
            raise ValueError(f"the folder {folder} does not exist")
        return SQLiteStorage(path, schemas, synchronous=synchronous)
    if scheme in ("postgresql", "postgres"):
        try:
            from .postgres.store import PostgresStorage
        except ImportError as e:
            from ..release import install_hint  # (the package's metadata: read only here)
            raise ValueError(f"{scheme}:// needs psycopg: {install_hint('postgres')} "
                             f"({e})") from None
        return PostgresStorage(url, schemas)
    raise ValueError(f"unknown storage scheme {scheme!r} in {url!r}")


def _synchronous(query: str, url: str) -> str:
    """A SQLite file's ``?synchronous=``: ``full`` (the default: a commit is
    on disk when it returns) or ``normal`` (docs/deploying.md says what a
    crash or a power cut can lose then)."""
    if not query:
        return "full"
    name, _, value = query.partition("=")
    if name != "synchronous" or value not in ("full", "normal"):
        raise ValueError(f"a SQLite URL takes ?synchronous=full or ?synchronous=normal, "
                         f"nothing else: {url!r}")
    return value


def check_collection(schema: Schema) -> None:
    """``ValueError`` unless records of ``schema`` can be stored and served:
    a collection needs a field of its own (a schema without one only
    describes a document, as ``/healthz``'s does)."""
    if not schema.fields.keys() - schema.read_only:
        raise ValueError(f"{schema.plural}: a collection needs at least one field of its own")
