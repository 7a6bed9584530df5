"""The WSGI application: one ``Request`` in, one ``Response`` out.

``App.__call__`` is the whole life of a request, in the order docs/architecture.md walks it.
A ``Problem`` or a domain error becomes a problem document; anything else is a bug, logged,
and a 500 that says nothing of the code. Features plug in through ``App``'s hooks, plain
attributes, as Falcon's middleware does (``usersvc.hooks`` lists them).
"""
from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Iterable
from typing import Any

from . import representation
from .changes import Changes
from .hooks import Check, FeedHook, Finish, Found, MakeWriteHook, Start, Stop, Waiting, WrapRecords
from .problems import DOMAIN_ERRORS, Problem
from .representation import BODY_TYPES, PATCH_TYPES, Representations, negotiate, problem_format
from .request import Request, Response
from .resources import Collection, Item
from .routing import Router
from .schema import Schema
from .settings import Settings
from .storage import RecordStore, check_collection
from .storage.protocol import ChangeFeed

# RFC 9110 §7.2 Host: a name or IPv4 address, or an IPv6 literal, and a port.
_HOST = re.compile(r"(?:[A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?")
_DEFAULT_PORT = re.compile(r":(?:80|443)\Z")     # which a Host header may leave out
_SAFE = frozenset({"GET", "HEAD", "OPTIONS"})     # never refused as another site's
_NEGOTIATED = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH"})  # answered in a representation


def good_host(host: str) -> bool:
    """Whether ``host`` is a host name or address, with an optional port."""
    return _HOST.fullmatch(host) is not None


