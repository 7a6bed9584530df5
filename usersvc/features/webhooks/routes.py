"""``/webhooks`` and ``/webhooks/{id}``: subscriptions, in JSON
(issue 60; docs/decisions.md, "Webhooks: the feed is the outbox").

``POST /webhooks`` with ``{"url": ..., "collections": [...], "after": N}``
(``collections`` left out: every collection; ``after``: where to start in
each, a position, or one per collection; left out: each feed's end, what
happens next) answers 201 with the subscription and its ``secret``,
shown there only. ``GET /webhooks`` lists them, ``GET /webhooks/{id}``
shows one with its state, never its secret; ``PATCH`` (merge patch) may
change ``url``, ``collections`` (``null``: every one) and ``enabled``;
``DELETE`` ends it. What is wrong with a body is a 422 pointing at each
member, as for records; every answer is ``no-store``.

With the pages plugged in (before this feature), a browser's ``GET``
(``Accept: text/html``) gets the list, or one subscription, as a page
(``usersvc.features.pages.webhooks``, made from what ``shown`` gives:
no secret). The routes offer the pages' HTML after JSON, so JSON wins a
tie (``*/*``), and a client that asks for JSON gets what it got without
the pages; a write answers in JSON whatever it asks for.
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...listing import parameters
from ...problems import Problem, not_json
from ...representation import Offers, body_format, body_text
from ...representation.json_format import JSON, JSON_TYPE, Format
from ...request import Request, Response
from ...schema import Invalid, pointer
from . import signing, targets
from .kept import Kept, Subscription
from .messages import rfc3339
from .options import Options
from .sender import Sender

if TYPE_CHECKING:       # (the pages' module is imported only when they are plugged in)
    from ..pages import HTMLFormat

PATH = "/webhooks"
MERGE_PATCH = "application/merge-patch+json"
#: What a POST's body may hold, and a PATCH's.
MADE = ("url", "collections", "after")
CHANGED = ("url", "collections", "enabled")
#: The members a subscription shows that no client writes.
SHOWN = ("id", "delivered", "failures", "next_attempt", "last_failure", "disabled_reason",
         "created", "secret")
_NO_STORE = ("Cache-Control", "no-store")


class Webhooks:
    """The two routes' targets (``collection``, ``item``), over ``kept``,
    telling ``sender`` of each change."""

    def __init__(self, kept: Kept, sender: Sender, options: Options,
                 pages: HTMLFormat | None = None) -> None:
        self.kept, self.sender, self.options = kept, sender, options
        self.collection, self.item = Subscriptions(self), OneSubscription(self)
        #: The pages' HTML format, if they are plugged in: what a GET may be answered in too.
        self.pages = pages
        if pages is not None:
            from ..pages import HTML_TYPE
            self.collection.offers = self.item.offers = OFFERS.plus(
                {HTML_TYPE: pages, f"{HTML_TYPE};charset=utf-8": pages})

    # -- reading a body ----------------------------------------------------------

    def document(self, req: Request, patch: bool) -> dict[str, Any]:
        """The body's JSON object, or the 400, 415 or 422 it earns."""
        if req.query_string:        # (a write takes none: one is not passed over)
            parameters(req.parameters(), [], f"{req.method} {PATH}")
        media_type = (req.content_type or "").partition(";")[0].strip().lower()
        accepted = OneSubscription.patches if patch else Subscriptions.accepts
        if media_type not in accepted or body_format(req.content_type, patch=patch) is not JSON:
            header = ("Accept-Patch" if patch else "Accept-Post", ", ".join(accepted))
            raise Problem(415, f"A subscription is {JSON_TYPE}, in UTF-8.", headers=[header])
        text = body_text(req)
        try:
            found = JSON.decode(text)
        except RecursionError:
            raise Problem(400, "The JSON body is nested too deeply.") from None
        except ValueError as e:     # (not JSON; a name twice is ``Invalid``: a 422)
            raise not_json(e) from None
        if not isinstance(found, dict):
            raise Invalid("The body is not a subscription.", [("", "must be a JSON object")])
        return found

    def url(self, value: Any, errors: list[tuple[str, str]]) -> str | None:
        """A target URL, checked: its form, then every address its host
        resolves to (``targets``); its problem added to ``errors``."""
        if not isinstance(value, str):
            errors.append(("/url", "must be a string: an http or https URL"))
            return None
        problem = targets.url_problem(value)
        if problem is None:
            try:
                targets.checked(value, self.options.allow_private)
            except targets.Refused as e:
                problem = f"cannot be a target: {e}"
        if problem is not None:
            errors.append(("/url", problem))
            return None
        return value

    def collections(self, value: Any, errors: list[tuple[str, str]]) -> tuple[str, ...] | None:
        """The collections named (``None``: every one), each a feed served here."""
        if value is None:
            return None
        if not isinstance(value, list) or not value:
            errors.append(("/collections", "must be a list of one collection's name or more "
                                           "(left out: every collection)"))
            return None
        served = self.sender.feeds
        for n, plural in enumerate(value):
            if not isinstance(plural, str) or plural not in served:
                errors.append((f"/collections/{n}", f"must name a collection served here "
                                                    f"({', '.join(served)})"))
            elif plural in value[:n]:
                errors.append((f"/collections/{n}", "names a collection named before"))
        return tuple(value)

    def ends(self) -> dict[str, int]:
        """Each feed's last position now: where a subscription made now starts."""
        return {plural: changes.records.position() for plural, changes in self.sender.feeds.items()}

    # -- answers -------------------------------------------------------------------

    def answer(self, status: int, value: Any, *headers: tuple[str, str]) -> Response:
        body = json.dumps(value, separators=(",", ":")).encode()
        return Response(status, body, [("Content-Type", JSON_TYPE), _NO_STORE, *headers])

    def shown_in(self, req: Request, fmt: Format, value: Any) -> Response:
        """``value`` (the list, or one subscription, as ``shown`` makes
        them) in JSON, or as the pages' page when they chose ``fmt``."""
        pages = self.pages
        if pages is None or fmt is not pages:
            return self.answer(200, value)
        from ..pages.webhooks import subscription_page, subscriptions_page
        if isinstance(value, list):
            return subscriptions_page(req, pages, value, self.ends())
        return subscription_page(req, pages, value, self.ends())

    def found(self, subscription_id: int) -> Subscription:
        found = self.kept.get(subscription_id)
        if found is None:
            raise _missing()
        return found


