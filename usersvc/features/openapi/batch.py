"""``POST /batch`` in the OpenAPI document: the path and the schemas of a
batch and its answer (``usersvc.features.batch`` serves it)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...representation.json_format import JSON_TYPE
from ...schema import Schema
from ..batch import BODY_TYPES, PATH
from .parts import VARY, header, idempotency_key, operation_responses


def batch_paths(collections: Sequence[Schema], max_batch: int, idempotency_ttl: float | None,
                schemas: dict[str, Any]) -> dict[str, Any]:
    """The batch's path item, and its schemas added to ``schemas``;
    ``idempotency_ttl``: ``None`` when the batch honours no ``Idempotency-Key``."""
    schemas["Batch"] = {
        "type": "object", "required": ["requests"], "additionalProperties": False,
        "properties": {"requests": {
            "type": "array", "minItems": 1, "items": {"$ref": "#/components/schemas/BatchRequest"},
            "description": f"One request or more; more than {max_batch} is a 413."}}}
    # One schema per kind of request of each collection, so that a client
    # (and a generated one) knows which body goes with which path.
    record = {"type": "string", "pattern": "^/{plural}/[1-9][0-9]{{0,18}}$",
              "description": "A record: `/{plural}/7`."}
    kinds = []
    for schema in collections:
        name, plural = schema.name.capitalize(), schema.plural
        path = {k: v.format(plural=plural) for k, v in record.items()}
        for method, body, at in (("POST", "Create", {"const": f"/{plural}"}),
                                 ("PUT", "Replace", path), ("PATCH", "Patch", path),
                                 ("DELETE", None, path)):
            properties = {"method": {"const": method}, "path": at,
                          "headers": {"$ref": "#/components/schemas/BatchHeaders"}}
            if body is not None:
                properties["body"] = {"$ref": f"#/components/schemas/{name}{body}"}
            schemas[f"Batch{method.capitalize()}{name}"] = {
                "type": "object", "additionalProperties": False, "properties": properties,
                "required": ["method", "path", *(["body"] if body else [])]}
            kinds.append({"$ref": f"#/components/schemas/Batch{method.capitalize()}{name}"})
    schemas["BatchHeaders"] = {
        "type": "object", "additionalProperties": False,
        "description": "Names in any case; only these three.",
        "properties": {"If-Match": {"type": "string"}, "If-None-Match": {"type": "string"},
                       "Content-Type": {"enum": list(BODY_TYPES)}}}
    schemas["BatchRequest"] = {
        "description": "One write, made as if sent alone (its path without any mount prefix).",
        "anyOf": kinds}     # (exactly one: their paths tell them apart, which a linter cannot see)
    schemas["BatchAnswer"] = {
        "type": "object", "required": ["responses"], "additionalProperties": False,
        "properties": {"responses": {"type": "array", "items": {
            "type": "object", "required": ["status", "headers"], "additionalProperties": False,
            "properties": {
                "status": {"type": "integer", "enum": [200, 201, 204]},
                "headers": {"type": "object", "additionalProperties": False, "properties": {
                    "Location": {"type": "string", "format": "uri"},
                    "ETag": {"type": "string"}}},
                "body": {"type": "object", "description": "The record (none for a 204)."}}}}}}
    return {PATH: {
        "post": {
            "operationId": "batch", "summary": "Several writes, made together or not at all.",
            "description": "The requests are made in order, each as if sent alone, against "
                           "what the ones before it left, in one atomic step of the store. "
                           "All succeed: 200 with each answer, in order. One fails: nothing "
                           "of the batch is kept, and the answer is that request's problem, "
                           "whose `request` member is its index. JSON only.",
            "parameters": [] if idempotency_ttl is None else [idempotency_key(idempotency_ttl)],
            "requestBody": {"required": True, "content": {
                JSON_TYPE: {"schema": {"$ref": "#/components/schemas/Batch"}}}},
            "responses": operation_responses(
                400, 403, 404, 405, 406, 409, 412, 413, 415, 422, 503, s200={
                    "description": "Every request was made: their answers, in order.",
                    "headers": {"Vary": VARY},
                    "content": {JSON_TYPE: {
                        "schema": {"$ref": "#/components/schemas/BatchAnswer"}}}}),
        },
        "options": {
            "operationId": "optionsBatch", "summary": "The methods allowed here.",
            "description": "204 with `Allow` and `Accept-Post`.",
            "responses": {"204": {"description": "See Allow.", "headers": {
                "Allow": header("`POST, OPTIONS`", {"const": "POST, OPTIONS"}), "Vary": VARY,
                "Accept-Post": header("The body types POST reads.")}},
                "400": {"$ref": "#/components/responses/Problem400"}}},
    }}
