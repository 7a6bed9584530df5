"""Operations: a request id and one access-log line per request
(docs/api.md, "Running").

``AccessLog(app)`` wraps any WSGI app (``serve.py`` wraps usersvc in it).
``X-Request-ID`` is the client's, echoed when sane (1 to 64 of ``A-Z a-z 0-9
. _ : -``), else a new one; it goes back in the response and into
``environ["usersvc.request_id"]`` for the app's error log. One line per
request, on the ``usersvc.access`` logger or a stream (lines gathered for
up to 0.1 s)::

    GET /users?q=***&limit=5 200 56 0.8ms 3f2a9c0d1e5b4a7f8e6d2c1b0a9f8e7d

The path is percent-escaped, every query value but those of ``KEPT`` is
``***``, and no header is logged: no token, nothing a record holds.
"""
from __future__ import annotations

import itertools
import logging
import os
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TextIO
from urllib.parse import quote

from ..request import REQUEST_ID_KEY, Request

access_log = logging.getLogger("usersvc.access")

_SANE_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")
#: Query parameters whose values reach the log: they hold no one's data.
KEPT = frozenset({"limit", "after", "sort", "wait"})
_PARAMETER = re.compile(r"(?:^|(?<=&))([^=&]*)=([^&]*)")
_SAFE = "/!$&'()*+,;=:@-._~%"      # RFC 3986 path and query characters, kept as they are


class RequestIds:
    """New request ids: 16 random hex digits, then a count. Unique across
    processes and restarts as a random UUID would be, without reading the
    kernel's random source on every request; a process forked from this
    one (a server's workers after ``--preload``) draws its own digits."""

    def __init__(self) -> None:
        self._start()

    def _start(self) -> None:
        self._pid = os.getpid()
        self._prefix = uuid.uuid4().hex[:16]
        self._count = itertools.count(1)        # (one ``next`` at a time: no lock)

    def __call__(self, req: Request) -> str:
        """The client's ``X-Request-ID`` if it is sane, else a new one."""
        given: str | None = req.environ.get("HTTP_X_REQUEST_ID")
        if given and _SANE_ID.fullmatch(given):
            return given
        if self._pid != os.getpid():    # forked (uWSGI forks without Python's fork hooks)
            self._start()
        return f"{self._prefix}{next(self._count):016x}"


def loggable_target(req: Request) -> str:
    """The request's path, as the client sent it (any mount point included),
    and query, for a log line: escaped, secrets out."""
    path = quote((req.script_name + req.path).encode("latin-1"), safe=_SAFE)
    query = req.query_string
    if not query:
        return path
    query = _PARAMETER.sub(lambda m: m.group() if m.group(1) in KEPT else f"{m.group(1)}=***",
                           query)
    return f"{path}?{quote(query.encode('latin-1'), safe=_SAFE + '?')}"


class AccessLog:
    """WSGI middleware: the request id and the access log (see above).

    Lines go to ``logger`` (the ``logging`` machinery, for apps that route
    their logs), or, given a ``stream``, to it in the same format as
    ``serve.py``'s log lines, gathered and written together at most
    ``delay`` seconds after the first of them (nginx's ``access_log ...
    flush=``): one system call per batch rather than one per request, and
    none of ``logging``'s machinery, which costs several times what a
    request does. ``close()`` writes what is waiting.
    """

    def __init__(self, app: Callable[..., Iterable[bytes]], logger: logging.Logger = access_log,
                 stream: TextIO | None = None, delay: float = 0.1) -> None:
        self.app = app
        self.log = logger
        self._lines = _Lines(stream, delay) if stream is not None else None
        self._new_id = RequestIds()

    def __call__(self, environ: dict[str, Any],
                 start_response: Callable[..., Any]) -> Iterable[bytes]:
        started = time.perf_counter()
        req = Request(environ)
        rid = environ[REQUEST_ID_KEY] = self._new_id(req)
        target = loggable_target(req)     # now: a mount below moves the path into SCRIPT_NAME
        status = "-"

        def start(code: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            nonlocal status
            status = code[:3]
            headers.append(("X-Request-ID", rid))
            return start_response(code, headers, exc_info)

        def done(size: int) -> None:
            self._record(req.method, target, status, size, time.perf_counter() - started, rid)

        return _Counted(self.app(environ, start), done)

    def _record(self, method: str, target: str, status: str, size: int, seconds: float,
                rid: str) -> None:
        if self._lines is None:
            if self.log.isEnabledFor(logging.INFO):
                self.log.info("%s %s %s %d %.1fms %s", method, target,
                              status, size, seconds * 1000, rid)
            return
        # As serve.py's logging format writes a line: the time to the
        # millisecond, the level and the logger.
        now = time.time()
        second = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now))
        self._lines.add(f"{second},{int(now % 1 * 1000):03d} INFO usersvc.access: "
                        f"{method} {target} {status} {size} "
                        f"{seconds * 1000:.1f}ms {rid}\n")

    def close(self) -> None:
        """Write the lines still waiting and stop gathering them (the server
        is stopping): a line logged after this is written at once."""
        if self._lines is not None:
            self._lines.close()


#: Lines waiting past this many are written by the request that adds one.
MAX_WAITING_LINES = 10_000


class _Lines:
    """Lines for a stream, written together by a thread of their own, at most
    ``delay`` seconds after the first of them came, in the order they came."""

    def __init__(self, stream: TextIO, delay: float) -> None:
        self.stream = stream
        self.delay = delay
        self._waiting: list[str] = []
        self._lock = threading.Lock()           # guards _waiting
        self._writing = threading.Lock()        # one batch at a time, in order
        self._some = threading.Event()          # set while lines are waiting
        self._closing = threading.Event()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="usersvc-access-log", daemon=True)
        self._thread.start()

    def add(self, line: str) -> None:
        with self._lock:
            self._waiting.append(line)
            waiting = len(self._waiting)
        if self._closed:
            self.flush()
        elif waiting == 1:
            self._some.set()
        elif waiting >= MAX_WAITING_LINES:
            # The stream is not keeping up (a stalled pipe): the requests
            # wait for it, rather than the lines piling up in memory.
            self.flush()

    def flush(self) -> None:
        with self._writing:
            with self._lock:
                lines, self._waiting = self._waiting, []
                if not self._closed:    # (closing: the thread must see it, and end)
                    self._some.clear()
            if lines:
                self.stream.write("".join(lines))
                self.stream.flush()

    def close(self) -> None:
        with self._lock:                # (a flush now cannot clear what wakes the thread)
            self._closed = True
            self._closing.set()
            self._some.set()            # wakes the thread, which ends
        self._thread.join()
        self.flush()

    def _run(self) -> None:
        while True:
            self._some.wait()
            # Let the lines of the next moments gather (unless closing).
            if self._closed or self._closing.wait(self.delay):
                return
            try:
                self.flush()
            except (OSError, ValueError):   # the stream is gone (closed at exit): nothing to do
                return


class _Counted:
    """The body, counted as it is sent; ``done(bytes)`` when the server closes it."""

    def __init__(self, body: Iterable[bytes], done: Callable[[int], None]) -> None:
        self.body = body
        self.done = done
        self.size = 0

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.body:
            self.size += len(chunk)
            yield chunk

    def close(self) -> None:
        try:
            close = getattr(self.body, "close", None)
            if close is not None:
                close()
        finally:
            self.done(self.size)
