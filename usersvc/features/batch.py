"""``POST /batch``: several writes, on any collections of the app, made
together or not at all (docs/api.md, "Batch writes").

The batch document is read whole first (``read``): anything it may not
hold is a 400 naming it, an empty list a 400, more than ``max_batch``
requests a 413. Then its requests are made in order, each by the resource
its path names (``resources.Collection``, ``Item``), exactly as if sent
alone, but over the store's collections as one atomic step sees them
(``Storage.atomically``: one transaction of a SQL store, SQLite's as one
group of its writer; the memory store's locks held). The first request to
fail ends the batch, its step undone: the answer is that request's status
and problem, with ``"request": <index>``. Otherwise it is a 200 with every
request's status, ``Location`` and ``ETag``, and body, in order.

With the idempotency feature, an ``Idempotency-Key`` keeps the whole
answer with the step (a refused write's too), and replays it: the feature
wraps the step (``Idempotency.once``), as it does a single write's.
"""
from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any, NamedTuple

from ..listing import parameters
from ..problems import DOMAIN_ERRORS, Problem, not_json
from ..representation import Offers, body_format
from ..representation.json_format import JSON, JSON_TYPE, Format, no_constant
from ..request import Request, Response
from ..resources import Resource
from ..schema import Invalid, pointer
from ..storage.protocol import Atomic
from .idempotency import ENVIRON as KEY_ENVIRON, Idempotency, replayed

PATH = "/batch"
#: What a batch's request may be, and the headers it may carry (their
#: environ names), and the bodies those may say they are.
METHODS = ("POST", "PUT", "PATCH", "DELETE")
HEADERS = {"if-match": "HTTP_IF_MATCH", "if-none-match": "HTTP_IF_NONE_MATCH",
           "content-type": "CONTENT_TYPE"}
BODY_TYPES = (JSON_TYPE, "application/merge-patch+json")
#: What a request's answer in the batch keeps of its headers.
KEPT_HEADERS = ("Location", "ETag")
#: The request headers a batch's requests do not inherit from the batch.
_NOT_INHERITED = ("HTTP_IF_MATCH", "HTTP_IF_NONE_MATCH", KEY_ENVIRON, "CONTENT_LENGTH",
                  "HTTP_TRANSFER_ENCODING", "QUERY_STRING")
#: What a request of a batch may fail with, and the batch with it.
_FAILURES: tuple[type[Exception], ...] = (Problem, *DOMAIN_ERRORS)


