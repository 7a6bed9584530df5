"""What the two SQL stores share: one collection's statements and records
(``collection``) in either dialect (``dialects``), its pages, counts, feed and
restores (``bulk``), the tables, indexes and triggers made of a schema (``ddl``),
a stored collection brought up to its schema at open (``evolution``,
``reshape``), and past releases, frozen (``history``)."""
from .collection import SQLRecords, Table
from .dialects import POSTGRES, SQLITE, Dialect

__all__ = ["POSTGRES", "SQLITE", "Dialect", "SQLRecords", "Table"]
