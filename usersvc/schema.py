"""What a collection is: ``Schema``, declared once, and ``USER`` among them.

Everything follows from a schema: the resources, the representations, and
every store's tables, indexes, queries and feed. It checks its declaration
once (``declaration``), and each document sent: every problem it finds
(``Invalid``), not only the first, so that a client can fix it in one go."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from . import declaration
from .fields import Field, FieldError, email, text


class Invalid(Exception):
    """A document is well-formed but not a valid record (HTTP 422); ``errors``
    holds a ``(JSON Pointer, detail)`` pair per problem (RFC 6901)."""

    def __init__(self, detail: str, errors: Iterable[tuple[str, str]] = ()):
        super().__init__(detail)
        self.detail, self.errors = detail, list(errors)


def pointer(*names: str) -> str:
    """The JSON Pointer (RFC 6901 §3) to a member: ``~`` and ``/`` escaped."""
    return "".join("/" + n.replace("~", "~0").replace("/", "~1") for n in names)


class Schema:
    """A kind of record: its names, its fields, and what a store does with
    them (each part: docs/api.md, "Collections declared once").

    ``id`` is every record's first field, assigned by the store; ``fields`` maps each other
    one, in representation order, to its kind. ``optional`` fields may be absent,
    ``unique`` ones belong to one record at most; a page is filtered by ``filters``,
    ordered by ``sorts`` (then by id), read from an index of its own by ``filtered_sorts``,
    searched by ``q`` in ``words`` and ``prefixes``. ``timestamps``: read-only ``created``
    and ``updated``, set by the store. At a SQL store's open: fields ``renamed``,
    ``dropped``, ``converted``, and ``defaults`` for the ones made required."""

    def __init__(self, name: str, plural: str, fields: Mapping[str, Field], *,
                 optional: Iterable[str] = (), unique: Iterable[str] = (),
                 filters: Iterable[str] = (), sorts: Iterable[str] = (),
                 words: Iterable[str] = (), prefixes: Iterable[str] = (),
                 filtered_sorts: Mapping[str, Iterable[str]] | None = None,
                 timestamps: bool = False, renamed: Mapping[str, str] | None = None,
                 dropped: Iterable[str] = (), defaults: Mapping[str, Any] | None = None,
                 converted: Mapping[str, Callable[[Any], Any]] | None = None) -> None:
        # Each part checked, and what follows made, by ``declaration``. a_name: "a user".
        self.name, self.plural, self.a_name = name, plural, declaration.with_article(name)
        self.fields, self.read_only = declaration.declared_fields(name, plural, fields, timestamps)
        self.field_names = ("id", *self.fields)      # a record's, in its order (no version)
        (self.optional, self.unique, self.filters, self.sorts, self.words, self.prefixes
         ) = declaration.indexed(self, optional, unique, filters, sorts, words, prefixes)
        self.prefixes_by_key, self.searched, self.searchable = declaration.searched(self)
        self.filtered_sorts = declaration.filtered_sorts_of(self, filtered_sorts or {})
        self.required = tuple(f for f in self.fields if f not in {*self.optional, *self.read_only})
        self._required = frozenset(self.required)
        self.renamed, self.dropped, self.converted, self.defaults = declaration.migrations(
            self, renamed or {}, dropped, converted or {}, defaults or {})
        self.collated = declaration.collated(self)      # fields whose collated value SQL keeps too
        self.record = declaration.record_type(self)     # one stored version, made by name

    def __repr__(self) -> str:
        return f"<Schema {self.plural}>"

    def text_of(self, name: str, value: Any) -> str:
        """A member's value as text (XML, pages): its kind's ``to_text``."""
        return self.fields[name].to_text(value) if name in self.fields else str(value)

    def as_dict(self, record: Any) -> dict[str, Any]:
        """The record's representation: its fields (an absent optional one left out), no version."""
        pairs = zip(self.field_names, record[:-1], strict=True)
        return dict(pairs) if not self.optional else {n: v for n, v in pairs if v is not None}

    def some_of(self, record: Any, names: tuple[str, ...]) -> dict[str, Any]:
        """``as_dict``, ``id`` and ``names`` only (``fields=``: ``sparse``)."""
        return {f: v for f, v in self.as_dict(record).items() if f == "id" or f in names}

    def values(self, fields: dict[str, Any], old: Any = None) -> list[Any]:
        """A write's values, in the fields' order: each one given (``None``:
        absent), else ``old``'s, if any. ``TypeError`` for a name that is no
        field, or a required field without a value: a caller sends what was checked."""
        self.check_names(fields)
        kept = (None,) * len(self.fields) if old is None else old[1:-1]     # (no id, version)
        values = [fields.get(f, value) for f, value in zip(self.fields, kept, strict=True)]
        if len(values) > len(fields) and None in values:     # (one left out: a required one?)
            self.check_names({f: v for f, v in zip(self.fields, values, strict=True)
                              if f in self._required})
        return values

    def check_names(self, fields: dict[str, Any]) -> None:
        """``TypeError`` for a name that is no field, or ``None`` (absent) for a required one."""
        for field, value in fields.items():
            if field not in self.fields:
                raise TypeError(f"{field} is not a field of {self.a_name}")
            if value is None and field not in self.optional:
                raise TypeError(f"{self.a_name} needs a value for {field}")

    def for_create(self, document: Any) -> dict[str, Any]:
        """The fields of a new record: the required ones, any optional ones given; no ``id``."""
        return self._check(document, record_id=None, partial=False)

    def for_replace(self, document: Any, record_id: int) -> dict[str, Any]:
        """Every field of a full replacement: an optional field left out is
        ``None`` (removed); ``id`` only if it is the record's own."""
        fields = self._check(document, record_id, partial=False)
        return {f: fields.get(f) for f in self.fields} if len(fields) < len(self.fields) else fields

    def for_patch(self, document: Any, record_id: int) -> dict[str, Any]:
        """The fields a JSON Merge Patch (RFC 7396) changes, any of them; ``null``
        removes an optional field (``None``) and is refused for a required one."""
        return self._check(document, record_id, partial=True)

    def _check(self, document: Any, record_id: int | None, partial: bool) -> dict[str, Any]:
        if not isinstance(document, dict):
            raise Invalid(f"The body must be {self.a_name} object.",
                          [("", f"must be {self.a_name} object")])
        errors: list[tuple[str, str]] = []
        cleaned: dict[str, Any] = {}
        for name, value in document.items():
            rule, problem = self.fields.get(name), None
            if rule is not None and value is not None:
                try:
                    cleaned[name] = rule(value)
                except FieldError as e:
                    problem = str(e)
            elif name == "id":      # (a replacement's own, if sent; else none)
                if record_id is None:
                    problem = "is assigned by the service and cannot be sent"
                elif type(value) is not int or value != record_id:
                    problem = f"must be {record_id}, the id in the path, if it is sent"
            elif name in self.optional:
                cleaned[name] = None             # null: no value (left out, or removed)
            else:
                problem = (f"is not a field of {self.a_name}" if rule is None else
                           f"is required and cannot be {'removed' if partial else 'null'}")
            if problem is not None:
                errors.append((pointer(name), problem))
        if not partial and not self._required <= document.keys():
            errors += [(pointer(f), "is required") for f in self.required if f not in document]
        if record_id is None and not self.read_only.isdisjoint(document):     # (else: compared)
            errors += [(pointer(f), "is set by the service and cannot be sent")
                       for f in sorted(self.read_only & document.keys())]
        if errors:
            n = len(errors)
            raise Invalid(f"The {self.name} has {n} invalid field{'s' * (n != 1)}.", errors)
        return cleaned


USER = Schema("user", "users", {"name": text(200), "email": email}, unique=("email",),
              filters=("email",), sorts=("name", "email"), words=("name",), prefixes=("email",))
