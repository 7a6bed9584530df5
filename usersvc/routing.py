"""Routes from path templates to resources, and each resource's method map.

A template is a path with ``{name:int}`` segments: ``/users/{id:int}``
(``canonical_int``). A resource implements ``on_get``, ``on_post``... for
the methods it has; the method map is built once, from the fixed table
``RESPONDERS`` (never from the client's method name), and makes ``Allow``.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from .representation import DEFAULT, Offers
from .storage import MAX_ID

#: The methods a resource may answer, in the order ``Allow`` lists them,
#: each by its responder: HEAD is GET's (RFC 9110 §9.3.2).
RESPONDERS = {"GET": "on_get", "HEAD": "on_get", "POST": "on_post", "PUT": "on_put",
              "PATCH": "on_patch", "DELETE": "on_delete"}

_PARAMETER = re.compile(r"\{(\w+):int\}")


def canonical_int(segment: str) -> int | None:
    """The id a path segment names, or ``None`` (a 404): ASCII digits, no
    leading zero, at most ``MAX_ID`` (19 digits at most, checked before
    ``int()``): ``/users/01``, ``/users/+1`` and a 30-digit id name nothing."""
    if segment.isascii() and segment.isdigit() and segment[0] != "0" and len(segment) <= 19:
        value = int(segment)
        return value if value <= MAX_ID else None
    return None


class Route:
    """A template, its resource, and the resource's method map: made once,
    as the route is added."""

    def __init__(self, template: str, resource: Any) -> None:
        self.template = template
        #: The template as OpenTelemetry's ``http.route`` spells it: ``/users/{id}``.
        self.label = _PARAMETER.sub(r"{\1}", template)
        self.resource = resource
        # Each segment: a literal to compare, or the name of an int parameter.
        self.segments: list[tuple[str, bool]] = [
            (m.group(1), True) if (m := _PARAMETER.fullmatch(part)) else (part, False)
            for part in template.split("/")]
        self.responders: dict[str, Callable[..., Any]] = {
            method: getattr(resource, name) for method, name in RESPONDERS.items()
            if hasattr(resource, name)}
        self.allow = ", ".join([*self.responders, "OPTIONS"])
        #: The media types the resource answers in (by default JSON and
        #: XML); ``None``: one representation, whatever ``Accept`` says.
        self.offers: Offers | None = getattr(resource, "offers", DEFAULT)

    def match(self, parts: list[str]) -> dict[str, int] | None:
        """The parameters of a path (split at ``/``, as long as the template)
        if it is this route's, else ``None``."""
        params = {}
        for part, (segment, is_parameter) in zip(parts, self.segments, strict=True):
            if not is_parameter:
                if part != segment:
                    return None
            elif (value := canonical_int(part)) is not None:
                params[segment] = value
            else:
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

    def add(self, template: str, resource: Any) -> Route:
        route = Route(template, resource)
        self.routes.append(route)
        if any(is_parameter for _, is_parameter in route.segments):
            first, is_parameter = route.segments[1]
            if is_parameter:
                raise ValueError(f"a template starts with a literal segment: {template}")
            self._templated.setdefault((len(route.segments), first), []).append(route)
        elif template in self._static:      # (the first would answer: the second never)
            raise ValueError(f"a route is at {template} already")
        else:
            self._static[template] = route
        return route

    def match(self, path: str) -> tuple[Route, dict[str, int]] | None:
        """The route for a path and its parameters, or ``None`` (404)."""
        route = self._static.get(path)
        if route is not None:
            return route, {}
        parts = path.split("/")
        if len(parts) < 3:
            return None
        for route in self._templated.get((len(parts), parts[1]), ()):
            params = route.match(parts)
            if params is not None:
                return route, params
        return None
