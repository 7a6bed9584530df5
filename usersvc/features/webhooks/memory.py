"""Subscriptions in this process (``memory://``): the ``Kept`` of a store
whose steps have no tables (``kept``, where the SQL stores' are)."""
from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace

from .kept import _FAILURE, Subscription, _copy


class MemoryKept:
    """Subscriptions in this process, for an app on ``memory://``: held by
    its one sender (``claim`` gives every enabled one)."""

    shared = False

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: dict[int, Subscription] = {}
        self._last_id = 0

    def create(self, made: Subscription) -> Subscription:
        with self._lock:
            self._last_id += 1
            made = self._kept[self._last_id] = replace(_copy(made), id=self._last_id)
            return _copy(made)

    def get(self, subscription_id: int) -> Subscription | None:
        with self._lock:
            found = self._kept.get(subscription_id)
            return None if found is None else _copy(found)

    def all(self) -> list[Subscription]:
        with self._lock:
            return [_copy(s) for s in self._kept.values()]

    def change(self, subscription_id: int,
               change: Callable[[Subscription], Subscription]) -> Subscription | None:
        with self._lock:
            found = self._kept.get(subscription_id)
            if found is None:
                return None
            changed = change(_copy(found))
            changed.version = found.version + 1
            self._kept[subscription_id] = changed
            return _copy(changed)

    def delete(self, subscription_id: int) -> bool:
        with self._lock:
            return self._kept.pop(subscription_id, None) is not None

    def claim(self, holder: str, now: float, lease: float, renew: bool) -> list[Subscription]:
        return [s for s in self.all() if s.enabled]

    def delivered(self, subscription_id: int, holder: str, plural: str, seq: int,
                  reset: bool, version: int) -> bool:
        with self._lock:
            found = self._kept.get(subscription_id)
            if found is None or found.version != version or not found.covers(plural):
                return False        # (deleted, a PATCH since, no longer covered: as SQL's)
            found.delivered[plural] = max(found.delivered.get(plural, seq), seq)
            if reset:
                found.failures, found.next_attempt = 0, None
            return True

    def failed(self, subscription_id: int, holder: str, state: Subscription) -> bool:
        with self._lock:
            found = self._kept.get(subscription_id)
            if found is None or found.version != state.version:
                return False        # (deleted, or a PATCH since: as SQL's)
            for name in _FAILURE:
                setattr(found, name, getattr(state, name))
            return True

    def release(self, holder: str) -> None:
        pass
