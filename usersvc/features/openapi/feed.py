"""The change feed in the OpenAPI document: ``/<plural>/changes`` and the
schemas of its entries (``usersvc.changes`` serves it)."""
from __future__ import annotations

from typing import Any

from ...changes import DEFAULT_LIMIT, MAX_LIMIT
from ...listing import FEED_RELATION
from ...schema import Schema
from ...storage import MAX_ID
from .asked import fields_parameter
from .parts import PROBLEM, VARY, header, operation_responses

#: What ``after`` takes (``usersvc.places``): a place, or a bare position.
#: Its numbers at most 18 digits, so never past ``MAX_ID`` (19 digits, not
#: all of which are positions): the document admits less than the service.
PLACE_PATTERN = r"^([0-9]{1,18}(\.[0-9]{1,18}\.([0-9]{1,18}|d))?\.[0-9a-f]{12}|[0-9]{1,18})$"
NO_STORE = header("`no-store`: the same URL answers more as changes come.", {"const": "no-store"})


def feed_link_header() -> dict[str, Any]:
    """The ``Link`` to the feed that every page of the collection carries."""
    return header(f'`<.../changes?after=S>; rel="{FEED_RELATION}"`: the change feed from the '
                  "position read before the page (S); a page that is full also links to the "
                  'next page (`rel="next"`), in a second Link header.')


