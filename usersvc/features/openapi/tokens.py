"""The OpenAPI document of a service with bearer tokens on (``secured``)."""
from __future__ import annotations

from typing import Any

from .parts import PROBLEM, VARY, header


def secure(paths: dict[str, Any], components: dict[str, Any]) -> None:
    """Bearer tokens (RFC 6750): the scheme, and the 400/401/403 every
    operation but the health check may answer."""
    components["securitySchemes"] = {"bearer": {
        "type": "http", "scheme": "bearer",
        "description": "A token from the server's --tokens-file: `read` scope for GET, HEAD "
                       "and OPTIONS, `write` for everything."}}
    challenge = header('`Bearer realm="usersvc"`, with `error` when a token was sent.')
    for status, text in [(401, "No token, or not a valid one."),
                         (403, "A read token on a write, or a write from a page of another "
                               "site (cross-origin protection).")]:
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
    del components["responses"]["Problem403"]      # every write's 403 is the one above now