class Part(NamedTuple):
    """One request of a batch: its method, path, headers (environ names)
    and body (the JSON document's bytes; ``None``: none), or what it is
    refused with when its turn comes (``refused``)."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes | None
    refused: Exception | None = None


class _Twice(dict[str, Any]):
    """An object of a batch document that names a member more than once
    (``twice``, the first such name): read whole, and refused where it is."""

    twice = ""


def _marked_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) == len(pairs):
        return found
    twice, seen = _Twice(found), set()
    for name, _ in pairs:
        if name in seen:
            twice.twice = name
            return twice
        seen.add(name)
    return twice        # (not reached: some name came twice)


# Read whole, a name given twice marked where it is (a record's body is refused
# at the first: ``json_format``), to refuse the one request that has it.
_DECODER = json.JSONDecoder(object_pairs_hook=_marked_object, parse_constant=no_constant)
# Made once (json.dumps with options makes a new encoder each call). ASCII
# escapes, unlike a record's: a lone surrogate ("\ud800") in a body reads
# back as it was sent.
_ASCII_ENCODER = json.JSONEncoder(separators=(",", ":"))


def _twice(value: Any) -> str | None:
    """The first member name an object in ``value`` gives twice, or ``None``."""
    if isinstance(value, _Twice):
        return value.twice
    for inner in value.values() if isinstance(value, dict) else (
            value if isinstance(value, list) else ()):
        found = _twice(inner)
        if found is not None:
            return found
    return None


class Batch:
    """``/batch``: POST a batch (JSON only: answered in JSON)."""

    offers = Offers({JSON_TYPE: JSON, f"{JSON_TYPE};charset=utf-8": JSON})
    accepts = (JSON_TYPE,)          # what POST reads (OPTIONS: Accept-Post)

    def __init__(self, app: Any, storage: Any, max_batch: int, keys: Idempotency | None) -> None:
        self.app, self.storage, self.max_batch, self.keys = app, storage, max_batch, keys

    def on_post(self, req: Request, fmt: Format) -> Response:
        if req.query_string:        # (a write takes none: one is not passed over)
            parameters(req.parameters(), [], "POST /batch")
        parts = self.read(req)
        routes = [self.app.router.match(part.path) for part in parts]
        # The collections the batch writes to, for the store to hold together.
        plurals = [found[0].target.schema.plural for found in routes
                   if found is not None and isinstance(found[0].target, Resource)]
        at: list[int | None] = [None]   # the request being made: the one that failed, if one does

        def run(unit: Any) -> list[Response]:
            views: dict[int, Any] = {}      # each resource over the unit's store, made once
            answers = []
            for at[0], (part, found) in enumerate(zip(parts, routes, strict=True)):
                answers.append(self._make(req, fmt, unit, views, part, found))
            return answers
        try:
            if self.keys is not None and KEY_ENVIRON in req.environ:
                return replayed(self.keys.once(self.keys.key(
                    req, fmt, self._answer, lambda error: self.app.problem_response(
                        req, _of_request(error, at[0]))), tuple(plurals), run))
            return self._answer(self.storage.atomically(plurals, run))
        except _FAILURES as error:
            raise _of_request(error, at[0]) from None

    def read(self, req: Request) -> list[Part]:
        """The batch's requests, or a 400, 413 or 415 saying what is wrong."""
        media_type = (req.content_type or "").partition(";")[0].strip().lower()
        if media_type != JSON_TYPE:
            raise Problem(415, f"A batch is {JSON_TYPE}, in UTF-8.",
                          headers=[("Accept-Post", JSON_TYPE)])
        if not req.body:
            raise Problem(400, "The request needs a body.")
        try:
            document = _DECODER.decode(req.body.decode("utf-8"))
        except UnicodeDecodeError as e:
            raise Problem(400, f"The body is not valid UTF-8 (byte {e.start}).") from None
        except RecursionError:
            raise Problem(400, "The JSON body is nested too deeply.") from None
        except ValueError as e:     # as json_format says it: not JSON, NaN, a number too long
            raise not_json(e) from None
        if isinstance(document, _Twice):
            raise _wrong("", f"names {document.twice!r} more than once")
        if not isinstance(document, dict) or "requests" not in document:
            raise _wrong("", 'is not an object with "requests", a list of requests')
        for name in document:
            if name != "requests":
                raise _wrong(pointer(name), "is not a member of a batch")
        requests = document["requests"]
        if not isinstance(requests, list) or not requests:
            raise _wrong("/requests", "must be a list of one request or more")
        if len(requests) > self.max_batch:
            raise Problem(413, f"A batch holds at most {self.max_batch} requests; this one "
                               f"holds {len(requests)}.", max_batch=self.max_batch)
        return [_part(request, f"/requests/{i}") for i, request in enumerate(requests)]

    def _make(self, req: Request, fmt: Format, unit: Any, views: dict[int, Any],
              part: Part, found: Any) -> Response:
        """One request, made by its resource (``found``: its route, matched
        once) over ``unit``'s collections."""
        if part.refused is not None:
            raise part.refused
        if found is None:
            raise Problem(404, "There is nothing at this path.")
        route, params = found
        if part.method not in route.responders:
            raise Problem(405, f"The method {part.method} is not allowed here.",
                          headers=[("Allow", route.allow)])
        if not isinstance(route.target, Resource):
            raise Problem(400, f"A batch holds writes to records: {part.path} is neither "
                               "a collection nor a record.")
        resource = views.get(id(route.target))
        if resource is None:
            plural = route.target.schema.plural
            records = unit[plural]
            for wrap in self.app.records_wrappers:    # as the app's own (metrics)
                records = wrap(plural, records)
            resource = views[id(route.target)] = copy.copy(route.target)
            resource.records, resource.write_hook = records, None
        responder: Callable[..., Response] = getattr(resource, "on_" + part.method.lower())
        return responder(_request(req, part), fmt, **params)

    @staticmethod
    def _answer(answers: list[Response]) -> Response:
        """The 200: each request's status, kept headers and body, in order."""
        items = []
        for answer in answers:
            headers = _ASCII_ENCODER.encode({k: v for k, v in answer.headers if k in KEPT_HEADERS})
            item = b'{"status":%d,"headers":%s' % (answer.status, headers.encode())
            items.append(item + (b'}' if answer.status == 204 else
                                 b',"body":' + answer.body + b'}'))
        return Response(200, b'{"responses":[' + b",".join(items) + b"]}",
                        [("Content-Type", JSON_TYPE)])


