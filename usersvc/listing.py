"""Listing: what a request for a page of a collection asks, its answer, and the way on.

``Listing.read(schema, query)`` turns ``GET /<plural>?...`` into the store's
``list`` arguments, or a 400 naming the parameter; what may be asked comes
from the ``Schema`` (its sorts, filters, and ``q`` if searchable), and an
unknown parameter is refused, never ignored. Paging is by keyset,
never by offset: in id order the keyset is the id (``after``);
in others the sort field's collated value and id, carried by an opaque ``cursor`` in the
``rel="next"`` link, with a SHA-256 check over its content, order and
filters (no secret), so an altered or replayed cursor is a 400.
A filter's value and a condition (``field[op]=value``) are ``asking``'s,
as is what no value in a query may hold (``q``'s too: ``asking.not_plain``).
A record's query is read here too (``record_query``): ``fields=`` or nothing.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
from dataclasses import dataclass, field
from itertools import filterfalse
from typing import TYPE_CHECKING, Any
from urllib.parse import quote_plus

from . import places
from .problems import Problem
from .request import Request, Response
from .schema import Schema
from .storage import MAX_ID, Keyset, keyset

if TYPE_CHECKING:
    from . import asking

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
MAX_Q = 100
_CHECK = 12                 # bytes of SHA-256 in a cursor
MAX_CURSOR = 1200          # characters: a 200-character name, encoded, and more
_BASE64URL = re.compile("[A-Za-z0-9_-]+")
_DIGITS = re.compile("[0-9]+")
#: The relation type of a page's link to the feed: an extension relation
#: type (RFC 8288 §2.1.2), a URI that names it and nothing else. A tag URI
#: (RFC 4151) needs no registry and is never fetched.
FEED_RELATION = "tag:usersvc.example,2026:changes"
# Cached answers must be revalidated (with the ETag) before each reuse,
# so no client is ever shown a record that has since changed.
REVALIDATE = ("Cache-Control", "no-cache")


@dataclass
class Listing:
    """One page's request: ``limit`` records in ``sort`` order (reversed if
    ``reverse``) from past ``after``, kept by ``filters`` and ``q``."""

    schema: Schema          # the collection's (a cursor names a record by its fields)
    limit: int = DEFAULT_LIMIT
    sort: str = "id"
    reverse: bool = False
    after: Keyset | None = None
    filters: dict[str, Any] = field(default_factory=dict)
    where: tuple[asking.Condition, ...] = ()     # field[op]=value (``asking``)
    fields: tuple[str, ...] | None = None       # fields=a,b (``sparse``)
    q: str | None = None
    query: dict[str, list[str]] = field(default_factory=dict)   # as sent
    # What a cursor is bound to: the collection, the order, the filters.
    context: bytes = b""

    @classmethod
    def read(cls, schema: Schema, query: dict[str, list[str]]) -> Listing:
        """The listing a query string asks for; 400 for anything else."""
        one = parameters(query, known_parameters(schema), f"/{schema.plural}", schema)
        asked = [name for name in one if "[" in name]       # (field[op]: asking's)
        for name in schema.filters:         # (field=v is field[eq]=v: one given twice)
            if name in one and f"{name}[eq]" in one:
                raise Problem(400, f"The query parameter {name}[eq] is given more than once: "
                                   f"{name}= asks the same (equality).")
        where = (tuple(_asking().read(schema, name, one[name]) for name in sorted(asked))
                 if asked else ())
        sort, reverse = _sort(schema, one.get("sort", "id"))
        q = one.get("q")
        if q is not None:
            if not 1 <= len(q) <= MAX_Q:
                raise Problem(400, f"The query parameter q must be 1 to {MAX_Q} characters long.")
            wrong = _asking().not_plain(q)
            if wrong is not None:
                raise Problem(400, f"The query parameter q {wrong}.")
        filters = {name: _filter(schema, name, one[name]) for name in schema.filters if name in one}
        listing = cls(limit=whole_number(one, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT), sort=sort,
                      reverse=reverse, q=q, query=query, filters=filters, where=where,
                      fields=fields_named(schema, one) if "fields" in one else None,
                      schema=schema)
        if sort != "id":
            listing.context = json.dumps([schema.plural, one["sort"], sorted(
                (name, one[name]) for name in (*filters, *asked)), q]).encode()
        if "cursor" in one:
            if "after" in one:
                raise Problem(400, "Give after or cursor, not both.")
            if sort == "id":
                raise Problem(400, "cursor is for the other orders; id order goes on by after.")
            listing.after = _read_cursor(one["cursor"], listing.context, schema.fields[sort],
                                         sort in schema.optional)
        if "after" in one:
            if sort != "id":
                raise Problem(400, "after is for id order; pages in other orders "
                                   "follow the cursor in their next link.")
            listing.after = whole_number(one, "after", 0, 0, MAX_ID)
        return listing

    def store_arguments(self) -> dict[str, Any]:
        """Keyword arguments for the store's ``list``: only what was asked,
        so a store without sorting or search takes a plain page."""
        arguments: dict[str, Any] = {"limit": self.limit, **self.filters}
        if self.where:
            arguments["where"] = self.where
        if self.after is not None:
            arguments["after"] = self.after
        if self.sort != "id":
            arguments["sort"] = self.sort
        if self.reverse:
            arguments["reverse"] = True
        if self.q is not None:
            arguments["q"] = self.q
        return arguments

    def count_arguments(self) -> dict[str, Any]:
        """Keyword arguments for the store's ``count``: the filters."""
        return {**self.filters, **({} if self.q is None else {"q": self.q}),
                **({"where": self.where} if self.where else {})}

    def next_query(self, last: Any) -> str:
        """The query string of the page after the one that ends with
        ``last``: every parameter as sent but the keyset, then the new
        keyset and the limit."""
        kept = "&".join(f"{quoted(k)}={quoted(v)}" for k, vs in self.query.items()
                        for v in vs if k not in ("after", "cursor", "limit"))
        if self.sort == "id":
            at = f"after={last.id}"
        else:       # a cursor is base64url: nothing in it to escape
            at = "cursor=" + _write_cursor(keyset(self.schema, last, self.sort), self.context)
        return f"{kept}&{at}&limit={self.limit}" if kept else f"{at}&limit={self.limit}"

    def answer(self, req: Request, fmt: Any, resource: Any) -> Response:
        """The page asked of a ``Collection`` (``resource``), in ``fmt``, with
        its links: the next page's when it is full, and the feed's."""
        records, schema = resource.records, resource.schema
        # The feed's position before the page is read: the changes after it
        # are all the page may have missed (docs/api.md, "Changes").
        feed = None
        if resource.feed:
            feed, page = records.position_and_list(**self.store_arguments())
        else:
            page = records.list(**self.store_arguments())
        url = None
        if len(page) == self.limit:   # a full page: there may be more (RFC 8288)
            url = f"{req.base_url}/{schema.plural}?{self.next_query(page[-1])}"
        if self.fields is not None:      # fields=: some of each record's (``sparse``)
            fmt = _sparse().view(fmt, self.fields)
        response, tag = fmt.answer_list(req, resource.representations, page, url, self.q)
        links = [] if url is None else [f'<{url}>; rel="next"']
        if feed is not None:
            place = places.at(feed, records.history)     # (its history: no read)
            links.append(f'<{feed_url(req, schema, place)}>; rel="{FEED_RELATION}"')
        if links:       # one field, the links comma-separated (RFC 8288 §3)
            response.headers.append(("Link", ", ".join(links)))
        # RFC 7240: a count only when asked for, and said when given.
        metadata = []
        if prefers(req, "count") == "exact":
            total = records.count(**self.count_arguments())
            metadata = [("Preference-Applied", "count=exact"), ("X-Total-Count", str(total))]
        response = revalidated(req, response, tag, *metadata)
        response.vary = "Accept, Prefer"
        return response


