"""MemoryUserStore: users in a dict, for tests and throw-away servers.

Nothing survives the process. One lock makes every method atomic; the
sorted id index makes a page cost O(log N + limit) rather than a scan.
"""
from __future__ import annotations

import itertools
import threading
from collections.abc import Sequence

from sortedcontainers import SortedList

from . import (
    Conflict,
    EmailTaken,
    Precondition,
    StaleVersion,
    User,
    UserNotFound,
    checked_id,
    email_key,
)


class MemoryUserStore:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users: dict[int, User] = {}
        self._ids = SortedList()            # the same ids, in order, for paging
        self._by_email: dict[str, int] = {}  # email_key -> id, for uniqueness
        self._last_id = 0

    def get(self, user_id: int) -> User:
        with self._lock:
            return self._get(user_id)

    def list(self, *, after: int = 0, limit: int = 100,
             email: str | None = None) -> list[User]:
        with self._lock:
            if email is not None:
                user_id = self._by_email.get(email_key(email))
                return [self._users[user_id]] if user_id is not None and user_id > after else []
            # irange walks the sorted ids without SortedList's positional index,
            # which slicing would build and every later add or remove would keep up.
            ids = self._ids.irange(minimum=after, inclusive=(False, True))
            return list(map(self._users.__getitem__, itertools.islice(ids, limit)))

    def create(self, *, name: str, email: str) -> User:
        with self._lock:
            key = email_key(email)
            if key in self._by_email:
                raise EmailTaken(email)
            self._last_id += 1
            user = User(self._last_id, name, email, 1)
            self._add(user, key)
            return user

    def update(self, user_id: int, *, name: str | None = None,
               email: str | None = None,
               precondition: Precondition | None = None) -> User:
        with self._lock:
            old = self._checked(user_id, precondition)
            new = User(user_id, old.name if name is None else name,
                       old.email if email is None else email, old.version + 1)
            if new.email == old.email:      # the common case: the same address
                self._users[user_id] = new
                return new
            old_key, new_key = email_key(old.email), email_key(new.email)
            if new_key != old_key:
                if new_key in self._by_email:
                    raise EmailTaken(new.email)
                del self._by_email[old_key]
                self._by_email[new_key] = user_id
            self._users[user_id] = new
            return new

    def delete(self, user_id: int, *,
               precondition: Precondition | None = None) -> None:
        with self._lock:
            user = self._checked(user_id, precondition)
            del self._users[user_id]
            self._ids.remove(user_id)
            del self._by_email[email_key(user.email)]

    def last_id(self) -> int:
        with self._lock:
            return self._last_id

    def restore(self, users: Sequence[User], *, last_id: int = 0) -> None:
        with self._lock:
            keys = [email_key(u.email) for u in users]
            ids = {u.id for u in users}
            if (len(ids) < len(users) or len(set(keys)) < len(keys)
                    or any(i in self._users for i in ids)
                    or any(k in self._by_email for k in keys)):
                raise Conflict("The store already holds one of these ids or e-mail addresses.")
            for user, key in zip(users, keys):
                self._add(user, key)
            self._last_id = max(self._last_id, last_id, *ids)

    def close(self) -> None:
        pass

    def _add(self, user: User, key: str) -> None:
        self._users[user.id] = user
        self._ids.add(user.id)
        self._by_email[key] = user.id

    def _get(self, user_id: int) -> User:
        try:
            return self._users[checked_id(user_id)]
        except KeyError:
            raise UserNotFound(user_id) from None

    def _checked(self, user_id: int, precondition: Precondition | None) -> User:
        user = self._get(user_id)
        if precondition is not None and not precondition.allows(user.version):
            raise StaleVersion(user_id)
        return user
