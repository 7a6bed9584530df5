"""docs/api.md, "Storage", costs for the memory store: a page reads the
records it returns and no others, whatever the size of the store."""
from __future__ import annotations

from usersvc import USER
from usersvc.storage.memory.collection import MemoryRecords


class CountingDict(dict):
    """A dict that counts the records read from it and refuses to be scanned."""

    reads = 0

    def __getitem__(self, key):
        self.reads += 1
        return super().__getitem__(key)

    def get(self, key, default=None):
        self.reads += 1
        return super().get(key, default)

    def __iter__(self):
        raise AssertionError("the store scanned its records")

    values = items = keys = __iter__


def filled(n, count=True):
    store = MemoryRecords(USER)
    for i in range(n):
        store.create(name="U", email=f"u{i}@example.org")
    if count:
        store.contents.records = CountingDict(store.contents.records)
    return store


def test_a_page_reads_only_the_records_it_returns():
    small, large = filled(100), filled(20_000)
    for store, after in ((small, 50), (large, 15_000)):
        page = store.list(after=after, limit=10)
        assert [u.id for u in page] == list(range(after + 1, after + 11))
        assert store.contents.records.reads == 10


def test_get_update_delete_and_filter_read_one_record():
    store = filled(20_000)
    store.get(7)
    store.update(8, name="V")
    store.delete(9)
    assert store.list(email="U10@example.org")[0].id == 11
    assert store.contents.records.reads == 4


def test_a_page_after_many_deletes_still_reads_only_its_records():
    store = filled(5_000, count=False)
    for user_id in range(1, 4_990):
        store.delete(user_id)
    store.contents.records = CountingDict(store.contents.records)
    assert [u.id for u in store.list(limit=5)] == [4990, 4991, 4992, 4993, 4994]
    assert store.contents.records.reads == 5
