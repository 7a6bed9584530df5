"""MemoryStorage: every collection in dicts (``collection``), for tests and
throw-away servers: nothing survives the process."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import ExitStack
from typing import Any, TypeVar

from ...validation import Schema
from ..keys import Key, MemoryKeys
from ..served import Collections, Step
from .collection import MemoryRecords

T = TypeVar("T")


class MemoryStorage(Collections):
    def __init__(self, schemas: Iterable[Schema] | None) -> None:
        if schemas is None:
            raise ValueError("memory:// holds nothing yet: name its collections")
        self.schemas = tuple(schemas)
        self.keys = MemoryKeys()
        self.collections = {s.plural: MemoryRecords(s, self.keys) for s in self.schemas}
        self.held: dict[tuple[str, ...], list[Any]] = {}    # collections -> their locks, in order
        self.serve()

    def atomically(self, plurals: Iterable[str], run: Callable[[Step], T],
                   key: Key | None = None, *, nothing_to_undo: bool = False) -> Any:
        """``Storage.atomically``: the idempotency keys' lock (with a key), then
        the collections' (``Collections.locked``), held while ``run`` writes;
        every change undone if it raises."""
        if key is not None:
            return self.keys.once(key, lambda: self.atomically(
                plurals, run, nothing_to_undo=nothing_to_undo))
        locked = self.locked(plurals)
        if nothing_to_undo:     # (PERF: the locks alone, no undo kept)
            locks = self.held.get(locked)
            if locks is None:   # (PERF: found once for each set of collections: 0.25 µs, not 0.8)
                locks = self.held[locked] = [self.collections[p]._lock for p in locked]
            for lock in locks:
                lock.acquire()
            try:
                return run(Step(self))
            finally:
                for lock in reversed(locks):
                    lock.release()
        with ExitStack() as held:
            for plural in locked:
                held.enter_context(self.collections[plural].undoing())
            return run(Step(self))

    def close(self) -> None:
        self.stop_waiting()
