"""The kinds of field beyond users' ``text`` and ``email``, one class each,
one module each: what a kind is, and how to write one, is ``fields.Field``.
"""
from .boolean import boolean
from .integer import integer

__all__ = ["boolean", "integer"]
