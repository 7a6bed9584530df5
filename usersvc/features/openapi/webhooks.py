"""Webhooks in the OpenAPI document (``usersvc.features.webhooks`` serves
them): the subscriptions' paths, ``/webhooks`` and ``/webhooks/{id}``,
and OpenAPI 3.1's top-level ``webhooks`` object, which says what a
receiver is sent for each collection, with what headers, and what its
answers do. Built from what the routes (``webhooks.routes``) and the
sender (``webhooks.sender``, ``webhooks.signing``) write, so that a
subscription's JSON and a delivery's body can be held to it."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...representation.json_format import JSON_TYPE
from ...schema import Schema
from ...storage import MAX_ID
from .parts import NO_STORE, VARY, header, operation_responses, problem
from .served import head, options

PATH = "/webhooks"      # (the feature's ``routes.PATH``; its module is not imported here)
MERGE_PATCH = "application/merge-patch+json"
TAG = "webhooks"
_SCHEMAS = "#/components/schemas/"


def _ref(name: str) -> dict[str, str]:
    return {"$ref": _SCHEMAS + name}


def _subscription(plurals: list[str], secret: bool) -> dict[str, Any]:
    """A subscription as the routes show it (``routes.shown``): its secret
    only in the answer to the POST that made it."""
    stamp = {"type": "string", "format": "date-time"}
    properties: dict[str, Any] = {
        "id": {"type": "integer", "minimum": 1, "maximum": MAX_ID},
        "url": {"type": "string", "format": "uri", "description": "Where each change is POSTed."},
        "collections": {
            "type": "array", "minItems": 1, "uniqueItems": True,
            "items": {"type": "string", "enum": plurals},
            "description": "The collections it hears of; left out: every collection, "
                           "those served later too."},
        "enabled": {"type": "boolean", "description": "Whether changes are being delivered; "
                                                      "`false`: turned off by a PATCH, or "
                                                      "by the service (`disabled_reason`)."},
        "delivered": {
            "type": "object", "additionalProperties": {"type": "integer", "minimum": 0},
            "description": "Each collection covered: the position of the last change its "
                           "receiver acknowledged (the change feed's `seq`)."},
        "failures": {"type": "integer", "minimum": 0,
                     "description": "Attempts failed in a row (0 once one succeeds)."},
        "next_attempt": {"anyOf": [stamp, {"type": "null"}],
                         "description": "When the next attempt is due after a failure; "
                                        "null: at once, or none (disabled)."},
        "last_failure": {"anyOf": [_ref("WebhookFailure"), {"type": "null"}]},
        "disabled_reason": {"type": ["string", "null"],
                            "description": "Why the service turned it off (a 410, the "
                                           "retries exhausted); null: it did not."},
        "created": stamp,
    }
    required = ["id", "url", "enabled", "delivered", "failures", "next_attempt",
                "last_failure", "disabled_reason", "created"]
    described = "A webhook subscription and its state, never its secret."
    if secret:
        properties["secret"] = {
            "type": "string", "pattern": "^whsec_[A-Za-z0-9+/]+={0,2}$",
            "description": "What signs every delivery (`webhook-signature`; Standard "
                           "Webhooks): shown here only, never again. Keep it; to change it, "
                           "make another subscription."}
        required.append("secret")
        described = "The subscription just made, with its secret, shown this once."
    return {"type": "object", "description": described, "required": required,
            "properties": properties, "additionalProperties": False}


def subscription_schemas(plurals: list[str], schemas: dict[str, Any]) -> None:
    """The schemas of the subscriptions' bodies, added to ``schemas``."""
    at = {"type": "string", "format": "date-time"}
    schemas["WebhookFailure"] = {
        "description": "The last failed attempt: when, and the receiver's status, or what "
                       "went wrong when there was none (`timed out`, `connection refused`...).",
        "oneOf": [
            {"type": "object", "required": ["at", "status"], "additionalProperties": False,
             "properties": {"at": at, "status": {"type": "integer", "minimum": 100,
                                                 "maximum": 599}}},
            {"type": "object", "required": ["at", "error"], "additionalProperties": False,
             "properties": {"at": at, "error": {"type": "string"}}}]}
    schemas["WebhookSubscription"] = _subscription(plurals, secret=False)
    schemas["WebhookSubscriptionMade"] = _subscription(plurals, secret=True)
    schemas["WebhookSubscriptionList"] = {"type": "array", "items": _ref("WebhookSubscription")}
    collections = schemas["WebhookSubscription"]["properties"]["collections"]
    position = {"type": "integer", "minimum": 0, "maximum": MAX_ID}
    schemas["WebhookSubscriptionCreate"] = {
        "type": "object", "required": ["url"], "additionalProperties": False,
        "properties": {
            "url": {"type": "string", "format": "uri", "maxLength": 2000,
                    "description": "An http or https URL, without user, password or "
                                   "fragment; its host must resolve to public addresses "
                                   "only (unless `webhooks_allow_private`), checked now and "
                                   "at every attempt. Redirects are not followed."},
            "collections": collections,
            "after": {"description": "Where to start: the changes after this position, in "
                                     "every collection covered, or one position per "
                                     "collection; each at most the feed's last. Left out: "
                                     "each feed's end (only what changes next).",
                      "oneOf": [position, {"type": "object", "additionalProperties": position,
                                           "propertyNames": {"enum": plurals}}]}}}
    schemas["WebhookSubscriptionPatch"] = {
        "type": "object", "additionalProperties": False,
        "description": "JSON Merge Patch (RFC 7396): the members sent are changed. A new URL, "
                       "or `enabled` turned back on, starts the retries anew, at once.",
        "properties": {
            "url": schemas["WebhookSubscriptionCreate"]["properties"]["url"],
            "collections": {"anyOf": [collections, {"type": "null"}],
                            "description": "null: every collection. One newly covered is "
                                           "delivered from its feed's end."},
            "enabled": {"type": "boolean"}}}


