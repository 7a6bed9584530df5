"""The service describing itself: ``GET /`` and ``GET /openapi.json``.

``openapi(schemas, base)`` builds the OpenAPI 3.1 document from what the app
serves (its collections' schemas and the rules of their fields), so the
document cannot drift from the code; ``tests/test_openapi.py`` validates it
and lets schemathesis hold the running app to it.

The document names every status CONTRACT.md gives each operation, each with
its problem document in JSON and XML; the headers; request bodies in JSON
and XML (with ``xml`` objects for the element names); and ``links`` from a
create to the operations on the new record, so tools can test sequences.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from importlib import metadata
from typing import Any
from xml.sax.saxutils import quoteattr

from .representation import JSON, JSON_TYPE, XML, Format, Offers
from .request import Request, Response
from .resources import DEFAULT_LIMIT, HEALTH_PATH, MAX_LIMIT, revalidated
from .storage import MAX_ID
from .validation import Schema, describe

OPENAPI_PATH = "/openapi.json"

try:
    VERSION = metadata.version("usersvc")
except metadata.PackageNotFoundError:    # run from a source tree
    VERSION = "0.0.0"


class ServiceRoot:
    """``/``: where things are. A link to each collection and to the
    OpenAPI document, also as ``Link: <...>; rel="service-desc"`` (RFC 8631)."""

    def __init__(self, schemas: Sequence[Schema]) -> None:
        self.schemas = schemas

    def on_get(self, req: Request, fmt: Format) -> Response:
        base = req.base_url
        links = [{"rel": "collection", "href": f"{base}/{s.plural}", "title": s.plural}
                 for s in self.schemas]
        links.append({"rel": "service-desc", "href": base + OPENAPI_PATH, "type": JSON_TYPE})
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

    def __init__(self, schemas: Sequence[Schema], *, secured: bool = False) -> None:
        self.schemas = schemas
        self.secured = secured
        self._cache: dict[tuple[str, int], bytes] = {}

    def on_get(self, req: Request, fmt: Format) -> Response:
        base = req.script_name or "/"
        key = (base, len(self.schemas))     # per mount point and set of collections
        body = self._cache.get(key)
        if body is None:
            document = openapi(self.schemas, base, secured=self.secured)
            body = self._cache[key] = json.dumps(document, indent=1).encode()
        return revalidated(req, Response(200, body, [("Content-Type", JSON_TYPE)]))


# -- the document ----------------------------------------------------------

JSON_BODY = (JSON_TYPE,)
XML_BODY = ("application/xml", "text/xml")
PROBLEM = {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}},
           "application/problem+xml": {"schema": {"$ref": "#/components/schemas/Problem"}}}

_DESCRIPTIONS = {
    400: "The request is malformed: bad syntax in the body (JSON or XML), a "
         "body that is missing, not UTF-8 or holds a DOCTYPE, or a bad query parameter.",
    404: "There is no such record (never was, or was deleted).",
    406: "None of the service's media types is acceptable (`available` lists them).",
    409: "The e-mail address belongs to another user (compared ignoring case).",
    412: "If-Match or If-None-Match does not hold: the record has changed. Nothing was written.",
    413: "The body is larger than the limit (`max_body_size`).",
    415: "The body's Content-Type is not one the operation reads.",
    422: "The document is well-formed but not a valid record; `errors` lists every "
         "field at fault, with a JSON Pointer.",
    503: "The store is busy or unreachable; nothing was written. Try again after Retry-After.",
}


def _header(description: str, schema: dict[str, Any] | None = None,
            required: bool = True) -> dict[str, Any]:
    return {"description": description, "required": required,
            "schema": schema or {"type": "string"}}


VARY = _header("Always `Accept`: every response may differ by it.", {"const": "Accept"})
NO_STORE = _header("`no-store`.", {"const": "no-store"})
CACHE = _header("`no-cache`: revalidate with the ETag before reusing.", {"const": "no-cache"})
ETAG = _header('A strong entity-tag: `"{id}-{version}"` in JSON, `"{id}-{version}-xml"` in XML.',
               {"type": "string", "pattern": '^"[0-9]+-[0-9]+(-xml)?"$'})
BODY_ETAG = _header("A strong entity-tag made from the representation's bytes.",
                    {"type": "string", "pattern": '^"[0-9a-f]{24}"$'})
IF_NONE_MATCH = {"name": "If-None-Match", "in": "header", "required": False,
                 "schema": {"type": "string"},
                 "description": "304 Not Modified if the representation still has one of these ETags."}


def _not_modified(etag: dict[str, Any]) -> dict[str, Any]:
    return {"description": "Not Modified: the ETag in If-None-Match is current.",
            "headers": {"ETag": etag, "Vary": VARY, "Cache-Control": CACHE}}


def _problem(status: int, **headers: Any) -> dict[str, Any]:
    return {"description": _DESCRIPTIONS[status], "content": PROBLEM,
            "headers": {"Vary": VARY, **headers}}


def _responses(*statuses: int, **ok: dict[str, Any]) -> dict[str, Any]:
    """``ok``: the success responses by status; the rest are problems."""
    responses = {status.removeprefix("s"): answer for status, answer in ok.items()}
    for status in statuses:
        extra: dict[str, Any] = {}
        if status == 503:
            extra["Retry-After"] = _header("Seconds to wait: 1.", {"type": "string"})
        responses[str(status)] = {"$ref": f"#/components/responses/Problem{status}"} \
            if not extra else _problem(status, **extra)
    return responses


def _content(ref: str, types: Sequence[str] = JSON_BODY + XML_BODY) -> dict[str, Any]:
    return {t: {"schema": {"$ref": f"#/components/schemas/{ref}{'Xml' if t in XML_BODY else ''}"}}
            for t in types}


def openapi(schemas: Sequence[Schema], base: str = "/", *, secured: bool = False) -> dict[str, Any]:
    """The OpenAPI 3.1 document for a service of these collections, served
    under ``base``; ``secured``: bearer tokens are on."""
    cached = {"ETag": BODY_ETAG, "Vary": VARY, "Cache-Control": CACHE}
    root_headers = {**cached, "Link": _header('`<.../openapi.json>; rel="service-desc"`')}
    paths: dict[str, Any] = {
        "/": {
            "get": {
                "operationId": "getServiceRoot",
                "summary": "Links to the collections and to this document.",
                "parameters": [IF_NONE_MATCH],
                "responses": {"200": {
                    "description": "The service's links.", "headers": root_headers,
                    "content": {JSON_TYPE: {"schema": {"$ref": "#/components/schemas/ServiceRoot"}},
                                "application/xml": {"schema": {"$ref": "#/components/schemas/ServiceRoot"}}}},
                    "304": _not_modified(BODY_ETAG),
                    "406": {"$ref": "#/components/responses/Problem406"}}},
            "head": _head("headServiceRoot", {"200": root_headers, "304": cached}, [IF_NONE_MATCH]),
            "options": _options("optionsServiceRoot", "GET, HEAD, OPTIONS"),
        },
        OPENAPI_PATH: {
            "get": {
                "operationId": "getOpenAPI", "summary": "This document.",
                "parameters": [IF_NONE_MATCH],
                "responses": {"200": {"description": "The OpenAPI document.", "headers": cached,
                                      "content": {JSON_TYPE: {"schema": {"type": "object"}}}},
                              "304": _not_modified(BODY_ETAG),
                              "406": {"$ref": "#/components/responses/Problem406"}}},
            "head": _head("headOpenAPI", {"200": cached, "304": cached}, [IF_NONE_MATCH]),
            "options": _options("optionsOpenAPI", "GET, HEAD, OPTIONS"),
        },
    }
    paths[HEALTH_PATH] = {
        "get": {
            "operationId": "getHealth", "summary": "Whether the service can reach its store.",
            "security": [],
            "responses": {"200": {"description": "Every store answers.",
                                  "headers": {"Vary": VARY, "Cache-Control": NO_STORE},
                                  "content": {JSON_TYPE: {"schema": {"$ref": "#/components/schemas/Health"}},
                                              "application/xml": {"schema": {"$ref": "#/components/schemas/Health"}}}},
                          "406": {"$ref": "#/components/responses/Problem406"},
                          "503": _problem(503, **{"Retry-After": _header("Seconds to wait: 1."),
                                                  "Cache-Control": NO_STORE})}},
        "head": {**_head("headHealth", {"200": {"Vary": VARY}, "503": {"Vary": VARY}}), "security": []},
        "options": {**_options("optionsHealth", "GET, HEAD, OPTIONS"), "security": []},
    }
    components: dict[str, Any] = {"schemas": _common_schemas(), "responses": {
        f"Problem{s}": _problem(s) for s in _DESCRIPTIONS if s != 503}}
    for schema in schemas:
        _add_collection(schema, paths, components["schemas"])
    extra: dict[str, Any] = {}
    if secured:
        _secure(paths, components)
        extra["security"] = [{"bearer": []}]
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "usersvc", "version": VERSION,
            "description": "A collection of users, in JSON or XML by content negotiation "
                           "(Accept, with q-values). Errors are RFC 9457 problem documents "
                           "in the negotiated format. Every GET also answers HEAD; every "
                           "path answers OPTIONS; other methods get 405 with Allow.",
            "license": {"name": "MIT", "identifier": "MIT"},
        },
        "servers": [{"url": base}],
        **extra,
        "paths": paths,
        "components": components,
    }


def _secure(paths: dict[str, Any], components: dict[str, Any]) -> None:
    """Bearer tokens (RFC 6750): the scheme, and the 400/401/403 every
    operation but the health check may answer."""
    components["securitySchemes"] = {"bearer": {
        "type": "http", "scheme": "bearer",
        "description": "A token from the server's --tokens-file: `read` scope for GET, HEAD "
                       "and OPTIONS, `write` for everything."}}
    challenge = _header('`Bearer realm="usersvc"`, with `error` when a token was sent.')
    for status, text in [(401, "No token, or not a valid one."), (403, "A read token on a write.")]:
        components["responses"][f"Problem{status}Auth"] = {
            "description": text, "content": PROBLEM,
            "headers": {"Vary": VARY, "WWW-Authenticate": challenge}}
    for item in paths.values():
        for method, operation in item.items():
            if method == "parameters" or "security" in operation:
                continue
            responses = operation["responses"]
            responses["401"] = {"$ref": "#/components/responses/Problem401Auth"}
            responses.setdefault("400", {"$ref": "#/components/responses/Problem400"})
            if method not in ("get", "head", "options"):
                responses["403"] = {"$ref": "#/components/responses/Problem403Auth"}


def _add_collection(schema: Schema, paths: dict[str, Any], schemas: dict[str, Any]) -> None:
    name, plural = schema.name.capitalize(), schema.plural
    record, xml_record = _record_schemas(schema)
    schemas[name] = record
    schemas[f"{name}Xml"] = xml_record
    schemas[f"{name}List"] = {"type": "array", "items": {"$ref": f"#/components/schemas/{name}"},
                              "xml": {"name": plural, "wrapped": True}}
    schemas[f"{name}ListXml"] = schemas[f"{name}List"]
    for kind, required in (("Create", True), ("Replace", True), ("Patch", False)):
        for in_xml in (False, True):
            schemas[f"{name}{kind}{'Xml' if in_xml else ''}"] = _request_schema(schema, required, in_xml)
    schemas[f"{name}PatchMerge"] = schemas[f"{name}Patch"]

    one = {"description": f"The {schema.name}.", "content": _content(name),
           "headers": {"ETag": ETAG, "Vary": VARY}}
    id_param = {"name": "id", "in": "path", "required": True,
                "schema": {"type": "integer", "minimum": 1, "maximum": MAX_ID},
                "description": "A canonical decimal: no sign, no leading zero."}
    if_match = {"name": "If-Match", "in": "header", "required": False, "schema": {"type": "string"},
                "description": "Write only if the record is at one of these ETags (or `*`: exists)."}
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
    body_statuses = (400, 406, 409, 413, 415, 422, 503)

    paths[f"/{plural}"] = {
        "get": {
            "operationId": f"list{name}s", "summary": f"A page of {plural}, by id.",
            "parameters": [
                {"name": "after", "in": "query", "required": False,
                 "schema": {"type": "integer", "minimum": 0, "maximum": MAX_ID, "default": 0},
                 "description": "Only ids above this one: the last id of the previous page."},
                {"name": "limit", "in": "query", "required": False,
                 "schema": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT,
                            "default": DEFAULT_LIMIT}},
                *({"name": f, "in": "query", "required": False, "schema": {"type": "string"},
                   "description": f"Only the {schema.name} with this {f}, ignoring case "
                                  "(any text: one that no record has finds nothing)."}
                  for f in schema.filters),
                IF_NONE_MATCH,
            ],
            "responses": _responses(400, 406, 503, s200={
                "description": f"Up to `limit` {plural}. A full page links to the next.",
                "headers": {"ETag": BODY_ETAG, "Vary": VARY, "Cache-Control": CACHE,
                            "Link": _header('`<...?after=N&limit=L>; rel="next"` (RFC 8288), '
                                            "when the page is full.", required=False)},
                "content": _content(f"{name}List")}, s304=_not_modified(BODY_ETAG)),
        },
        "post": {
            "operationId": f"create{name}", "summary": f"Create a {schema.name}.",
            "requestBody": {"required": True, "content": _content(f"{name}Create"),
                            "description": "JSON (also without a Content-Type, and any "
                                           "application/*+json) or XML (any application/*+xml)."},
            "responses": _responses(*body_statuses, s201={
                "description": f"Created: the new {schema.name}.",
                "headers": {"Location": _header(f"The new {schema.name}'s URL.",
                                                {"type": "string", "format": "uri"}),
                            "ETag": ETAG, "Vary": VARY},
                "content": _content(name), "links": links}),
        },
        "options": _options(f"options{name}s", "GET, HEAD, POST, OPTIONS", post=True),
        "head": _head(f"head{name}s", {"200": {"ETag": BODY_ETAG, "Vary": VARY, "Cache-Control": CACHE},
                                       "304": {"ETag": BODY_ETAG, "Vary": VARY}}, [IF_NONE_MATCH]),
    }
    paths[f"/{plural}/{{id}}"] = {
        "parameters": [id_param],
        "get": {
            "operationId": f"get{name}", "summary": f"One {schema.name}.",
            "parameters": [if_none_match],
            "responses": _responses(404, 406, 503, s200={**one, "headers": {
                "ETag": ETAG, "Vary": VARY, "Cache-Control": CACHE}}, s304=_not_modified(ETAG)),
        },
        "put": {
            "operationId": f"replace{name}", "summary": f"Replace a {schema.name}: every field.",
            "parameters": [if_match, if_none_match],
            "requestBody": {"required": True, "content": _content(f"{name}Replace"),
                            "description": "`id` may be sent if it is the id in the path."},
            "responses": _responses(404, 412, *body_statuses, s200=one),
        },
        "patch": {
            "operationId": f"patch{name}",
            "summary": f"Change some fields of a {schema.name} (JSON Merge Patch, RFC 7396).",
            "parameters": [if_match, if_none_match],
            "requestBody": {"required": True, "content": {
                "application/merge-patch+json": {"schema": {"$ref": f"#/components/schemas/{name}PatchMerge"}},
                **_content(f"{name}Patch")}},
            "responses": _responses(404, 412, *body_statuses, s200=one),
        },
        "delete": {
            "operationId": f"delete{name}", "summary": f"Delete a {schema.name}.",
            "parameters": [if_match, if_none_match],
            "responses": _responses(404, 406, 412, 503, s204={
                "description": "Deleted.", "headers": {"Vary": VARY}}),
        },
        "options": _options(f"options{name}", "GET, HEAD, PUT, PATCH, DELETE, OPTIONS", patch=True,
                            templated=True),
        "head": _head(f"head{name}", {"200": {"ETag": ETAG, "Vary": VARY}, "304": {"ETag": ETAG, "Vary": VARY},
                                      "404": {"Vary": VARY}}, [if_none_match]),
    }


def _head(operation_id: str, headers: dict[str, dict[str, Any]],
          parameters: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """HEAD: the GET's status and headers, without a body (RFC 9110 §9.3.2)."""
    return {"operationId": operation_id, "summary": "As GET, without the body.",
            "parameters": list(parameters),
            "responses": {status: {"description": "As GET.", "headers": h}
                          for status, h in headers.items()}}


