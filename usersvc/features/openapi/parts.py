"""The pieces the OpenAPI document is made of: headers, problem responses,
request and record schemas (``document`` puts them together)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...fields import Folded
from ...listing import DEFAULT_LIMIT, MAX_CURSOR, MAX_LIMIT, MAX_Q
from ...representation.json_format import JSON_TYPE
from ...schema import Schema
from ...storage import MAX_ID
from .asked import PLAIN, asked_parameters, fields_parameter, query_schema

JSON_BODY = (JSON_TYPE,)
XML_BODY = ("application/xml", "text/xml")
#: The HTML representation, for people: a page (docs/api.md, "Pages").
PAGE = {"text/html": {"schema": {
    "type": "string", "description": "An HTML page for a person in a browser: the same data, "
                                     "with links and forms; see docs/api.md, Pages."}}}
PROBLEM = {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}},
           "application/problem+xml": {"schema": {"$ref": "#/components/schemas/Problem"}},
           **PAGE}

DESCRIPTIONS = {
    400: "The request is malformed: bad syntax in the body (JSON or XML), a "
         "body that is missing, not UTF-8 or holds a DOCTYPE, or a bad query parameter.",
    403: "A write from a page of another site, refused by the cross-origin protection.",
    404: "There is no such record (never was, or was deleted).",
    405: "The method is not allowed at that path (`Allow` says which are).",
    406: "None of the service's media types is acceptable (`available` lists them).",
    409: "A unique field's value (text compared ignoring case) belongs to another record; "
         "`errors` points at the field.",
    412: "If-Match or If-None-Match does not hold: the record has changed. Nothing was written.",
    413: "The body is larger than the limit (`max_body_size`).",
    415: "The body's Content-Type is not one the operation reads.",
    422: "The document is well-formed but not a valid record; `errors` lists every "
         "field at fault, with a JSON Pointer.",
    503: "The store is busy or unreachable, or cannot write (a full disk, a read-only "
         "database); nothing was written. Try again after Retry-After.",
}


def header(description: str, schema: dict[str, Any] | None = None,
            required: bool = True) -> dict[str, Any]:
    return {"description": description, "required": required,
            "schema": schema or {"type": "string"}}


VARY = header("`Accept`: every response may differ by it (and `Origin`, with CORS on).",
              {"type": "string", "pattern": "^Accept(, Origin)?$"})
VARY_PREFER = header("`Accept, Prefer`: a page may differ by both (and `Origin`, with CORS on).",
                     {"type": "string", "pattern": "^Accept, Prefer(, Origin)?$"})
NO_STORE = header("`no-store`.", {"const": "no-store"})
CACHE = header("`no-cache`: revalidate with the ETag before reusing.", {"const": "no-cache"})
ETAG = header('A strong entity-tag: `"{id}-{version}"` in JSON, `"{id}-{version}-xml"` in XML, '
              '`"{id}-{version}-html"` for the page; with `fields=`, the names after a dot each '
              '(`"{id}-{version}.name.email"`).',
              {"type": "string", "pattern": '^"[0-9]+-[0-9]+(-xml|-html)?(\\.[a-z0-9_]+)*"$'})
BODY_ETAG = header("A strong entity-tag made from the representation's bytes.",
                    {"type": "string", "pattern": '^"[0-9a-f]{24}"$'})
IF_NONE_MATCH = {"name": "If-None-Match", "in": "header", "required": False,
                 "schema": {"type": "string"},
                 "description": "304 Not Modified if the representation still has one of "
                                "these ETags."}


def not_modified(etag: dict[str, Any], **headers: Any) -> dict[str, Any]:
    """A 304, with the headers the 200 would have had (RFC 9110 §15.4.5)."""
    return {"description": "Not Modified: the ETag in If-None-Match is current.",
            "headers": {"ETag": etag, "Vary": VARY, "Cache-Control": CACHE, **headers}}


def list_parameters(schema: Schema) -> list[dict[str, Any]]:
    """The query parameters (and ``Prefer``) of a collection's page: those
    ``listing.known_parameters`` names, with their bounds."""
    def query(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
        return {"name": name, "in": "query", "required": False, "schema": schema,
                "description": description}

    sorted_too = len(schema.sorts) > 1
    orders = [*schema.sorts, *("-" + s for s in schema.sorts)]
    return [
        query("limit", {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT,
                        "default": DEFAULT_LIMIT}, "How many records a page holds at most."),
        *([query("sort", {"type": "string", "enum": orders, "default": "id"},
                 "The order: by id, or by a field (text case-folded) and then by id, "
                 "the records without a value last; a leading `-` reverses it (and "
                 "keeps those last).")] if sorted_too else []),
        query("after", {"type": "integer", "minimum": 0, "maximum": MAX_ID},
              "In id order only: the records past this id (for `-id`, below it). "
              "Not with `cursor`."),
        *([query("cursor", {"type": "string", "pattern": "^[A-Za-z0-9_-]+$",
                            "maxLength": MAX_CURSOR},
                 "Opaque: the position the `next` link of a page in another order "
                 "carries. Follow links; never build one. A cursor altered or used "
                 "with another order or filters is a 400.")] if sorted_too else []),
        *(query(f, PLAIN,
                f"Only the {schema.name} with this {f}, ignoring case "
                "(any text: one that no record has finds nothing).")
          if isinstance(schema.fields[f], Folded) else
          query(f, query_schema(schema.fields[f]), f"Only the {schema.plural} with this {f} "
                "(a value not of its kind is a 400).")
          for f in schema.filters),
        *asked_parameters(schema, query),     # (``asked``)
        fields_parameter(schema),
        *([query("q", {**PLAIN, "minLength": 1, "maxLength": MAX_Q},
                 "Search: the records with a word of "
                 + " or ".join([*(f"the {f}" for f in schema.words)])
                 + "".join(f", or the {f} itself," for f in schema.prefixes)
                 + " starting with this text, ignoring case, accents and marks "
                   "(folded: `emile` finds Émile, `lodz` Łódź).")] if schema.searchable else []),
        {"name": "Prefer", "in": "header", "required": False, "schema": {"type": "string"},
         "description": "`count=exact` (RFC 7240): count every record the filters keep, "
                        "in `X-Total-Count`."},
        IF_NONE_MATCH,
    ]


def list_headers() -> dict[str, Any]:
    """The headers of a page (200) beside ``ETag`` and ``Link``, as a 304
    repeats them."""
    return {"Vary": VARY_PREFER, "Cache-Control": CACHE,
            "Preference-Applied": header("`count=exact`, when `Prefer` asked for a count.",
                                         {"const": "count=exact"}, required=False),
            "X-Total-Count": header("How many records the filters keep on all pages, "
                                    "when `Prefer: count=exact` asked.",
                                    {"type": "string", "pattern": "^[0-9]+$"}, required=False)}


def problem(status: int, **headers: Any) -> dict[str, Any]:
    return {"description": DESCRIPTIONS[status], "content": PROBLEM,
            "headers": {"Vary": VARY, **headers}}


def operation_responses(*statuses: int, **ok: dict[str, Any]) -> dict[str, Any]:
    """``ok``: the success responses by status; the rest are problems."""
    responses = {status.removeprefix("s"): answer for status, answer in ok.items()}
    for status in statuses:
        extra: dict[str, Any] = {}
        if status == 503:
            extra["Retry-After"] = header("Seconds to wait: 1 (busy), 10 (a full disk...).",
                                          {"type": "string"})
        responses[str(status)] = {"$ref": f"#/components/responses/Problem{status}"} \
            if not extra else problem(status, **extra)
    return responses


def content(ref: str, types: Sequence[str] = JSON_BODY + XML_BODY) -> dict[str, Any]:
    return {t: {"schema": {"$ref": f"#/components/schemas/{ref}{'Xml' if t in XML_BODY else ''}"}}
            for t in types}


_ASSET_KINDS = {"css": ("style sheet", "PageStyle"), "js": ("script", "PageScript"),
                "svg": ("icon", "PageIcon")}


def asset_paths(assets: Mapping[str, str]) -> dict[str, Any]:
    """The files the HTML pages load (path -> media type): open to all, one
    representation each."""
    def item(path: str, media_type: str) -> dict[str, Any]:
        kind, name = _ASSET_KINDS[path.rpartition(".")[2]]
        ok = {"description": f"The pages' {kind}.",
              "headers": {"ETag": BODY_ETAG, "Cache-Control": CACHE},
              "content": {media_type: {"schema": {"type": "string"}}}}
        return {
            "get": {"operationId": f"get{name}", "summary": f"The HTML pages' {kind}.",
                    "description": "Served from the package, the same for every client; "
                                   "needs no token.",
                    "security": [], "parameters": [IF_NONE_MATCH],
                    "responses": {"200": ok, "304": {"description": "Not Modified.",
                                                     "headers": ok["headers"]},
                                  "400": {"$ref": "#/components/responses/Problem400"}}},
            "head": {"operationId": f"head{name}", "summary": "As GET, without the body.",
                     "description": "The same statuses and headers as GET, and no body.",
                     "security": [], "parameters": [IF_NONE_MATCH],
                     "responses": {"200": {"description": "As GET.", "headers": ok["headers"]},
                                   "304": {"description": "As GET.", "headers": ok["headers"]},
                                   "400": {"description": DESCRIPTIONS[400] + " (As GET, "
                                                          "without the body.)"}}},
            "options": {"operationId": f"options{name}", "summary": "The methods allowed here.",
                        "description": "204 with `Allow`.", "security": [],
                        "responses": {"204": {"description": "See Allow.", "headers": {
                            "Allow": header("`GET, HEAD, OPTIONS`",
                                            {"const": "GET, HEAD, OPTIONS"})}},
                            "400": {"$ref": "#/components/responses/Problem400"}}},
        }
    return {path: item(path, media_type.partition(";")[0])
            for path, media_type in sorted(assets.items())}


def record_schemas(schema: Schema) -> tuple[dict[str, Any], dict[str, Any]]:
    """A record as the service sends it: JSON, and XML (where ids are text)."""
    properties: dict[str, Any] = {"id": {"type": "integer", "minimum": 1, "maximum": MAX_ID}}
    for field, kind in schema.fields.items():
        properties[field] = kind.describe_stored()
        if field in schema.read_only:
            properties[field] = {**properties[field], "readOnly": True, "description":
                                 f"When the service {field} the {schema.name} (UTC, in "
                                 "milliseconds); a PUT or PATCH may send it back unchanged."}
    record = {"type": "object", "properties": properties,
              "required": ["id", *schema.required, *sorted(schema.read_only)],
              "additionalProperties": False, "xml": {"name": schema.name}}
    return record, record


def request_schema(schema: Schema, required: bool, in_xml: bool) -> dict[str, Any]:
    """A request's record: every required field (``required``: a create or
    a replacement), or any of them (a patch). JSON's ``null`` is no value
    for an optional field: left out of a create or replacement, removed by
    a patch."""
    properties = {}
    for field, kind in schema.fields.items():
        if field in schema.read_only:
            continue
        described = kind.describe(in_xml)
        if field in schema.unique:
            unique = ", ignoring case." if isinstance(kind, Folded) else "."
            described = {**described, "description": (described.get("description", "") +
                                                       " Unique" + unique).strip()}
        if field in schema.optional:
            described = {**described, "description": (described.get("description", "") +
                                                       " Optional: may be left out.").strip()}
            if not in_xml:
                described = {"anyOf": [described, {"type": "null"}],
                             "description": "Optional; null is no value (the same as leaving "
                                            "it out; in a patch, null removes it)."}
        properties[field] = described
    body: dict[str, Any] = {"type": "object", "properties": properties,
                            "additionalProperties": False, "xml": {"name": schema.name}}
    if required:
        body["required"] = list(schema.required)
    return body


def common_schemas() -> dict[str, Any]:
    link = {"type": "object", "required": ["rel", "href"], "properties": {
        "rel": {"type": "string", "xml": {"attribute": True}},
        "href": {"type": "string", "format": "uri", "xml": {"attribute": True}},
        "title": {"type": "string", "xml": {"attribute": True}},
        "type": {"type": "string", "xml": {"attribute": True}}}, "xml": {"name": "link"}}
    return {
        "Health": {"type": "object", "required": ["status", "version"], "xml": {"name": "health"},
                   "properties": {"status": {"const": "ok"},
                                  "version": {"type": "string", "description":
                                              "The usersvc release serving."}}},
        "ServiceRoot": {"type": "object", "required": ["title", "links"],
                        "xml": {"name": "service"},
                        "properties": {"title": {"type": "string"},
                                       "links": {"type": "array", "items": link}}},
        "Problem": {
            "type": "object",
            "description": "RFC 9457. In XML: <problem xmlns=\"urn:ietf:rfc:7807\">.",
            "required": ["type", "title", "status", "detail"],
            "xml": {"name": "problem", "namespace": "urn:ietf:rfc:7807"},
            "properties": {
                "type": {"type": "string", "format": "uri-reference", "default": "about:blank",
                         "description": "What kind of problem this is; `about:blank` (the "
                                        "only one usersvc sends now): the status says it all."},
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
                "max_batch": {"type": "integer"},
                "request": {"type": "integer", "minimum": 0, "description":
                            "A batch's answer: which of its requests failed (0: the first)."},
                "headers": {"type": "object", "additionalProperties": {"type": "string"},
                            "description": "A batch's answer: the headers the failed "
                                           "request's own answer had (`Allow`...)."},
            },
        },
    }


def idempotency_key(ttl: float) -> dict[str, Any]:
    """The ``Idempotency-Key`` header of POST and PATCH (the idempotency feature's)."""
    from ..idempotency import BARE, MAX_LENGTH, QUOTED
    # The key's own characters, 1 to MAX_LENGTH of them, quoted or bare.
    quoted = QUOTED.replace(")*)", f"){{1,{MAX_LENGTH}}})")
    bare = BARE.replace("]+", f"]{{1,{MAX_LENGTH}}}")
    return {
        "name": "Idempotency-Key", "in": "header", "required": False,
        "schema": {"type": "string", "pattern": f"^(?:{quoted}|{bare})$"},
        "description": "Makes the write safe to retry (draft-ietf-httpapi-idempotency-key-header): "
                       f"1 to {MAX_LENGTH} characters, as a Structured Field string or bare. "
                       "The answer to the first request with a key is kept with its write for "
                       f"{ttl:g} seconds; the same request again with the key gets that answer "
                       "again and changes nothing. The key with another request is a 422. "
                       "Answers given before the write (400, 413, 415, 422) and 5xx are not "
                       "kept. With bearer tokens, a key is the token's own."}


def collection_names(schemas: Sequence[Schema]) -> str:
    """``The collection users``, ``The collections users and books``."""
    plurals = [s.plural for s in schemas]
    names = " and ".join(filter(None, [", ".join(plurals[:-1]), plurals[-1]]))
    return f"The collection{'s' * (len(plurals) > 1)} {names}"
