"""Problem: an HTTP error as RFC 9457 describes it, and where each comes from.

A ``Problem`` is raised anywhere below the app and rendered once, in
``app.py``, in the format the client negotiated. Domain errors (from the
store and the validator) become problems through one table, ``STATUS``.
"""
from __future__ import annotations

import sys
from collections.abc import Iterable
from http import HTTPStatus
from typing import Any

from .schema import Invalid
from .storage import Conflict, Contradiction, NotFound, StaleVersion, StoreUnavailable
from .storage.errors import WritesFailing

# Each status's reason phrase, from http.HTTPStatus once (asking the enum for one costs
# a request 15,000 instructions); RFC 9110 renamed two HTTPStatus calls by their old names.
TITLES = {**{status.value: status.phrase for status in HTTPStatus},
           413: "Content Too Large", 422: "Unprocessable Content"}

#: Domain error -> HTTP status and the headers that go with it: the one
#: place that decides it, for the errors of every store and of validation.
STATUS: dict[type[Exception], tuple[int, tuple[tuple[str, str], ...]]] = {
    NotFound: (404, ()),
    Conflict: (409, ()),
    StaleVersion: (412, ()),
    Invalid: (422, ()),
    Contradiction: (422, ()),
    StoreUnavailable: (503, (("Retry-After", "1"),)),     # RFC 9110 §10.2.3: seconds
    # Lasts until someone frees space or makes the file writable: ask less often.
    WritesFailing: (503, (("Retry-After", "10"),)),
}
DOMAIN_ERRORS = tuple(STATUS)


class Problem(Exception):
    """An error response: status, a sentence for people (``detail``), the
    field problems of a 422 (``errors``), extra headers (``Allow``...) and
    any extension members (RFC 9457 §3.2)."""

    def __init__(self, status: int, detail: str, *, errors: Iterable[tuple[str, str]] = (),
                 headers: Iterable[tuple[str, str]] = (), **extensions: Any) -> None:
        super().__init__(detail)
        self.status, self.title, self.detail = status, TITLES[status], detail
        self.errors, self.headers, self.extensions = list(errors), list(headers), extensions

    def to_dict(self) -> dict[str, Any]:
        """The problem's members, ready for any format."""
        members: dict[str, Any] = {"type": "about:blank", "title": self.title,
                                   "status": self.status, "detail": self.detail}
        if self.errors:
            members["errors"] = [{"pointer": p, "detail": d} for p, d in self.errors]
        members.update(self.extensions)
        return members

    @classmethod
    def from_error(cls, error: Exception) -> Problem:
        """The problem a domain error (one of ``DOMAIN_ERRORS``) stands for:
        its status and headers from ``STATUS``, its sentence and its field
        errors from the error itself."""
        kind = next(k for k in type(error).__mro__ if k in STATUS)
        status, headers = STATUS[kind]
        return cls(status, str(error), errors=getattr(error, "errors", ()), headers=headers)


def not_json(error: ValueError) -> Problem:
    """The 400 for a body the decoder refused (``JSONDecodeError``,
    NaN or Infinity, an integer longer than Python reads), in the words of
    JSON, not of Python's internals."""
    said = str(error)
    if said.startswith("Exceeds the limit"):        # (it names sys.set_int_max_str_digits())
        said = f"a number has more than {sys.get_int_max_str_digits()} digits"
    return Problem(400, f"The body is not valid JSON: {said}.")
