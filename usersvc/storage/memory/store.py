"""MemoryStorage: every collection in dicts (``collection``), for tests and
throw-away servers: nothing survives the process."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import ExitStack
from typing import Any, TypeVar

from ...schema import Schema
from ..served import Collections, Step
from ..feed import Listeners
from .collection import MemoryRecords

T = TypeVar("T")


class MemoryStorage(Collections):
    #: A step has no ``db``: its collections are these, in this process
    #: (``protocol.Transactional``).
    dialect = None

    def __init__(self, schemas: Iterable[Schema] | None) -> None:
        if schemas is None:
            raise ValueError("memory:// holds nothing yet: name its collections")
        self.schemas = tuple(schemas)
        self.commits = Listeners()          # told of every collection's writes
        self.collections = {s.plural: MemoryRecords(s, self.commits) for s in self.schemas}
        self.serve()

    def atomically(self, plurals: Iterable[str], run: Callable[[Step], T], *,
                   nothing_to_undo: bool = False) -> Any:
        """``Storage.atomically``: the collections' locks (``Collections.locked``),
        held while ``run`` writes; every change undone if it raises
        (``MemoryBulk.undoing``). With ``nothing_to_undo``, the locks alone:
        its one write fails whole, so there is nothing to keep."""
        locked = self.locked(plurals)
        with ExitStack() as held:
            for plural in locked:
                records = self.collections[plural]
                held.enter_context(records._lock if nothing_to_undo else records.undoing())
            return run(Step(self, None, locked, nothing_to_undo))

    def attempt(self, step: Step, part: Callable[..., T], args: tuple[Any, ...]) -> T:
        """``Step.attempt``: ``part(*args)``, what it changed in the step's
        collections put back if it raises (``MemoryBulk.undoing``, inside
        the step's own). (In a step with nothing to undo, ``Step`` runs it
        as it is: a write that is refused has changed nothing.)"""
        with ExitStack() as held:
            for plural in step.locked:
                held.enter_context(self.collections[plural].undoing())
            return part(*args)

    def announce_commits(self, listener: Callable[[str | None], None]) -> Callable[[], None]:
        """``protocol.CommitsAnnounced``: each write told as it is made (no
        other process shares a memory store)."""
        return self.commits.add(listener)

    def close(self) -> None:
        self.commits.close()
