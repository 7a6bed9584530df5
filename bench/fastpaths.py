"""What each fast path saves (``usersvc.fast``'s registry), against the
plain definition it replaces, in the same run (the registry's ``saves``
and docs/decisions.md quote these figures):

    .venv/bin/python bench/fastpaths.py

- the JSON writer for records (``fast.json.render_record``) against the
  plain ``JSONFormat.render_record`` (``JSONEncoder.encode`` of a dict);
- the JSON scanner (``fast.json.decode``) against ``JSONDecoder.decode``;
- a query with nothing to decode split as it is (``fast.queries.parameters``)
  against ``Request.parameters``, which reads UTF-8 and percent-escapes;
- the kept answer for an ``Accept`` header (``fast.headers.best_offer``)
  against parsing it with WebOb each time;
- the words of ASCII text (``fields.words``) by a table, against the
  regular expression that keeps combining marks in any other text.

Best of five runs, µs per call. Compare them with a whole request's cost
in the same run of ``bench/run.sh`` (a GET of one user, a POST).
"""
from __future__ import annotations

import sys
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from usersvc import fast  # noqa: E402
from usersvc.fields import _NOT_WORD, _separator, words  # noqa: E402
from usersvc.representation import DEFAULT, JSON  # noqa: E402
from usersvc.request import Request  # noqa: E402
from usersvc.schema import USER  # noqa: E402

User = USER.record

BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


def per_call(action, number: int) -> float:
    return min(timeit.repeat(action, number=number, repeat=5)) / number * 1e6


def both(where: str):
    """The fast path that replaces ``where``, and the plain definition."""
    speedup = next(s for s in fast.SPEEDUPS if s.plain == where)
    return fast.fast(speedup), fast.plain(where)


def main() -> None:
    user = User(id=1, name="Ada Lovelace", email="ada@example.org", version=1)
    body = '{"name": "Ada Lovelace", "email": "ada@example.org"}'
    query = Request({"QUERY_STRING": "limit=100&after=7"})
    rows = []
    for what, where, args, number in [
            ("JSON record", "usersvc.representation.json_format:JSONFormat.render_record",
             (JSON, USER, user), 100_000),
            ("JSON body", "usersvc.representation.json_format:JSONFormat.decode",
             (JSON, body), 100_000),
            ("query 'limit=100&after=7'", "usersvc.request:Request.parameters", (query,),
             100_000),
            ("Accept 'application/json'", "usersvc.representation:best_offer",
             ("application/json", DEFAULT), 5_000),
            ("Accept (a browser's)", "usersvc.representation:best_offer",
             (BROWSER, DEFAULT), 5_000)]:
        quick, plain = both(where)
        rows.append((f"{what}: fast", per_call(lambda: quick(*args), number)))
        rows.append((f"{what}: plain", per_call(lambda: plain(*args), number)))
    name = "Ada Lovelace-Byron"
    rows.append((f"words of {name!r}: ASCII table", per_call(lambda: words(name), 100_000)))
    rows.append((f"words of {name!r}: expression", per_call(
        lambda: _NOT_WORD.sub(_separator, name.casefold()).split(), 100_000)))
    for name, micros in rows:
        print(f"{micros:8.2f} µs  {name}")


if __name__ == "__main__":
    main()
