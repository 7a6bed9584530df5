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
- ASCII text's words and folding (``fast.search``) by a table and
  ``str.lower``, against ``fields.words`` and ``fields.fold``, which read
  every text through Unicode's decompositions;
- a date-time's offset read once (``fast.dates._offset``), a stamp's second
  written once a second (``fast.dates.now``);
- a list's parameters made once for each schema
  (``fast.asking.known_parameters``), a condition read once for each text
  (``fast.asking.read``).

Best of five runs, µs per call. Compare them with a whole request's cost
in the same run of ``bench/run.sh`` (a GET of one user, a POST).
"""
from __future__ import annotations

import sys
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from usersvc import fast  # noqa: E402
from usersvc.representation import DEFAULT, JSON  # noqa: E402
from usersvc.request import Request  # noqa: E402
from usersvc.schema import USER  # noqa: E402

User = USER.record

BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


def per_call(action, number: int) -> float:
    return min(timeit.repeat(action, number=number, repeat=5)) / number * 1e6


def per_call_of(function, args: tuple, number: int) -> float:
    return per_call(lambda: function(*args), number)


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
             (BROWSER, DEFAULT), 5_000),
            ("words of 'Ada Lovelace-Byron'", "usersvc.fields:words",
             ("Ada Lovelace-Byron",), 100_000),
            ("fold 'ada@example.org'", "usersvc.fields:fold", ("ada@example.org",), 100_000),
            ("offset '+01:00'", "usersvc.kinds.dates:_offset", ("+01:00",), 100_000),
            ("now", "usersvc.kinds.dates:now", (), 100_000),
            ("users' list parameters", "usersvc.listing:known_parameters", (USER,), 100_000),
            ("condition 'email[ne]=a@b.org'", "usersvc.asking:read",
             (USER, "email[ne]", "a@b.org"), 100_000)]:
        quick, plain = both(where)
        rows.append((f"{what}: fast", per_call_of(quick, args, number)))
        rows.append((f"{what}: plain", per_call_of(plain, args, number)))
    for name, micros in rows:
        print(f"{micros:8.2f} µs  {name}")


if __name__ == "__main__":
    main()
