"""Routes from path templates to resources, and each resource's method map.

A template is a path with ``{name:int}`` parameters: ``/users/{id:int}``.
An int parameter matches only a canonical decimal (no sign, no leading zero,
no other digits than 0-9) that fits the stores (``MAX_ID``), so that
``/users/01``, ``/users/+1``, ``/users/1e3`` and a 30-digit id are simply
paths that name nothing: 404.

A resource implements ``on_get``, ``on_post``... for the methods it supports;
the method map is built once, when the route is added, from the fixed list
``METHODS`` (never from the client's method name). HEAD is answered by GET's
responder, and the map also makes the ``Allow`` header for OPTIONS and 405.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from .storage import MAX_ID

#: The methods a resource may implement, in the order ``Allow`` lists them.
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")

_PARAMETER = re.compile(r"\{(\w+):int\}")
_INT = "[1-9][0-9]{0,18}"


class Route:
    def __init__(self, template: str, resource: Any) -> None:
        self.template = template
        self.resource = resource
        self.pattern = re.compile(_PARAMETER.sub(rf"(?P<\1>{_INT})", template))
        # The common shape, "/prefix/{id:int}", is matched without a regex.
        tail = _PARAMETER.search(template)
        self._prefix: str | None = None
        self._name = ""
        if tail and tail.end() == len(template) and len(_PARAMETER.findall(template)) == 1:
            self._prefix, self._name = template[:tail.start()], tail.group(1)
        self.responders: dict[str, Callable[..., Any]] = {
            m: getattr(resource, "on_" + m.lower())
            for m in METHODS if hasattr(resource, "on_" + m.lower())
        }
        if "GET" in self.responders:
            self.responders["HEAD"] = self.responders["GET"]  # RFC 9110 §9.3.2
        allowed = [m for m in METHODS if m in self.responders]
        if "GET" in allowed:
            allowed.insert(1, "HEAD")
        self.allow = ", ".join(allowed + ["OPTIONS"])
        # The media types the resource can answer in (None: JSON and XML).
        self.formats = getattr(resource, "formats", None)

    def match(self, path: str) -> dict[str, int] | None:
        prefix = self._prefix
        if prefix is not None:
            if not path.startswith(prefix):
                return None
            digits = path[len(prefix):]
            # A canonical decimal: ASCII digits, no leading zero, at most 19 of them.
            if not (digits.isascii() and digits.isdigit() and digits[0] != "0" and len(digits) <= 19):
                return None
            value = int(digits)
            return {self._name: value} if value <= MAX_ID else None
        m = self.pattern.fullmatch(path)
        if m is None:
            return None
        params = {}
        for name, digits in m.groupdict().items():
            value = int(digits)
            if value > MAX_ID:
                return None
            params[name] = value
        return params


class Router:
    def __init__(self) -> None:
        self.routes: list[Route] = []
        self._static: dict[str, Route] = {}     # templates without parameters
        self._templated: list[Route] = []

    def add(self, template: str, resource: Any) -> Route:
        route = Route(template, resource)
        self.routes.append(route)
        if _PARAMETER.search(template):
            self._templated.append(route)
        else:
            self._static.setdefault(template, route)
        return route

    def match(self, path: str) -> tuple[Route, dict[str, int]] | None:
        """The route for a path and its parameters, or ``None`` (404)."""
        route = self._static.get(path)
        if route is not None:
            return route, {}
        for route in self._templated:
            params = route.match(path)
            if params is not None:
                return route, params
        return None
