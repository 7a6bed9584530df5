"""The webhooks feature's pages: its subscriptions and their state, for a
person (issue 60, "Seen"). The feature's routes ask for them when the
pages are plugged in and a browser asks ``/webhooks`` or
``/webhooks/{id}`` for HTML, as the openapi feature asks ``root_page``
for ``/``; this module imports nothing of the feature's.

A page is made from the subscriptions as their JSON shows them (the
routes' ``shown``), which holds no secret: a page cannot show what it is
never given. Beside each position delivered, how far the feed has gone
(``ends``: each feed's last position), so that a person sees whether a
subscription is up to date, or how far behind.
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from ...request import Request, Response
from . import HTMLFormat, _base, page
from .inputs import Html, fill

#: What a value the service has none of shows.
NONE = '<span class="none">none</span>'
#: The webhooks routes' answers are kept nowhere, their pages neither.
_NO_STORE = ("Cache-Control", "no-store")


def subscriptions_page(req: Request, fmt: HTMLFormat, subscriptions: Sequence[Mapping[str, Any]],
                       ends: Mapping[str, int]) -> Response:
    """``GET /webhooks``: a table of the subscriptions and their state,
    each linking to its own page."""
    url = f"{_base(req)}/webhooks"
    count = len(subscriptions)
    summary = (f"{count} subscription{'s' * (count != 1)}." if count else
               "No subscriptions yet.")
    rows = Html("".join(_row(url, s, ends) for s in subscriptions))
    response = page(req, 200, "Webhook subscriptions",
                    fill("webhooks", url=url, summary=summary, rows=rows), fmt.collections)
    response.headers.append(_NO_STORE)
    return response


def subscription_page(req: Request, fmt: HTMLFormat, subscription: Mapping[str, Any],
                      ends: Mapping[str, int]) -> Response:
    """``GET /webhooks/{id}``: one subscription's state, and its JSON."""
    s = subscription
    fields = [("URL", escape(s["url"])), ("Collections", _collections(s)),
              ("Enabled", _enabled(s)), ("Delivered up to", _delivered(s, ends)),
              ("Failures in a row", str(s["failures"])),
              ("Next attempt", _time(s["next_attempt"])),
              ("Last failure", _failure(s["last_failure"])), ("Created", _time(s["created"]))]
    main = fill("webhook", list_url=f"{_base(req)}/webhooks", id=s["id"],
                fields=Html("".join(f"<dt>{name}</dt><dd>{value}</dd>\n"
                                    for name, value in fields)),
                json=json.dumps(s, indent=1))
    response = page(req, 200, f"Webhook subscription {s['id']}", main, fmt.collections)
    response.headers.append(_NO_STORE)
    return response


def _row(url: str, s: Mapping[str, Any], ends: Mapping[str, int]) -> str:
    """One subscription's row: its id and URL linking to its page."""
    link = f'<a href="{escape(url)}/{int(s["id"])}">'
    cells = [link + str(int(s["id"])) + "</a>", f'{link}{escape(s["url"])}</a>',
             _collections(s), _enabled(s), _delivered(s, ends), str(s["failures"]),
             _time(s["next_attempt"]), _failure(s["last_failure"])]
    state = "disabled" if not s["enabled"] else "failing" if s["failures"] else "enabled"
    return (f'<tr data-id="{int(s["id"])}" class="{state}">'
            + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>\n")


def _collections(s: Mapping[str, Any]) -> str:
    collections = s.get("collections")      # (left out: every one)
    return ('<span class="none">every collection</span>' if collections is None
            else escape(", ".join(collections)))


def _enabled(s: Mapping[str, Any]) -> str:
    """"yes", or "no" and why, when the sender turned it off."""
    if s["enabled"]:
        return "yes"
    reason = s.get("disabled_reason")
    return "no" + (f'<span class="hint reason">{escape(reason)}</span>' if reason else "")


def _delivered(s: Mapping[str, Any], ends: Mapping[str, int]) -> str:
    """Each collection's last position delivered, and the feed's beside it."""
    lines = []
    for plural, seq in s["delivered"].items():
        end = ends.get(plural)
        behind = "" if end is None else " · up to date" if seq >= end else f" · feed at {end}"
        lines.append(f'<span class="position">{escape(plural)} <b>{int(seq)}</b>'
                     f'<span class="hint">{behind}</span></span>')
    return "<br>".join(lines) or NONE


def _time(text: str | None) -> str:
    """An RFC 3339 time the service gave, as a person reads it (UTC)."""
    if text is None:
        return NONE
    day, _, clock = text.partition(".")[0].partition("T")
    return (f'<time datetime="{escape(text)}"><span>{escape(day)}</span> '
            f'<span>{escape(clock)} UTC</span></time>')


def _failure(failure: Mapping[str, Any] | None) -> str:
    """The last failure: the status the receiver answered, or what went wrong; and when."""
    if failure is None:
        return NONE
    said = f"HTTP {failure['status']}" if "status" in failure else str(failure.get("error"))
    return f"{escape(said)}<br>{_time(failure['at'])}"
