"""``usersvc.wsgi:app``: the service for any WSGI server, configured by
``USERSVC_*`` variables as ``serve.py`` is by its options (docs/deploying.md,
"Under gunicorn, uWSGI or mod_wsgi", lists them)::

    USERSVC_STORAGE=sqlite:///users.db gunicorn -w 2 -k gthread --threads 4 usersvc.wsgi:app
    uwsgi --http :8080 --module usersvc.wsgi:app --threads 4

No metrics here: a server's workers are processes with counts of their own
(docs/deploying.md, "Metrics for Prometheus"). A value usersvc cannot use
is one line on stderr and exit status 4, gunicorn's "the app failed to
load", so gunicorn stops rather than restart workers. Stores open in the
importing process (gunicorn's master with ``--preload``) and start their
threads and connections again in each worker.
"""
from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from typing import Any

from . import build_app
from .mount import Mount
from .ops import AccessLog
from .settings import Settings
from .storage import redact


def from_environment(environ: Mapping[str, str]) -> Any:
    """The WSGI app the variables describe; ``ValueError`` for a value that
    cannot be used, with one line that names it."""
    settings = Settings.from_environment(environ)
    try:
        app = build_app(settings)
    except Exception as e:   # a bad URL, an unwritable file, a newer schema...
        raise ValueError(f"cannot open storage {redact(settings.storage)}: {e}") from None
    if settings.storage.startswith("memory:"):
        logging.getLogger("usersvc").warning(
            "memory:// keeps the records in this process (%d) alone: under a server with "
            "several worker processes each has its own records and hands out the same ids; "
            "use SQLite or PostgreSQL there", os.getpid())
    wsgi: Any = Mount(settings.prefix, app) if settings.prefix else app
    return AccessLog(wsgi) if settings.access_log else wsgi


def _load() -> Any:
    if not logging.getLogger().handlers:        # the store's lines, as serve.py writes them
        logging.basicConfig(level=logging.INFO,
                            format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        return from_environment(os.environ)
    except ValueError as e:
        # One write, the newline with it: the server's own lines (gunicorn's
        # master, other workers) write to the same stderr, and must not land
        # inside this one.
        sys.stderr.write(f"usersvc: {e}\n")
        sys.stderr.flush()
        raise SystemExit(4) from None


app = _load()