def feed_paths(schema: Schema, schemas: dict[str, Any], waits: bool = True) -> dict[str, Any]:
    """The feed's path item, and its schemas added to ``schemas``;
    ``waits``: with the waiting feature's ``wait`` and stream."""
    name, plural = schema.name.capitalize(), schema.plural
    # Two complete object schemas, so that generated clients type an entry
    # as one or the other (a change, a tombstone), not as a bag of optionals.
    position = {
        "seq": {"type": "integer", "minimum": 1, "description": "The position of "
                f"the {schema.name}'s latest change."},
        "id": {"type": "integer", "minimum": 1, "maximum": MAX_ID}}
    schemas[f"{name}Changed"] = {
        "type": "object", "required": ["seq", "id", schema.name], "additionalProperties": False,
        "properties": {**position, schema.name: {"$ref": f"#/components/schemas/{name}Got"}},
        "description": f"{schema.a_name.capitalize()} as it is after its latest change."}
    schemas[f"{name}Deleted"] = {
        "type": "object", "required": ["seq", "id", "deleted"], "additionalProperties": False,
        "properties": {**position, "deleted": {"const": True}},
        "description": f"{schema.a_name.capitalize()} that was deleted (a tombstone)."}
    schemas[f"{name}Change"] = {"oneOf": [{"$ref": f"#/components/schemas/{name}Changed"},
                                          {"$ref": f"#/components/schemas/{name}Deleted"}]}
    schemas[f"{name}ChangeList"] = {"type": "array",
                                    "items": {"$ref": f"#/components/schemas/{name}Change"}}
    schemas[f"{name}ChangeXml"] = {
        "type": "object", "xml": {"name": "change"},
        "properties": {"seq": {"type": "string"}, "id": {"type": "string"},
                       schema.name: {"$ref": f"#/components/schemas/{name}GotXml"},
                       "deleted": {"const": "true"}}}
    schemas[f"{name}ChangeListXml"] = {
        "type": "array", "items": {"$ref": f"#/components/schemas/{name}ChangeXml"},
        "xml": {"name": "changes", "wrapped": True}}

    def query(param: str, maximum: int, default: int, minimum: int, text: str) -> dict[str, Any]:
        return {"name": param, "in": "query", "required": False, "description": text,
                "schema": {"type": "integer", "minimum": minimum, "maximum": maximum,
                           "default": default}}

    parameters = [
        {"name": "after", "in": "query", "required": False,
         "description": "The place to read from: the changes after it. A place the feed gave "
                        "(`9.1.2.3f2a9c61d0b7`: a position, the entry there, the store's "
                        "history; `8.3f2a9c61d0b7`) or a bare position (0 to 2^63 - 1). The "
                        "collection's pages and the feed's next link give the right one; a "
                        "place another history of the store gave is a 410.",
         "schema": {"type": "string", "default": "0", "pattern": PLACE_PATTERN}},
        query("limit", MAX_LIMIT, DEFAULT_LIMIT, 1, "How many entries at most."),
        fields_parameter(schema),
    ]
    if waits:           # (the waiting feature's: usersvc.features.waiting)
        from ..waiting import MAX_WAIT
        parameters[2:2] = [
            query("wait", MAX_WAIT, 0, 0, "Seconds to wait for a change when there is none "
                                          "after `after` (long-poll); 0: answer at once."),
        ]
        parameters += [
            {"name": "Last-Event-ID", "in": "header", "required": False,
             "description": "With `Accept: text/event-stream`: the place to stream from, "
                            "over `after` (what `EventSource` sends when it reconnects: the last "
                            "event's `id`); a place another history of the store gave (a "
                            "restarted memory store, a file put back from an older copy), "
                            "from 0 after `event: reset` (drop what you hold); not a place: "
                            "400. Otherwise unread.",
             "schema": {"type": "string"}},
        ]
    headers = {"Link": header(f'`<.../{plural}/changes?after=S&limit=L>; rel="next"`, always: '
                              "S is the place of the last entry answered, or `after` when "
                              "none was."),
               "Cache-Control": NO_STORE, "Vary": VARY}
    change_list = f"#/components/schemas/{name}ChangeList"
    ok: dict[str, Any] = {
        "description": f"The {plural} changed after `after`, oldest first, each once, in "
                       "its latest state, or a tombstone.",
        "headers": headers,
        "content": {"application/json": {"schema": {"$ref": change_list}},
                    "application/xml": {"schema": {"$ref": change_list + "Xml"}}}}
    if waits:
        ok["content"]["text/event-stream"] = {"schema": {
            "type": "string", "description": (
                "Server-Sent Events: `retry:` and the start's `id:` first, then "
                "each change as it is committed (`id:` its place, `event:` "
                "`change` or `delete`, `data:` the entry in JSON; first "
                "`event: reset` for a place of another history), a `: "
                "keep-alive` comment while nothing changes, until the stream's "
                "seconds pass; past the waiting slots, `retry:` alone.")}}
    gone = {"description": "`after` is a place another history of the store gave (a "
                           "restarted memory store, a file put back from an older copy): "
                           "drop every record held and follow `Link` (type "
                           "`tag:usersvc.example,2026:another-history`).",
            "content": PROBLEM, "headers": {
                "Link": header(f'`<.../{plural}/changes?after=0.H&limit=L>; rel="next"`: '
                               "the feed from the start of this history."),
                "Cache-Control": NO_STORE, "Vary": VARY}}
    retry = header("Seconds to wait: 1.")
    head_responses = {"200": {"description": "As GET.", "headers": headers}}
    for status in (400, 406, 410, 503):
        head_responses[str(status)] = {"description": "As GET, without the body.",
                                       "headers": {"Vary": VARY, **({"Retry-After": retry}
                                                                    if status == 503 else {})}}
    return {f"/{plural}/changes": {
        "get": {
            "operationId": f"list{name}Changes",
            "summary": f"The changes to the {plural} after a position (the change feed).",
            "description": f"Each {schema.name} changed after `after` once, at the position of "
                           "its latest change: as it is, or `deleted` (tombstones are kept). "
                           "Follow `rel=\"next\"` for ever to stay in sync" + (
                               "; with `wait`, an empty answer waits for the next change. "
                               "Too many waiting "
                               "requests: 503. Unknown parameters are a 400. Asked for "
                               "`text/event-stream`, the changes are pushed as they happen "
                               "(Server-Sent Events), from `Last-Event-ID`, else `after`, "
                               "else the end." if waits else
                               ". Unknown parameters (`wait` too: this server does not "
                               "wait for changes) are a 400."),
            "parameters": parameters,
            "responses": {**operation_responses(400, 406, 503, s200=ok), "410": gone},
        },
        "head": {"operationId": f"head{name}Changes", "summary": "As GET, without the body.",
                 "description": "The same statuses and headers as GET with the same "
                                "parameters, and no body (RFC 9110 §9.3.2).",
                 "parameters": parameters, "responses": head_responses},
        "options": {"operationId": f"options{name}Changes", "summary": "The methods allowed here.",
                    "description": "204 with `Allow`.",
                    "responses": {"204": {"description": "See Allow.", "headers": {
                        "Allow": header("`GET, HEAD, OPTIONS`", {"const": "GET, HEAD, OPTIONS"}),
                        "Vary": VARY}},
                        "400": {"$ref": "#/components/responses/Problem400"}}},
    }}