def revalidated(req: Request, response: Response, tag: str | None = None,
                *metadata: tuple[str, str]) -> Response:
    """A GET answer with no version of its own (a page, the service root)
    gets a strong ETag made from its bytes (or the one given), and
    ``Cache-Control: no-cache``; an ``If-None-Match`` naming that tag gets a
    304 (RFC 9110 §13.1.2), which carries the ``metadata`` headers too, so
    that a cache updates them (RFC 9111 §4.3.4)."""
    if tag is None:
        # SHA-256 (hardware-accelerated on most CPUs: the fastest of
        # hashlib's here), cut to 96 bits.
        tag = '"' + hashlib.sha256(response.body).hexdigest()[:24] + '"'
    matcher = req.if_none_match()       # (weak comparison)
    if matcher is not None and tag[1:-1] in matcher:
        return Response(304, headers=[("ETag", tag), REVALIDATE, *metadata])
    response.headers += [("ETag", tag), REVALIDATE, *metadata]
    return response


def feed_url(req: Request, schema: Schema, after: str, limit: int | None = None) -> str:
    """The change feed's URL from the place ``after`` (``places``)."""
    url = f"{req.base_url}/{schema.plural}/changes?after={after}"
    return url if limit is None else f"{url}&limit={limit}"


def quoted(text: str) -> str:
    """A name or value of a query, as ``urlencode`` writes it."""
    return quote_plus(text)


