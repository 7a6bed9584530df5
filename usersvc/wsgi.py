"""``usersvc.wsgi:app``: the service for any WSGI server, configured by
``USERSVC_*`` variables as ``serve.py`` is by its options (docs/deploying.md,
"Under gunicorn, uWSGI or mod_wsgi", lists them)::

    USERSVC_STORAGE=sqlite:///users.db gunicorn -w 2 -k gthread --threads 4 usersvc.wsgi:app
    uwsgi --http :8080 --module usersvc.wsgi:app --threads 4
    granian --interface wsgi --workers 2 --blocking-threads 4 usersvc.wsgi:app

With ``USERSVC_METRICS_PORT``, every worker's metrics are served there,
added up, from files the workers count in, in ``USERSVC_METRICS_DIR``
(``app.plugged["metrics"].serve``; docs/deploying.md, "Metrics from every worker").
Requests waiting for changes, and streams of them, are answered as soon as
the process is told to stop (``answer_waiting_when_stopped``; under
gunicorn, ``answer_waiting_when_gunicorn_stops``).
A value usersvc cannot use is one line on stderr and exit status 4,
gunicorn's "the app failed to load", so gunicorn stops rather than
restart workers. Stores open in the
importing process (gunicorn's master with ``--preload``) and start their
threads and connections again in each worker.
"""
from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping

from . import build_app
from .app import App
from .serving.granian_server import WORKERS
from .serving.mount import Mount
from .serving.ops import AccessLog
from .settings import Settings
from .storage import redact


def from_environment(environ: Mapping[str, str]) -> App | Mount | AccessLog:
    """The WSGI app the variables describe; ``ValueError`` for a value that
    cannot be used, with one line that names it."""
    settings = Settings.from_environment({k: v for k, v in environ.items() if k != WORKERS})
    _check_metrics(settings, environ)
    try:
        app = build_app(settings)
    except ImportError as e:     # metrics without prometheus_client
        raise ValueError(str(e)) from None
    except Exception as e:   # a bad URL, an unwritable file, a newer schema...
        raise ValueError(f"cannot open storage {redact(settings.storage)}: {e}") from None
    metrics = app.plugged.get("metrics")
    if metrics is not None:     # (from any worker: the metrics feature's ``serve``)
        from .serving.server import loopback
        metrics.serve(settings.metrics_host, settings.metrics_port)
        if not loopback(settings.metrics_host):
            logging.getLogger("usersvc").warning(
                "serving metrics on %s: anyone who can reach this address can read them "
                "(request rates by route, store timings); they have no token",
                settings.metrics_host)
    if settings.storage.startswith("memory:") and environ.get(WORKERS) != "1":
        logging.getLogger("usersvc").warning(
            "memory:// keeps the records in this process (%d) alone: under a server with "
            "several worker processes each has its own records and hands out the same ids; "
            "use SQLite or PostgreSQL there", os.getpid())
    answer_waiting_when_stopped(app)
    answer_waiting_when_gunicorn_stops(app)
    wsgi: App | Mount = Mount(settings.prefix, app) if settings.prefix else app
    return AccessLog(wsgi) if settings.access_log else wsgi


def answer_waiting_when_stopped(app: App) -> bool:
    """Answer the requests waiting for changes as soon as this process is
    told to stop (SIGTERM, SIGINT), so that they do not hold its exit for
    their whole wait; whether it will. A server that stops its workers
    with a signal but tells the app nothing (granian's WSGI workers) has
    its own Python handler write the signal's number to a wakeup fd
    (``signal.set_wakeup_fd``), which one thread reads. Only from the main
    thread, and only where no one else reads a wakeup fd (gunicorn's
    workers do, and their own loop answers the signal; serve.py tells
    waiting requests itself)."""
    if threading.current_thread() is not threading.main_thread():
        return False
    reading, writing = os.pipe()
    os.set_blocking(writing, False)
    try:
        earlier = signal.set_wakeup_fd(writing)
    except ValueError:          # (not the main interpreter's main thread)
        earlier = None
    if earlier != -1:
        if earlier is not None:
            signal.set_wakeup_fd(earlier)      # someone else's: theirs again
        os.close(reading)
        os.close(writing)
        return False
    stops = {signal.SIGTERM, signal.SIGINT}
    wake = _main_thread_waker()

    def watch() -> None:
        while data := os.read(reading, 64):
            if stops.intersection(data):
                app.stop_waiting()
                wake()
    threading.Thread(target=watch, name="usersvc-stop-watch", daemon=True).start()
    return True


