"""The kinds of field beyond users' ``text`` and ``email``, one class each,
one module each: what a kind is, and how to write one, is ``fields.Field``.
"""
from .boolean import boolean
from .choice import choice
from .dates import date, datetime
from .integer import integer
from .number import number
from .url import url

__all__ = ["boolean", "choice", "date", "datetime", "integer", "number", "url"]
