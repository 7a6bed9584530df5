"""The kinds of field beyond users' ``text`` and ``email``, one class each,
one module each: what a kind is, and how to write one, is ``fields.Field``.
"""
import ast
from typing import Any

from ..fields import Field, email, text
from .boolean import boolean
from .choice import choice
from .dates import date, datetime
from .integer import integer
from .number import number
from .ref import ref
from .url import url



def kind_of(rule: str) -> Any:
    """The kind a stored declaration's rule (a kind's ``repr``) names:
    ``text(200)``, ``boolean``, ``choice('low', 'high')``; ``ValueError``
    for another."""
    name, _, arguments = rule.partition("(")
    made = globals().get(name) if name in (*__all__, "text", "email") else None
    try:
        if arguments and isinstance(made, type):       # a kind with parameters: a class
            return made(*ast.literal_eval(f"({arguments[:-1]},)"))
        if not arguments and isinstance(made, Field):
            return made
    except (SyntaxError, ValueError, TypeError):
        pass
    raise ValueError(f"a stored field's kind that usersvc does not know: {rule}")


__all__ = ["boolean", "choice", "date", "datetime", "integer", "number", "ref", "url"]
