"""The operations every path item has (HEAD, OPTIONS), the health check's
path item, and HTML taken out of a document whose app has no pages: what
``document`` describes beside the collections."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...representation.json_format import JSON_TYPE
from .parts import DESCRIPTIONS, NO_STORE, VARY, header, problem

_HEALTH = "#/components/schemas/Health"


def without_html(node: Any) -> None:
    """Take ``text/html`` out of every ``content`` under ``node``: the parts
    say what a page answers in, for the app with the pages; one without
    them answers HTML with a 406."""
    if isinstance(node, dict):
        content = node.get("content")
        if isinstance(content, dict):
            node["content"] = {k: v for k, v in content.items() if k != "text/html"}
        for value in node.values():
            without_html(value)
    elif isinstance(node, list):
        for value in node:
            without_html(value)


def health_item() -> dict[str, Any]:
    """The health check's path item (the health feature, ``/healthz``)."""
    return {
        "get": {
            "operationId": "getHealth", "summary": "Whether the service can reach its store.",
            "description": "For load balancers and monitors: 200 when every store answers a "
                           "read, 503 when one does not or while its writes are failing (a "
                           "full disk). Needs no token; never cached.",
            "security": [],
            "responses": {"200": {"description": "Every store answers.",
                                  "headers": {"Vary": VARY, "Cache-Control": NO_STORE},
                                  "content": {JSON_TYPE: {"schema": {"$ref": _HEALTH}},
                                              "application/xml": {"schema": {"$ref": _HEALTH}}}},
                          "406": {"$ref": "#/components/responses/Problem406"},
                          "503": problem(503, **{"Retry-After": header(
                              "Seconds to wait: 1 (no answer), 10 (writes failing)."),
                                                  "Cache-Control": NO_STORE})}},
        "head": {**head("headHealth", {"200": {"Vary": VARY}}, (), (406, 503)), "security": []},
        "options": {**options("optionsHealth", "GET, HEAD, OPTIONS"), "security": []},
    }


def head(operation_id: str, headers: dict[str, dict[str, Any]],
         parameters: Sequence[dict[str, Any]] = (),
         problems: Sequence[int] = ()) -> dict[str, Any]:
    """HEAD: the GET's statuses and headers, without a body (RFC 9110 §9.3.2)."""
    responses = {status: {"description": "As GET.", "headers": h} for status, h in headers.items()}
    for status in problems:
        extra = {"Retry-After": header("Seconds to wait: 1.")} if status == 503 else {}
        responses[str(status)] = {"description": DESCRIPTIONS[status]
                                  + " (As GET, without the body.)",
                                  "headers": {"Vary": VARY, **extra}}
    return {"operationId": operation_id, "summary": "As GET, without the body.",
            "description": "The same statuses and headers as GET with the same parameters, "
                           "and no body (RFC 9110 §9.3.2).",
            "parameters": list(parameters), "responses": responses}


def options(operation_id: str, allow: str, *, post: bool = False, patch: bool = False,
             templated: bool = False) -> dict[str, Any]:
    headers: dict[str, Any] = {"Allow": header(f"`{allow}`", {"const": allow}), "Vary": VARY}
    if post:
        headers["Accept-Post"] = header("The body types POST reads.")
    if patch:
        headers["Accept-Patch"] = header("The body types PATCH reads.")
    responses: dict[str, Any] = {"204": {"description": "See Allow.", "headers": headers},
                                 "400": {"$ref": "#/components/responses/Problem400"}}
    if templated:   # a path whose id names nothing (0, 01, -1, 2^63) is no resource
        responses["404"] = {"$ref": "#/components/responses/Problem404"}
    return {"operationId": operation_id, "summary": "The methods allowed here.",
            "description": "204 with `Allow`, and the body types a write reads "
                           "(`Accept-Post`, `Accept-Patch`).",
            "responses": responses}

