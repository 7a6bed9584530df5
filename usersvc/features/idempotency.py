"""``Idempotency-Key`` on POST and PATCH: a write a client may retry
(draft-ietf-httpapi-idempotency-key-header-06; docs/api.md, "Retrying a write").

The value is a Structured Field string (RFC 8941 §3.3.3) or the same text
bare, 1 to 255 characters; anything else is a 400 naming the header. The
store keeps the first answer with its write, in the same transaction
(``storage.keys``), under the key and the token that sent it; a retry of
the same request gets it again, byte for byte, and changes nothing; the
same key on another request is a 422. "The same request" is its
``fingerprint``: method, target, body, ``Content-Type``, the negotiated
format, ``If-Match`` and ``If-None-Match``. Answers given before the store
is asked (400, 413, 415, 422) and 5xx are not kept.
"""
from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable
from typing import Any

from ..problems import Problem
from ..representation import Format
from ..request import Request, Response
from ..storage import StoreError
from ..storage.keys import Answer, KeepsKeys, Key

HEADER = "Idempotency-Key"
ENVIRON = "HTTP_IDEMPOTENCY_KEY"
MAX_LENGTH = 255

# RFC 8941 §3.3.3: an sf-string holds printable ASCII, '"' and '\\' escaped.
# A bare key: visible ASCII, none of the characters that would make it a
# string, a list or a parameter. (The OpenAPI document states both.)
QUOTED = r'"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\[\\"])*)"'
BARE = r"[\x21\x23-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]+"
_QUOTED, _BARE = re.compile(QUOTED), re.compile(BARE)
_ESCAPED = re.compile(r"\\(.)")


def parse(value: str) -> str:
    """The key a header value holds; a 400 ``Problem`` for anything else."""
    value = value.strip(" \t")
    if _BARE.fullmatch(value):
        text = value
    else:
        quoted = _QUOTED.fullmatch(value)
        if quoted is None:
            raise _malformed()
        text = quoted.group(1)
        if "\\" in text:
            text = _ESCAPED.sub(r"\1", text)
    if not 1 <= len(text) <= MAX_LENGTH:
        raise Problem(400, f"The {HEADER} must be 1 to {MAX_LENGTH} characters long.")
    return text


def _malformed() -> Problem:
    return Problem(400, f'The {HEADER} header must be one string: "8e03978e-40d5-..." '
                        "(a Structured Field string), or the same characters without quotes.")


class Idempotency:
    """Keys for an app's writes: how long they are kept (``ttl``, seconds),
    whose they are (``owner``: with tokens on, a digest of the token that
    sent the request), and how an error becomes the answer kept for it
    (``problem``: the app's one way of making problem documents)."""

    def __init__(self, ttl: float, owner: Callable[[Request], str],
                 problem: Callable[[Request, StoreError], Response]) -> None:
        if not ttl > 0:
            raise ValueError("the idempotency keys' time to live must be more than 0 seconds")
        self.ttl = ttl
        self._owner = owner
        self._problem = problem

    def plug(self, app: Any) -> None:
        """Give each collection's POST and PATCH the write hook of its store."""
        app.write_hook = self.hook

    def hook(self, store: Any) -> KeyedWrite:
        """The write hook (``resources``) for a collection kept in ``store``."""
        return KeyedWrite(self, isinstance(store, KeepsKeys) and store.keeps_keys)

    def key(self, req: Request, fmt: Format | None, respond: Callable[[Any], Response],
            refused: Callable[[StoreError], Response] | None = None) -> Key | None:
        """The request's key (``None``: it sent none), whose answer is
        ``respond(record)`` or the problem of the store's error (``refused``:
        another way to make it)."""
        value = req.environ.get(ENVIRON)
        if value is None:
            return None
        key = parse(value)
        if refused is None:
            refused = lambda error: self._problem(req, error)     # noqa: E731

        def answer(record: Any, error: StoreError | None) -> Answer:
            response = respond(record) if error is None else refused(error)
            return Answer(response.status, tuple(response.headers), response.body,
                          response.vary)
        return Key(self._owner(req), key, fingerprint(req, fmt), time.time() + self.ttl, answer)


class KeyedWrite:
    """A collection's write hook: asked only for a request that sent the
    header (``header``, its environ name), which it makes with its key, its
    answer kept; or it sends the answer kept before."""

    header = ENVIRON

    def __init__(self, keys: Idempotency, keeps: bool) -> None:
        self.keys = keys
        self.keeps = keeps          # whether the store keeps keys (an embedder's may not)

    def __call__(self, req: Request, fmt: Format, make: Callable[..., Any],
                 respond: Callable[[Any], Response]) -> Response:
        if not self.keeps:
            raise Problem(400, f"This collection's store keeps no {HEADER}s: send the "
                               "request without one.")
        return replayed(make(req, key=self.keys.key(req, fmt, respond)))


def fingerprint(req: Request, fmt: Format | None) -> str:
    """What makes two requests with one key the same request."""
    e = req.environ
    head = "\n".join((req.method, e.get("SCRIPT_NAME", ""), req.path, e.get("QUERY_STRING", ""),
                      e.get("CONTENT_TYPE", ""), fmt.media_type if fmt is not None else "",
                      e.get("HTTP_IF_MATCH", ""), e.get("HTTP_IF_NONE_MATCH", ""), ""))
    return hashlib.sha256(head.encode("utf-8", "surrogateescape") + req.body).hexdigest()


def replayed(answer: Answer) -> Response:
    """The response a kept answer (or a new one) is sent as."""
    response = Response(answer.status, answer.body, list(answer.headers))
    response.vary = answer.vary
    return response


class IdempotencyFeature:
    """The ``idempotency`` feature (``usersvc.hooks``): keys for writes,
    kept ``idempotency_ttl`` seconds, each token's own when tokens are on."""

    name = "idempotency"

    def plug(self, app: Any, storage: Any, plugged: dict[str, Any]) -> Idempotency:
        tokens = app.settings.tokens
        owner = (lambda req: "") if tokens is None else tokens.owner
        keys = Idempotency(app.settings.idempotency_ttl, owner,
                           lambda req, error: app.problem_response(req, Problem.from_error(error)))
        keys.plug(app)
        return keys


FEATURE = IdempotencyFeature()
