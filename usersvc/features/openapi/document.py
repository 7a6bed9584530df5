"""The OpenAPI 3.1 document, path by path, from the app's schemas."""
from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from ...release import VERSION
from ...representation.json_format import JSON_TYPE
from ...schema import Schema
from ...storage import MAX_ID
from .asked import fields_parameter
from .feed import feed_link_header, feed_paths
from .parts import (
    BODY_ETAG,
    CACHE,
    DESCRIPTIONS,
    ETAG,
    IF_NONE_MATCH,
    PAGE,
    VARY,
    asset_paths,
    collection_names,
    common_schemas,
    content,
    header,
    idempotency_key,
    list_headers,
    list_parameters,
    not_modified,
    operation_responses,
    problem,
    record_schemas,
    request_schema,
)
from .served import head, health_item, options, without_html
from .tokens import secure

OPENAPI_PATH = "/openapi.json"
_SERVICE_ROOT = "#/components/schemas/ServiceRoot"


def openapi(schemas: Sequence[Schema], base: str = "/", *, secured: bool = False,
            feeds: Collection[str] = (), idempotency_ttl: float | None = None,
            max_batch: int | None = None, waits: bool = True, health: str | None = None,
            html: bool = False, assets: Mapping[str, str] | None = None,
            batch_keys: bool = False, webhooks: Any = None) -> dict[str, Any]:
    """The OpenAPI 3.1 document for a service of these collections, served
    under ``base``: what the arguments say it serves, and nothing more.
    ``secured``: bearer tokens are on; ``feeds``: the collections (by
    plural) with a change feed; ``idempotency_ttl``: how long an
    ``Idempotency-Key``'s answer is kept, in seconds (``None``: the key is
    not honoured); ``max_batch``: the most requests of a ``POST /batch``
    (``None``: not served), ``batch_keys``: whether it honours a key;
    ``waits``: the feeds take ``wait`` and stream (the waiting feature);
    ``health``: the health check's path (``None``: not served); ``html``: records and problems are
    offered as HTML pages; ``assets``: the files the pages load (path ->
    media type); ``webhooks``: the webhooks feature's options (its
    ``retries`` and ``timeout``; ``None``: not served), for ``/webhooks``
    and the top-level ``webhooks`` object, one entry a collection with a
    feed."""
    cached = {"ETag": BODY_ETAG, "Vary": VARY, "Cache-Control": CACHE}
    root_headers = {**cached, "Link": header('`<.../openapi.json>; rel="service-desc"`')}
    paths: dict[str, Any] = {
        "/": {
            "get": {
                "operationId": "getServiceRoot",
                "summary": "Links to the collections and to this document.",
                "description": "The service root: a link to each collection, and to this "
                               "document (also in a `Link` header, `rel=\"service-desc\"`, "
                               "RFC 8631).",
                "parameters": [IF_NONE_MATCH],
                "responses": {"200": {
                    "description": "The service's links.", "headers": root_headers,
                    "content": {JSON_TYPE: {"schema": {"$ref": _SERVICE_ROOT}},
                                "application/xml": {"schema": {"$ref": _SERVICE_ROOT}},
                                **PAGE}},
                    "304": not_modified(BODY_ETAG),
                    "406": {"$ref": "#/components/responses/Problem406"}}},
            "head": head("headServiceRoot", {"200": root_headers, "304": cached}, [IF_NONE_MATCH],
                          (406,)),
            "options": options("optionsServiceRoot", "GET, HEAD, OPTIONS"),
        },
        OPENAPI_PATH: {
            "get": {
                "operationId": "getOpenAPI", "summary": "This document.",
                "description": "The OpenAPI 3.1 description of the service, made from the "
                               "schemas of the collections it serves.",
                "parameters": [IF_NONE_MATCH],
                "responses": {"200": {"description": "The OpenAPI document.", "headers": cached,
                                      "content": {JSON_TYPE: {"schema": {"type": "object"}}}},
                              "304": not_modified(BODY_ETAG),
                              "406": {"$ref": "#/components/responses/Problem406"}}},
            "head": head("headOpenAPI", {"200": cached, "304": cached}, [IF_NONE_MATCH], (406,)),
            "options": options("optionsOpenAPI", "GET, HEAD, OPTIONS"),
        },
    }
    if health is not None:
        paths[health] = health_item()
    paths.update(asset_paths(assets or {}))
    components: dict[str, Any] = {"schemas": common_schemas(), "responses": {
        f"Problem{s}": problem(s) for s in DESCRIPTIONS if s != 503}}
    for schema in schemas:
        _add_collection(schema, paths, components["schemas"], idempotency_ttl)
        if schema.plural in feeds:
            paths.update(feed_paths(schema, components["schemas"], waits))
            paths[f"/{schema.plural}"]["get"]["responses"]["200"]["headers"]["Link"] = \
                feed_link_header()
    if max_batch is not None:
        from .batch import batch_paths  # (the batch feature's: imported when it is plugged)
        paths.update(batch_paths(schemas, max_batch, idempotency_ttl if batch_keys else None,
                                 components["schemas"]))
    delivered: dict[str, Any] = {}
    if webhooks is not None:
        from .webhooks import deliveries, webhook_paths  # (the webhooks feature's)
        fed = [s for s in schemas if s.plural in feeds]
        paths.update(webhook_paths([s.plural for s in fed], secured, components["schemas"]))
        delivered = {"webhooks": deliveries(fed, webhooks.retries, webhooks.timeout,
                                            components["schemas"])}
    tags = [{"name": "service", "description": "The service root, this document, and what "
                                               "the features serve beside the collections."},
            *({"name": s.plural, "description": f"The {s.plural} collection and each {s.name}."}
              for s in schemas),
            *([{"name": "webhooks", "description": "Subscriptions to the changes, and what "
                                                   "each subscriber is sent."}]
              if delivered else [])]
    for path, item in paths.items():
        tag = next((s.plural for s in schemas if path.startswith(f"/{s.plural}")), "service")
        for method, operation in item.items():
            if method != "parameters":
                operation.setdefault("tags", [tag])
    extra: dict[str, Any] = {"security": []}      # open: no credentials, and said so
    if secured:
        secure(paths, components)
        extra["security"] = [{"bearer": []}]
    if not html:
        without_html(paths)
        without_html(components)
    pages = " and HTML pages for people in browsers" * html
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "usersvc", "version": VERSION,
            "description": f"{collection_names(schemas)}, in JSON or XML by content negotiation "
                           f"(Accept, with q-values){pages}. Errors are RFC 9457 problem documents "
                           "in the negotiated format. Every GET also answers HEAD; every "
                           "path answers OPTIONS; other methods get 405 with Allow.",
            "license": {"name": "MIT", "identifier": "MIT"},
            "contact": {"name": "usersvc: see docs/api.md in its repository"},
        },
        "servers": [{"url": base}],
        "tags": tags,
        **extra,
        "paths": paths,
        **delivered,
        "components": components,
    }