#: The signal that wakes the main thread (``_main_thread_waker``): SIGURG,
#: ignored by default and otherwise unused here (it tells of a socket's
#: out-of-band data, which nothing asks for; Go's runtime takes it for the
#: same reasons).
WAKE = signal.SIGURG


def _main_thread_waker() -> Callable[[], None]:
    """A function that makes the main thread run the Python handlers of the
    signals that came. The kernel hands a signal sent to the process to any
    of its threads, and Python runs the handler in the main thread only when
    that thread next runs: a granian worker's main thread sleeps, with no
    timeout, until its server has stopped, so when a stop signal lands on
    another thread granian's handler never runs and the worker never stops
    (seen with Ctrl-C, whose SIGINT reaches the workers with granian's own
    SIGTERM close behind: killed after --workers-kill-timeout). ``WAKE``,
    sent to the main thread alone, wakes it: its handler does nothing, and
    Python then runs every handler whose signal came. Called from main
    thread (it installs that handler); a no-op where someone else handles
    ``WAKE``."""
    if signal.getsignal(WAKE) != signal.SIG_DFL:
        return lambda: None
    signal.signal(WAKE, lambda signum, frame: None)
    main = threading.get_ident()        # (this thread's: the main one, as signal.signal asks)

    def wake() -> None:
        with contextlib.suppress(OSError, ValueError):  # (the main thread ended: none to wake)
            signal.pthread_kill(main, WAKE)
    return wake


def answer_waiting_when_gunicorn_stops(app: App) -> None:
    """The same under gunicorn, whose workers answer SIGTERM themselves
    (``Worker.handle_exit`` turns its ``alive`` off) and tell the app
    nothing: a waiting request or a stream would hold its worker until
    ``--graceful-timeout``. In a worker of gunicorn's, the first request
    that waits (with ``--preload`` the app was made in the master, before
    the workers) starts a thread that looks twice a second whether the
    worker is still alive, and when it is not, answers them all."""
    watched = [0]                   # the process whose worker is watched

    def watch_the_worker(n: int, stream: bool) -> None:
        if watched[0] == os.getpid():
            return
        watched[0] = os.getpid()
        worker = getattr(signal.getsignal(signal.SIGTERM), "__self__", None)
        if worker is not None and type(worker).__module__.startswith("gunicorn.workers") and (
                hasattr(worker, "alive")):
            def watch() -> None:
                while worker.alive:
                    time.sleep(0.5)
                app.stop_waiting()
            threading.Thread(target=watch, name="usersvc-gunicorn-watch", daemon=True).start()
    if app.waiting is not None:         # (without the waiting feature nothing waits)
        app.waiting.watchers.append(watch_the_worker)


def _check_metrics(settings: Settings, environ: Mapping[str, str]) -> None:
    """Metrics need a port, the same in every worker, and the directory the
    workers count in; the one without the other is a mistake."""
    port, host, directory = (f"USERSVC_METRICS_{name}" in environ
                             for name in ("PORT", "HOST", "DIR"))
    if not port:
        for given, name in ((host, "USERSVC_METRICS_HOST"), (directory, "USERSVC_METRICS_DIR")):
            if given:
                raise ValueError(f"{name} needs USERSVC_METRICS_PORT (the port metrics are "
                                 f"served on)")
        return
    if not directory:
        raise ValueError("USERSVC_METRICS_PORT needs USERSVC_METRICS_DIR: a directory, empty "
                         "when the server starts, where the workers count together")
    if settings.metrics_port == 0:
        raise ValueError("USERSVC_METRICS_PORT must be from 1 to 65535 under a WSGI server "
                         "(every worker serves the same port), not 0")
    try:
        socket.getaddrinfo(settings.metrics_host, settings.metrics_port, type=socket.SOCK_STREAM)
    except OSError as e:
        raise ValueError(f"USERSVC_METRICS_HOST cannot be used: {settings.metrics_host!r}: "
                         f"{e.strerror or e}") from None


def _load() -> App | Mount | AccessLog:
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
