"""Storage: what every store promises and the errors it raises
(``protocol``), what they share at run time (``shared``), opening one
(``opening``) and what start-up checks (``stored``); each store in a
folder of its own (``memory``, ``sqlite``, ``postgres``; ``sql``, what
both SQL stores share). Every name below is importable from here."""
from .opening import open_store
from .protocol import (CommitsAnnounced, Conflict, Contradiction, NotFound, Position,
                       Precondition, RecordStore, StaleVersion, Storage, StoreError,
                       StoreUnavailable, WritesFailing, position)
from .shared import MAX_ID, Listeners, WriteHealth, checked_id
from .stored import SchemaMismatch, SchemaTooNew, check_fresh_ids, redact

__all__ = ["MAX_ID", "CommitsAnnounced", "Conflict", "Contradiction", "Listeners", "NotFound",
           "Position", "Precondition", "RecordStore", "SchemaMismatch", "SchemaTooNew",
           "StaleVersion", "Storage", "StoreError", "StoreUnavailable", "WriteHealth",
           "WritesFailing", "check_fresh_ids", "checked_id", "open_store", "position", "redact"]
