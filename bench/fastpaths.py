"""What each fast path left in usersvc saves, against the general path it
stands beside (the ``# PERF:`` comments quote these figures):

    .venv/bin/python bench/fastpaths.py

- the JSON writer for records (``json_format._written``) against
  ``JSONEncoder.encode`` of the same record as a dict;
- the quick JSON decoder (``json_format._decode``) against
  ``JSONDecoder.decode``;
- a plain query split as it is (``listing.query_of``) against reading it
  with UTF-8 and percent-decoding;
- the words of ASCII text (``fields.words``) by a table, against the
  regular expression that keeps combining marks in any other text;
- the kept answer for an ``Accept`` header (``negotiation.best_offer``'s
  cache) against parsing it with WebOb each time.

Best of five runs, µs per call. Compare them with a whole request's cost
in the same run of ``bench/run.sh`` (a GET of one user, a POST).
"""
from __future__ import annotations

import re
import sys
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from webob.acceptparse import create_accept_header  # noqa: E402

from usersvc.representation.json_format import _DECODER, _ENCODER, _decode, _written  # noqa: E402
from usersvc import listing  # noqa: E402
from usersvc.request import Request  # noqa: E402
from usersvc.representation import DEFAULT, best_offer  # noqa: E402
from usersvc.validation import USER  # noqa: E402

from usersvc.fields import _NOT_WORD, _separator, words  # noqa: E402

User = USER.record

BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


def per_call(action, number: int) -> float:
    return min(timeit.repeat(action, number=number, repeat=5)) / number * 1e6


def main() -> None:
    user = User(id=1, name="Ada Lovelace", email="ada@example.org", version=1)
    rows = [
        ("JSON record: _written", per_call(lambda: _written(USER.field_names, user), 100_000)),
        ("JSON record: JSONEncoder.encode", per_call(
            lambda: _ENCODER.encode(USER.as_dict(user)).encode(), 100_000)),
    ]
    body = '{"name": "Ada Lovelace", "email": "ada@example.org"}'
    rows.append(("JSON body: _decode", per_call(lambda: _decode(body), 100_000)))
    rows.append(("JSON body: JSONDecoder.decode", per_call(lambda: _DECODER.decode(body), 100_000)))
    plain = Request({"QUERY_STRING": "limit=100&after=7"})
    rows.append(("query 'limit=100&after=7': query_of", per_call(
        lambda: listing.query_of(plain), 100_000)))
    pattern = listing._PLAIN_QUERY
    try:
        listing._PLAIN_QUERY = re.compile("(?!)")   # matches nothing: the general path every time
        rows.append(("query 'limit=100&after=7': decoded", per_call(
            lambda: listing.query_of(plain), 100_000)))
    finally:
        listing._PLAIN_QUERY = pattern
    name = "Ada Lovelace-Byron"
    rows.append((f"words of {name!r}: ASCII table", per_call(lambda: words(name), 100_000)))
    rows.append((f"words of {name!r}: expression", per_call(
        lambda: _NOT_WORD.sub(_separator, name.casefold()).split(), 100_000)))
    for header in ("application/json", BROWSER):
        rows.append((f"Accept {header!r}: parsed by WebOb", per_call(
            lambda: create_accept_header(header).acceptable_offers(list(DEFAULT.types)), 5_000)))
        rows.append((f"Accept {header!r}: kept", per_call(
            lambda: best_offer(header, DEFAULT.key), 100_000)))
    for name, micros in rows:
        print(f"{micros:8.2f} µs  {name}")


if __name__ == "__main__":
    main()
