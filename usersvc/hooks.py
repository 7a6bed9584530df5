"""Every hook a feature may use, in one place, and what a feature is.

The core (``App``, the resources, the stores) serves the contract alone;
every feature (the pages, OpenAPI, ``/healthz``, CORS, tokens, idempotency
keys, batches, waiting for changes, metrics, or one of yours) plugs in
through the hooks below, and nothing else. What a feature may read of the
app besides: ``app.settings``; ``app.schemas``, ``app.records`` and
``app.feeds`` (the collections, each one's records, those with a feed: filled
as each collection is added, after every ``plug``, so read them when a
request is answered, not when plugging in); ``app.router.match(path)``;
``app.problem_response(req, problem)``. A ``Request`` has ``__slots__``:
what a feature keeps for one request goes in ``req.environ`` under a name
of its own (``examples/timing.py``). A hook is a plain attribute of ``App``: a list of
callables the core calls in order, or one value it reads. No hook library
(docs/decisions.md, "Hooks: a plain list of callables, not pluggy": pluggy
made a GET 1.6-1.8 times the instructions); a request meets no hook that
nothing plugged into.

**A feature** is an object with a ``name`` and a ``plug(app, storage,
plugged)`` (``Feature``). ``build_app`` opens the store, calls each
feature's ``plug`` in the order ``features=`` lists them, then adds the
collections, so a feature's hooks are in place before the first
collection is served. ``plug`` receives:

- ``app``: the ``App`` being built; ``app.settings`` its ``Settings``;
- ``storage``: the ``Storage`` its collections come from (``None`` when
  the app serves one ``RecordStore`` alone);
- ``plugged``: what each feature before it returned from its ``plug``, by
  name (batch takes idempotency's keys from it). The same dict is filled
  on as later features plug in, so a route may read it when asked; it is
  ``app.plugged``, where an embedder or a server finds what a feature hands
  out (``app.plugged["metrics"]``, whose ``serve(host, port)`` serves its
  ``registry`` at ``/metrics``, as serve.py and ``usersvc.wsgi`` ask it,
  importing no feature): the core keeps no attribute of any feature's but
  the ``app.waiting`` hook (below). A feature that reads what another
  plugged in comes after it in ``features=`` (batch after idempotency,
  metrics after waiting), as in ``DEFAULT_FEATURES``.

It returns what it plugged in (for the features after it, and
``plugged``), or ``None`` when its settings ask for nothing (CORS with no
origins).

**Its settings** are ``KNOWN``'s: ``Settings`` holds them (as fields, or
in ``own``: below), and refuses
one given while its feature is left out. A feature may read its own as
the settings are made: ``read_setting(name, value) -> value``, asked for
each one given (not its default), its module imported then; the value it
returns is the setting's from then on, and a ``ValueError`` is a
``SettingError`` of the setting's (``tokens cannot be used: ...``, said
as a server's option or variable spells it). The tokens feature reads
``tokens`` (a mapping, or a tokens file's ``Path`` from ``--tokens-file``)
into ``Tokens`` so: the core's settings never import a feature.

A setting ``Settings`` has no field for is the feature's own (the
webhooks feature's three): given as ``make_app``'s keyword
(``webhooks_timeout=2``), a server's option (``--webhooks-timeout 2``) or
variable (``USERSVC_WEBHOOKS_TIMEOUT=2``), read by ``read_setting`` (from
a value or a text), and kept in ``app.settings.own`` by name (what was
not given is not there: the feature's default). A server shows each as
the feature's ``options`` say: ``{name: (metavar, help)}``, a metavar of
``None`` for a switch that takes no value (given as ``"1"``); it imports
the feature to ask. A feature object of yours may have settings of its
own too, named in its ``options``: ``make_app``'s keywords only (a server
reads the options of ``KNOWN``'s features).

**The hooks** (in the order a request meets them):

``app.starters``: ``start(req) -> None``, each request as it comes,
    before anything is judged (metrics start counting). Must not raise.
``app.router``: ``app.router.add(path, resource)``: a route, whose
    ``on_get``/``on_post``... answer ``(req, fmt, **params)``; its
    ``offers`` say what it answers in (``None``: not negotiated), its
    ``accepts`` and ``patches`` the body types a POST and a PATCH read
    (what ``OPTIONS`` names in ``Accept-Post``, ``Accept-Patch``; the
    collections' unless it says).
``req.route``: not a hook but the core's, read by any: the template of
    the route the request matched (``/users/{id}``; ``""``: none), set by
    ``App.handle`` as soon as it is routed, before the checks, so that an
    answer a check gives (401, 403) has it too. Which route a request took
    is the router's knowledge, as ``req.path`` is the request's; metrics
    label their counts with it, an access log could.
``app.checks``: ``check(req, found) -> Response | None``, after routing
    (``found``: ``(route, params)`` or ``None``) and before a byte of the
    body is read. The first that returns a ``Response`` answers; one may
    raise a ``Problem`` (401, 403). Cross-origin protection is the first;
    ``checks.insert(0, ...)`` goes before it (CORS's preflights).
``app.allowed_origins``: a set of origins (``scheme://host[:port]``;
    ``"*"``: any) whose pages may write here: the core's cross-origin
    protection (403 for a write a page of another site made) lets their
    writes through. Empty in the plain core, which refuses every
    cross-site write; CORS adds the origins its settings name.
``app.open_paths``: a set of paths a check that asks for credentials
    leaves open (the health check, the pages' files).
``app.offers``, ``app.problem_offers``: the representations records and
    problems are answered in (``Offers.plus``); read as each collection is
    added, so set them before (the pages add HTML). A ``Format`` declares
    what the core asks of it: its ``tag_suffix`` (what its ETags have
    after the version, ``-html``, read back from ``If-Match``) and
    ``sparse`` (whether ``fields=`` answers some fields in it; the pages'
    HTML says no). The core compares no format's ``name`` with one it knows.
``app.finishers``: ``finish(req, response) -> None``, each answer, problems
    too, in order, before it is sent: headers added to ``response.headers``
    (CORS), counts (metrics). Must not raise.

And as each collection is added (``App.add_collection``):

``app.records_wrappers``: ``wrap(plural, records) -> records``: a
    collection's records wrapped, in order, the last outermost (metrics
    time each operation). ``/healthz`` sees them unwrapped.
``app.write_hook``: ``write_hook(records) -> hook``: one, or ``None``: the
    hook a collection's POST and PATCH ask when the request carries
    ``hook.header`` (``resources``, "A write hook"; idempotency keys):
    ``hook(req, fmt, make, respond)``, where ``make(req)`` reads and checks
    the body and gives the write, ``write(records)``, which the hook makes
    where it will (idempotency: on ``step[plural]`` of a step of the
    store's, ``Storage.atomically``, keeping the answer in it).
``app.feed_hooks``: ``hook(changes) -> None``, each collection's change
    feed (``changes.Changes``) as it is made, before it is routed: a
    feature may add query parameters (``changes.parameters``), answer its
    pages its own way around ``Changes.page`` (``changes.answers``), and
    offer it in more representations (``changes.offer``). Waiting for
    changes does all three (``wait=``, the stream).

And of a store (the ``storage`` given to ``plug``, or a collection's
records' ``storage``), a capability of some stores, not of ``App``:

``storage.observe_commits(observer) -> bool``: an observer of commits
    (``storage.protocol.CommitsObservable``): ``observer(seconds, writes)``
    after each commit the store makes in this process, where it groups
    writes into commits of its own (SQLite's writer); whether it will.
    Metrics count SQLite's commits so; any feature may observe them.
``storage.announce_commits(listener) -> stop``: a listener of every
    commit, of any process (``storage.protocol.CommitsAnnounced``):
    ``listener(plural)`` after each commit that changes a collection,
    ``listener(None)`` when the store closes; quick, never raising (on the
    threads that write and look); ``stop()`` ends it. The first listener
    starts the store's look for other processes' commits (SQLite's
    polling thread, PostgreSQL's LISTEN), so listen only when needed.
    Waiting for changes wakes its waiting requests so, from the first that
    waits; any feature may listen (a cache to drop, a push to send).

And around the app's life:

``app.stoppers``: ``stop() -> None``, each, when the server stops
    (``App.stop_waiting``, which serve.py and ``usersvc.wsgi`` call on
    SIGTERM and Ctrl-C): what holds a request open answers it now, and
    every later one at once (waiting for changes ends its long-polls and
    streams). The plain core holds none open. Must not raise.
``app.on_close(closer)``: ``closer()`` when ``app.close()`` is called, the
    last added first (a feature's, then the store the app opened).
``app.waiting``: ``None``, or, with the waiting feature, its waiting
    places (``features.waiting.slots.Waiting``); their ``watchers``:
    ``watch(n, stream) -> None``, each time a request starts (``n`` 1) or
    stops (-1) waiting for changes (metrics; gunicorn's stop, ``usersvc.wsgi``).

**The plain core** (``features=()``) serves the collections, in JSON and
XML, with their change feeds, answered at once (no ``wait=``, no stream:
the waiting feature's); a header only a feature reads is ignored, as
a server that does not know it ignores it (RFC 9110 §5.1): without the
idempotency feature an ``Idempotency-Key`` is not honoured, and a POST sent
with one is made each time it is sent.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, runtime_checkable

if TYPE_CHECKING:       # (only named: the core imports this module)
    from .changes import Changes
    from .problems import Problem
    from .representation import Format, Offers
    from .request import Request, Response
    from .routing import Route, Router
    from .schema import Schema
    from .storage import RecordStore, Storage

    class Read(Protocol):
        """An app's settings as its features read them (``settings.Settings`` is
        one: the settings import this module, for ``KNOWN``); read only."""

        @property
        def tokens(self) -> Any: ...
        @property
        def cors_origins(self) -> frozenset[str]: ...
        @property
        def max_waiting(self) -> int: ...
        @property
        def stream_seconds(self) -> int: ...
        @property
        def idempotency_ttl(self) -> int: ...
        @property
        def max_batch(self) -> int: ...
        @property
        def metrics(self) -> bool: ...
        @property
        def metrics_dir(self) -> str | None: ...
        @property
        def own(self) -> Mapping[str, Any]: ...

#: The features usersvc has, by name: where each is (``module:attribute``,
#: imported only when an app plugs it in, or a server asks one with settings
#: of its own how to show them) and the settings that are its.
KNOWN: dict[str, tuple[str, tuple[str, ...]]] = {
    "pages": ("usersvc.features.pages:FEATURE", ()),
    "openapi": ("usersvc.features.openapi:FEATURE", ()),
    "health": ("usersvc.features.health:FEATURE", ()),
    "cors": ("usersvc.features.cors:FEATURE", ("cors_origins",)),
    "tokens": ("usersvc.features.auth:FEATURE", ("tokens",)),
    "idempotency": ("usersvc.features.idempotency:FEATURE", ("idempotency_ttl",)),
    "batch": ("usersvc.features.batch:FEATURE", ("max_batch",)),
    "waiting": ("usersvc.features.waiting:FEATURE", ("max_waiting", "stream_seconds")),
    "metrics": ("usersvc.features.metrics:FEATURE",
                ("metrics_port", "metrics_dir", "metrics_host", "metrics")),
    "webhooks": ("usersvc.features.webhooks:FEATURE",
                 ("webhooks_allow_private", "webhooks_retries", "webhooks_timeout")),
}

#: What ``make_app()`` serves unless told otherwise: every feature, in the
#: order a request meets them (metrics the last to see an answer, and
#: after waiting, whose places it counts). CORS, tokens and metrics plug
#: in nothing unless their settings ask. Webhooks are not among them yet
#: (docs/decisions.md, "Webhooks: the feed is the outbox"): name them,
#: ``DEFAULT_FEATURES + ("webhooks",)``.
DEFAULT_FEATURES: tuple[str | Feature, ...] = ("pages", "openapi", "health", "cors", "tokens",
                                                "idempotency", "batch", "waiting", "metrics")

# Each hook's type, by the name the text above gives it: what ``App``
# declares and a feature's (an embedder's) checker holds its callables to.
# (Written as text: this module imports none of the core's when it runs.)
#: What routing found: the route and its parameters (``None``: nothing, a 404 to come).
Found: TypeAlias = "tuple[Route, dict[str, int]] | None"
#: ``app.starters``: ``start(req)``.
Start: TypeAlias = "Callable[[Request], None]"
#: ``app.checks``: ``check(req, found)``, a ``Response`` to answer with, or ``None``.
Check: TypeAlias = "Callable[[Request, Found], Response | None]"
#: ``app.finishers``: ``finish(req, response)``.
Finish: TypeAlias = "Callable[[Request, Response], None]"
#: ``app.records_wrappers``: ``wrap(plural, records) -> records``.
WrapRecords: TypeAlias = "Callable[[str, RecordStore], RecordStore]"
#: A write, as a write hook's ``make(req)`` gives it: ``write(records)``, the record written.
Write: TypeAlias = "Callable[[RecordStore], Any]"
#: ``app.write_hook``: ``write_hook(records) -> hook`` (``WriteHook``).
MakeWriteHook: TypeAlias = "Callable[[RecordStore], WriteHook]"
#: ``app.feed_hooks``: ``hook(changes)``.
FeedHook: TypeAlias = "Callable[[Changes], None]"
#: ``app.stoppers`` and ``app.on_close``'s closers: ``stop()``.
Stop: TypeAlias = "Callable[[], None]"


class WriteHook(Protocol):
    """A collection's write hook (``app.write_hook``'s): asked for a POST or
    PATCH that carries ``header``; ``make(req)`` reads the body and gives
    the write, ``respond(record)`` the answer (``resources``, "A write hook")."""

    @property
    def header(self) -> str: ...

    def __call__(self, req: Request, fmt: Format, make: Callable[[Request], Write],
                 respond: Callable[[Any], Response]) -> Response: ...


class Waiting(Protocol):
    """``app.waiting`` (the waiting feature's places): its ``watchers``,
    ``watch(n, stream)`` each time a request starts (``n`` 1) or stops (-1)
    waiting."""

    watchers: list[Callable[[int, bool], None]]


class Hooks(Protocol):
    """What a feature is given to plug into: the hooks above, as ``App``
    has them (here by their shape, so that this module needs none of the
    core's: the core imports it, for ``KNOWN``), and what it may read."""

    @property
    def settings(self) -> Read: ...     # (read only: ``App.settings``, a ``Settings``)
    starters: list[Start]
    router: Router
    checks: list[Check]
    open_paths: set[str]
    allowed_origins: set[str]
    offers: Offers
    problem_offers: Offers
    finishers: list[Finish]
    records_wrappers: list[WrapRecords]
    write_hook: MakeWriteHook | None
    feed_hooks: list[FeedHook]
    stoppers: list[Stop]
    waiting: Waiting | None
    plugged: dict[str, Any]
    schemas: list[Schema]
    records: list[RecordStore]
    feeds: list[str]

    def on_close(self, closer: Stop) -> None: ...

    def problem_response(self, req: Request, problem: Problem) -> Response: ...


@runtime_checkable
class Feature(Protocol):
    """Something that plugs into an app through the hooks above (its
    ``name`` read only: a class attribute, a frozen dataclass's field)."""

    @property
    def name(self) -> str: ...

    def plug(self, app: Hooks, storage: Storage | None, plugged: dict[str, Any]) -> Any:
        """Put this feature's callables into ``app``'s hooks (``app``: the
        ``App`` being built, typed as ``Hooks``, what a feature may use of
        it); return what it plugged in (``None``: nothing, its settings
        asking for nothing)."""


def name_of(feature: Any) -> str:
    """A feature's name: the name itself, or the object's ``name``."""
    return feature if isinstance(feature, str) else feature.name


def named(features: Iterable[Any]) -> list[str]:
    """Each feature's name, in order; a ``ValueError`` that says why for a
    name usersvc has no feature of, an object that is no feature (no
    ``plug``, no ``name``), a name given twice, or a feature of one's own
    named as one of usersvc's is (whose settings would then be taken as
    read by it: ``tokens=`` beside a ``tokens`` of one's own)."""
    found: list[str] = []
    for feature in features:
        name = feature if isinstance(feature, str) else (
            getattr(feature, "name", None) if hasattr(feature, "plug") else None)
        if name is None or name not in KNOWN and isinstance(feature, str):
            raise ValueError(f"{feature!r} is not a feature (usersvc has {', '.join(KNOWN)})")
        if name in KNOWN and not isinstance(feature, str) and feature is not resolved([name])[0]:
            raise ValueError(f"{feature!r} is named {name}, as one of usersvc's features is")
        if name in found:
            raise ValueError(f"{name} is named twice")
        found.append(name)
    return found


def resolved(features: Iterable[Any]) -> list[Feature]:
    """The features, each name imported as ``KNOWN`` says, each object as it is."""
    found = []
    for feature in features:
        if isinstance(feature, str):
            module, _, attribute = KNOWN[feature][0].partition(":")
            feature = getattr(importlib.import_module(module), attribute)
        found.append(feature)
    return found
