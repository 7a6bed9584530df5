"""References between collections (``kinds.ref``), kept by every store alike.

A write that gives a ``ref`` field a value checks that the record it names
exists (else ``errors.Dangling``), and a delete of a record that a ``ref``
may name checks that none does (restrict: else ``errors.Referred``): each
in one atomic step of the store (``Storage.atomically``) holding the
collections involved, so that no write between the check and the change
can make it wrong. On PostgreSQL that step takes each collection's lock
(its feed's), which every write of the collection takes too; a delete
deletes first and then looks, so a reference made meanwhile is seen.
Inside a batch's step, the batch's own earlier writes count, and the step
is the batch's.

A store wraps each collection that refers or is referred to in a
``served.Checked`` (``served.Collections.serve``); the others are served
as they are, at no cost, and a store whose schemas have no ``ref`` never
imports this module (``stored.references_of``).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..schema import Schema


@dataclass(frozen=True)
class References:
    """What one collection's writes check: its ``ref`` fields and the
    collections they name (``targets``), and the ``ref`` fields of any
    collection that name it (``referrers``)."""

    schema: Schema
    targets: tuple[tuple[str, Schema], ...]
    referrers: tuple[tuple[Schema, str], ...]

    @property
    def involved(self) -> set[str]:
        """The collections a step that writes this one holds (``Collections.locked``):
        it, those it names and those naming it, by plural."""
        return {self.schema.plural, *(target.plural for _, target in self.targets),
                *(referrer.plural for referrer, _ in self.referrers)}


def references(schemas: Sequence[Schema]) -> dict[str, References]:
    """Each collection's references, by plural (only those with any);
    ``ValueError`` for a ``ref`` to a collection the store does not hold."""
    by_plural = {s.plural: s for s in schemas}
    found = {}
    for schema in schemas:
        targets = []
        for field, kind in schema.fields.items():
            if kind.refers_to is not None:
                if kind.refers_to not in by_plural:
                    raise ValueError(f"{schema.plural}.{field}: refers to {kind.refers_to}, "
                                     "which the store does not hold (declare both)")
                targets.append((field, by_plural[kind.refers_to]))
        referrers = tuple((s, f) for s in schemas for f, kind in s.fields.items()
                          if kind.refers_to == schema.plural)
        if targets or referrers:
            found[schema.plural] = References(schema, tuple(targets), referrers)
    return found


__all__ = ["References", "references"]
