"""The memory store (``memory://``): each collection's records in a dict,
its declared indexes in sorted lists (``store``), and what it does with
many records at once: pages, counts, the feed, restores, atomic steps
(``bulk``)."""
from .store import MemoryRecords, MemoryStorage

__all__ = ["MemoryRecords", "MemoryStorage"]
