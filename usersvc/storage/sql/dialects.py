"""The two SQL databases' dialects (``SQLITE``, ``POSTGRES``), for the
statements a collection's ``Table`` makes."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Dialect:
    """What differs between the two databases, as fragments of SQL."""

    name: str
    mark: str               # the driver's placeholder
    join: str               # how the matching words join their records
    collated_type: str      # a ``__key`` column's type (``Field.collate``'s)
    words_type: str         # a ``__words`` column's type
    id_column: str
    arrays: bool            # whether a parameter may be an array

    def any_of(self, column: str, values: frozenset[int]) -> tuple[str, list[Any]]:
        """``column`` is one of ``values``: the condition and its parameters
        (one array where there are arrays: one shape for any number)."""
        if self.arrays:
            return f"{column} = ANY({self.mark})", [sorted(values)]
        return f"{column} IN ({', '.join(self.mark for _ in values)})", sorted(values)


# SQLite's planner takes a CROSS JOIN's tables in the order written: the
# matching words first, then their records by id. AUTOINCREMENT: never an id again.
SQLITE = Dialect("sqlite", "?", "CROSS JOIN", "TEXT", "TEXT",
                 "id INTEGER PRIMARY KEY AUTOINCREMENT", arrays=False)
POSTGRES = Dialect("postgres", "%s", "JOIN", 'text COLLATE "C"', "text[]",
                   "id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY", arrays=True)