def _options(operation_id: str, allow: str, *, post: bool = False, patch: bool = False,
             templated: bool = False) -> dict[str, Any]:
    headers: dict[str, Any] = {"Allow": _header(f"`{allow}`", {"const": allow}), "Vary": VARY}
    if post:
        headers["Accept-Post"] = _header("The body types POST reads.")
    if patch:
        headers["Accept-Patch"] = _header("The body types PATCH reads.")
    responses: dict[str, Any] = {"204": {"description": "See Allow.", "headers": headers}}
    if templated:   # a path whose id names nothing (0, 01, -1, 2^63) is no resource
        responses["404"] = {"$ref": "#/components/responses/Problem404"}
    return {"operationId": operation_id, "summary": "The methods allowed here.",
            "responses": responses}


def _record_schemas(schema: Schema) -> tuple[dict[str, Any], dict[str, Any]]:
    """A record as the service sends it: JSON, and XML (where ids are text)."""
    properties: dict[str, Any] = {"id": {"type": "integer", "minimum": 1, "maximum": MAX_ID}}
    for field in schema.fields:
        properties[field] = {"type": "string", "minLength": 1}
    record = {"type": "object", "properties": properties, "required": list(properties),
              "additionalProperties": False, "xml": {"name": schema.name}}
    return record, record


