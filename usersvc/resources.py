"""Resources: HTTP in terms of a schema and a collection's records, for any collection.

``Collection`` answers ``/<plural>`` (GET a page, POST a new record) and
``Item`` ``/<plural>/{id}`` (GET, PUT, PATCH, DELETE): requests into calls
of its records, their results into responses, knowing neither sockets nor SQL nor
users in particular (the schema says what a record is). Every responder
takes ``(req, fmt, **path_parameters)``: the request, its body bounded by
the app, and the negotiated ``Format``, which makes the answer around the
bytes (a page for a person, in HTML: ``pages``).

**A write hook.** A POST or a PATCH with the header a feature's hook asks
for (``hook.header``: ``Idempotency-Key``) is
answered by the hook, ``hook(req, fmt, make, respond)``: ``make(req)``
reads and checks the body (400, 415, 422) and gives the write,
``write(records)``, which the hook makes on the collection's records as
it has them (in an atomic step of its own: the idempotency feature keeps
the answer there); ``respond(record)`` is its answer. Other requests
never ask the hook, and their write is made on the resource's records.
"""
from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from .changes import FEED_RELATION, feed_url
from . import places
from .listing import Listing, fields_named, parameters, prefers
from .representation import (DEFAULT, Format, Offers, Representations, etag, read_document,
                             version_in)
from .request import Request, Response
from .storage import Precondition
from .storage.protocol import ChangeFeed
from .schema import Schema

#: ``hook(req, fmt, make, respond)``, and its ``header``: "A write hook" above.
WriteHook = Any

# Cached responses must be revalidated (with the ETag) before each reuse,
# so no client is ever shown a user that has since changed.
_REVALIDATE = ("Cache-Control", "no-cache")


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
    if _none_match(req, tag):
        return Response(304, headers=[("ETag", tag), _REVALIDATE, *metadata])
    response.headers += [("ETag", tag), _REVALIDATE, *metadata]
    return response


def _none_match(req: Request, tag: str) -> bool:
    """Whether If-None-Match names this ETag (weak comparison)."""
    matcher = req.if_none_match()
    return matcher is not None and tag[1:-1] in matcher


class Resource:
    """What a collection's resources share: its schema, its records, its kept
    encodings, its write hook (``None``: none) and what it answers in."""

    def __init__(self, schema: Schema, records: Any, representations: Representations,
                 write_hook: WriteHook | None = None, offers: Offers = DEFAULT) -> None:
        self.schema, self.records, self.representations = schema, records, representations
        self.write_hook, self.offers = write_hook, offers
        self.feed = isinstance(records, ChangeFeed)     # they keep a change feed


class Collection(Resource):
    """``/<plural>``: a page of records (GET), a new record (POST)."""

    def on_get(self, req: Request, fmt: Format) -> Response:
        listing = Listing.read(self.schema, req.parameters())
        # The feed's position before the page is read: the changes after it
        # are all the page may have missed (docs/api.md, "Changes").
        feed = None
        if self.feed:
            feed, page = self.records.position_and_list(**listing.store_arguments())
        else:
            page = self.records.list(**listing.store_arguments())
        url = None
        if len(page) == listing.limit:   # a full page: there may be more (RFC 8288)
            url = (f"{req.base_url}/{self.schema.plural}?"
                   f"{listing.next_query(page[-1])}")
        if listing.fields is not None:      # fields=: some of each record's (``sparse``)
            fmt = _sparse().view(fmt, listing.fields)
        response, tag = fmt.answer_list(req, self.representations, page, url, listing.q)
        links = [] if url is None else [f'<{url}>; rel="next"']
        if feed is not None:
            place = places.at(feed, self.records.history)     # (its history: no read)
            links.append(f'<{feed_url(req, self.schema, place)}>; rel="{FEED_RELATION}"')
        if links:       # one field, the links comma-separated (RFC 8288 §3)
            response.headers.append(("Link", ", ".join(links)))
        # RFC 7240: a count only when asked for, and said when given.
        metadata = []
        if prefers(req, "count") == "exact":
            total = self.records.count(**listing.count_arguments())
            metadata = [("Preference-Applied", "count=exact"), ("X-Total-Count", str(total))]
        response = revalidated(req, response, tag, *metadata)
        response.vary = "Accept, Prefer"
        return response

    def on_post(self, req: Request, fmt: Format) -> Response:
        if req.query_string:        # (a write takes none: one is not passed over)
            parameters(req.parameters(), [], f"POST /{self.schema.plural}")
        hook = self.write_hook
        if hook is not None and req.header(hook.header) is not None:
            return hook(req, fmt, self._create, lambda record: self._created(req, fmt, record))
        return self._created(req, fmt, self._create(req)(self.records))

    def _create(self, req: Request) -> Callable[[Any], Any]:
        """The body, read and checked; then ``write(records)`` creates the
        record in ``records`` (the resource's, or a write hook's step's)."""
        fields = self.schema.for_create(read_document(req, self.schema))
        return lambda records: records.create(**fields)

    def _created(self, req: Request, fmt: Format, record: Any) -> Response:
        return answer(req, 201, self, record, fmt,
                      ("Location", f"{req.base_url}/{self.schema.plural}/{record.id}"))


