"""The standalone server: command-line options in, a waitress server out
(``--server granian``: ``granian_server``).

    python serve.py --port 8080 --storage sqlite:///users.db

It prints one line when it is ready (the URL and the storage), logs errors
to stderr, and stops cleanly, with exit status 0, on Ctrl-C or SIGTERM.
"""
from __future__ import annotations

import argparse
import difflib
import ipaddress
import logging
import signal
import socket
import sys
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from waitress.server import create_server

from .. import USER, Schema, build_app
from ..hooks import DEFAULT_FEATURES, KNOWN, name_of, resolved
from ..release import VERSION, install_hint
from ..settings import (
    DEFAULT_IDEMPOTENCY_TTL,
    DEFAULT_MAX_BATCH,
    DEFAULT_MAX_BODY_SIZE,
    DEFAULT_STORAGE,
    DEFAULT_STREAM_SECONDS,
    SettingError,
    Settings,
    as_option,
    own_settings,
)
from ..storage import redact
from .limits import (
    SERVER_BODY_CAP,
    SERVER_LIMITS,
    answer_errors_as_problems,
    server_limits,
    waiting_threads,
    waits,
    warn_if_no_waiting,
)
from .mount import Mount
from .ops import AccessLog

log = logging.getLogger("usersvc")

#: Requests that may wait for changes at once (long-polls, streams: the
#: pages of a team of 32 people), each on a thread of its own, beside
#: ``--threads`` (docs/decisions.md says what one costs).
SERVED_MAX_WAITING = 32

#: What a trusted reverse proxy (--trusted-proxy) may tell us about the client.
PROXY_HEADERS = {"x-forwarded-proto", "x-forwarded-host", "x-forwarded-for"}

