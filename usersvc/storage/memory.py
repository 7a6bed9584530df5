"""MemoryUserStore: users in a dict, for tests and throw-away servers.

Nothing survives the process. One lock makes every method atomic. Sorted
indexes, as a database keeps them, make every page O(log N + limit) and
every search O(log N + matches) rather than a scan:

- one per order: ids; ``(case-folded name, id)``; ``(e-mail key, id)``;
- one for ``q``: the distinct words of the names, sorted, each with the
  ids of the users whose name has it. The users ``q`` matches are those of
  one range of words, and of one range of the e-mail order's index (an
  address that starts with ``q``): ``USER.search_keys``, found by prefix.
  (A write touches the sorted words only for a word no name had before.)

The change feed is one more sorted index: each user's latest position,
tombstones included (``feed``); positions are handed out under the lock.

``touched`` counts the records each call has looked at, so tests can show
what a page costs without timing it.
"""
from __future__ import annotations

import itertools
import operator
import threading
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from sortedcontainers import SortedDict, SortedList

from ..validation import USER, words
from . import (
    Conflict,
    EmailTaken,
    Position,
    Precondition,
    StaleVersion,
    User,
    UserNotFound,
    check_fresh_ids,
    checked_id,
    email_key,
    position,
)
from .feed import Change, Watch


_SECOND = operator.itemgetter(1)      # the id of a (key, id) position


