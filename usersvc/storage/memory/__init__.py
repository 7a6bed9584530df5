"""The memory store (``memory://``): the store and its atomic steps
(``store``); each collection's records in a dict, its declared indexes in
sorted lists (``collection``; laid out from the schema and walked:
``walks``), and what it does with many records at once: pages, counts,
the feed, restores, a step's undo (``bulk``)."""
from .collection import MemoryRecords
from .store import MemoryStorage

__all__ = ["MemoryRecords", "MemoryStorage"]