def parser(commands: bool = False) -> argparse.ArgumentParser:
    """The options of ``serve.py``, and of ``usersvc [serve]`` (``commands``:
    the help names the ``usersvc`` command's subcommands too)."""
    if commands:
        p = argparse.ArgumentParser(
            prog="usersvc",
            usage="usersvc [serve] [options]\n       usersvc copy SOURCE_URL DEST_URL",
            description="Commands: serve (the default) serves the users API (and any "
                        "collections declared beside it) with the options below; copy moves "
                        "every collection from one store to another (usersvc copy --help).")
    else:
        p = argparse.ArgumentParser(description="Serve usersvc: the users API, and any "
                                                "collections declared beside it.")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default: %(default)s)")
    p.add_argument("--port", type=int, default=8080,
                   help="port to listen on; 0 picks a free one (default: %(default)s)")
    p.add_argument("--storage", default=DEFAULT_STORAGE, metavar="URL",
                   help="memory://, sqlite://, sqlite:///relative.db, sqlite:////absolute.db or "
                        "postgresql://user@host/dbname (default: %(default)s)")
    p.add_argument("--threads", type=int, default=4, metavar="N",
                   help="worker threads for every request but those waiting for changes "
                        "(default: %(default)s)")
    p.add_argument("--max-waiting", metavar="N",
                   help="requests that may wait for changes at once (long-polls with wait=, "
                        "streams: a live page holds one), each with a thread of its own beside "
                        "--threads; past them a stream is told to come back and a long-poll "
                        f"gets a 503; the waiting feature's (default: {SERVED_MAX_WAITING})")
    p.add_argument("--server", choices=("waitress", "granian"), default="waitress",
                   help="the HTTP server: waitress (pure Python) or granian (Rust; its extra, "
                        "and --workers) (default: %(default)s)")
    p.add_argument("--workers", type=int, default=1, metavar="N",
                   help="processes, each with --threads threads (granian) (default: %(default)s)")
    p.add_argument("--max-body-size", default=str(DEFAULT_MAX_BODY_SIZE), metavar="BYTES",
                   help="largest request body accepted; larger gets 413 (default: %(default)s)")
    p.add_argument("--prefix", default="", metavar="PATH",
                   help="serve under this path, e.g. /v1 (default: none)")
    p.add_argument("--trusted-proxy", default=None, metavar="ADDR",
                   help="the address of a reverse proxy whose X-Forwarded-Proto, -Host and -For "
                        "headers are believed (default: none; '*' trusts any)")
    p.add_argument("--tokens-file", default=None, metavar="PATH",
                   help="require bearer tokens: one 'TOKEN read|write' per line (default: none, "
                        "anyone who reaches the server may read and write)")
    p.add_argument("--cors-origin", action="append", default=[], metavar="ORIGIN",
                   help="let pages of this origin (scheme://host[:port]; '*' for any) call the "
                        "service from a browser (CORS); repeat for more (default: none)")
    p.add_argument("--idempotency-ttl", default=str(DEFAULT_IDEMPOTENCY_TTL), metavar="SECONDS",
                   help="how long the answer to a POST or PATCH sent with an Idempotency-Key "
                        "is kept for its retries (default: %(default)s, a day)")
    p.add_argument("--max-batch", default=str(DEFAULT_MAX_BATCH), metavar="N",
                   help="the most requests one POST /batch may hold; more gets 413 "
                        "(default: %(default)s)")
    p.add_argument("--stream-seconds", default=str(DEFAULT_STREAM_SECONDS), metavar="SECONDS",
                   help="how long a stream of changes (text/event-stream) lasts before its "
                        "client is told to come back (default: %(default)s)")
    p.add_argument("--no-access-log", dest="access_log", action="store_false",
                   help="do not log a line per request")
    p.add_argument("--metrics-port", type=int, default=None, metavar="PORT",
                   help="serve Prometheus metrics at http://METRICS_HOST:PORT/metrics "
                        "(needs the metrics extra; default: no metrics)")
    p.add_argument("--metrics-host", default=None, metavar="ADDR",
                   help="the address the metrics port listens on (with --metrics-port; "
                        "default: 127.0.0.1)")
    p.add_argument("--collections", default=None, metavar="MODULE:NAME,...",
                   help="serve these collections: each NAME in MODULE a Schema or a tuple of "
                        "them (examples.library:BOOKS); users too, unless the list names them "
                        "or a tuple (default: users)")
    p.add_argument("--features", default=None, metavar="NAMES",
                   help="what plugs into the core, separated by commas: default, none (the "
                        f"plain core), names ({', '.join(KNOWN)}), MODULE:NAME for one of "
                        f"yours (default: {','.join(map(name_of, DEFAULT_FEATURES))})")
    for name, feature in own_settings().items():     # (the features' own: webhooks)
        # (``options``: what a feature with settings of its own has, not a Feature's member)
        metavar, said = resolved([feature])[0].options[name]    # type: ignore[attr-defined]
        if metavar is None:     # a switch: given as "1", as its variable would be
            p.add_argument(as_option(name), action="store_const", const="1", help=said)
        else:
            p.add_argument(as_option(name), metavar=metavar, help=said)
    p.add_argument("--speedups", default=None, choices=("on", "off"),
                   help="the fast paths, or every plain definition (usersvc.fast; default: on)")
    p.add_argument("--version", action="version", version=f"usersvc {VERSION}")
    return p