class Item(Resource):
    """``/<plural>/{id}``: read, replace, merge-patch or delete one record."""

    def on_get(self, req: Request, fmt: Format, id: int) -> Response:
        fields = _record_query(req, self.schema) if req.query_string else None
        record = self.records.get(id)
        if fields is not None:      # fields=: some of its fields (``sparse``)
            fmt = _sparse().view(fmt, fields)
        tag = etag(record, fmt)
        # RFC 9110 §13.1.2: If-None-Match compares weakly; a match is a 304
        # with the headers the 200 would have had (§15.4.5).
        if _none_match(req, tag):
            return Response(304, headers=[("ETag", tag), _REVALIDATE])
        response = fmt.answer(req, 200, self.representations, record, tag)
        response.headers += [("ETag", tag), _REVALIDATE]
        return response

    def on_put(self, req: Request, fmt: Format, id: int) -> Response:
        if req.query_string:        # (a write takes none: one is not passed over)
            _record_query(req, self.schema)
        fields = self.schema.for_replace(read_document(req, self.schema), id)
        return answer(req, 200, self, self.records.update(
            id, precondition=_precondition(req, id, self.offers), **fields), fmt)

    def on_patch(self, req: Request, fmt: Format, id: int) -> Response:
        if req.query_string:        # (a write takes none: one is not passed over)
            _record_query(req, self.schema)

        def patch(req: Request) -> Callable[[Any], Any]:
            fields = self.schema.for_patch(read_document(req, self.schema), id)
            precondition = _precondition(req, id, self.offers)
            return lambda records: records.update(id, precondition=precondition, **fields)
        hook = self.write_hook
        if hook is not None and req.header(hook.header) is not None:
            return hook(req, fmt, patch, lambda record: answer(req, 200, self, record, fmt))
        return answer(req, 200, self, patch(req)(self.records), fmt)

    def on_delete(self, req: Request, fmt: Format, id: int) -> Response:
        if req.query_string:        # (a write takes none: one is not passed over)
            _record_query(req, self.schema)
        self.records.delete(id, precondition=_precondition(req, id, self.offers))
        return Response(204)


def _record_query(req: Request, schema: Schema) -> tuple[str, ...] | None:
    """What a record's request asks in its query: on a read, ``fields=``
    (``sparse``) or nothing; a write takes no parameter. Any other is a
    400 naming it, as on a page (a misspelt ``fields`` must not answer
    with the whole record, nor a write's be passed over). For a request
    with a query: without one, nothing was asked (checked where it is
    called, as cheaply as a request without one should be)."""
    known = ["fields"] if req.method in ("GET", "HEAD") else []
    one = parameters(req.parameters(), known, f"{req.method} /{schema.plural}/{{id}}")
    return fields_named(schema, one)


def _sparse() -> Any:
    """``sparse``, imported when a request first asks for ``fields=``: a
    server whose clients never do never loads it."""
    from . import sparse
    return sparse


def answer(req: Request, status: int, resource: Resource, record: Any,
           fmt: Format, *headers: tuple[str, str]) -> Response:
    """A record's answer in ``fmt`` (its kept encoding, or its page), with its ETag."""
    tag = etag(record, fmt)
    response = fmt.answer(req, status, resource.representations, record, tag)
    response.headers += [("ETag", tag), *headers]
    return response


def _precondition(req: Request, record_id: int, offers: Offers) -> Precondition | None:
    """``If-Match`` and ``If-None-Match`` as the versions they name, for the
    store to check atomically with the write (RFC 9110 §13.1.1, §13.1.2),
    in the ETags of any format the record is offered in (``offers``).
    If-Match compares strongly: WebOb drops weak tags from it."""
    if not req.has_preconditions:
        return None
    if_match, if_none_match = req.if_match(), req.if_none_match()
    if if_match is None and if_none_match is None:
        return None
    return Precondition(
        match=_versions(if_match, record_id, offers) if if_match is not None else None,
        none_match=(_versions(if_none_match, record_id, offers) if if_none_match is not None
                    else frozenset()))


def _versions(matcher: Any, record_id: int, offers: Offers) -> frozenset[int] | None:
    """The versions an If-Match / If-None-Match value names; ``None`` for ``*``."""
    if not hasattr(matcher, "etags"):   # webob's AnyETag: the value was "*"
        return None
    versions = (version_in(tag, record_id, offers) for tag in matcher.etags)
    return frozenset(v for v in versions if v is not None)