def _add_collection(schema: Schema, paths: dict[str, Any], schemas: dict[str, Any],
                    idempotency_ttl: float | None = None) -> None:
    name, plural = schema.name.capitalize(), schema.plural
    record, xml_record = record_schemas(schema)
    schemas[name] = record
    schemas[f"{name}Xml"] = xml_record
    # fields=a,b: id and those only (``sparse``), beside the whole record.
    for xml in ("", "Xml"):
        schemas[f"{name}Fields{xml}"] = {
            **schemas[f"{name}{xml}"], "required": ["id"],
            "description": f"{schema.a_name.capitalize()} as `fields=` asks: its id and the "
                           "fields named (an absent optional field left out)."}
        schemas[f"{name}Got{xml}"] = {
            "anyOf": [{"$ref": f"#/components/schemas/{name}{xml}"},
                      {"$ref": f"#/components/schemas/{name}Fields{xml}"}]}
    schemas[f"{name}List"] = {"type": "array", "items": {"$ref": f"#/components/schemas/{name}Got"},
                              "xml": {"name": plural, "wrapped": True}}
    schemas[f"{name}ListXml"] = {"type": "array",
                                 "items": {"$ref": f"#/components/schemas/{name}GotXml"},
                                 "xml": {"name": plural, "wrapped": True}}
    for kind, required in (("Create", True), ("Replace", True), ("Patch", False)):
        for in_xml in (False, True):
            schemas[f"{name}{kind}{'Xml' if in_xml else ''}"] = request_schema(schema, required,
                                                                               in_xml)
    schemas[f"{name}PatchMerge"] = schemas[f"{name}Patch"]

    one = {"description": f"The {schema.name}.", "content": {**content(name), **PAGE},
           "headers": {"ETag": ETAG, "Vary": VARY}}
    id_param = {"name": "id", "in": "path", "required": True,
                "schema": {"type": "integer", "minimum": 1, "maximum": MAX_ID},
                "description": "A canonical decimal: no sign, no leading zero."}
    if_match = {"name": "If-Match", "in": "header", "required": False, "schema": {"type": "string"},
                "description": "Write only if the record is at one of these ETags "
                               "(or `*`: exists)."}
    if_none_match = {"name": "If-None-Match", "in": "header", "required": False,
                     "schema": {"type": "string"},
                     "description": "GET: 304 if the record is still at one of these ETags. "
                                    "Writes: only if it is at none of them (`*`: never)."}
    by_id = {"id": "$response.body#/id"}
    links = {
        f"Get{name}": {"operationId": f"get{name}", "parameters": by_id},
        f"Replace{name}": {"operationId": f"replace{name}",
                           "parameters": {**by_id, "header.If-Match": "$response.header.ETag"}},
        f"Patch{name}": {"operationId": f"patch{name}",
                         "parameters": {**by_id, "header.If-Match": "$response.header.ETag"}},
        f"Delete{name}": {"operationId": f"delete{name}",
                          "parameters": {**by_id, "header.If-Match": "$response.header.ETag"}},
    }
    body_statuses = (400, 403, 406, 409, 413, 415, 422, 503)
    keyed = [] if idempotency_ttl is None else [idempotency_key(idempotency_ttl)]

    page = {"ETag": BODY_ETAG, **list_headers(),
            "Link": header('`<...?after=N&limit=L>; rel="next"` in id order, '
                           '`<...?cursor=C&limit=L>; rel="next"` in the others, with every '
                           "other parameter kept (RFC 8288), when the page is full.",
                           required=False)}
    paths[f"/{plural}"] = {
        "get": {
            "operationId": f"list{name}s",
            "summary": f"A page of {plural}: sorted, filtered, searched.",
            "description": f"Up to `limit` {plural} in the order `sort` names, from just past "
                           "the position of the page before (`after`, or the `cursor` of the "
                           "`next` link), kept by the filters. A full page links to the next. "
                           "Unknown parameters are a 400.",
            "parameters": list_parameters(schema),
            "responses": operation_responses(400, 406, 503, s200={
                "description": f"Up to `limit` {plural}. A full page links to the next.",
                "headers": page, "content": {**content(f"{name}List"), **PAGE}},
                s304=not_modified(BODY_ETAG, **list_headers())),
        },
        "post": {
            "operationId": f"create{name}", "summary": f"Create {schema.a_name}.",
            "description": f"The new {schema.name}, with the id the service gave it, its URL "
                           "in `Location` and its version in `ETag`.",
            "parameters": keyed,
            "requestBody": {"required": True, "content": content(f"{name}Create"),
                            "description": "JSON (any application/*+json) or XML (any "
                                           "application/*+xml), as Content-Type says; a "
                                           "body without one is a 415."},
            "responses": operation_responses(*body_statuses, s201={
                "description": f"Created: the new {schema.name}.",
                "headers": {"Location": header(f"The new {schema.name}'s URL.",
                                                {"type": "string", "format": "uri"}),
                            "ETag": ETAG, "Vary": VARY},
                "content": {**content(name), **PAGE}, "links": links}),
        },
        "options": options(f"options{name}s", "GET, HEAD, POST, OPTIONS", post=True),
        "head": head(f"head{name}s", {"200": page, "304": {"ETag": BODY_ETAG, **list_headers()}},
                      list_parameters(schema), (400, 406, 503)),
    }
    paths[f"/{plural}/{{id}}"] = {
        "parameters": [id_param],
        "get": {
            "operationId": f"get{name}", "summary": f"One {schema.name}.",
            "description": f"The {schema.name} and its version (`ETag`); `If-None-Match` with "
                           "that version is a 304.",
            "parameters": [if_none_match, fields_parameter(schema)],
            "responses": operation_responses(400, 404, 406, 503, s200={
                **one, "content": {**content(f"{name}Got"), **PAGE}, "headers": {
                "ETag": ETAG, "Vary": VARY, "Cache-Control": CACHE}}, s304=not_modified(ETAG)),
        },
        "put": {
            "operationId": f"replace{name}", "summary": f"Replace {schema.a_name}: every field.",
            "description": "Every field is required. With `If-Match`, only if the record is "
                           "still at that version (else 412, and nothing changes).",
            "parameters": [if_match, if_none_match],
            "requestBody": {"required": True, "content": content(f"{name}Replace"),
                            "description": "`id` may be sent if it is the id in the path."},
            "responses": operation_responses(404, 412, *body_statuses, s200=one),
        },
        "patch": {
            "operationId": f"patch{name}",
            "summary": f"Change some fields of {schema.a_name} (JSON Merge Patch, RFC 7396).",
            "description": "The fields sent are changed, the others kept; `null` for a "
                           "required field is a 422. `If-Match` as for PUT.",
            "parameters": [if_match, if_none_match, *keyed],
            "requestBody": {"required": True, "content": {
                "application/merge-patch+json": {
                    "schema": {"$ref": f"#/components/schemas/{name}PatchMerge"}},
                **content(f"{name}Patch")}},
            "responses": operation_responses(404, 412, *body_statuses, s200=one),
        },
        "delete": {
            "operationId": f"delete{name}", "summary": f"Delete {schema.a_name}.",
            "description": "Deleting again is a 404. `If-Match` as for PUT.",
            "parameters": [if_match, if_none_match],
            "responses": operation_responses(403, 404, 406, 412, 503, s204={
                "description": "Deleted.", "headers": {"Vary": VARY}}),
        },
        "options": options(f"options{name}", "GET, HEAD, PUT, PATCH, DELETE, OPTIONS", patch=True,
                            templated=True),
        "head": head(f"head{name}", {"200": {"ETag": ETAG, "Vary": VARY, "Cache-Control": CACHE},
                                      "304": {"ETag": ETAG, "Vary": VARY, "Cache-Control": CACHE}},
                      [if_none_match, fields_parameter(schema)], (400, 404, 406, 503)),
    }
