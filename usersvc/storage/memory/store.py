"""MemoryStorage: every collection in dicts (``collection``), for tests and
throw-away servers: nothing survives the process."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import ExitStack
from typing import Any

from ...schema import Schema
from ..feed import Listener, Listeners, Stop
from ..served import Collections, Step
from .collection import MemoryRecords


class MemoryStorage(Collections):
    dialect = None      # (``protocol.Transactional``: a step has no ``db``, only these records)

    def __init__(self, schemas: Iterable[Schema] | None) -> None:
        if schemas is None:
            raise ValueError("memory:// holds nothing yet: name its collections")
        self.schemas, self.commits = tuple(schemas), Listeners()   # (told of every write)
        self.collections = {s.plural: MemoryRecords(s, self.commits) for s in self.schemas}
        self.serve()

    def atomically(self, plurals: Iterable[str], run: Callable[[Step], Any], *,
                   nothing_to_undo: bool = False) -> Any:
        """``Storage.atomically``: ``run`` in a step over the collections it
        writes and reads (``Collections.locked``), all of it one ``attempt``."""
        step = Step(self, None, self.locked(plurals), nothing_to_undo)
        return self.attempt(step, run, (step,))

    def attempt(self, step: Step, part: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        """``Step.attempt``, and a whole step: ``part(*args)``, the step's collections'
        locks held, each change undone if it raises (``MemoryBulk.undoing``; a part's inside
        the step's own); with ``nothing_to_undo``, the locks alone (its one write fails whole)."""
        with ExitStack() as held:
            for records in map(self.collections.__getitem__, step.locked):  # (in the one order)
                held.enter_context(records.contents.lock if step.nothing_to_undo
                                   else records.bulk.undoing())  # (a bulk's, over its contents)
            return part(*args)

    def announce_commits(self, listener: Listener) -> Stop:
        """``protocol.CommitsAnnounced``: each write told as it is made (in one process)."""
        return self.commits.add(listener)

    def close(self) -> None:
        self.commits.close()
