"""One collection of a SQLite file (``SQLiteRecords``): ``SQLRecords``, with
pages made from records kept by version.

PERF: a page reads ids and versions first, and builds only the records it
has not built at that version before: a version, with its id, names one
content for good (ids are never reused, not even by ``restore``). The plain
definition is ``SQLRecords._page``, one query that builds every record
(what PostgreSQL runs); ``tests/test_store_listing.py`` and
``tests/test_store_schemas.py`` hold both to the memory store's pages.
"""
from __future__ import annotations

from typing import Any

from ..sql.collection import SQLRecords, Table


#: How many records a collection keeps built for its pages (then it starts again).
KEPT = 100_000


class SQLiteRecords(SQLRecords):
    """One collection of a ``SQLiteStorage``."""

    def __init__(self, storage: Any, table: Table) -> None:
        super().__init__(storage, table)
        # Records built for pages, by id, for a page to take again (at most KEPT).
        self._kept: dict[int, Any] = {}

    def _page(self, db: Any, arguments: dict[str, Any]) -> list[Any]:
        """A page, read ids and versions first: a version names a record's
        fields, so a record already built at that version is taken as it is,
        and only the others are read (cheaper than reading and building all)."""
        kept = self._kept
        keys = self._rows(db, arguments, ("u.id", "u.version"))
        found = {record_id: record for record_id, version in keys
                 if (record := kept.get(record_id)) is not None and record.version == version}
        wanted = [record_id for record_id, _ in keys if record_id not in found]
        if wanted:
            found.update((row[0], self._make(row)) for row in db.execute(
                f"{self.table.select_some}({', '.join('?' * len(wanted))})", wanted))
            if any(record_id not in found or found[record_id].version != version
                   for record_id, version in keys):
                # Written between the two reads: read the page whole.
                return super()._page(db, arguments)
            if len(kept) + len(wanted) > KEPT:
                kept.clear()
            kept.update((record_id, found[record_id]) for record_id in wanted)
        return [found[record_id] for record_id, _ in keys]