def known_parameters(schema: Schema) -> list[str]:
    """The query parameters a collection's list takes, in the docs' order."""
    sorted_too = len(schema.sorts) > 1
    known = ["limit", *["sort"] * sorted_too, "after", *["cursor"] * sorted_too, *schema.filters]
    if schema.searchable:
        known.append("q")
    return [*known, "fields"]


def parameters(query: dict[str, list[str]], known: list[str], where: str,
               page: Schema | None = None) -> dict[str, str]:
    """Each query parameter's value: 400 for one that ``where`` does not
    take (naming them and what it takes), or one given more than once.
    On a ``page`` of a schema's, any ``field[op]`` is let through for
    ``asking.read`` to judge (the ones it takes, ``due[gt|lt]``..., named in the 400)."""
    unknown = [name for name in query if name not in known]
    if unknown and page is not None:     # (those not field[op]: no condition either)
        unknown = list(filterfalse(_asking().ASKED.fullmatch, unknown))
    if unknown:
        asked = _asking().asked_parameters(page) if page is not None else ()
        names, takes = ", ".join(unknown), ", ".join([*known, *asked])
        raise Problem(400, f"Unknown query parameter{'s' * (len(unknown) > 1)}: {names}. "
                           + (f"{where} takes: {takes}." if takes else f"{where} takes none."))
    for name, values in query.items():
        if len(values) > 1:
            raise Problem(400, f"The query parameter {name} is given more than once.")
    return {name: values[0] for name, values in query.items()}


def prefers(req: Request, name: str) -> str | None:
    """The value of the preference ``name`` in the request's ``Prefer``
    (RFC 7240 §2: ``Prefer: count=exact, return=minimal``; a page's count is
    asked for so); ``""`` for one given without a value, ``None`` for one
    not given."""
    header = req.header("Prefer")
    for preference in header.split(",") if header else ():
        token, _, value = preference.split(";", 1)[0].partition("=")
        if token.strip().lower() == name:
            return value.strip().strip('"')
    return None


def fields_named(schema: Schema, one: dict[str, str]) -> tuple[str, ...] | None:
    """The fields ``fields=`` names (``sparse``), in the record's order, or
    ``None`` (not given); 400 for an empty list or a name that is not a
    field (one named twice is named)."""
    text = one.get("fields")
    if text is None:
        return None
    names = text.split(",")
    unknown = [n for n in names if n not in schema.field_names]
    if not text or unknown:
        raise Problem(400, f"The query parameter fields must name fields of "
                           f"{schema.a_name}, comma-separated: "
                           f"{', '.join(schema.field_names)}"
                           + (f" (not {', '.join(unknown)})." if text and unknown else "."))
    return tuple(f for f in schema.field_names if f in names)