def parse_args(argv: Sequence[str] | None, commands: bool = False) -> argparse.Namespace:
    """The server's own options, checked here, and the app's, in
    ``args.settings`` (a ``Settings``), checked there: ``SettingError``."""
    p = parser(commands)
    args, unknown = p.parse_known_args(argv)
    if unknown:
        p.error(f"unrecognized arguments: {' '.join(unknown)}{_did_you_mean(p, unknown[0])}")
    if args.threads < 1:
        p.error("--threads must be at least 1")
    if args.workers < 1 or (args.workers > 1 and args.server != "granian"):
        p.error("--workers must be at least 1, and more than 1 only with --server granian")
    if not 0 <= args.port <= 65535:
        p.error("--port must be from 0 to 65535")
    if args.metrics_host is not None and args.metrics_port is None:
        p.error("--metrics-host needs --metrics-port (the port metrics are served on)")
    #: The app's settings as given in text (``granian_server`` hands them on).
    args.given = {name: text for name in ("storage", "max_body_size", "prefix", "tokens_file",
                                          "max_waiting", "idempotency_ttl", "max_batch",
                                          "stream_seconds", "collections", "features", "speedups",
                                          *own_settings())
                  if (text := getattr(args, name)) is not None}
    args.settings = Settings.from_text(
        args.given, as_option,
        cors_origins=args.cors_origin, access_log=args.access_log,
        metrics_port=args.metrics_port, metrics_host=args.metrics_host or "127.0.0.1")
    if args.max_waiting is None and waits(args.settings):   # (more places: each a thread)
        args.given["max_waiting"] = str(SERVED_MAX_WAITING)
        args.settings = replace(args.settings, max_waiting=SERVED_MAX_WAITING)
    return args


def _did_you_mean(parser: argparse.ArgumentParser, given: str) -> str:
    """" (did you mean --port?)" for a misspelt option, or ""."""
    options = [o for action in parser._actions for o in action.option_strings]
    close = difflib.get_close_matches(given.split("=", 1)[0], options, n=1)
    return f" (did you mean {close[0]}?)" if close else ""


def not_built(settings: Settings, error: Exception) -> str:
    """Why the app could not be built, in one line (the server's, granian's)."""
    if isinstance(error, ImportError) and error.name == "prometheus_client":   # (the feature's)
        return f"--metrics-port needs prometheus_client: {install_hint('metrics')}"
    if isinstance(error, SettingError):     # (a feature's, judged as it is plugged)
        return error.said(as_option)
    return f"cannot open storage {redact(settings.storage)}: {error}"


