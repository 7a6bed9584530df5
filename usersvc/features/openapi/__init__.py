"""The service describing itself: ``GET /`` and ``GET /openapi.json``.

``document.openapi(schemas, base)`` builds the OpenAPI 3.1 document from
the app's schemas, so it cannot drift from the code: every status
docs/api.md gives each operation, with its problem documents, the headers,
bodies in JSON and XML, and ``links`` from a create to the new record
(``parts``: what it is made of), and of what the other features serve
only what the app has plugged in (no ``/healthz`` without health, no
HTML without the pages, no ``Idempotency-Key`` without idempotency),
importing none of their modules otherwise. ``tests/test_openapi.py``
validates it and lets schemathesis hold the running app to it.
"""
from __future__ import annotations

import json
from typing import Any
from xml.sax.saxutils import quoteattr

from ...listing import revalidated
from ...representation import Offers
from ...representation.json_format import JSON, JSON_TYPE, Format
from ...representation.xml_format import XML
from ...request import Request, Response
from .document import OPENAPI_PATH, openapi

__all__ = ["OPENAPI_PATH", "OpenAPIDocument", "ServiceRoot", "openapi"]


class AppOffers:
    """``app.offers`` as they are when a request is answered, not when this
    feature was plugged in: with HTML once the pages are plugged in, before
    this feature or after it (a route reads its resource's ``offers`` once,
    when it is added)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    def __getattr__(self, name: str) -> Any:
        return getattr(self.app.offers, name)


class ServiceRoot:
    """``/``: where things are. A link to each collection and to the
    OpenAPI document, also as ``Link: <...>; rel="service-desc"`` (RFC 8631)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.offers = AppOffers(app)

    def on_get(self, req: Request, fmt: Format) -> Response:
        base = req.base_url
        schemas = self.app.schemas
        links = [{"rel": "collection", "href": f"{base}/{s.plural}", "title": s.plural}
                 for s in schemas]
        links.append({"rel": "service-desc", "href": base + OPENAPI_PATH, "type": JSON_TYPE})
        if fmt is self.app.plugged.get("pages"):    # the pages' HTML format
            from ..pages import root_page
            # (linking to the other features' pages too: the pages' ``places``)
            response = root_page(req, schemas, self.app.plugged["pages"].places)
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
    """``/openapi.json``: the document, in JSON only. It describes what the
    app serves when it is first asked, every feature plugged in by then
    (``app.plugged``), in whatever order: a feature left out is not in it."""

    offers = Offers({JSON_TYPE: JSON, f"{JSON_TYPE};charset=utf-8": JSON})

    def __init__(self, app: Any) -> None:
        self.app = app
        self._cache: dict[tuple[str, int], bytes] = {}

    def on_get(self, req: Request, fmt: Format) -> Response:
        base = req.script_name or "/"
        key = (base, len(self.app.schemas))     # per mount point and set of collections
        body = self._cache.get(key)
        if body is None:
            body = self._cache[key] = json.dumps(self.document(base), indent=1).encode()
        return revalidated(req, Response(200, body, [("Content-Type", JSON_TYPE)]))

    def document(self, base: str) -> dict[str, Any]:
        """The document, from what each feature plugged in returned: a
        feature's module is imported here only when it is plugged in."""
        app, plugged = self.app, self.app.plugged
        batch, keys = plugged.get("batch"), plugged.get("idempotency")
        health = assets = None
        if plugged.get("health") is not None:
            from ..health import HEALTH_PATH
            health = HEALTH_PATH
        if plugged.get("pages") is not None:
            from ..pages import ASSETS
            assets = {path: asset.media_type for path, asset in ASSETS.items()}
        return openapi(app.schemas, base, secured=plugged.get("tokens") is not None,
                       feeds=app.feeds, max_batch=batch and batch.max_batch,
                       idempotency_ttl=None if keys is None else app.settings.idempotency_ttl,
                       batch_keys=batch is not None and batch.keys is not None,
                       waits=plugged.get("waiting") is not None, health=health,
                       html="text/html" in app.offers.types, assets=assets,
                       webhooks=getattr(plugged.get("webhooks"), "options", None))


class OpenAPIFeature:
    """The ``openapi`` feature (``usersvc.hooks``): the service root, ``/``,
    and its description, ``/openapi.json``."""

    name = "openapi"

    def plug(self, app: Any, storage: Any, plugged: dict[str, Any]) -> OpenAPIDocument:
        app.router.add("/", ServiceRoot(app))
        document = OpenAPIDocument(app)
        app.router.add(OPENAPI_PATH, document)
        return document


FEATURE = OpenAPIFeature()
