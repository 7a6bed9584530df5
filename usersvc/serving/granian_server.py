"""``serve.py --server granian``: the same service, with the same options,
under granian (a server written in Rust) with ``--workers`` processes.

granian's workers each import ``usersvc.wsgi:app``, so the options reach
them as the ``USERSVC_*`` variables that module reads (``environment``),
checked here first: a mistake is one line before any worker starts, and
the store is opened (and brought up to date) once, here, then closed.
Collections come from ``--collections MODULE:NAME``: a worker imports
them, and cannot be handed a script's own. Metrics from every worker are
counted in a directory made for the run and removed at its end. SIGTERM or
Ctrl-C stops granian, each worker answering its waiting requests at once
(``usersvc.wsgi.answer_waiting_when_stopped``).
"""
from __future__ import annotations

import argparse
import os
import shutil
import socket
import tempfile
import threading
from collections.abc import Callable, Iterable
from typing import Any

from .. import USER, Schema, build_app
from ..release import install_hint
from ..settings import Settings, as_variable
from ..storage import redact
from .limits import waiting_threads

#: Seconds a worker has to stop after SIGTERM before it is killed (granian
#: would wait for ever; a worker told while it starts can miss the signal).
KILL_AFTER = 10

#: How many worker processes run, told to each (``environment``): with one,
#: ``usersvc.wsgi`` does not warn that a ``memory://`` store is split between
#: processes (``refused`` allows it with one only). Not a setting of
#: usersvc's: under any other server the number is not known, and it warns.
WORKERS = "USERSVC_SERVE_WORKERS"

#: granian's own lines go where usersvc's logs go, stderr: stdout has the one
#: ready line only (granian's configuration, its handlers replaced).
LOGS_TO_STDERR = {"handlers": {
    name: {"formatter": name if name == "access" else "generic", "class": "logging.StreamHandler",
           "stream": "ext://sys.stderr"} for name in ("console", "access")}}


def environment(args: argparse.Namespace, metrics_dir: str | None) -> dict[str, str]:
    """The ``USERSVC_*`` variables that give a worker these options, and
    how many workers there are (``WORKERS``)."""
    given = {**args.given, "cors_origins": " ".join(args.cors_origin),
             "access_log": "1" if args.access_log else "0"}
    if args.metrics_port is not None:
        given |= {"metrics_port": str(args.metrics_port), "metrics_dir": metrics_dir,
                  "metrics_host": args.metrics_host or "127.0.0.1"}
    return {**{as_variable(name): text for name, text in given.items() if text},
            WORKERS: str(args.workers)}


def refused(args: argparse.Namespace, settings: Settings,
            collections: Iterable[Schema]) -> str | None:
    """Why these options cannot run under granian, in one line, or ``None``."""
    if tuple(collections) != (USER,) and settings.collections is None:
        return ("--server granian: each worker imports the collections it serves: name them "
                "with --collections MODULE:NAME")
    if args.trusted_proxy:
        return ("--trusted-proxy is waitress's: under granian, put the proxy's address in "
                "its own settings, or serve with waitress")
    if settings.storage.startswith("memory:") and args.workers > 1:
        return ("memory:// keeps the records in one process: with --workers "
                f"{args.workers} each would have its own (use SQLite or PostgreSQL)")
    if args.metrics_port == 0:
        return "--metrics-port must be from 1 to 65535 under granian (every worker serves it)"
    return None


def serve(args: argparse.Namespace, settings: Settings, collections: Iterable[Schema],
          say: Any, not_built: Callable[[Settings, Exception], str]) -> int:
    """Serve until SIGTERM or Ctrl-C; 0, or 2 after ``say``-ing why not
    (``not_built``: why the app could not be, as the waitress server says it)."""
    try:
        from granian import Granian
        from granian.constants import Interfaces
    except ImportError:
        say(f"--server granian needs granian: {install_hint('granian')}")
        return 2
    problem = refused(args, settings, collections)
    if problem is not None:
        say(problem)
        return 2
    try:
        build_app(settings, settings.collections or (USER,)).close()
    except Exception as e:      # a bad URL, an unwritable file, a newer schema...
        say(not_built(settings, e))
        return 2
    try:
        port = args.port or _free_port(args.host)
        socket.getaddrinfo(args.host, port, type=socket.SOCK_STREAM)
    except OSError as e:
        say(f"cannot listen on {args.host} port {args.port}: {e.strerror or e}")
        return 2
    metrics_dir = tempfile.mkdtemp(prefix="usersvc-metrics-") if settings.metrics else None
    os.environ.update(environment(args, metrics_dir))
    server = Granian("usersvc.wsgi:app", interface=Interfaces.WSGI, address=args.host,
                     port=port, workers=args.workers,
                     # (waiting requests get threads of their own: the others keep --threads)
                     blocking_threads=args.threads + waiting_threads(settings),
                     respawn_failed_workers=True, workers_kill_timeout=KILL_AFTER, websockets=False,
                     log_dictconfig=LOGS_TO_STDERR)
    host = f"[{args.host}]" if ":" in args.host else args.host
    prefix = "/" + settings.prefix.strip("/") if settings.prefix.strip("/") else ""
    metrics_at = ("" if metrics_dir is None else
                  f" and metrics at http://{settings.metrics_host}:{settings.metrics_port}/metrics")

    def ready() -> None:
        """The ready line, once a worker answers (granian's workers listen)."""
        for _ in range(1200):       # a minute at most: else granian has said why
            try:
                with socket.create_connection((args.host, port), timeout=1):
                    print(f"usersvc serving http://{host}:{port}{prefix}/ with storage "
                          f"{redact(settings.storage)}{metrics_at}", flush=True)
                    return
            except OSError:
                threading.Event().wait(0.05)
    server.on_startup(lambda: threading.Thread(target=ready, daemon=True).start())
    try:
        server.serve()
    finally:
        if metrics_dir is not None:
            shutil.rmtree(metrics_dir, ignore_errors=True)
    return 0


def _free_port(host: str) -> int:
    """A port free now on ``host`` (``--port 0``: granian binds the number it is given)."""
    with socket.create_server((host, 0)) as probe:
        port: int = probe.getsockname()[1]     # (an IPv4 or IPv6 address's: its port)
        return port


__all__ = ["WORKERS", "environment", "refused", "serve"]
