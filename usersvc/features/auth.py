"""Optional bearer tokens (RFC 6750), off unless tokens are given
(docs/api.md, "Tokens").

    app = make_app("sqlite:///users.db", tokens={"s3cr3t-reader": "read",
                                                  "s3cr3t-writer": "write"})

A ``read`` token may GET, HEAD and OPTIONS; a ``write`` token may write too.
Every path but ``/healthz`` and the pages' files needs one. No token: 401
with ``WWW-Authenticate: Bearer``; an unknown one: 401 ``invalid_token``; a
malformed value: 400 ``invalid_request``; a read token on a write: 403
``insufficient_scope``. Tokens are kept as SHA-256 digests, compared with
``hmac.compare_digest`` against every digest, and never logged.
"""
from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Mapping
from pathlib import Path, PurePath
from typing import Any

from ..problems import Problem
from ..request import Request

SCOPES = ("read", "write")
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
REALM = "usersvc"

# RFC 6750 §2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
_B64TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
_CREDENTIALS = re.compile(r"Bearer +(\S*)", re.IGNORECASE)


class Tokens:
    """The tokens a service accepts, each with its scope."""

    def __init__(self, tokens: Mapping[str, str]) -> None:
        if not tokens:
            raise ValueError("no tokens given: leave tokens out to turn them off")
        self._digests: list[tuple[bytes, str]] = []
        for token, scope in tokens.items():
            if scope not in SCOPES:
                raise ValueError(f"a token's scope must be read or write, not {scope!r}")
            if not _B64TOKEN.fullmatch(token) or len(token) < 16:
                raise ValueError("a token must be 16 or more characters of "
                                 "A-Z a-z 0-9 - . _ ~ + / (RFC 6750 b64token)")
            self._digests.append((_digest(token), scope))

    def plug(self, app: Any) -> None:
        """Check every request but for the open paths (``app.open_paths``:
        the health check, the pages' files), after cross-origin protection
        and before the body is read."""
        open_paths = app.open_paths

        def check(req: Request, found: Any) -> None:
            if req.path not in open_paths:
                self.check(req)
        app.checks.append(check)

    def check(self, req: Request) -> None:
        """Raise the 400, 401 or 403 problem this request earns, or return."""
        match = _CREDENTIALS.fullmatch((req.header("Authorization") or "").strip())
        if match is None:
            raise _challenge(401, "This service needs a bearer token (Authorization: Bearer ...).")
        token = match.group(1)
        if not _B64TOKEN.fullmatch(token):
            raise _challenge(400, "The bearer token is malformed.", error="invalid_request")
        scope = self._scope_of(token)
        if scope is None:
            raise _challenge(401, "The bearer token is not valid here.", error="invalid_token")
        if scope == "read" and req.method not in READ_METHODS:
            raise _challenge(403, "This token may read, not write.",
                             error="insufficient_scope", scope="write")

    def owner(self, req: Request) -> str:
        """Whose a checked request is, for what is kept of it (its
        idempotency keys): the digest of its token, never the token."""
        match = _CREDENTIALS.fullmatch((req.header("Authorization") or "").strip())
        return _digest(match.group(1) if match else "").hex()

    def _scope_of(self, token: str) -> str | None:
        digest = _digest(token)
        found = None
        for known, scope in self._digests:     # every one, match or not
            if hmac.compare_digest(digest, known):
                found = scope
        return found


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("ascii")).digest()


def _challenge(status: int, detail: str, **params: str) -> Problem:
    value = f'Bearer realm="{REALM}"' + "".join(f', {k}="{v}"' for k, v in params.items())
    # no-store: an answer about credentials is about this request alone.
    return Problem(status, detail,
                   headers=[("WWW-Authenticate", value), ("Cache-Control", "no-store")])


def load_tokens(path: str | PurePath) -> Tokens:
    """Tokens from a file: one ``TOKEN SCOPE`` per line; blank lines and
    ``#`` comments are ignored. Errors name the line, never the token."""
    tokens: dict[str, str] = {}
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 2:
            raise ValueError(f"{path}, line {number}: expected TOKEN SCOPE")
        token, scope = parts
        if token in tokens:
            raise ValueError(f"{path}, line {number}: this token is already listed")
        try:
            Tokens({token: scope})
        except ValueError as e:
            raise ValueError(f"{path}, line {number}: {e}") from None
        tokens[token] = scope
    return Tokens(tokens)


class TokensFeature:
    """The ``tokens`` feature (``usersvc.hooks``): the settings' bearer
    tokens (``tokens``) checked on every request, if any."""

    name = "tokens"

    def read_setting(self, name: str, value: Any) -> Tokens:
        """``tokens`` as given (a mapping, a tokens file's path, as
        ``--tokens-file`` gives it, or ``Tokens``) as ``Tokens``, when the
        settings are made; a ``ValueError`` that says why it cannot be."""
        if isinstance(value, Tokens):
            return value
        if not isinstance(value, PurePath):
            return Tokens(value)
        try:
            return load_tokens(value)
        except OSError as e:
            raise ValueError(str(e)) from None

    def plug(self, app: Any, storage: Any, plugged: dict[str, Any]) -> Tokens | None:
        tokens: Tokens | None = app.settings.tokens     # (``read_setting``'s)
        if tokens is not None:
            tokens.plug(app)
        return tokens


FEATURE = TokensFeature()