def shown(subscription: Subscription, secret: bool = False) -> dict[str, Any]:
    """A subscription as its JSON shows it: its secret only when made."""
    s = subscription
    value: dict[str, Any] = {"id": s.id, "url": s.url}
    if s.collections is not None:
        value["collections"] = list(s.collections)
    failure: dict[str, Any] | None = None
    if s.failed_at is not None:
        failure = {"at": rfc3339(s.failed_at)} | (
            {"status": s.failed_status} if s.failed_status is not None else
            {"error": s.failed_error})
    value.update(enabled=s.enabled, delivered=dict(sorted(s.delivered.items())),
                 failures=s.failures,
                 next_attempt=None if s.next_attempt is None else rfc3339(s.next_attempt),
                 last_failure=failure, disabled_reason=s.disabled_reason,
                 created=rfc3339(s.created))
    if secret:
        value["secret"] = s.secret
    return value


def _missing() -> Problem:
    return Problem(404, "There is no webhook subscription with this id.")


def _invalid(errors: list[tuple[str, str]]) -> Invalid:
    return Invalid(f"The subscription has {len(errors)} invalid member"
                   f"{'s' * (len(errors) > 1)}.", errors)


def _unknown(name: str, allowed: tuple[str, ...]) -> tuple[str, str]:
    """The error for a member a body may not hold (its value never echoed: a secret's)."""
    said = ("cannot be changed: shown once, when the subscription was made "
            "(make another for a new secret)" if name == "secret" else
            "is not a member of a subscription one may send" if name not in SHOWN
            else "is the service's, not one a client may send")
    return (pointer(name), f"{said} (it takes {', '.join(allowed)})")


#: What the routes answer in (and the pages' HTML too, when they are plugged in).
OFFERS = Offers({JSON_TYPE: JSON, f"{JSON_TYPE};charset=utf-8": JSON})


