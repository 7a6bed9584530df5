"""What a collection is: ``Schema``, declared once, and ``USER`` among them.

Everything follows from a schema: the HTTP resources, the representations,
the OpenAPI document, the pages, and every store's tables, indexes, queries
and feed. A schema checks its own declaration when it is made (what each
part may be: ``declaration``), and a request's document whenever one comes:
it collects every problem it finds (``Invalid``), rather than stopping at
the first, so that a client can fix its request in one go.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .declaration import (declared_fields, filtered_sorts_of, migrations, named, record_type,
                          with_article)
from .fields import Field, FieldError, email, text


class Invalid(Exception):
    """A document is well-formed but not a valid record (HTTP 422); ``errors``
    holds a ``(JSON Pointer, detail)`` pair per problem (RFC 6901)."""

    def __init__(self, detail: str, errors: Iterable[tuple[str, str]] = ()):
        super().__init__(detail)
        self.detail = detail
        self.errors = list(errors)


def pointer(*names: str) -> str:
    """The JSON Pointer (RFC 6901 §3) to a member: ``~`` and ``/`` escaped."""
    return "".join("/" + n.replace("~", "~0").replace("/", "~1") for n in names)


class Schema:
    """A kind of record: its names, its fields, and what a store does with them.

    ``id`` is every record's first field, assigned by the store; ``fields``
    maps each other field, in representation order, to its kind.
    ``optional`` fields may be absent; ``unique`` ones belong to one record
    at most; a list may be filtered by ``filters`` (equal values) and
    ordered by ``sorts`` (required; then by id), compared as the kind
    collates them; ``filtered_sorts`` maps a filter to the sorts whose
    pages filtered by it are read from an index of their own (a filtered
    page in id order always is). ``q`` matches the start of any word of a ``words`` text
    field and of a whole ``prefixes`` one, folded (``fields.fold``). ``timestamps``:
    read-only ``created`` and ``updated``, set by the store. What a SQL
    store does once at open: each field ``renamed`` from the name it had,
    ``dropped`` stored fields, fields ``converted`` by a function of each
    stored value, ``defaults`` for a field made required (docs/api.md).
    """

    def __init__(self, name: str, plural: str, fields: Mapping[str, Field], *,
                 optional: Iterable[str] = (), unique: Iterable[str] = (),
                 filters: Iterable[str] = (), sorts: Iterable[str] = (),
                 words: Iterable[str] = (), prefixes: Iterable[str] = (),
                 filtered_sorts: Mapping[str, Iterable[str]] | None = None,
                 timestamps: bool = False, renamed: Mapping[str, str] | None = None,
                 dropped: Iterable[str] = (), converted: Mapping[str, Any] | None = None,
                 defaults: Mapping[str, Any] | None = None) -> None:
        # a_name: "a user", "an issue", in what is said of one record
        self.name, self.plural, self.a_name = name, plural, with_article(name)
        self.fields = declared_fields(name, plural, fields)
        self.read_only = frozenset(("created", "updated") if timestamps else ())
        if self.read_only & self.fields.keys():
            raise ValueError(f"{plural}: timestamps are the fields created and updated")
        if timestamps:      # (their kind: usersvc.kinds, loaded for a schema that has them)
            from .kinds.stamp import stamp
            self.fields.update(dict.fromkeys(sorted(self.read_only), stamp))
        self.field_names = ("id", *self.fields)
        # What is indexed, each part checked (``declaration.named``): every ref
        # is a filter too (what a delete looks up), timestamps are sorts.
        self.optional = named(self, "optional", optional)
        self.unique = named(self, "unique", unique)
        declared = named(self, "filters", filters)
        self.filters = declared + tuple(f for f, kind in self.fields.items()
                                        if kind.refers_to and f not in declared)
        self.sorts = ("id", *dict.fromkeys((*named(self, "sorts", sorts), *sorted(self.read_only))))
        self.words = named(self, "words", words, text_only=True)
        self.prefixes = named(self, "prefixes", prefixes, text_only=True)
        #: The prefix fields ``q`` searches in their collated index (their kind's
        #: collated value is folded: an e-mail address), and each other field it
        #: searches, with its own terms: (by its words, by its whole value).
        self.prefixes_by_key = tuple(f for f in self.prefixes if self.fields[f].collated_is_folded)
        self.searched = {f: (f in self.words, f in self.prefixes) for f in dict.fromkeys(
            (*self.words, *self.prefixes)) if f not in self.prefixes_by_key}
        self.searchable = bool(self.words or self.prefixes)
        self.filtered_sorts = filtered_sorts_of(self, filtered_sorts or {})
        self.required = tuple(f for f in self.fields if f not in {*self.optional, *self.read_only})
        self._required = frozenset(self.required)
        # What a SQL store does once at open, each checked (``declaration.migrations``).
        self.renamed, self.dropped, self.converted, self.defaults = migrations(
            self, renamed or {}, dropped, converted or {}, defaults or {})
        #: Fields whose collated value the SQL stores keep too (not the value, or a
        #: value kept as another: ``to_stored``): compared, ordered or searched whole.
        self.collated = tuple(f for f, kind in self.fields.items() if (
            type(kind).collate is not Field.collate or type(kind).to_stored is not Field.to_stored) and (
            f in self.unique or f in self.filters or f in self.sorts or f in self.prefixes))
        #: One stored version of a record, made by name (``record_type``).
        self.record = record_type(name.title().replace("_", ""), ("id", *self.fields, "version"),
                                  self.optional)

    def __repr__(self) -> str:
        return f"<Schema {self.plural}>"

    def text_of(self, name: str, value: Any) -> str:
        """A member's value as text (XML, pages): its kind's ``to_text``."""
        return self.fields[name].to_text(value) if name in self.fields else str(value)

    def as_dict(self, record: Any) -> dict[str, Any]:
        """The record's representation, field by field; an absent optional
        field is left out. (The version, last, is no member: the ETag says it.)"""
        pairs = zip(self.field_names, record[:-1], strict=True)
        if not self.optional:
            return dict(pairs)
        return {name: value for name, value in pairs if value is not None}

    def some_of(self, record: Any, names: tuple[str, ...]) -> dict[str, Any]:
        """``as_dict``, ``id`` and ``names`` only (``fields=``: ``sparse``)."""
        kept = {"id", *names}
        return {f: v for f, v in zip(self.field_names, record[:-1], strict=True)
                if f in kept and v is not None}

    def values(self, fields: dict[str, Any], old: Any = None) -> list[Any]:
        """A write's values, in the fields' order: each one given (``None``:
        absent), else ``old``'s (no ``old``: absent). ``TypeError`` for a
        name that is not a field, or a required field left without a value:
        a store's caller sends only what the schema has checked."""
        self.check_names(fields)
        if old is None:
            values = [fields.get(f) for f in self.fields]
        else:
            values = [fields[f] if f in fields else value for f, value in zip(self.fields, old[1:-1], strict=True)]
        if len(values) > len(fields):
            self.check_complete(values)
        return values

    def check_complete(self, values: list[Any]) -> None:
        """``TypeError`` for a required field without a value (``values``
        in the fields' order)."""
        if None in values:
            for field, value in zip(self.fields, values):
                if value is None and field in self._required:
                    raise TypeError(f"{self.a_name} needs a value for {field}")

    def check_names(self, fields: dict[str, Any]) -> None:
        """``TypeError`` for a name that is not a field, or ``None`` (absent)
        for a required field."""
        for field, value in fields.items():
            if field not in self.fields:
                raise TypeError(f"{field} is not a field of {self.a_name}")
            if value is None and field not in self.optional:
                raise TypeError(f"{self.a_name} needs a value for {field}")

    def for_create(self, document: Any) -> dict[str, Any]:
        """The fields of a new record: the required ones and any optional
        ones given; no ``id``."""
        return self._check(document, record_id=None, partial=False)

    def for_replace(self, document: Any, record_id: int) -> dict[str, Any]:
        """Every field of a full replacement: an optional field left out is
        ``None`` (removed); ``id`` only if it is the record's own."""
        fields = self._check(document, record_id, partial=False)
        if len(fields) < len(self.fields):
            return {f: fields.get(f) for f in self.fields}
        return fields

    def for_patch(self, document: Any, record_id: int) -> dict[str, Any]:
        """The fields a JSON Merge Patch (RFC 7396) changes: any subset;
        ``null`` removes an optional field (``None``) and is refused for a
        required one."""
        return self._check(document, record_id, partial=True)

    def _check(self, document: Any, record_id: int | None,
               partial: bool) -> dict[str, Any]:
        if not isinstance(document, dict):
            raise Invalid(f"The body must be {self.a_name} object.",
                          [("", f"must be {self.a_name} object")])
        errors: list[tuple[str, str]] = []
        cleaned: dict[str, Any] = {}
        fields = self.fields
        for name, value in document.items():
            rule = fields.get(name)
            if rule is not None and value is not None:
                try:
                    cleaned[name] = rule(value)
                except FieldError as e:
                    errors.append((pointer(name), str(e)))
            elif name == "id":
                problem = self._id_problem(value, record_id)
                if problem:
                    errors.append((pointer(name), problem))
            elif rule is None:
                errors.append((pointer(name), f"is not a field of {self.a_name}"))
            elif name in self.optional:
                cleaned[name] = None             # null: no value (left out, or removed)
            elif partial:
                errors.append((pointer(name), "is required and cannot be removed"))
            else:
                errors.append((pointer(name), "is required and cannot be null"))
        if not partial and not self._required <= document.keys():
            errors += [(pointer(f), "is required") for f in self.required if f not in document]
        if record_id is None and not self.read_only.isdisjoint(document):     # (else: compared)
            errors += [(pointer(f), "is set by the service and cannot be sent")
                       for f in sorted(self.read_only & document.keys())]
        if errors:
            n = len(errors)
            raise Invalid(f"The {self.name} has {n} invalid field{'s' * (n != 1)}.",
                          errors)
        return cleaned

    def _id_problem(self, value: Any, record_id: int | None) -> str | None:
        if record_id is None:
            return "is assigned by the service and cannot be sent"
        if type(value) is not int or value != record_id:
            return f"must be {record_id}, the id in the path, if it is sent"
        return None


# -- users ------------------------------------------------------------------

USER = Schema("user", "users", {"name": text(200), "email": email},
              unique=("email",), filters=("email",), sorts=("name", "email"),
              words=("name",), prefixes=("email",))