def _request_schema(schema: Schema, required: bool, in_xml: bool) -> dict[str, Any]:
    properties = {f: describe(rule, in_xml=in_xml) for f, rule in schema.fields.items()}
    body: dict[str, Any] = {"type": "object", "properties": properties,
                            "additionalProperties": False, "xml": {"name": schema.name}}
    if required:
        body["required"] = list(properties)
    return body


def _common_schemas() -> dict[str, Any]:
    link = {"type": "object", "required": ["rel", "href"], "properties": {
        "rel": {"type": "string", "xml": {"attribute": True}},
        "href": {"type": "string", "format": "uri", "xml": {"attribute": True}},
        "title": {"type": "string", "xml": {"attribute": True}},
        "type": {"type": "string", "xml": {"attribute": True}}}, "xml": {"name": "link"}}
    return {
        "Health": {"type": "object", "required": ["status"], "xml": {"name": "health"},
                   "properties": {"status": {"const": "ok"}}},
        "ServiceRoot": {"type": "object", "required": ["title", "links"], "xml": {"name": "service"},
                        "properties": {"title": {"type": "string"},
                                       "links": {"type": "array", "items": link}}},
        "Problem": {
            "type": "object", "description": "RFC 9457. In XML: <problem xmlns=\"urn:ietf:rfc:7807\">.",
            "required": ["type", "title", "status", "detail"],
            "xml": {"name": "problem", "namespace": "urn:ietf:rfc:7807"},
            "properties": {
                "type": {"type": "string", "const": "about:blank"},
                "title": {"type": "string"},
                "status": {"type": "integer", "minimum": 400, "maximum": 599},
                "detail": {"type": "string"},
                "errors": {"type": "array", "xml": {"wrapped": True},
                           "items": {"type": "object", "required": ["pointer", "detail"],
                                     "xml": {"name": "error"},
                                     "properties": {"pointer": {"type": "string"},
                                                    "detail": {"type": "string"}}}},
                "available": {"type": "array", "items": {"type": "string", "xml": {"name": "i"}},
                              "xml": {"wrapped": True}},
                "max_body_size": {"type": "integer"},
            },
        },
    }
