"""The ``webhooks`` feature (``usersvc.hooks``): every change of the
collections a subscription covers POSTed to its URL, signed as the
Standard Webhooks specification says, in feed order, none skipped, until
its receiver answers 2xx (issue 60; docs/decisions.md,
"Webhooks: the feed is the outbox").

    app = make_app("sqlite:///users.db", features=DEFAULT_FEATURES + ("webhooks",))

The change feed is the outbox: a subscription is a place in each feed
it covers, kept where the app's store is (``kept``: the feature's own
tables on SQLite and PostgreSQL, a dict on ``memory://``), moved on as
its receiver acknowledges (``sender``: a thread beside the server's
workers). The routes (``routes``): ``/webhooks``, ``/webhooks/{id}``,
needing a ``write`` token when tokens are on. Targets are checked at
subscribe and at each attempt (``targets``), messages signed (``signing``).
Its settings (``options``), its own (``usersvc.hooks``): ``webhooks_allow_private``,
``webhooks_retries``, ``webhooks_timeout``.

What it plugs into: ``app.router`` (its routes), ``app.feed_hooks`` (to
learn each feed), ``app.starters`` (on SQLite and PostgreSQL: the first request this
process serves starts the sender, and drops the starter),
``app.stoppers`` and ``app.on_close`` (to stop), ``app.checks`` (tokens,
when on), and the store's ``announce_commits`` (to wake when a commit is
made: a flag set on the committing thread). With the pages plugged in before it,
its list and each subscription are pages too (``routes``), and the
service root links to them (the pages' ``places``).
"""
from __future__ import annotations

import atexit
import weakref
from typing import Any

from ...hooks import named
from ...request import Request
from ...settings import SettingError
from ...storage.protocol import Atomic, Transactional
from . import options
from .kept import Kept, SQLKept
from .memory import MemoryKept
from .options import OPTIONS, Options
from .routes import PATH, Webhooks
from .sender import Sender


def keeping(storage: Any) -> Kept:
    """Where ``storage``'s subscriptions are kept: its tables (a SQL
    store's steps), or a dict (a store whose steps have no ``db``:
    memory). A ``ValueError`` for a store that has no steps, or does not
    say what they are: the feature would keep nothing across a restart
    there, and says so rather than lose subscriptions quietly."""
    if not isinstance(storage, Atomic) or not isinstance(storage, Transactional):
        raise ValueError("the webhooks feature needs a store it can keep subscriptions in "
                         "(memory://, sqlite:..., postgresql://...), not a collection's "
                         "records served alone or a store without atomic steps")
    dialect = storage.dialect
    if dialect is None:
        return MemoryKept()
    return SQLKept(storage, dialect.mark, postgres=dialect.name == "postgres")


class WebhooksFeature:
    """Subscriptions, their routes, and their deliveries."""

    name = "webhooks"
    options = OPTIONS       # its settings, as a server shows them (``usersvc.hooks``)

    def read_setting(self, name: str, value: Any) -> Any:
        """One of its settings as given (``options.read``)."""
        return options.read(name, value)

    def plug(self, app: Any, storage: Any, plugged: dict[str, Any]) -> Webhooks:
        """Its routes and its sender; a ``ValueError`` for an app whose
        store has nowhere to keep subscriptions (``keeping``)."""
        settings = Options.of(app.settings)
        kept = keeping(storage)
        sender = Sender(kept, settings, storage)
        # The pages (plugged in before, as in DEFAULT_FEATURES):
        # the routes answer a browser's GET with a page too, and / links to the list.
        pages = plugged.get("pages")
        if pages is None and "pages" in named(app.settings.features):
            raise SettingError("features", "must name webhooks after pages (its pages are "
                                           "theirs): default,webhooks")
        webhooks = Webhooks(kept, sender, settings, pages)
        if pages is not None:
            pages.places.append((PATH, "Webhook subscriptions"))
        app.router.add(PATH, webhooks.collection)
        app.router.add(PATH + "/{id:int}", webhooks.item)
        app.feed_hooks.append(sender.add_feed)
        if kept.shared:         # (memory's subscriptions are made here: a route starts it)
            def serving(req: Request) -> None:
                """The first request starts the sender, and the starter is
                dropped (the list replaced: the one being walked goes on)."""
                sender.serving()
                app.starters = [start for start in app.starters if start is not serving]
            app.starters.append(serving)
        app.stoppers.append(sender.stop)
        app.on_close(sender.stop)
        # A server that stops its workers without telling the app (gunicorn's
        # workers, uWSGI's) ends them by exiting: stopped then, the leases are
        # given back, and a restart's processes take the subscriptions at once
        # rather than after the leases run out. (Weakly: an app closed is freed.)
        atexit.register(_stop_if_alive, weakref.ref(sender))
        if app.settings.tokens is not None:
            ours = (webhooks.collection, webhooks.item)

            def write_token(req: Request, found: Any) -> None:
                """Every webhooks route, a GET too, needs a ``write`` token:
                the tokens feature's check, asked as for a write."""
                tokens = app.plugged.get("tokens")
                if found is not None and found[0].target in ours and tokens is not None:
                    tokens.check(Request(dict(req.environ, REQUEST_METHOD="POST")))
            app.checks.append(write_token)
        return webhooks


def _stop_if_alive(sender: weakref.ref[Sender]) -> None:
    alive = sender()
    if alive is not None:
        alive.stop()


FEATURE = WebhooksFeature()

__all__ = ["FEATURE", "Options", "PATH", "Webhooks", "WebhooksFeature", "keeping"]
