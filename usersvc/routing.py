"""Routes from path templates (``/users/{id:int}``) to their targets (a
resource, a feed's ``Changes``, a feature's ``Batch``...), each with its
method map: its ``on_get``, ``on_post``... found once, by the fixed table
``RESPONDERS`` (never by the client's method name), which also makes ``Allow``.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from .representation import DEFAULT, Offers
from .request import Response
from .storage import MAX_ID

#: The methods a target may answer, in the order ``Allow`` lists them,
#: each by its responder: HEAD is GET's (RFC 9110 §9.3.2).
RESPONDERS = {"GET": "on_get", "HEAD": "on_get", "POST": "on_post", "PUT": "on_put",
              "PATCH": "on_patch", "DELETE": "on_delete"}
_PARAMETER = re.compile(r"\{(\w+):int\}")


def canonical_int(segment: str) -> int | None:
    """The id a path segment names, or ``None`` (a 404): ASCII digits, no
    leading zero, at most ``MAX_ID`` (19 digits at most, checked before
    ``int()``): ``/users/01``, ``/users/+1`` and a 30-digit id name nothing."""
    if segment.isascii() and segment.isdigit() and segment[0] != "0" and len(segment) <= 19:
        return value if (value := int(segment)) <= MAX_ID else None
    return None


class Route:
    """A template, its target, and the target's method map, made as it is added."""

    def __init__(self, template: str, target: Any) -> None:
        self.template, self.target = template, target
        #: The template as OpenTelemetry's ``http.route`` spells it: ``/users/{id}``.
        self.label = _PARAMETER.sub(r"{\1}", template)
        # Each segment: a literal to compare, or the name of an int parameter.
        self.segments: list[tuple[str, bool]] = [
            (m.group(1), True) if (m := _PARAMETER.fullmatch(part)) else (part, False)
            for part in template.split("/")]
        self.responders: dict[str, Callable[..., Response]] = {
            method: getattr(target, name) for method, name in RESPONDERS.items()
            if hasattr(target, name)}
        self.allow = ", ".join([*self.responders, "OPTIONS"])
        #: The media types the target answers in (by default JSON and
        #: XML); ``None``: one representation, whatever ``Accept`` says.
        self.offers: Offers | None = getattr(target, "offers", DEFAULT)

    def match(self, parts: list[str]) -> dict[str, int] | None:
        """The parameters of a path (split at ``/``, as long as the template)
        if it is this route's, else ``None``."""
        params = {}
        for part, (segment, is_parameter) in zip(parts, self.segments, strict=True):
            if is_parameter and (value := canonical_int(part)) is not None:
                params[segment] = value
            elif is_parameter or part != segment:   # (another path, an id naming nothing: 404)
                return None
        return params


class Router:
    """Routes found by their path, in a dict (as Bottle's static routes), or,
    with parameters, by their number of segments and first segment
    (``/books/{id}`` is not tried for ``/users/1``), in the order added."""

    def __init__(self) -> None:
        self.routes: list[Route] = []
        self._static: dict[str, Route] = {}
        self._templated: dict[tuple[int, str], list[Route]] = {}

    def add(self, template: str, target: Any) -> Route:
        route = Route(template, target)
        self.routes.append(route)
        if not any(is_parameter for _, is_parameter in route.segments):
            if template in self._static:      # (the first would answer: the second never)
                raise ValueError(f"a route is at {template} already")
            self._static[template] = route
        elif route.segments[1][1]:
            raise ValueError(f"a template starts with a literal segment: {template}")
        else:
            key = (len(route.segments), route.segments[1][0])
            self._templated.setdefault(key, []).append(route)
        return route

    def match(self, path: str) -> tuple[Route, dict[str, int]] | None:
        """The route for a path and its parameters, or ``None`` (404)."""
        route = self._static.get(path)
        if route is not None:
            return route, {}
        parts = path.split("/")
        for route in self._templated.get((len(parts), parts[1] if len(parts) > 2 else "/"), ()):
            params = route.match(parts)
            if params is not None:
                return route, params
        return None