def _part(request: Any, at: str) -> Part:
    """One request of the batch document, checked (``at``: its pointer)."""
    if not isinstance(request, dict):
        raise _wrong(at, "is not an object with a method and a path")
    for name, value in (("", request), ("/headers", request.get("headers"))):
        if isinstance(value, _Twice):
            raise _wrong(at + name, f"names {value.twice!r} more than once")
    for name in request:
        if name not in ("method", "path", "headers", "body"):
            raise _wrong(at + pointer(name), "is not a member of a request in a batch "
                                                   "(method, path, headers, body)")
    method, path = request.get("method"), request.get("path")
    if method not in METHODS:
        raise _wrong(f"{at}/method", f"must be one of {', '.join(METHODS)}")
    if not isinstance(path, str) or not path.startswith("/") or "?" in path or "#" in path:
        raise _wrong(f"{at}/path", "must be a path from the service's root (/users/7), "
                                   "without a query")
    headers = request.get("headers", {})
    if not isinstance(headers, dict):
        raise _wrong(f"{at}/headers", "must be an object of header names and values")
    environ: dict[str, str] = {}
    for name, value in headers.items():
        if name.lower() not in HEADERS or not isinstance(value, str):
            raise _wrong(at + pointer("headers", name), "may be only If-Match, "
                         "If-None-Match or Content-Type, each a string")
        if HEADERS[name.lower()] in environ:        # If-Match and if-match: which one?
            raise _wrong(at + pointer("headers", name), "names a header given already")
        environ[HEADERS[name.lower()]] = value
    environ.setdefault("CONTENT_TYPE", JSON_TYPE)
    content_type = environ["CONTENT_TYPE"]
    if (content_type.partition(";")[0].strip().lower() not in BODY_TYPES
            or body_format(content_type, patch=method == "PATCH") is not JSON):
        # (here, not as the request's 415 when its turn comes, which would
        # offer XML: a batch holds none)
        raise _wrong(f"{at}/headers", f"names a Content-Type a batch cannot hold "
                                      f"(it holds {' or '.join(BODY_TYPES)}, in UTF-8)")
    if "body" not in request:
        return Part(method, path, environ, None)
    if method == "DELETE":
        raise _wrong(f"{at}/body", "a DELETE has no body")
    twice = _twice(request["body"])
    if twice is not None:       # as the body would be alone: a 422, when its turn comes
        return Part(method, path, environ, None, Invalid(
            "The body names a member more than once.",
            [(pointer(twice), "appears more than once")]))
    return Part(method, path, environ, _ASCII_ENCODER.encode(request["body"]).encode())


def _request(batch: Request, part: Part) -> Request:
    """The request ``part`` is, as if sent alone beside the batch: the
    batch's environ (its host, mount point, token...) with the part's
    method, path, headers and body, asking for JSON."""
    environ = dict(batch.environ)
    for name in _NOT_INHERITED:
        environ.pop(name, None)
    environ.update(part.headers, REQUEST_METHOD=part.method, PATH_INFO=part.path,
                   HTTP_ACCEPT=JSON_TYPE)
    req = Request(environ)
    req.body = part.body or b""
    return req


def _of_request(error: Exception, index: int | None) -> Problem:
    """The problem a batch's request failed with, naming it (``index``),
    its headers (``Allow``...) as a member: they speak of its target, not
    of ``/batch``. A 5xx is the store's, not the request's."""
    problem = error if isinstance(error, Problem) else Problem.from_error(error)
    if index is not None and problem.status < 500:
        problem.extensions["request"] = index
        if problem.headers:
            problem.extensions["headers"] = dict(problem.headers)
            problem.headers = []
    return problem


def _wrong(at: str, detail: str) -> Problem:
    """A 400 for the batch document itself, pointing where."""
    return Problem(400, "The batch document is not one usersvc can make.",
                   errors=[(at, detail)])


class BatchFeature:
    """``POST /batch`` where the store makes writes at once (``usersvc.hooks``)."""

    name = "batch"

    def plug(self, app: Any, storage: Any, plugged: dict[str, Any]) -> Batch | None:
        if not isinstance(storage, Atomic):
            return None
        batch = Batch(app, storage, app.settings.max_batch, plugged.get("idempotency"))
        app.router.add(PATH, batch)
        return batch


FEATURE = BatchFeature()