class App:
    """A WSGI application serving the collections added to it."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = Settings() if settings is None else settings
        # The hooks a feature's ``plug`` fills (usersvc.hooks). Met by each request, in order:
        self.starters: list[Start] = []
        self.checks: list[Check] = [self._from_another_site]
        self.finishers: list[Finish] = []
        self.open_paths: set[str] = set()           # read by a check asking for a token
        self.allowed_origins: set[str] = set()      # read by the cross-origin protection
        # Used as each collection is added (so set before):
        self.records_wrappers: list[WrapRecords] = []
        self.write_hook: MakeWriteHook | None = None
        self.feed_hooks: list[FeedHook] = []
        self.offers, self.problem_offers = representation.DEFAULT, representation.PROBLEMS
        # Around the app's life: what features plugged in, waiting places, what stops them.
        self.plugged: dict[str, Any] = {}
        self.waiting: Waiting | None = None
        self.stoppers: list[Stop] = []
        # The collections served, as added: what a feature may read too.
        self.router = Router()
        self.schemas: list[Schema] = []
        self.records: list[RecordStore] = []
        self.feeds: list[str] = []          # the collections with a change feed
        self._closers: list[Stop] = []

    def add_collection(self, schema: Schema, records: RecordStore) -> None:
        """Serve ``/<schema.plural>`` and ``/<schema.plural>/{id}`` from
        ``records``, and ``/<schema.plural>/changes`` if they keep a feed."""
        check_collection(schema)
        if self.router.match(f"/{schema.plural}") is not None:
            raise ValueError(f"/{schema.plural} is served already")
        self.schemas.append(schema)
        self.records.append(records)        # as they are: /healthz's reads are not counted
        for wrap in self.records_wrappers:
            records = wrap(schema.plural, records)
        representations = Representations(schema)
        hook = None if self.write_hook is None else self.write_hook(records)
        for template, resource in ((f"/{schema.plural}", Collection),
                                   (f"/{schema.plural}/{{id:int}}", Item)):
            self.router.add(template, resource(schema, records, representations, hook, self.offers))
        if isinstance(records, ChangeFeed):
            self.feeds.append(schema.plural)
            changes = Changes(schema, records, representations)
            for feed_hook in self.feed_hooks:
                feed_hook(changes)
            self.router.add(f"/{schema.plural}/changes", changes)

    def on_close(self, closer: Stop) -> None:
        self._closers.append(closer)

    def close(self) -> None:
        """Close the stores this app opened."""
        for closer in self._closers:
            closer()

    def stop_waiting(self) -> None:
        """For a server that is stopping: the ``stoppers`` run (what holds a
        request open answers it now; the plain core holds none)."""
        for stop in self.stoppers:
            stop()

    @property
    def metrics(self) -> Any:
        """Deprecated (issue 58), goes in the next release: ``app.plugged.get("metrics")``."""
        warnings.warn('app.metrics is deprecated: use app.plugged.get("metrics")',
                      DeprecationWarning, stacklevel=2)
        return self.plugged.get("metrics")

    def __call__(self, environ: dict[str, Any],
                 start_response: Callable[..., Any]) -> Iterable[bytes]:
        req = Request(environ)
        for start in self.starters:
            start(req)
        try:
            response = self.handle(req)
        except Problem as problem:
            response = self.problem_response(req, problem)
        except DOMAIN_ERRORS as error:
            response = self.problem_response(req, Problem.from_error(error))
        except Exception:
            from .failures import log_failure  # (a bug's: the plain core serves without)
            log_failure(req)
            response = self.problem_response(
                req, Problem(500, "The server could not complete the request."))
        for finish in self.finishers:
            finish(req, response)
        return response(environ, start_response)

    def handle(self, req: Request) -> Response:
        if req.host is not None and not good_host(req.host):     # URLs in Location and Link
            # are built from it: no paths, markup or spaces get in there (nor echoed here).
            raise Problem(400, "The Host header is not a host name or address "
                               "with an optional port.")
        found = self.router.match(req.path)
        if found is not None:
            req.route = found[0].label          # the core's (usersvc.hooks): a 401, 403 too
        for check in self.checks:               # before a byte of the body is read
            answer = check(req, found)
            if answer is not None:
                return answer
        req.read_body(self.settings.max_body_size)     # (413: a body over the limit)
        if found is None:
            raise Problem(404, "There is nothing at this path.")
        route, params = found
        if req.method == "OPTIONS":             # the methods, and the bodies they read
            bodies = {"POST": ("Accept-Post", getattr(route.target, "accepts", BODY_TYPES)),
                      "PATCH": ("Accept-Patch", getattr(route.target, "patches", PATCH_TYPES))}
            return Response(204, headers=[("Allow", route.allow)] + [
                (name, ", ".join(types)) for method, (name, types) in bodies.items()
                if method in route.responders])
        responder = route.responders.get(req.method)
        if responder is None:
            raise Problem(405, f"The method {req.method} is not allowed here.",
                          headers=[("Allow", route.allow)])
        fmt = (negotiate(req, route.offers)
               if req.method in _NEGOTIATED and route.offers is not None else None)
        return responder(req, fmt, **params)

    def _from_another_site(self, req: Request, found: Found) -> None:
        """Cross-origin protection, always on (Go 1.25's rule): a page can make
        a browser send a write unasked, so a write is a 403 when
        ``Sec-Fetch-Site`` is not ``same-origin`` or ``none`` (the user's own
        navigation), or, without it, ``Origin`` is another host than ``Host``;
        unless the origin is allowed (``allowed_origins``: CORS adds them), or
        neither is sent (curl)."""
        if req.method in _SAFE or (site := req.fetch_site) in ("same-origin", "none"):
            return None
        origin, allowed = req.origin, self.allowed_origins
        if origin is not None and ("*" in allowed or origin in allowed):
            return None
        if site is not None or (
                origin is not None and _host(origin) != _host("http://" + (req.host or ""))):
            raise Problem(403, "A page of another site cannot make changes here "
                               "(cross-origin request refused).")

    def problem_response(self, req: Request, problem: Problem) -> Response:
        fmt = problem_format(req, self.problem_offers)
        response = fmt.answer_problem(req, problem.to_dict(), self.schemas)
        response.headers += problem.headers
        if req.method in ("GET", "HEAD") and "Cache-Control" not in dict(response.headers):
            response.headers.append(("Cache-Control", "no-cache"))
        return response


def _host(origin: str) -> str:
    """``host[:port]`` of an origin, lower case, without a default port
    (``:80``, ``:443``), as a ``Host`` header may name it either way."""
    return _DEFAULT_PORT.sub("", origin.partition("://")[2].lower(), count=1)
