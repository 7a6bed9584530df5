"""``Streamed``: an answer whose body is made as the server sends it (the
waiting feature's Server-Sent Events, ``events.Events``), its failures
logged as every other answer's (``failures.log_failure``).
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ...failures import log_failure
from ...request import NOSNIFF, Request, Response, status_line


class Streamed(Response):
    """A 200 whose body is made as the server sends it, after ``App`` has
    returned: ``chunks``, an iterable of bytes (a stream of events), with
    no ``Content-Length``. It is its own WSGI body, and answers for it as
    the core does for every other answer: an error raised while a chunk is made
    is logged with the request's details (``log_failure``) and ends the
    body (its headers are sent: it can only end), and ``chunks.close()``,
    if it has one, is called once, whether the body was read to its end,
    ended by an error, or never read (HEAD; a client gone). So a stream's
    own code catches nothing, and frees what it holds in its ``close``."""

    __slots__ = ("req", "chunks", "_closing")

    def __init__(self, req: Request, chunks: Iterable[bytes],
                 headers: list[tuple[str, str]]) -> None:
        super().__init__(200, b"", headers)
        self.req, self.chunks = req, chunks
        self._closing = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        self.headers += [("Vary", self.vary), NOSNIFF]
        start_response(status_line(self.status), self.headers)
        if environ.get("REQUEST_METHOD") == "HEAD":
            self.close()
            return []
        return self

    def __iter__(self) -> Iterator[bytes]:
        try:
            yield from self.chunks
        except Exception:       # the headers are sent: the body can only end
            log_failure(self.req, " while its body was sent")
        finally:
            self.close()

    def close(self) -> None:
        """``chunks.close()``, once: at the body's end, or when the server
        closes it (PEP 3333), whichever comes first."""
        with self._closing:
            chunks, self.chunks = self.chunks, ()
        close = getattr(chunks, "close", None)
        if close is None:
            return
        try:
            close()
        except Exception:       # (the server would log it without the request's id)
            log_failure(self.req, " as its body was closed")
