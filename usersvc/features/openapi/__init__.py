"""The service describing itself: ``GET /`` and ``GET /openapi.json``.

``document.openapi(schemas, base)`` builds the OpenAPI 3.1 document from
the app's schemas, so it cannot drift from the code: every status
docs/api.md gives each operation, with its problem documents, the headers,
bodies in JSON and XML, and ``links`` from a create to the new record
(``parts``: what it is made of). ``tests/test_openapi.py`` validates it
and lets schemathesis hold the running app to it.
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any
from xml.sax.saxutils import quoteattr

from ...representation import Format, JSON, JSON_TYPE, Offers, XML
from ...request import Request, Response
from ...resources import revalidated
from ...settings import DEFAULT_IDEMPOTENCY_TTL
from ...validation import Schema
from ..pages import HTMLFormat, root_page
from .document import OPENAPI_PATH, openapi

__all__ = ["OPENAPI_PATH", "OpenAPIDocument", "ServiceRoot", "openapi"]


class ServiceRoot:
    """``/``: where things are. A link to each collection and to the
    OpenAPI document, also as ``Link: <...>; rel="service-desc"`` (RFC 8631)."""

    def __init__(self, schemas: Sequence[Schema], offers: Offers) -> None:
        self.schemas = schemas
        self.offers = offers        # the app's: with HTML, once the pages are plugged in

    def on_get(self, req: Request, fmt: Format) -> Response:
        base = req.base_url
        links = [{"rel": "collection", "href": f"{base}/{s.plural}", "title": s.plural}
                 for s in self.schemas]
        links.append({"rel": "service-desc", "href": base + OPENAPI_PATH, "type": JSON_TYPE})
        if isinstance(fmt, HTMLFormat):
            response = root_page(req, self.schemas)
            response.headers.append(("Link", f'<{base}{OPENAPI_PATH}>; rel="service-desc"'))
            return revalidated(req, response)
        if fmt is XML:
            body = "".join(
                "<link" + "".join(f" {k}={quoteattr(v)}" for k, v in link.items()) + "/>"
                for link in links)
            payload = f"<service><title>usersvc</title>{body}</service>".encode()
        else:
            payload = json.dumps({"title": "usersvc", "links": links},
                                 separators=(",", ":")).encode()
        return revalidated(req, Response(200, payload, [
            ("Content-Type", fmt.media_type),
            ("Link", f'<{base}{OPENAPI_PATH}>; rel="service-desc"')]))


class OpenAPIDocument:
    """``/openapi.json``: the document, in JSON only."""

    offers = Offers({JSON_TYPE: JSON, f"{JSON_TYPE};charset=utf-8": JSON})

    def __init__(self, schemas: Sequence[Schema], *, secured: bool = False,
                 feeds: Sequence[str] = (), idempotency_ttl: float = DEFAULT_IDEMPOTENCY_TTL,
                 plugged: Mapping[str, Any] | None = None) -> None:
        self.schemas = schemas
        self.secured = secured
        self.idempotency_ttl = idempotency_ttl
        self.feeds = feeds          # the app's list, filled as collections are added
        self.plugged = {} if plugged is None else plugged   # the app's features (``/batch``)
        self._cache: dict[tuple[str, int], bytes] = {}

    def on_get(self, req: Request, fmt: Format) -> Response:
        base = req.script_name or "/"
        key = (base, len(self.schemas))     # per mount point and set of collections
        body = self._cache.get(key)
        if body is None:
            batch = self.plugged.get("batch")
            document = openapi(self.schemas, base, secured=self.secured, feeds=self.feeds,
                               idempotency_ttl=self.idempotency_ttl, max_batch=batch and batch.max_batch,
                               waits=self.plugged.get("waiting") is not None)
            body = self._cache[key] = json.dumps(document, indent=1).encode()
        return revalidated(req, Response(200, body, [("Content-Type", JSON_TYPE)]))


class OpenAPIFeature:
    """The ``openapi`` feature (``usersvc.hooks``): the service root, ``/``,
    and its description, ``/openapi.json``."""

    name = "openapi"

    def plug(self, app: Any, storage: Any, plugged: dict[str, Any]) -> OpenAPIDocument:
        settings = app.settings
        app.router.add("/", ServiceRoot(app.schemas, app.offers))
        document = OpenAPIDocument(app.schemas, secured=settings.tokens is not None,
                                   feeds=app.feeds, idempotency_ttl=settings.idempotency_ttl,
                                   plugged=plugged)
        app.router.add(OPENAPI_PATH, document)
        return document


FEATURE = OpenAPIFeature()