class Subscriptions:
    """``/webhooks``: the list (GET), and a new subscription (POST)."""

    offers = OFFERS
    accepts = (JSON_TYPE,)

    def __init__(self, hooks: Webhooks) -> None:
        self.hooks = hooks

    def on_get(self, req: Request, fmt: Format) -> Response:
        parameters(req.parameters(), [], f"GET {PATH}")
        return self.hooks.shown_in(req, fmt, [shown(s) for s in self.hooks.kept.all()])

    def on_post(self, req: Request, fmt: Format) -> Response:
        hooks = self.hooks
        document = hooks.document(req, patch=False)
        errors = [_unknown(name, MADE) for name in document if name not in MADE]
        if "url" not in document:
            errors.append(("/url", "is required: where to send the changes"))
        url = hooks.url(document["url"], errors) if "url" in document else None
        collections = hooks.collections(document.get("collections"), errors)
        if "collections" in document and document["collections"] is None:
            errors.append(("/collections", "must be a list (left out: every collection)"))
        started = hooks.ends()
        after = _after(document.get("after"), collections, started, errors)
        if errors or url is None:
            raise _invalid(errors)
        made = hooks.kept.create(Subscription(
            0, url, collections, signing.new_secret(), time.time(),
            delivered={plural: after.get(plural, seq) for plural, seq in started.items()
                       if collections is None or plural in collections}))
        hooks.sender.poke()
        return hooks.answer(201, shown(made, secret=True),
                            ("Location", f"{req.base_url}{PATH}/{made.id}"))


def _after(value: Any, collections: tuple[str, ...] | None, ends: dict[str, int],
           errors: list[tuple[str, str]]) -> dict[str, int]:
    """Where a new subscription starts in each collection: ``after`` a
    position for every one, or one per collection (``{"users": 17}``);
    left out, each feed's end."""
    if value is None:
        return {}
    covered = [plural for plural in ends if collections is None or plural in collections]
    given = dict.fromkeys(covered, value) if not isinstance(value, dict) else value
    found: dict[str, int] = {}
    for plural, seq in given.items():
        at = "/after" if not isinstance(value, dict) else pointer("after", plural)
        if plural not in covered:
            errors.append((at, "must name a collection the subscription covers"))
        elif type(seq) is not int or not 0 <= seq <= ends[plural]:
            errors.append((at, f"must be a position from 0 to the feed's last, {ends[plural]}"))
        else:
            found[plural] = seq
    return found


class OneSubscription:
    """``/webhooks/{id}``: one subscription, its state (GET), a change of
    it (PATCH), its end (DELETE)."""

    offers = OFFERS
    patches = (JSON_TYPE, MERGE_PATCH)      # what PATCH reads (OPTIONS: Accept-Patch)

    def __init__(self, hooks: Webhooks) -> None:
        self.hooks = hooks

    def on_get(self, req: Request, fmt: Format, id: int) -> Response:
        parameters(req.parameters(), [], f"GET {PATH}/{{id}}")
        return self.hooks.shown_in(req, fmt, shown(self.hooks.found(id)))

    def on_patch(self, req: Request, fmt: Format, id: int) -> Response:
        hooks = self.hooks
        hooks.found(id)         # (a 404 before the body is judged)
        document = hooks.document(req, patch=True)
        errors = [_unknown(name, CHANGED) for name in document if name not in CHANGED]
        url = hooks.url(document["url"], errors) if "url" in document else None
        collections = hooks.collections(document.get("collections"), errors)
        enabled = document.get("enabled")
        if "enabled" in document and not isinstance(enabled, bool):
            errors.append(("/enabled", "must be true or false"))
        if errors:
            raise _invalid(errors)
        changed = hooks.kept.change(id, _changing(document, url, collections, hooks.ends()))
        if changed is None:
            raise _missing()
        hooks.sender.changed(id, changed)
        return hooks.answer(200, shown(changed))

    def on_delete(self, req: Request, fmt: Format | None, id: int) -> Response:
        if req.query_string:
            parameters(req.parameters(), [], f"DELETE {PATH}/{{id}}")
        if not self.hooks.kept.delete(id):
            raise _missing()
        self.hooks.sender.changed(id, None)
        return Response(204, headers=[_NO_STORE])


def _changing(document: dict[str, Any], url: str | None, collections: tuple[str, ...] | None,
              ends: dict[str, int]) -> Callable[[Subscription], Subscription]:
    """How a PATCH changes a subscription as it is: the members it gives;
    a collection newly covered from its feed's end; a new URL, or the
    subscription turned on again, starting the schedule again, at once."""
    def change(s: Subscription) -> Subscription:
        before_url, before_enabled = s.url, s.enabled
        if url is not None:
            s.url = url
        if "collections" in document:
            s.collections = collections
        if "enabled" in document:
            s.enabled = bool(document["enabled"])
        s.delivered = {plural: seq for plural, seq in s.delivered.items() if s.covers(plural)}
        for plural, seq in ends.items():
            if s.covers(plural) and plural not in s.delivered:
                s.delivered[plural] = seq
        if s.url != before_url or (s.enabled and not before_enabled):
            s.failures, s.next_attempt, s.disabled_reason = 0, None, None
        if not s.enabled:
            s.next_attempt = None
        return s
    return change