def webhook_paths(plurals: list[str], secured: bool, schemas: dict[str, Any]) -> dict[str, Any]:
    """The path items of ``/webhooks`` and ``/webhooks/{id}``, their schemas
    added to ``schemas``; ``secured``: every operation needs a ``write`` token,
    its GET too (a subscription's URL may be a secret of its owner's)."""
    subscription_schemas(plurals, schemas)
    one = {JSON_TYPE: {"schema": _ref("WebhookSubscription")}}
    answer = {"Cache-Control": NO_STORE, "Vary": VARY}
    writes = (400, 403, 406, 413, 415, 422, 503)
    accepts = {"post": {"Accept-Post": header("`application/json`: what POST reads.",
                                              {"const": JSON_TYPE})},
               "patch": {"Accept-Patch": header("What PATCH reads: `application/json, "
                                                f"{MERGE_PATCH}`.")}}
    id_param = {"name": "id", "in": "path", "required": True,
                "schema": {"type": "integer", "minimum": 1, "maximum": MAX_ID},
                "description": "The subscription's id: a canonical decimal."}
    by_id = {"id": "$response.body#/id"}
    paths: dict[str, Any] = {
        PATH: {
            "get": {
                "operationId": "listWebhooks", "summary": "Every webhook subscription.",
                "description": "Each subscription with its state, without its secret. "
                               "JSON only; no query parameters (one is a 400).",
                "responses": operation_responses(400, 406, 503, s200={
                    "description": "Every subscription, in id order.", "headers": answer,
                    "content": {JSON_TYPE: {"schema": _ref("WebhookSubscriptionList")}}}),
            },
            "head": head("headWebhooks", {"200": answer}, (), (400, 406, 503)),
            "post": {
                "operationId": "createWebhook",
                "summary": "Subscribe a URL to the changes of some collections.",
                "description": "Each change of the collections covered is POSTed to `url`, "
                               "signed, in each collection's feed order, none skipped, until "
                               "its receiver answers 2xx (see `webhooks`). The answer holds "
                               "the `secret` that signs them: shown this once.",
                "requestBody": {"required": True, "content": {
                    JSON_TYPE: {"schema": _ref("WebhookSubscriptionCreate")}}},
                "responses": operation_responses(*writes, s201={
                    "description": "Subscribed: the subscription, with its secret.",
                    "headers": {"Location": header("The subscription's URL.",
                                                   {"type": "string", "format": "uri"}),
                                **answer},
                    "content": {JSON_TYPE: {"schema": _ref("WebhookSubscriptionMade")}},
                    "links": {"GetWebhook": {"operationId": "getWebhook", "parameters": by_id},
                              "ChangeWebhook": {"operationId": "changeWebhook",
                                                "parameters": by_id},
                              "DeleteWebhook": {"operationId": "deleteWebhook",
                                                "parameters": by_id}}}),
            },
            "options": options("optionsWebhooks", "GET, HEAD, POST, OPTIONS", post=True),
        },
        PATH + "/{id}": {
            "parameters": [id_param],
            "get": {
                "operationId": "getWebhook", "summary": "One webhook subscription, and its state.",
                "description": "Where its deliveries are (`delivered`), its failures in a "
                               "row, when it tries again, why it was disabled; never its secret.",
                "responses": operation_responses(400, 404, 406, 503, s200={
                    "description": "The subscription.", "headers": answer, "content": one}),
            },
            "head": head("headWebhook", {"200": answer}, (), (400, 404, 406, 503)),
            "patch": {
                "operationId": "changeWebhook",
                "summary": "Change a subscription's URL or collections, or turn it off or on.",
                "description": "A merge patch of `url`, `collections` and `enabled`; any "
                               "other member is a 422 (the secret cannot be changed).",
                "requestBody": {"required": True, "content": {
                    JSON_TYPE: {"schema": _ref("WebhookSubscriptionPatch")},
                    MERGE_PATCH: {"schema": _ref("WebhookSubscriptionPatch")}}},
                "responses": operation_responses(404, *writes, s200={
                    "description": "The subscription, changed.", "headers": answer,
                    "content": one}),
            },
            "delete": {
                "operationId": "deleteWebhook", "summary": "End a subscription.",
                "description": "Nothing more is sent to it once its sender has seen it "
                               "go, at once (an attempt already under way ends as it will).",
                "responses": operation_responses(400, 403, 404, 406, 503, s204={
                    "description": "Ended.", "headers": answer}),
            },
            "options": options("optionsWebhook", "GET, HEAD, PATCH, DELETE, OPTIONS",
                               patch=True, templated=True),
        },
    }
    for item in paths.values():
        for method, operation in item.items():
            if method == "parameters":
                continue
            operation["tags"] = [TAG]
            if method in accepts:       # (a 415 says what it reads)
                operation["responses"]["415"] = problem(415, **accepts[method])
            if secured:
                _write_token(operation)
    return paths


