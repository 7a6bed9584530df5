"""The webhooks feature in the OpenAPI document (issue 60, "Seen"; the
description: usersvc/features/openapi/webhooks.py): ``/webhooks`` and
``/webhooks/{id}`` in ``paths``, and the top-level ``webhooks`` object,
only with the feature; the document valid (openapi-spec-validator, as
tests/test_openapi.py); the routes' real answers, and the real deliveries
a receiver gets (verified with ``standardwebhooks``), valid by the
schemas the document gives; and every webhooks operation held to the
document by schemathesis.
"""
from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
import pytest
import schemathesis
import test_webhooks
from books import BOOKS
from hypothesis import HealthCheck, given, settings
from openapi_spec_validator import validate
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012
from test_webhooks import (
    FEATURES,
    WRITER,
    create,
    served,
    state,
    subscribe,
    until,
    verified,
)
from webob import Request

from usersvc import DEFAULT_FEATURES, USER, make_app

DOCUMENT = "urn:usersvc:openapi"


receiver = test_webhooks.receiver      # (the fixture: a receiver, closed after)


def described(client, token: str | None = None) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    response = client.get("/openapi.json", headers=headers)
    assert response.status_code == 200, response.text
    document = response.json
    validate(document)          # raises on any error
    return document


def schema_of(document: dict[str, Any], name: str) -> jsonschema.Draft202012Validator:
    """A validator of the document's ``components/schemas/<name>``, its
    ``$ref``s resolved in the document."""
    registry = Registry().with_resource(
        DOCUMENT, Resource(contents=document, specification=DRAFT202012))
    return jsonschema.Draft202012Validator(
        {"$ref": f"{DOCUMENT}#/components/schemas/{name}"}, registry=registry,
        format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


def valid(document: dict[str, Any], name: str, instance: Any) -> None:
    errors = [e.message for e in schema_of(document, name).iter_errors(instance)]
    assert not errors, (name, instance, errors)


def invalid(document: dict[str, Any], name: str, instance: Any) -> None:
    assert not schema_of(document, name).is_valid(instance), (name, instance)


@pytest.mark.parametrize("tokens", [None, {WRITER: "write"}], ids=["open", "tokens"])
def test_the_document_describes_webhooks_only_with_the_feature(tokens):
    """With the feature: its two paths, with every method served, and one
    webhook a collection with a feed; without it: neither. Valid in both
    modes; with tokens, every operation of the paths needs a ``write``
    token (a 403 for a read token, GET too), and the webhooks themselves
    (what a receiver is sent) no token."""
    without = tuple(name for name in DEFAULT_FEATURES if name != "webhooks")
    for features, plugged in ((without, False), (FEATURES, True)):
        app = make_app("memory://", collections=(USER, BOOKS), features=features, tokens=tokens)
        try:
            request = Request.blank("/openapi.json")
            if tokens:
                request.headers["Authorization"] = f"Bearer {WRITER}"
            document = request.get_response(app).json
        finally:
            app.close()
        validate(document)
        paths = {p for p in document["paths"] if p.startswith("/webhooks")}
        assert ("webhooks" in document) == plugged
        assert paths == ({"/webhooks", "/webhooks/{id}"} if plugged else set())
        assert any(t["name"] == "webhooks" for t in document["tags"]) == plugged
        assert ("WebhookSubscription" in document["components"]["schemas"]) == plugged
        if not plugged:
            continue
        served_methods = {route.template.replace("{id:int}", "{id}"): set(route.allow.lower(
            ).split(", ")) for route in app.router.routes if route.template.startswith("/webhooks")}
        assert {p: set(document["paths"][p]) - {"parameters"} for p in paths} == served_methods
        assert set(document["webhooks"]) == {"users", "books"}
        for item in document["webhooks"].values():
            (operation,) = item.values()
            assert item.keys() == {"post"} and operation["security"] == []
            assert {p["name"] for p in operation["parameters"] if p["in"] == "header"} >= {
                "webhook-id", "webhook-timestamp", "webhook-signature"}
            assert set(operation["responses"]) == {"2XX", "410", "default"}
        for path in paths:
            for method, operation in document["paths"][path].items():
                if method == "parameters":
                    continue
                assert operation["tags"] == ["webhooks"]
                responses = operation["responses"]
                if tokens:
                    assert operation["security"] == [{"bearer": []}]
                    assert responses["403"] == {"$ref": "#/components/responses/Problem403Auth"}
                    assert "401" in responses
                else:
                    assert "security" not in operation and "401" not in responses


def test_the_secret_is_in_the_schema_of_the_answer_to_a_post_only():
    app = make_app("memory://", features=FEATURES)
    try:
        document = Request.blank("/openapi.json").get_response(app).json
    finally:
        app.close()
    schemas = document["components"]["schemas"]
    holding = sorted(name for name, schema in schemas.items()
                     if "secret" in schema.get("properties", {}))
    assert holding == ["WebhookSubscriptionMade"]
    assert "secret" in schemas["WebhookSubscriptionMade"]["required"]
    created = document["paths"]["/webhooks"]["post"]["responses"]["201"]
    assert created["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/WebhookSubscriptionMade"}
    for path in ("/webhooks", "/webhooks/{id}"):
        for method, operation in document["paths"][path].items():
            if method not in ("parameters", "post"):
                assert "WebhookSubscriptionMade" not in json.dumps(operation), (path, method)


def test_the_routes_answers_are_valid_by_the_document(receiver):
    """Real answers of every route, in every state a subscription shows
    (made, delivered, failing with a status, failing with an error,
    disabled by a 410, changed by a PATCH), and their problems, each valid
    by the schema the document gives it; and what the routes refuse, the
    request schemas refuse too."""
    receiver.answer = lambda delivery, before: (
        (410, {}) if delivery.path == "/gone" else
        (500, {"Retry-After": "3600"}) if delivery.path == "/failing" else (200, {}))
    with served("memory://", (USER, BOOKS)) as client:
        document = described(client)
        made = [subscribe(client, receiver.url("/ok"), collections=["users"]),
                subscribe(client, receiver.url("/failing"), after={"books": 0}),
                subscribe(client, receiver.url("/gone"))]
        for subscription in made:
            valid(document, "WebhookSubscriptionMade", subscription)
            invalid(document, "WebhookSubscription", subscription)      # (its secret)
        create(client, 1)
        until(lambda: state(client, made[0])["delivered"] == {"users": 1}, "delivered")
        until(lambda: state(client, made[1])["failures"] > 0, "failing")
        until(lambda: not state(client, made[2])["enabled"], "disabled by the 410")
        listed = client.get("/webhooks")
        assert listed.status_code == 200
        valid(document, "WebhookSubscriptionList", listed.json)
        shown = {s["id"]: s for s in listed.json}
        assert shown[made[1]["id"]]["last_failure"]["status"] == 500
        assert shown[made[1]["id"]]["next_attempt"] is not None
        assert shown[made[2]["id"]]["disabled_reason"]
        for subscription in made:
            valid(document, "WebhookSubscription", state(client, subscription))
        # An error, not a status: a target nobody listens on.
        nobody = client.patch(f"/webhooks/{made[1]['id']}",
                              json_body={"url": "http://127.0.0.1:9/nobody", "enabled": True})
        assert nobody.status_code == 200
        valid(document, "WebhookSubscription", nobody.json)
        until(lambda: (state(client, made[1])["last_failure"] or {}).get("error") is not None,
              "a failure without a status")
        valid(document, "WebhookSubscription", state(client, made[1]))
        changed = client.patch(f"/webhooks/{made[0]['id']}", json_body={"collections": None},
                               content_type="application/merge-patch+json")
        assert changed.status_code == 200
        valid(document, "WebhookSubscription", changed.json)
        # What the routes refuse, the request schemas refuse.
        refused = [{"url": "ftp://example.org/"}, {"collections": ["users"]},
                   {"url": receiver.url(), "collections": []},
                   {"url": receiver.url(), "collections": ["nothing"]},
                   {"url": receiver.url(), "after": -1},
                   {"url": receiver.url(), "secret": "whsec_AAAA"},
                   {"url": receiver.url(), "collections": None}]
        for body in refused:
            answer = client.post("/webhooks", json_body=body)
            assert answer.status_code == 422, (body, answer.text)
            assert answer.content_type == "application/problem+json"
            valid(document, "Problem", answer.json)
            if body.get("url") != "ftp://example.org/":     # (a form a schema cannot judge)
                invalid(document, "WebhookSubscriptionCreate", body)
        for body in [{"enabled": "yes"}, {"secret": "whsec_AAAA"}, {"id": 3}]:
            answer = client.patch(f"/webhooks/{made[0]['id']}", json_body=body)
            assert answer.status_code == 422, (body, answer.text)
            invalid(document, "WebhookSubscriptionPatch", body)
        deleted = client.delete(f"/webhooks/{made[2]['id']}")
        assert deleted.status_code == 204 and deleted.headers["Cache-Control"] == "no-store"
        assert client.get(f"/webhooks/{made[2]['id']}").status_code == 404


def test_every_delivery_is_valid_by_the_webhooks_object(receiver):
    """What a receiver gets for each collection, a change and a deletion,
    verified by the standard's package: its body valid by the payload's
    schema (``data`` the feed's entry), each header by its parameter's."""
    with served("memory://", (USER, BOOKS)) as client:
        document = described(client)
        subscription = subscribe(client, receiver.url())
        user = create(client, 1)
        receiver.wait_for(lambda got: len(got) == 1, "the user's change")     # (then its
        assert client.post("/books", json_body={"title": "Book", "isbn": "isbn-1"}
                           ).status_code == 201
        assert client.delete(f"/users/{user['id']}").status_code == 204    # tombstone)
        deliveries = receiver.wait_for(lambda got: len(got) == 3, "three changes")
    payloads = verified(deliveries, subscription["secret"])
    assert sorted(p["type"] for p in payloads) == ["book.changed", "user.changed",
                                                   "user.deleted"]
    for delivery, payload in zip(deliveries, payloads, strict=True):
        plural = delivery.id.split(".")[0]
        webhook = document["webhooks"][plural]["post"]
        (content,) = webhook["requestBody"]["content"].items()
        assert content[0] == delivery.headers["content-type"]
        valid(document, content[1]["schema"]["$ref"].rsplit("/", 1)[1], payload)
        for parameter in webhook["parameters"]:
            value = delivery.headers[parameter["name"].lower()]
            assert jsonschema.Draft202012Validator(parameter["schema"]).is_valid(value), (
                parameter["name"], value)
    # The schemas tell a change from a deletion, and a user's from a book's.
    user_changed = next(p for p in payloads if p["type"] == "user.changed")
    invalid(document, "UserWebhook", {**user_changed, "type": "user.deleted"})
    invalid(document, "BookWebhook", user_changed)


@pytest.mark.parametrize("tokens", [None, {WRITER: "write"}], ids=["open", "tokens"])
def test_every_webhooks_operation_keeps_to_the_document(receiver, tokens):
    """Schemathesis sends valid and invalid requests to each operation of
    ``/webhooks`` and ``/webhooks/{id}`` and checks every answer against the
    document: statuses, headers, bodies. (A subscription's URL is held to
    the receiver's here, so that no request resolves a made-up host: a URL
    the document admits may still not resolve, a 422 it cannot foresee.)"""
    config = schemathesis.Config.from_str("""
seed = 20261129

[generation]
mode = "all"
max-examples = 12

[checks.positive_data_acceptance]
expected-statuses = ["2xx", "404", "422"]
""")
    with served("memory://", tokens=tokens) as client:
        document = described(client, WRITER if tokens else None)
        url = {"type": "string", "pattern": f"^{re.escape(receiver.url())}$"}
        schemas = document["components"]["schemas"]
        schemas["WebhookSubscriptionCreate"]["properties"]["url"] = url
        schemas["WebhookSubscriptionPatch"]["properties"]["url"] = url
        headers = {"Authorization": f"Bearer {WRITER}"} if tokens else {}
        made = client.post("/webhooks", json_body={"url": receiver.url()}, headers=headers)
        assert made.status_code == 201          # (an id that is there, for the fuzzer to find)
        schema = schemathesis.openapi.from_dict(document, config=config).include(
            path_regex="^/webhooks")
        schema.app = client.app
        checked = []
        for result in schema.get_all_operations():
            operation = result.ok()

            @settings(max_examples=12, derandomize=True, deadline=None,
                      suppress_health_check=list(HealthCheck))
            @given(case=operation.as_strategy())
            def keeps(case):
                if headers:     # (the write token, over any the fuzzer made up)
                    case.headers = {**(case.headers or {}), **headers}
                case.call_and_validate()

            keeps()
            checked.append(operation.label)
    assert len(checked) == 9, checked