def main(argv: Sequence[str] | None = None, commands: bool = False,
         collections: Iterable[Schema] = (USER,)) -> int:
    """Serve ``collections`` (``examples/library.py`` serves users and
    books), or those ``--collections`` names."""
    try:
        args = parse_args(argv, commands)
    except SettingError as e:
        print(f"usersvc: {e}", file=sys.stderr)
        return 2
    settings: Settings = args.settings
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    warn_if_no_waiting(settings)
    if args.server == "granian":
        from .granian_server import serve
        _warn_if_open(args.host, settings)
        return serve(args, settings, collections,
                     lambda line: print(f"usersvc: {line}", file=sys.stderr), not_built)
    # waitress warns "Task queue depth is N" for every request that waits
    # for a thread: under load, a line per request that says only "busy",
    # at a cost in throughput. The access log's durations say it better.
    logging.getLogger("waitress.queue").setLevel(logging.ERROR)
    try:
        app = build_app(settings, settings.collections or collections)
    except Exception as e:   # a bad URL, an unwritable file, a newer schema...
        print(f"usersvc: {not_built(settings, e)}", file=sys.stderr)
        return 2
    wsgi: Any = Mount(settings.prefix, app) if settings.prefix else app
    access_log = AccessLog(wsgi, stream=sys.stderr) if settings.access_log else None
    if access_log is not None:
        wsgi = access_log
    proxy: dict[str, Any] = {}
    if args.trusted_proxy:
        # Behind a proxy, Location and Link must name the scheme and host the
        # client used; waitress rewrites them from these headers, only when
        # they come from this address, and drops them from anyone else.
        proxy = {"trusted_proxy": args.trusted_proxy, "trusted_proxy_headers": PROXY_HEADERS}
    try:
        # Resolve first: waitress says only "Invalid host/port specified."
        socket.getaddrinfo(args.host, args.port, type=socket.SOCK_STREAM)
        # Waiting requests get threads of their own: the others keep --threads.
        threads = args.threads + waiting_threads(settings)
        server = answer_errors_as_problems(create_server(
            wsgi, host=args.host, port=args.port, threads=threads,
            max_request_body_size=max(SERVER_BODY_CAP, 4 * settings.max_body_size),
            ident="usersvc", **{**server_limits(app.schemas), "connection_limit": max(
                SERVER_LIMITS["connection_limit"], 2 * threads)}, **proxy))
    except (OSError, ValueError) as e:     # in use, not this machine's, no such host
        app.close()
        print(f"usersvc: cannot listen on {args.host} port {args.port}: {_reason(e)}",
              file=sys.stderr)
        return 2
    metrics_server = None
    metrics = app.plugged.get("metrics")
    if metrics is not None:
        try:
            socket.getaddrinfo(settings.metrics_host, settings.metrics_port,
                               type=socket.SOCK_STREAM)
            metrics_server = metrics.serve(settings.metrics_host, settings.metrics_port)
        except (OSError, ValueError) as e:
            server.close()
            app.close()
            print(f"usersvc: cannot serve metrics on {settings.metrics_host} port "
                  f"{settings.metrics_port}: {_reason(e)}", file=sys.stderr)
            return 2
    webhooks = app.plugged.get("webhooks")      # (a feature's, asked as metrics' is)
    if webhooks is not None:        # delivering from the start, not from the first request
        webhooks.sender.serving()
    _warn_if_open(args.host, settings)
    if metrics_server is not None and not loopback(settings.metrics_host):
        log.warning("serving metrics on %s: anyone who can reach this address can read "
                    "them (request rates by route, store timings); they have no token",
                    settings.metrics_host)
    # waitress stops its loop on SystemExit or KeyboardInterrupt, then waits
    # up to 5 s for its threads: requests waiting for changes, and streams,
    # must be answered before that, or they hold the exit those 5 s. So
    # Ctrl-C (SIGINT, left alone where it is ignored: started in the
    # background by a shell) does what SIGTERM (what service managers send)
    # does: answer them, then stop.
    def stop(signum: int, frame: object) -> None:
        app.stop_waiting()
        raise SystemExit(0)
    signal.signal(signal.SIGTERM, stop)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, stop)
    metrics_at = ("" if metrics_server is None
                  else f" and metrics at {_url(metrics_server, '')}metrics")
    try:
        print(f"usersvc serving {_url(server, settings.prefix)} with storage "
              f"{redact(settings.storage)}{metrics_at}", flush=True)
        server.run()                # (until a signal's SystemExit, which it catches)
    finally:
        if metrics_server is not None:      # (its thread done with a scrape in hand first:
            metrics_server.task_dispatcher.shutdown()   # its end pulls what close closes)
            metrics_server.close()
        app.close()
        if access_log is not None:
            access_log.close()
    return 0


def _warn_if_open(host: str, settings: Settings) -> None:
    if settings.tokens is None and not loopback(host):
        log.warning("listening on %s without --tokens-file: anyone who can reach this "
                    "address can read and change every user", host)


def _reason(error: Exception) -> str:
    """An OS error's words without its number: "Address already in use"."""
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return str(error)


def _url(server: Any, prefix: str) -> str:
    """The URL the server answers on (the first, if a host name such as
    ``localhost`` made it listen on several addresses)."""
    listening = getattr(server, "effective_listen", None)
    host, port = listening[0] if listening else (server.effective_host, server.effective_port)
    if ":" in str(host):
        host = f"[{host}]"                           # an IPv6 address
    prefix = "/" + prefix.strip("/") if prefix.strip("/") else ""
    return f"http://{host}:{port}{prefix}/"


def loopback(host: str) -> bool:
    """Whether every address ``host`` names is a loopback one."""
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(str(info[4][0]).split("%")[0]).is_loopback
                               for info in infos)



if __name__ == "__main__":
    sys.exit(main())