def _write_token(operation: dict[str, Any]) -> None:
    """A ``write`` token, whatever the method: a read token is a 403
    (the tokens' responses: ``tokens.secure``, which skips an operation
    that declares its ``security``)."""
    operation["security"] = [{"bearer": []}]
    operation["description"] += " Needs a `write` token, whatever the method."
    responses = operation["responses"]
    responses["401"] = {"$ref": "#/components/responses/Problem401Auth"}
    responses["403"] = {"$ref": "#/components/responses/Problem403Auth"}
    responses.setdefault("400", {"$ref": "#/components/responses/Problem400"})


def deliveries(collections: Sequence[Schema], retries: Sequence[float], timeout: float,
               schemas: dict[str, Any]) -> dict[str, Any]:
    """The top-level ``webhooks`` object: for each collection (with a
    change feed: its ``{Name}Changed`` and ``{Name}Deleted`` schemas, which
    ``feed.feed_paths`` adds), what a receiver is sent (``sender.pending``),
    with the Standard Webhooks headers (``signing``), and what its answers
    do; ``retries``: the seconds before each retry, ``timeout``: an
    attempt's. The payloads' schemas are added to ``schemas``."""
    delays = ", ".join(f"{d:g}" for d in retries)
    parameters = [
        {"name": "webhook-id", "in": "header", "required": True,
         "description": "The message's id, `<plural>.<position>.<history>`: the same on every "
                        "retry of a change, and when a change is sent again (delivery is at "
                        "least once: a process stopped after the receiver's 2xx and before "
                        "it wrote so sends it again). Deduplicate by it.",
         "schema": {"type": "string", "pattern": r"^[a-z][a-z0-9_]*\.[0-9]+\.[0-9a-f]{12}$"}},
        {"name": "webhook-timestamp", "in": "header", "required": True,
         "description": "When this attempt was signed, in Unix seconds: refuse one too old "
                        "(the `standardwebhooks` package does, past five minutes).",
         "schema": {"type": "string", "pattern": "^[0-9]+$"}},
        {"name": "webhook-signature", "in": "header", "required": True,
         "description": "`v1,` and the base64 of the HMAC-SHA256 of `<webhook-id>.<webhook-"
                        "timestamp>.<body>` under the secret's bytes (the base64 after "
                        "`whsec_`). Verify it with a Standard Webhooks library.",
         "schema": {"type": "string", "pattern": "^v1,[A-Za-z0-9+/]+={0,2}$"}},
        {"name": "User-Agent", "in": "header", "required": True,
         "description": "`usersvc/<version> (webhooks)`.", "schema": {"type": "string"}},
    ]
    retry_after = header("Seconds, or an HTTP date: the next attempt no sooner (at most a day).",
                         required=False)
    responses = {
        "2XX": {"description": "Acknowledged: the change is delivered, and the next one is sent."},
        "410": {"description": "Gone: the subscription is disabled (`enabled: false`, "
                               "`disabled_reason`) and nothing more is sent to it until a "
                               "PATCH turns it on."},
        "default": {
            "description": f"Any other answer (a 3xx too: no redirect is followed), or none "
                           f"within {timeout:g} s: not delivered. The same message is sent "
                           f"again after {delays} seconds in turn (or later, as "
                           "`Retry-After` asks), and the changes after it wait; after the "
                           "last retry fails, the subscription is disabled. At most 64 KiB "
                           "of an answer is read.",
            "headers": {"Retry-After": retry_after}},
    }
    found: dict[str, Any] = {}
    for schema in collections:
        name, plural = schema.name.capitalize(), schema.plural
        stamp = {"type": "string", "format": "date-time",
                 "description": "When the message was made (UTC, to the millisecond); the "
                                "same on each retry."}
        kinds = []
        for kind, entry in (("changed", "Changed"), ("deleted", "Deleted")):
            schemas[f"{name}Webhook{entry}"] = {
                "type": "object", "required": ["type", "timestamp", "data"],
                "additionalProperties": False,
                "properties": {"type": {"const": f"{schema.name}.{kind}"}, "timestamp": stamp,
                               "data": {**_ref(f"{name}{entry}"),
                                        "description": f"The entry of `GET /{plural}/changes`."}}}
            kinds.append(_ref(f"{name}Webhook{entry}"))
        schemas[f"{name}Webhook"] = {"oneOf": kinds}
        found[plural] = {"post": {
            "operationId": f"receive{name}Change", "tags": [TAG],
            "summary": f"A change of the {plural}, POSTed to a subscription's URL.",
            "description": f"One message for each entry of `GET /{plural}/changes` past the "
                           "subscription's position, in feed order, one at a time: the next "
                           "is sent once this one is acknowledged. A record changed several "
                           "times before it is sent is sent once, as it is then "
                           "(`"
                           f"{schema.name}.changed`), or as a tombstone (`{schema.name}.deleted`).",
            "security": [],     # (what a receiver checks is the signature)
            "parameters": parameters,
            "requestBody": {"required": True, "content": {
                JSON_TYPE: {"schema": _ref(f"{name}Webhook")}}},
            "responses": responses,
        }}
    return found
