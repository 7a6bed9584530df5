"""The kinds of field beyond users' ``text`` and ``email``, one class each
(``choice`` and ``boolean`` together, ``url`` and ``ref`` together): what a
kind is, and how to write one, is ``fields.Field``.
Every kind, an embedder's too, is in ``Field.kinds`` once its class is
defined, where ``kind_of`` finds the kind a stored declaration names.

The core imports this package only for a collection that declares one of
its kinds (``usersvc.integer`` and the others are imported when first
asked for, and a stored declaration's kinds when it is read): an app
serving users alone never loads it. It imports its five modules
together: ``integer``, ``number`` and ``choice`` are named as their
modules are, and a package that imported each module when its kind was
first asked for would give the module, not the kind, once anything had
imported the module by its name.
"""
import ast
from typing import Any

from ..fields import Field
from .choice import boolean, choice
from .dates import date, datetime
from .integer import integer
from .links import ref, url
from .number import number


def kind_of(rule: str) -> Any:
    """The kind a stored declaration's rule (a kind's ``repr``) names:
    ``text(200)``, ``boolean``, ``choice('low', 'high')``, an embedder's
    ``money`` (``Field.kinds``: its module imported); ``ValueError`` for
    another."""
    name, _, arguments = rule.partition("(")
    made = Field.kinds.get(name)
    try:
        if made is not None:
            kind = made(*ast.literal_eval(f"({arguments[:-1]},)")) if arguments else made()
            if repr(kind) == rule:
                return kind
    except (SyntaxError, ValueError, TypeError):
        pass
    raise ValueError(f"a stored field's kind that usersvc does not know: {rule} (a kind of "
                     "your own: import the module that defines it first, as usersvc copy --kinds "
                     "MODULE does)")


__all__ = ["boolean", "choice", "date", "datetime", "integer", "number", "ref", "url"]
