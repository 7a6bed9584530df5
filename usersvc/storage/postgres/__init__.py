"""The PostgreSQL store (``postgresql://...``; the ``postgres`` extra): the
store and its pool (``store``), changes told across processes by
``NOTIFY`` (``notify``), and each release's layout as history
(``migrations``). Its collections are the SQL stores' (``storage.sql``)."""
from .store import PostgresStorage

__all__ = ["PostgresStorage"]