class MemoryUserStore:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users: dict[int, User] = {}
        self._by_email: dict[str, int] = {}  # email_key -> id, for uniqueness
        # Each order's positions (``position(user, sort)``), sorted.
        self._orders = {"id": SortedList(), "name": SortedList(), "email": SortedList()}
        self._words = SortedList()           # distinct name words, sorted
        self._named: dict[str, set[int]] = {}  # word -> ids of the users with it
        self._last_id = 0
        self._seq = 0                        # the feed's last position
        self._changes = SortedDict()         # position -> id, each user's latest change
        self._seq_of: dict[int, int] = {}    # id -> its position there
        self._watch = Watch(lambda: self._seq)
        self.touched = 0

    def get(self, user_id: int) -> User:
        with self._lock:
            return self._get(user_id)

    def list(self, *, limit: int = 100, sort: str = "id", reverse: bool = False,
             after: Position | None = None, email: str | None = None,
             q: str | None = None) -> list[User]:
        with self._lock:
            if email is None and q is None:
                ids = self._walk(sort, reverse, after)
                page = list(map(self._users.__getitem__, itertools.islice(ids, limit)))
            else:
                found = sorted(self._matches(email, q),
                               key=lambda u: position(u, sort), reverse=reverse)
                page = list(itertools.islice(_past(found, sort, reverse, after), limit))
            self.touched += len(page)
            return page

    def count(self, *, email: str | None = None, q: str | None = None) -> int:
        with self._lock:
            if email is None and q is None:
                return len(self._users)
            return sum(1 for _ in self._matches(email, q))

    def create(self, *, name: str, email: str) -> User:
        with self._lock:
            key = email_key(email)
            if key in self._by_email:
                raise EmailTaken(email)
            self._last_id += 1
            user = User(self._last_id, name, email, 1)
            self._add(user, key)
        self._watch.notify()
        return user

    def update(self, user_id: int, *, name: str | None = None,
               email: str | None = None,
               precondition: Precondition | None = None) -> User:
        with self._lock:
            old = self._checked(user_id, precondition)
            new = User(user_id, old.name if name is None else name,
                       old.email if email is None else email, old.version + 1)
            old_key, new_key = email_key(old.email), email_key(new.email)
            if new_key != old_key:
                if new_key in self._by_email:
                    raise EmailTaken(new.email)
                del self._by_email[old_key]
                self._by_email[new_key] = user_id
            self._reindex(old, new)
            self._users[user_id] = new
            self._record(user_id)
        self._watch.notify()
        return new

    def delete(self, user_id: int, *,
               precondition: Precondition | None = None) -> None:
        with self._lock:
            user = self._checked(user_id, precondition)
            self._reindex(user, None)
            del self._users[user_id]
            del self._by_email[email_key(user.email)]
            self._record(user_id)
        self._watch.notify()

    def last_id(self) -> int:
        with self._lock:
            return self._last_id

    def restore(self, users: Sequence[User], *, last_id: int = 0) -> None:
        with self._lock:
            check_fresh_ids(users, self._last_id)
            keys = [email_key(u.email) for u in users]
            ids = {u.id for u in users}
            if (len(ids) < len(users) or len(set(keys)) < len(keys)
                    or any(i in self._users for i in ids)
                    or any(k in self._by_email for k in keys)):
                raise Conflict("The store already holds one of these ids or e-mail addresses.")
            for user, key in zip(users, keys):
                self._add(user, key)
            self._last_id = max(self._last_id, last_id, *ids)
        self._watch.notify()

    def changes(self, *, after: int = 0, limit: int = 100) -> list[Change]:
        with self._lock:
            seqs = itertools.islice(self._changes.irange(minimum=after, inclusive=(False, True)),
                                    limit)
            found = [Change(seq, user_id, self._users.get(user_id))
                     for seq in seqs for user_id in (self._changes[seq],)]
            self.touched += len(found)
            return found

    def position(self) -> int:
        return self._seq

    def position_and_list(self, **arguments: Any) -> tuple[int, list[User]]:
        return self._seq, self.list(**arguments)

    def wait(self, after: int, timeout: float) -> None:
        self._watch.wait(after, timeout)

    def stop_waiting(self) -> None:
        self._watch.close()

    def close(self) -> None:
        self._watch.close()

    def _add(self, user: User, key: str) -> None:
        self._users[user.id] = user
        self._by_email[key] = user.id
        self._reindex(None, user)
        self._record(user.id)

    def _record(self, user_id: int) -> None:
        """The user's latest change is the next position."""
        old = self._seq_of.get(user_id)
        if old is not None:
            del self._changes[old]
        self._seq += 1
        self._changes[self._seq] = user_id
        self._seq_of[user_id] = self._seq

    def _reindex(self, old: User | None, new: User | None) -> None:
        """Move a user's index entries from ``old`` to ``new`` (``None``:
        not there), touching only the entries that change."""
        for sort, index in self._orders.items():
            before = None if old is None else position(old, sort)
            after = None if new is None else position(new, sort)
            if before != after:
                if before is not None:
                    index.remove(before)
                if after is not None:
                    index.add(after)
        if old is not None and new is not None and old.name == new.name:
            return
        user_id = (old or new).id       # type: ignore[union-attr]
        gone = set() if old is None else set(words(old.name))
        came = set() if new is None else set(words(new.name))
        for word in gone - came:
            named = self._named[word]
            named.discard(user_id)
            if not named:
                del self._named[word]
                self._words.remove(word)
        for word in came - gone:
            if word not in self._named:
                self._words.add(word)
                self._named[word] = set()
            self._named[word].add(user_id)

    def _walk(self, sort: str, reverse: bool, after: Position | None) -> Iterator[int]:
        """The ids in ``sort`` order from just past ``after``. (``irange``
        walks the index without SortedList's positional index, which
        slicing would build and every later change would keep up.)"""
        index = self._orders[sort]
        if after is None:
            walk = reversed(index) if reverse else iter(index)
        elif reverse:
            walk = index.irange(maximum=after, inclusive=(True, False), reverse=True)
        else:
            walk = index.irange(minimum=after, inclusive=(False, True))
        return walk if sort == "id" else map(_SECOND, walk)

    def _matches(self, email: str | None, q: str | None) -> Iterable[User]:
        """The users the filters keep, in no order: one look-up for
        ``email``, one range of the search index for ``q``."""
        if email is not None:
            user_id = self._by_email.get(email_key(email))
            found = [] if user_id is None else [self._users[user_id]]
            self.touched += len(found)
            if q is None:
                return found
            q = q.casefold()
            return [u for u in found if any(k.startswith(q) for k in USER.search_keys(u))]
        assert q is not None
        prefix = q.casefold()
        ids: set[int] = set()
        for word in self._words.irange(minimum=prefix):
            if not word.startswith(prefix):
                break
            ids |= self._named[word]
        for key, user_id in self._orders["email"].irange(minimum=(prefix,)):
            if not key.startswith(prefix):
                break
            ids.add(user_id)
        self.touched += len(ids)
        return [self._users[i] for i in ids]

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


def _past(users: list[User], sort: str, reverse: bool,
          after: Position | None) -> Iterable[User]:
    """The users (sorted by ``sort``) that come after the position ``after``."""
    if after is None:
        return users
    start: Any = after        # an id in id order, a (key, id) pair in the others
    if reverse:
        return (u for u in users if position(u, sort) < start)
    return (u for u in users if position(u, sort) > start)
