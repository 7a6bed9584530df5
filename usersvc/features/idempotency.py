"""``Idempotency-Key`` on POST and PATCH: a write a client may retry
(draft-ietf-httpapi-idempotency-key-header-06; docs/api.md, "Retrying a write").

The value is a Structured Field string (RFC 8941 §3.3.3) or the same text
bare, 1 to 255 characters; anything else is a 400 naming the header. The
feature wraps the write's atomic step (``Storage.atomically``): the first
answer is kept with its write, in that step (``storage.keys``: how each
store keeps it), under the key and the token that sent it; a retry of
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
from ..representation.json_format import Format
from ..request import Request, Response
from ..storage import StoreError
from ..storage.keys import Answer, Key, MemoryKeys, Run, SQLKeys
from ..storage.protocol import Atomic, Transactional

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
    sent the request), how an error becomes the answer kept for it
    (``problem``: the app's one way of making problem documents), in what
    store (``storage``; ``None``: a collection's records served alone,
    which keep none) and how it keeps them (``kept``: ``keeping``), and
    what wraps a collection's records as the app serves them (``wrappers``:
    ``app.records_wrappers``, read as each write is made)."""

    def __init__(self, ttl: float, owner: Callable[[Request], str] | None,
                 problem: Callable[[Request, StoreError], Response], storage: Any = None,
                 wrappers: list[Callable[[str, Any], Any]] | None = None) -> None:
        if not ttl > 0:
            raise ValueError("the idempotency keys' time to live must be more than 0 seconds")
        self.ttl = ttl
        self._owner = owner
        self._problem = problem
        self.storage, self.kept = storage, keeping(storage)
        self.wrappers = [] if wrappers is None else wrappers

    def plug(self, app: Any) -> None:
        """Give each collection's POST and PATCH its write hook."""
        app.write_hook = self.hook

    def hook(self, records: Any) -> KeyedWrite:
        """The write hook (``resources``) for a collection's ``records``."""
        return KeyedWrite(self, records.schema.plural, records)

    def once(self, key: Key, plurals: tuple[str, ...], run: Run,
             nothing_to_undo: bool = False) -> Answer:
        """``run(step)`` in an atomic step of the store holding ``plurals``
        (``Storage.atomically``, whose ``nothing_to_undo`` it takes), its
        answer kept with ``key`` in that step, a refused write's too (its
        writes undone); or the answer kept for ``key`` before, nothing run."""
        if self.kept is None:
            raise keeps_none()
        return self.kept.once(self.storage, plurals, key, run, nothing_to_undo)

    def served(self, plural: str, records: Any) -> Any:
        """A collection's records (a step's), as the app serves them: wrapped
        by ``app.records_wrappers`` (metrics time their calls)."""
        for wrap in self.wrappers:
            records = wrap(plural, records)
        return records

    def key(self, req: Request, fmt: Format | None, respond: Callable[[Any], Response],
            refused: Callable[[StoreError], Response] | None = None) -> Key:
        """The key of a request that sent one (asked only then: ``KeyedWrite``,
        a batch), whose answer is ``respond(record)`` or the problem of the
        store's error (``refused``: another way to make it)."""
        key = parse(req.environ[ENVIRON])

        def answer(record: Any, error: StoreError | None) -> Answer:
            response = (respond(record) if error is None else self._problem(req, error)
                        if refused is None else refused(error))
            return Answer(response.status, tuple(response.headers), response.body,
                          response.vary)
        owner = "" if self._owner is None else self._owner(req)     # (None: no tokens)
        return Key(owner, key, fingerprint(req, fmt), time.time() + self.ttl, answer)


class KeyedWrite:
    """A collection's write hook: asked only for a request that sent the
    header (``header``, its environ name). The key read, then the body
    (``make(req)``: the write), the write is made in a step of its own on
    the step's records of the collection (``plural``), its answer kept in
    that step (``Idempotency.once``); or the answer kept before is sent.
    ``records``: the collection's records as the app serves them."""

    header = "Idempotency-Key"

    def __init__(self, keys: Idempotency, plural: str, records: Any) -> None:
        self.keys, self.plural, self.records = keys, plural, records
        self.own = (plural,)        # what the step writes (it holds what their checks read)
        self.kept, self.storage = keys.kept, keys.storage

    def __call__(self, req: Request, fmt: Format, make: Callable[[Request], Callable[[Any], Any]],
                 respond: Callable[[Any], Response]) -> Response:
        kept = self.kept
        if kept is None:            # (before the header is read)
            raise keeps_none()
        key = self.keys.key(req, fmt, respond)
        write = make(req)
        keys, plural = self.keys, self.plural
        # One write, which fails whole (``Checked``'s too: it reads, then
        # writes), on the step's records as the app serves them. (The fast
        # build's makes fewer steps: its registry names the one it swaps in.)
        return replayed(kept.once(self.storage, self.own, key, lambda step: write(
            keys.served(plural, step[plural])), True))


def keeping(storage: Any) -> MemoryKeys | SQLKeys | None:
    """How ``storage`` keeps keys in its atomic steps, by what a step's
    ``db`` is (a capability, ``Transactional.dialect``: no store method
    takes a key); ``None``: it cannot (no steps, as a collection's records
    served alone, or a store of an embedder's that does not say what its
    steps are)."""
    if not isinstance(storage, Atomic) or not isinstance(storage, Transactional):
        return None
    dialect = storage.dialect
    if dialect is None:
        return MemoryKeys()
    return SQLKeys(dialect.mark, claims=dialect.name == "postgres")


def keeps_none() -> Problem:
    """The 400 for a key sent to a store that keeps none (a collection's
    records served alone, a store of an embedder's: ``keeping``)."""
    return Problem(400, f"This collection's store keeps no {HEADER}s: send the "
                        "request without one.")


def fingerprint(req: Request, fmt: Format | None) -> str:
    """What makes two requests with one key the same request."""
    e = req.environ
    head = "\n".join((req.method, e.get("SCRIPT_NAME", ""), req.path, e.get("QUERY_STRING", ""),
                      e.get("CONTENT_TYPE", ""), fmt.media_type if fmt is not None else "",
                      e.get("HTTP_IF_MATCH", ""), e.get("HTTP_IF_NONE_MATCH", ""), ""))
    return hashlib.sha256(head.encode("utf-8", "surrogateescape") + req.body).hexdigest()


def replayed(answer: Answer) -> Response:
    """The response a kept answer (or a new one) is sent as."""
    status, headers, body, vary = answer
    response = Response(status, body, list(headers))
    response.vary = vary
    return response


class IdempotencyFeature:
    """The ``idempotency`` feature (``usersvc.hooks``): keys for writes,
    kept ``idempotency_ttl`` seconds, each token's own when tokens are on."""

    name = "idempotency"

    def plug(self, app: Any, storage: Any, plugged: dict[str, Any]) -> Idempotency:
        tokens = app.settings.tokens
        owner = None if tokens is None else tokens.owner
        keys = Idempotency(app.settings.idempotency_ttl, owner,
                           lambda req, error: app.problem_response(req, Problem.from_error(error)),
                           storage, app.records_wrappers)
        keys.plug(app)
        return keys


FEATURE = IdempotencyFeature()
