"""``usersvc.wsgi:app``: the service for any WSGI server, configured by the
environment, as ``serve.py`` is by its options::

    USERSVC_STORAGE=sqlite:///users.db gunicorn -w 2 -k gthread --threads 4 usersvc.wsgi:app
    uwsgi --http :8080 --module usersvc.wsgi:app --threads 4
    # a mod_wsgi script: from usersvc.wsgi import app as application

===========================  ===========================================
``USERSVC_STORAGE``          the storage URL (default ``sqlite:///users.db``,
                             in the server's working directory)
``USERSVC_TOKENS_FILE``      require bearer tokens (as ``--tokens-file``)
``USERSVC_CORS_ORIGINS``     origins whose pages may call the service,
                             separated by spaces (as ``--cors-origin``)
``USERSVC_MAX_BODY_SIZE``    the largest request body, in bytes
``USERSVC_PREFIX``           serve under this path (``/v1``)
``USERSVC_MAX_WAITING``      requests of one process that may wait for
                             changes at once (default 2): about half its
                             threads
``USERSVC_ACCESS_LOG``       ``1``: usersvc's access log too (default: none;
                             the server has its own)
``USERSVC_IDEMPOTENCY_TTL``  seconds an ``Idempotency-Key``'s answer is
                             kept (as ``--idempotency-ttl``; default a day)
===========================  ===========================================

The server's own options (``--host``, threads, ``--trusted-proxy``) are its
own. There are no metrics here: a server's workers are processes with
counts of their own behind one port (docs/deploying.md, "Metrics for
Prometheus", says what to run instead). A value usersvc cannot use is one line on stderr, and the process
exits with status 4, gunicorn's "the app failed to load", so that gunicorn
stops rather than start workers again and again. Stores open in whichever
process imports this (with ``--preload``, gunicorn's master) and start their
threads and connections again in each worker (``docs/deploying.md``).
"""
from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from typing import Any

from . import DEFAULT_STORAGE, make_app
from .app import DEFAULT_MAX_BODY_SIZE, DEFAULT_MAX_WAITING, Mount
from .auth import load_tokens
from .cross_origin import parse_origins
from .idempotency import DEFAULT_TTL
from .ops import AccessLog
from .storage import redact

#: Every variable this module reads.
VARIABLES = ("USERSVC_STORAGE", "USERSVC_TOKENS_FILE", "USERSVC_CORS_ORIGINS",
             "USERSVC_MAX_BODY_SIZE", "USERSVC_PREFIX", "USERSVC_MAX_WAITING",
             "USERSVC_ACCESS_LOG", "USERSVC_IDEMPOTENCY_TTL")


def _whole(environ: Mapping[str, str], name: str, default: int, least: int) -> int:
    value = environ.get(name, "").strip()
    if not value:
        return default
    if not value.isdigit() or int(value) < least:
        raise ValueError(f"{name} must be a whole number of at least {least}, not {value!r}")
    return int(value)


def from_environment(environ: Mapping[str, str]) -> Any:
    """The WSGI app the variables describe; ``ValueError`` for a value that
    cannot be used, with one line that names it."""
    unknown = sorted(k for k in environ if k.startswith("USERSVC_") and k not in VARIABLES
                     and not k.startswith("USERSVC_TEST_"))
    if unknown:
        raise ValueError(f"unknown variable {unknown[0]} (usersvc reads {', '.join(VARIABLES)})")
    tokens = None
    if environ.get("USERSVC_TOKENS_FILE"):
        try:
            tokens = load_tokens(environ["USERSVC_TOKENS_FILE"])
        except (OSError, ValueError) as e:
            raise ValueError(f"cannot use USERSVC_TOKENS_FILE: {e}") from None
    origins = environ.get("USERSVC_CORS_ORIGINS", "").replace(",", " ").split()
    try:
        parse_origins(origins)
    except ValueError as e:
        raise ValueError(f"cannot use USERSVC_CORS_ORIGINS: {e}") from None
    access_log = environ.get("USERSVC_ACCESS_LOG", "0").strip()
    if access_log not in ("0", "1"):
        raise ValueError(f"USERSVC_ACCESS_LOG must be 0 or 1, not {access_log!r}")
    max_body_size = _whole(environ, "USERSVC_MAX_BODY_SIZE", DEFAULT_MAX_BODY_SIZE, 1)
    max_waiting = _whole(environ, "USERSVC_MAX_WAITING", DEFAULT_MAX_WAITING, 0)
    idempotency_ttl = _whole(environ, "USERSVC_IDEMPOTENCY_TTL", DEFAULT_TTL, 1)
    prefix = environ.get("USERSVC_PREFIX", "").strip()
    storage = environ.get("USERSVC_STORAGE", "").strip() or DEFAULT_STORAGE
    try:
        app = make_app(storage, max_body_size=max_body_size, tokens=tokens,
                       cors_origins=origins, max_waiting=max_waiting,
                       idempotency_ttl=idempotency_ttl)
    except Exception as e:   # a bad URL, an unwritable file, a newer schema...
        raise ValueError(f"cannot open storage {redact(storage)}: {e}") from None
    if storage.startswith("memory:"):
        logging.getLogger("usersvc").warning(
            "memory:// keeps the records in this process (%d) alone: under a server with "
            "several worker processes each has its own records and hands out the same ids; "
            "use SQLite or PostgreSQL there", os.getpid())
    wsgi: Any = Mount(prefix, app) if prefix.strip("/") else app
    return AccessLog(wsgi) if access_log == "1" else wsgi


def _load() -> Any:
    if not logging.getLogger().handlers:        # the store's lines, as serve.py writes them
        logging.basicConfig(level=logging.INFO,
                            format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        return from_environment(os.environ)
    except ValueError as e:
        print(f"usersvc: {e}", file=sys.stderr)
        raise SystemExit(4) from None


app = _load()
