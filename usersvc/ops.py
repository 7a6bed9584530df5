"""Operations: a request id and one access-log line per request.

``AccessLog(app)`` wraps any WSGI app (``serve.py`` wraps usersvc in it):

- ``X-Request-ID``: the client's, echoed, when it is sane (1 to 64 of
  ``A-Z a-z 0-9 . _ : -``), and a new unique one otherwise; it goes back in
  the response and into ``environ["usersvc.request_id"]``, where the app's
  error log finds it.
- one line per request on the ``usersvc.access`` logger, when the response
  has been sent::

      GET /users?email=*** 200 56 0.8ms 3f2a9c0d1e5b4a7f8e6d2c1b0a9f8e7d

  method, path and query, status, body bytes, duration, request id. The
  path is percent-escaped (no line breaks or control characters reach the
  log), the values of ``email`` and ``access_token`` are replaced by
  ``***``, and no header is logged, so neither a token nor an e-mail
  address is ever written.
"""
from __future__ import annotations

import itertools
import logging
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TextIO
from urllib.parse import quote

from .app import REQUEST_ID_KEY

access_log = logging.getLogger("usersvc.access")

_SANE_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")
_SECRET_PARAMETERS = re.compile(r"(?:^|(?<=&))(email|access_token)=[^&]*", re.IGNORECASE)
_SAFE = "/!$&'()*+,;=:@-._~%"      # RFC 3986 path and query characters, kept as they are
_PLAIN = re.compile(r"[A-Za-z0-9/._~-]*")   # needs no escaping at all


# New ids: 16 random hex digits for this process, then a count. Unique across
# processes and restarts as a random UUID would be, without reading the
# kernel's random source on every request.
_PROCESS = uuid.uuid4().hex[:16]
_COUNT = itertools.count(1)


def request_id(environ: dict[str, Any]) -> str:
    """The client's ``X-Request-ID`` if it is sane, else a new one."""
    given = environ.get("HTTP_X_REQUEST_ID")
    if given and _SANE_ID.fullmatch(given):
        return given
    return f"{_PROCESS}{next(_COUNT):016x}"


def loggable_target(environ: dict[str, Any]) -> str:
    """The request's path and query for a log line: escaped, secrets out."""
    path = environ.get("PATH_INFO", "")
    if not _PLAIN.fullmatch(path):
        path = quote(path.encode("latin-1"), safe=_SAFE)
    query = environ.get("QUERY_STRING", "")
    if not query:
        return path
    query = _SECRET_PARAMETERS.sub(lambda m: f"{m.group(1)}=***", query)
    return f"{path}?{quote(query.encode('latin-1'), safe=_SAFE + '?')}"


class AccessLog:
    """WSGI middleware: the request id and the access log (see above).

    Lines go to ``logger`` (the ``logging`` machinery, for apps that route
    their logs), or, given a ``stream``, straight to it in the same format
    as ``serve.py``'s log lines: a standalone server writes a line per
    request, and ``logging`` costs several times what the request does.
    """

    def __init__(self, app: Callable[..., Iterable[bytes]], logger: logging.Logger = access_log,
                 stream: TextIO | None = None) -> None:
        self.app = app
        self.log = logger
        self.stream = stream
        self._lock = threading.Lock()
        self._second = (0, "")          # the last whole second, formatted

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        started = time.perf_counter()
        rid = environ[REQUEST_ID_KEY] = request_id(environ)
        status = ["-"]

        def start(code: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            status[0] = code[:3]
            headers.append(("X-Request-ID", rid))
            return start_response(code, headers, exc_info)

        def done(size: int) -> None:
            duration = (time.perf_counter() - started) * 1000
            if self.stream is not None:
                self._write(f"{environ.get('REQUEST_METHOD', '-')} {loggable_target(environ)} "
                            f"{status[0]} {size} {duration:.1f}ms {rid}")
            elif self.log.isEnabledFor(logging.INFO):
                self.log.info("%s %s %s %d %.1fms %s", environ.get("REQUEST_METHOD", "-"),
                              loggable_target(environ), status[0], size, duration, rid)

        return _Counted(self.app(environ, start), done)


    def _write(self, message: str) -> None:
        """One line, as serve.py's logging format writes it, in one write."""
        now = time.time()
        second = int(now)
        if self._second[0] != second:
            self._second = (second, time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(second)))
        line = f"{self._second[1]},{int(now % 1 * 1000):03d} INFO usersvc.access: {message}\n"
        with self._lock:
            assert self.stream is not None
            self.stream.write(line)
            self.stream.flush()


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
