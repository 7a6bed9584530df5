"""The SQLite store (``sqlite:///file.db``): the store (``store``), its
connections and its write transaction (``connections``; the fast build's
writer thread is ``usersvc.fast.sqlite``), opening them and the file
(``opening``), other processes' commits looked for (``poll``), what its
errors mean (``errors``), and each release's layout as history
(``migrations``). Its collections are the SQL stores' (``storage.sql``)."""
from .store import SQLiteStorage

__all__ = ["SQLiteStorage"]