def record_query(req: Request, schema: Schema, fmt: Any = None) -> Any:
    """What a record's request asks in its query (for a request with one:
    without, nothing was asked): on a read, ``fields=``: ``fmt``'s view of
    some fields (``sparse``), else ``fmt``; a write takes no parameter. Any
    other is a 400 naming it, as on a page (a misspelt ``fields`` must not
    answer with the whole record, nor a write's be passed over)."""
    known = ["fields"] if req.method in ("GET", "HEAD") else []
    one = parameters(req.parameters(), known, f"{req.method} /{schema.plural}/{{id}}")
    names = fields_named(schema, one)
    return fmt if names is None else _sparse().view(fmt, names)


def whole_number(one: dict[str, str], name: str, default: int, low: int, high: int) -> int:
    if name not in one:
        return default
    value = one[name]
    # Check the length before int(): a 5,000-digit number is an error to
    # report, not an int to build.
    if not (_DIGITS.fullmatch(value) and len(value) <= 20 and low <= int(value) <= high):
        raise Problem(400, f"The query parameter {name} must be a whole number "
                           f"from {low} to {high}.")
    return int(value)


def _filter(schema: Schema, name: str, text: str) -> Any:
    """A filter's value, as its kind reads it (``Field.from_query``); else 400."""
    return _asking().query_value(schema, name, name, text)


def _asking() -> Any:
    """``asking``, imported when a query first has a filter, a condition or
    ``q``: pages asked by ``limit`` and ``after`` alone never load it."""
    from . import asking
    return asking


def _sparse() -> Any:
    """``sparse``, imported when a request first asks for ``fields=``: a
    server whose clients never do never loads it."""
    from . import sparse
    return sparse


def _sort(schema: Schema, value: str) -> tuple[str, bool]:
    name = value[1:] if value.startswith("-") else value
    if name not in schema.sorts:
        orders = ", ".join(schema.sorts)
        raise Problem(400, f"The query parameter sort must be one of {orders}, "
                           "or one of them after a - to reverse it.")
    return name, value.startswith("-")


def _write_cursor(at: Keyset, context: bytes) -> str:
    payload = json.dumps(at, ensure_ascii=False, separators=(",", ":")).encode()
    check = hashlib.sha256(context + b"\0" + payload).digest()[:_CHECK]
    return base64.urlsafe_b64encode(check + payload).rstrip(b"=").decode()


def _refuse_constant(name: str) -> Any:
    raise ValueError(name)      # NaN, Infinity: no kind's collated value


def _read_cursor(cursor: str, context: bytes, kind: Any, optional: bool) -> Keyset:
    """The keyset a cursor holds, if it is one this service wrote for
    this order and these filters, with a collated value of the order's kind
    (or none, if the sort is ``optional``)."""
    refused = Problem(400, "The cursor is not one the service wrote for this order and these "
                           "filters, or it was altered: follow the next link as given.")
    if len(cursor) > MAX_CURSOR or not _BASE64URL.fullmatch(cursor):
        raise refused
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
    except (binascii.Error, ValueError):
        raise refused from None
    check, payload = raw[:_CHECK], raw[_CHECK:]
    if not hmac.compare_digest(check, hashlib.sha256(context + b"\0" + payload).digest()[:_CHECK]):
        raise refused
    try:
        collated, record_id = json.loads(payload, parse_constant=_refuse_constant)
    except (ValueError, TypeError):
        raise refused from None
    # (A value a store could not compare, such as a lone surrogate, is no kind's;
    # none is past an optional sort's values.)
    if not ((kind.is_collated(collated) or optional and collated is None)
            and type(record_id) is int and 0 < record_id <= MAX_ID):
        raise refused
    return (collated, record_id)
