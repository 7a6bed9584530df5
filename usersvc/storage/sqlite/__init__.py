"""The SQLite store (``sqlite:///file.db``): the store (``store``), its
connections and its one writer (``connections``), what its errors mean
(``errors``), and each release's layout as history (``migrations``). Its
collections are the SQL stores' (``storage.sql``)."""
from .store import SQLiteStorage

__all__ = ["SQLiteStorage"]
