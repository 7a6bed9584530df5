"""Resources: HTTP in terms of a schema and a collection's records, for any collection.

``Collection`` answers ``/<plural>`` (GET a page, POST a new record) and
``Item`` ``/<plural>/{id}`` (GET, PUT, PATCH, DELETE), knowing neither
sockets nor SQL nor users in particular (the schema says what a record is).
Every responder takes ``(req, fmt, **path_parameters)``: the request, its
body bounded by the app, and the negotiated ``Format``, which makes the
answer around the bytes (a page for a person, in HTML: ``pages``).

**A write hook.** A POST or a PATCH with the header a feature's hook asks
for (``hook.header``: ``Idempotency-Key``) is answered by the hook,
``hook(req, fmt, make, respond)``: ``make(req)`` reads and checks the body
(400, 415, 422) and gives ``write(records)``, which the hook makes on the
records of a step of its own; ``respond(record)`` is its answer."""
from __future__ import annotations

from typing import Any

from .hooks import Write, WriteHook
from .listing import REVALIDATE, Listing, parameters, record_query
from .representation import DEFAULT, Offers, Representations, etag, read_document, version_in
from .representation.json_format import Format
from .request import Request, Response
from .schema import Schema
from .storage import Precondition
from .storage.protocol import ChangeFeed


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
        """A page: its query read, then its answer (``listing``)."""
        return Listing.read(self.schema, req.parameters()).answer(req, fmt, self)

    def on_post(self, req: Request, fmt: Format) -> Response:
        if req.query_string:        # (a write takes none: one is not passed over)
            parameters(req.parameters(), [], f"POST /{self.schema.plural}")
        hook = self.write_hook
        if hook is not None and req.header(hook.header) is not None:
            return hook(req, fmt, self._create, lambda record: self._created(req, fmt, record))
        return self._created(req, fmt, self._create(req)(self.records))

    def _create(self, req: Request) -> Write:
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
        if req.query_string:        # fields=: some of its fields (``sparse``); else a 400
            fmt = record_query(req, self.schema, fmt)
        record, matcher = self.records.get(id), req.if_none_match()
        # RFC 9110 §13.1.2: If-None-Match compares weakly; a match is a 304
        # with the headers the 200 would have had (§15.4.5).
        if matcher is not None and (tag := etag(record, fmt))[1:-1] in matcher:
            return Response(304, headers=[("ETag", tag), REVALIDATE])
        return answer(req, 200, self, record, fmt, REVALIDATE)

    def on_put(self, req: Request, fmt: Format, id: int) -> Response:
        if req.query_string:        # (a write takes none: one is not passed over)
            record_query(req, self.schema)
        fields = self.schema.for_replace(read_document(req, self.schema), id)
        return answer(req, 200, self, self.records.update(
            id, precondition=_precondition(req, id, self.offers), **fields), fmt)

    def on_patch(self, req: Request, fmt: Format, id: int) -> Response:
        if req.query_string:        # (a write takes none: one is not passed over)
            record_query(req, self.schema)

        def patch(req: Request) -> Write:
            fields = self.schema.for_patch(read_document(req, self.schema), id)
            precondition = _precondition(req, id, self.offers)
            return lambda records: records.update(id, precondition=precondition, **fields)
        hook = self.write_hook
        if hook is not None and req.header(hook.header) is not None:
            return hook(req, fmt, patch, lambda record: answer(req, 200, self, record, fmt))
        return answer(req, 200, self, patch(req)(self.records), fmt)

    def on_delete(self, req: Request, fmt: Format, id: int) -> Response:
        if req.query_string:        # (a write takes none: one is not passed over)
            record_query(req, self.schema)
        self.records.delete(id, precondition=_precondition(req, id, self.offers))
        return Response(204)


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
    sent = {part: _versions(matcher, record_id, offers) for part, matcher in (
        ("match", req.if_match()), ("none_match", req.if_none_match())) if matcher is not None}
    return Precondition(**sent) if sent else None       # (a header not sent: no condition)


def _versions(matcher: Any, record_id: int, offers: Offers) -> frozenset[int] | None:
    """The versions an If-Match / If-None-Match value names; ``None`` for ``*``."""
    if not hasattr(matcher, "etags"):   # webob's AnyETag: the value was "*"
        return None
    versions = (version_in(tag, record_id, offers) for tag in matcher.etags)
    return frozenset(v for v in versions if v is not None)
