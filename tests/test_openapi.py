"""The OpenAPI document (GET /openapi.json) is valid, and true of the app.

- openapi-spec-validator validates it against the OpenAPI 3.1 schema.
- schemathesis runs every operation in-process, through the WSGI app, with
  every check it has, on positive and negative data, and then the stateful
  tests that follow the document's links (create, then get, replace, patch
  and delete what was created). A fixed seed keeps CI repeatable.
"""
from __future__ import annotations

import collections
import json
import re
import subprocess
import sys

import pytest
import schemathesis
from helpers import ROOT
from hypothesis import HealthCheck, settings
from openapi_spec_validator import validate
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi import checks
from webob import Request

from usersvc import make_app
from usersvc.schema import USER

sys.path.insert(0, str(ROOT / "examples"))
from tasks import TASKS  # noqa: E402

SEED = 20261122
#: Requests a run makes per operation, and the stateful runs' sequences
#: (schemathesis's default is 100 of each, which took 90 s of the suite's
#: CPU time on 2 slow cores: these keep the suite under five minutes there;
#: the seed is fixed, so a run repeats).
EXAMPLES = 40
SEQUENCES = 60

CONFIG = schemathesis.Config.from_str(f"""
seed = {SEED}

[generation]
mode = "all"
max-examples = {EXAMPLES}

# A request can be valid in every field and still fail for what the store
# holds: an If-Match naming another version is a 412 (RFC 9110 §13.1.1),
# as an e-mail that is taken is a 409 (already in schemathesis's list).
[checks.positive_data_acceptance]
expected-statuses = ["2xx", "3xx", "404", "409", "412"]

# Parameters that are each valid can be refused together (docs/api.md):
# after with cursor, after with a name or e-mail order, and any cursor the
# service did not write for this order and these filters.
[[operations]]
include-operation-id-regex = "^(list|head)Users$"
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "400"]

# The app under test lets no request wait for changes (max_waiting=0: a
# fuzzer asking for wait=30 would otherwise wait 30 s, example after
# example), so a valid wait on an empty feed is the documented 503. A
# place in the feed of the right shape names a history at random: the
# documented 410 (another history's).
[[operations]]
include-operation-id-regex = "^(list|head)UserChanges$"
checks.positive_data_acceptance.expected-statuses = ["2xx", "410", "503"]
""")


@pytest.fixture
def app():
    app = make_app("memory://")
    yield app
    app.close()


def test_the_document_is_valid_openapi_3_1(client):
    response = client.get("/openapi.json")
    assert response.status_code == 200 and response.content_type == "application/json"
    document = response.json
    validate(document)       # raises on any error
    assert document["openapi"] == "3.1.0"


def test_the_feed_is_described_with_wait_and_a_stream_only_with_the_waiting_feature():
    """Without the waiting feature the feed takes no ``wait`` and offers no
    stream: the document says neither, and is valid."""
    def feed(features):
        app = make_app("memory://", features=features)
        try:
            document = Request.blank("/openapi.json").get_response(app).json
        finally:
            app.close()
        validate(document)
        got = document["paths"]["/users/changes"]["get"]
        return ([p["name"] for p in got["parameters"]], sorted(got["responses"]["200"]["content"]))
    assert feed(("openapi", "waiting")) == (
        ["after", "limit", "wait", "fields", "Last-Event-ID"],
        ["application/json", "application/xml", "text/event-stream"])
    assert feed(("openapi",)) == (["after", "limit", "fields"],
                                  ["application/json", "application/xml"])


def test_the_document_of_every_kind_is_valid_openapi_3_1():
    document = schemathesis.openapi.from_wsgi("/openapi.json", TASKS_APP).raw_schema
    validate(document)
    task = document["components"]["schemas"]["Task"]["properties"]
    assert task["owner"]["description"] == "The id of one of the users."
    assert task["updated"]["readOnly"] is True and task["priority"]["enum"] == [
        "low", "normal", "high"]


# Feature sets whose document must describe what they serve, and no more
# (the plain core, ``()``, has no document: ``("openapi",)`` is the least).
FEATURE_SETS = [None, ("openapi",), ("openapi", "health"), ("pages", "openapi"),
                ("openapi", "pages"), ("openapi", "idempotency")]


@pytest.mark.parametrize("features", FEATURE_SETS, ids=lambda f: ",".join(f or ("default",)))
def test_the_document_names_every_route_and_method_the_app_serves(features):
    """Every path and method described is served and every one served is
    described, whichever features are plugged in, in whatever order; HTML
    is described where it is offered, ``Idempotency-Key`` where it is
    honoured."""
    app = make_app("memory://") if features is None else make_app("memory://", features=features)
    try:
        got = Request.blank("/openapi.json").get_response(app)
        assert got.status_int == 200
        document = got.json
        validate(document)
        served = {}
        for route in app.router.routes:
            template = re.sub(r"\{(\w+):int\}", r"{\1}", route.template)
            served[template] = {m.lower() for m in route.allow.split(", ")}
        described = {path: {m for m in item if m != "parameters"}
                     for path, item in document["paths"].items()}
        assert described == served
        for path in described:
            if "{" not in path:
                assert Request.blank(path).get_response(app).status_int != 404, path
        html = Request.blank("/", headers={"Accept": "text/html"}).get_response(app)
        offered = html.status_int == 200
        assert offered == (features is None or "pages" in features)
        text = got.text
        assert ('"text/html"' in text) == offered
        assert ('"Idempotency-Key"' in text) == (features is None or "idempotency" in features)
    finally:
        app.close()


def test_the_document_imports_no_feature_left_out(tmp_path):
    """The openapi feature alone, asked for ``/`` and its document, loads
    the module of no other feature (health, pages, idempotency, batch)."""
    script = ("import json, sys; from webob import Request; import usersvc; "
              "app = usersvc.make_app('memory://', features=('openapi',)); "
              "statuses = [Request.blank(p).get_response(app).status_int "
              "for p in ('/', '/openapi.json')]; "
              "print(json.dumps([statuses, sorted(m for m in sys.modules "
              "if m.startswith('usersvc.features.') "
              "and not m.startswith('usersvc.features.openapi'))]))")
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60, env={"PYTHONPATH": str(ROOT)})
    assert json.loads(done.stdout) == [[200, 200], []], done.stderr


@pytest.mark.parametrize("field", USER.fields)
@pytest.mark.parametrize("in_xml", [False, True])
def test_the_field_patterns_say_what_the_rules_accept(field, in_xml):
    from hypothesis import given, strategies as st

    rule = USER.fields[field]
    pattern = re.compile(rule.describe(in_xml)["pattern"])

    @settings(max_examples=300, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(st.one_of(st.text(), st.from_regex(pattern)))
    def agree(value):
        if in_xml and re.search("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]", value):
            return      # XML cannot carry these: no XML body holds them
        try:
            rule(value)
            accepted = True
        except ValueError:
            accepted = False
        described = bool(pattern.search(value)) and \
            len(value) <= rule.describe().get("maxLength", len(value))
        padded = value != value.strip()
        if not (padded and field == "email"):   # see docs/conformance.md
            assert accepted == described, repr(value)

    agree()


# One app for the whole module: schemathesis reads the document when the
# module is collected. (Its lazy from_fixture loader does not run on pytest 9.)
class FreshApp:
    """The app over an empty store, made anew by ``reset()``: each stateful
    scenario starts from nothing, so that a run is repeatable."""

    def __init__(self):
        self.app = make_app("memory://", max_waiting=0)
        self.seen = collections.Counter()   # (method, first path segment, status)

    def reset(self):
        self.app = make_app("memory://", max_waiting=0)

    def __call__(self, environ, start_response):
        def record(status, headers, exc_info=None):
            path = re.sub("/[0-9]+", "/{id}", environ["PATH_INFO"])
            self.seen[environ["REQUEST_METHOD"], path, int(status[:3])] += 1
            return start_response(status, headers, exc_info)
        return self.app(environ, record)


APP = FreshApp()
schema = schemathesis.openapi.from_wsgi("/openapi.json", APP, config=CONFIG)


XML_BODIES = ("application/xml", "text/xml")


def _excluded(case):
    """The checks that cannot judge this case, each for a reason given here."""
    if case.path.endswith("/changes") and (case.query or {}).get("wait") not in (None, 0, "0"):
        # A wait on this app (max_waiting=0) is the 503 the document names
        # for too many waiting requests: a refusal, not a server error.
        return [not_a_server_error]
    if case.media_type in XML_BODIES and case.meta and case.meta.generation.mode.is_negative:
        # XML text has no types: schemathesis's "wrong type" mutations (null,
        # 0, false for a string) serialize to <name>null</name>, which is a
        # valid name. The same rules are held to negative data in JSON here,
        # and the XML-only ones in test_xml_format.py.
        return [checks.negative_data_rejection]
    if "Idempotency-Key" in (case.headers or {}):
        # Schemathesis draws the same few keys for different bodies: the
        # 422 a reused key earns by design (docs/api.md), not valid data
        # refused. Retries with keys are held in test_idempotency.py.
        return [schemathesis.checks.positive_data_acceptance]
    return []


@schema.parametrize()
def test_every_operation_keeps_to_the_document(case):
    case.call_and_validate(excluded_checks=_excluded(case))


# Tasks (examples/tasks.py): every kind of field, a reference, timestamps;
# fewer requests an operation (every kind's rule is asked in test_kinds.py).
# A reference valid by the document can name a user that is not there, a
# 422 by design, as a taken e-mail is a 409: the document cannot say which
# ids exist. A place in the feed names a history at random: a 410.
TASKS_CONFIG = schemathesis.Config.from_str(f"""
seed = {SEED}

[generation]
mode = "all"
max-examples = 8

[checks.positive_data_acceptance]
expected-statuses = ["2xx", "3xx", "404", "409", "410", "412", "422"]

[[operations]]
include-operation-id-regex = "^(list|head)Tasks$"
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "400"]

# The users' and the service's own operations are test_every_operation_...'s.
[[operations]]
exclude-path-regex = "^/tasks"
enabled = false
""")
TASKS_APP = make_app("memory://", collections=(USER, TASKS), max_waiting=0)
tasks_schema = schemathesis.openapi.from_wsgi("/openapi.json", TASKS_APP, config=TASKS_CONFIG)


@tasks_schema.parametrize()
def test_every_operation_on_tasks_keeps_to_the_document(case):
    case.call_and_validate(excluded_checks=_excluded(case))


def test_sequences_over_the_links_keep_to_the_document():
    class Machine(schema.as_state_machine()):
        def setup(self):
            APP.reset()

        def validate_response(self, response, case, additional_checks=None, **kwargs):
            excluded = _excluded(case)
            if case.method == "OPTIONS":
                # docs/api.md: OPTIONS on any route is a 204, whether or not a
                # record is there; use_after_free expects a deleted user's
                # URL to be a 404 for every method.
                excluded.append(checks.use_after_free)
            case.validate_response(response, additional_checks=additional_checks,
                                   excluded_checks=excluded, transport_kwargs=kwargs or None,
                                   recorder=self.recorder)

    APP.seen.clear()
    Machine.run(settings=settings(max_examples=SEQUENCES, derandomize=True, deadline=None,
                                  stateful_step_count=8,
                                  suppress_health_check=list(HealthCheck)))
    # The sequences reached what only links reach: writes to a user that
    # exists, with the ETag its create returned.
    for method, status in [("GET", 200), ("PUT", 200), ("PATCH", 200), ("DELETE", 204)]:
        assert APP.seen[method, "/users/{id}", status] > 0, (method, status, APP.seen)


# The next page is a link in a header, which an OpenAPI link cannot take
# apart; schemathesis's regex extension to runtime expressions can. The
# served document keeps to standard expressions, so these links are added
# here, for the walk only: each parameter of the next page from Link.
NEXT = r'$response.header.Link#regex:[?&]{}=([^&>]+)[^>]*>; rel="next"'

WALK_LINK = {"operationId": "listUsers", "parameters": {
    f"query.{name}": NEXT.format(name) for name in ("sort", "q", "cursor", "after", "limit")}}
# And from a page to the change feed, at the position the page's link names.
FEED_LINK = {"operationId": "listUserChanges",
             "parameters": {
                 "query.after": r"$response.header.Link#regex:/changes\?after=([0-9a-f.]+)"}}


def test_a_stateful_walk_follows_next_links_in_sorted_filtered_pages():
    """Over users that exist, list a sorted, searched page, then follow its
    rel="next" with what the link says: every page a link leads to keeps to
    the document, and is a page (200, or 304 to an If-None-Match naming
    it), never a refused cursor."""
    from webob import Request
    document = Request.blank("/openapi.json").get_response(APP.app).json
    listing = document["paths"]["/users"]["get"]
    listing["responses"]["200"]["links"] = {"NextPage": WALK_LINK, "Changes": FEED_LINK}
    feed = document["paths"]["/users/changes"]["get"]
    feed["parameters"] = [p for p in feed["parameters"] if p["name"] != "wait"]
    # A place made up names another history at random (a 410): made up, bare
    # positions; a link's place is its own.
    for p in feed["parameters"]:
        if p["name"] == "after":
            p["schema"] = {"type": "string", "pattern": "^[0-9]{1,4}$"}
    # The walk's first pages: small, in an order other than id, searched.
    narrowed = {"limit": {"enum": [1]}, "sort": {"enum": ["name", "-name", "email", "-email"]},
                "q": {"enum": ["a", "ada"]}}
    listing["parameters"] = [{**p, "schema": narrowed[p["name"]], "required": True}
                             if p["name"] in narrowed else p
                             for p in listing["parameters"]
                             if p["name"] not in ("after", "email") and "[" not in p["name"]]
    # Valid data only: a walk is a client following links, not a fuzzer.
    walk_config = schemathesis.Config.from_str(f"""
seed = {SEED}

[generation]
mode = "positive"
max-examples = {EXAMPLES}
""")
    walking = schemathesis.openapi.from_dict(document, config=walk_config).include(
        operation_id_regex="^list(Users|UserChanges)$")
    walking.app = APP
    # cursor -> the order and search of the page whose link wrote it
    written: dict[str, tuple] = {}
    followed, feeds = [], []

    class Machine(walking.as_state_machine()):
        def setup(self):
            APP.reset()
            for i in range(7):
                Request.blank("/users", method="POST", content_type="application/json",
                              body=f'{{"name": "Ada {i}", "email": "a{i}@example.org"}}'.encode()
                              ).get_response(APP.app)

        def validate_response(self, response, case, additional_checks=None, **kwargs):
            query = case.query or {}
            if case.path.endswith("/changes"):      # reached from a page's link
                feeds.append(query)
                assert response.status_code == 200, (query, response.text)
                case.validate_response(response, recorder=self.recorder)
                return
            context = (query.get("sort"), query.get("q"))
            # A followed link: a cursor with the order and search it was
            # written for. (Schemathesis also reuses values it has seen in
            # other requests, where the service rightly refuses them.)
            if "cursor" in query and written.get(query["cursor"]) == context:
                followed.append(query)
                assert response.status_code in (200, 304), (query, response.text)
                case.validate_response(response, excluded_checks=_excluded(case),
                                       recorder=self.recorder)
            links = " ".join(response.headers.get("link") or [])
            for cursor in re.findall(r"cursor=([^&>]+)", links):
                written[cursor] = context

    Machine.run(settings=settings(max_examples=SEQUENCES, derandomize=True, deadline=None,
                                  stateful_step_count=6,
                                  suppress_health_check=list(HealthCheck)))
    assert len(followed) >= 3 and all(q["sort"] != "id" and q["q"] for q in followed), followed
    assert [q for q in feeds if "after" in q], feeds


@pytest.mark.parametrize("tokens", [None, {"r" * 20: "read"}], ids=["open", "tokens"])
def test_every_operation_is_tagged_named_and_described_and_head_is_as_get(tokens):
    """What generators and linters need (tools/lint-openapi.sh runs Redocly
    and Spectral on the same documents): a tag, a summary, a description and
    an operationId on every operation; HEAD with GET's parameters and
    statuses; security declared in either mode; a problem's type a URI."""
    from webob import Request
    request = Request.blank("/openapi.json")
    if tokens:
        request.headers["Authorization"] = "Bearer " + "r" * 20
    document = request.get_response(make_app("memory://", tokens=tokens)).json
    assert document["security"] == ([] if tokens is None else [{"bearer": []}])
    ids = []
    for path, item in document["paths"].items():
        operations = {m: o for m, o in item.items() if m != "parameters"}
        for method, operation in operations.items():
            assert operation["tags"] and operation["summary"] and operation["description"], \
                (path, method)
            ids.append(operation["operationId"])
        if "get" in operations:
            get, head = operations["get"], operations["head"]
            names = lambda op: [p["name"] for p in op.get("parameters", [])]  # noqa: E731
            assert names(head) == names(get), path
            assert set(get["responses"]) <= set(head["responses"]), path
    assert len(ids) == len(set(ids)) and all(re.fullmatch("[a-z][A-Za-z]+", i) for i in ids)
    problem_type = document["components"]["schemas"]["Problem"]["properties"]["type"]
    assert "const" not in problem_type and problem_type["format"] == "uri-reference"


def test_the_kinds_table_says_what_a_text_fields_schema_holds():
    """docs/api.md's kinds table names the keywords of ``text(n)``'s schema
    (it once said ``maxLength``, which the document does not give)."""
    from usersvc import text
    described = text(5).describe()
    row = next(line for line in (ROOT / "docs" / "api.md").read_text().splitlines()
               if line.startswith("| `text(n)` |"))
    said = row.rsplit("|", 2)[1]
    for keyword in ("pattern", "maxLength"):
        assert (keyword in described) == (f"`{keyword}` (" in said or said.strip().endswith(
            f"`{keyword}`")), keyword
    assert re.fullmatch(described["pattern"], "  12345 ") and not re.fullmatch(
        described["pattern"], "123456")


#: Per kind of field, values a page's condition on it takes (each alone: a
#: 200), and values its kind refuses (a 400), as a query carries them. The
#: range of an integer, a number or a ref is left out: no pattern says it
#: (docs/conformance.md).
_ASKED_VALUES = {
    "Boolean": (["true", "false"], ["maybe", "yes", "True", "2", "-1"]),
    "Choice": (["low", "high"], ["medium", "Low", "lowhigh", '"low'], ),
    "Integer": (["3", "-5", "0"], ["1.5", "+3", "3a", "0x10", "1e3", "- 3", "--3"]),
    "Ref": (["1", "12"], ["-1", "1.0", "a", "1 2", "12345678901234567890"]),
    "Number": (["1.5", "1e2", "0", "0.25"], ["1.", ".5", "NaN", "Infinity", "1,5", "0x1"]),
    "Date": (["2024-02-29", "2026-12-01", "2000-02-29"],
             ["2026-02-29", "2100-02-29", "2026-13-01", "2026-1-1", "0000-01-01", "2026-04-31",
              "2026-12-01T00:00:00Z", "12/01/2026"]),
    "DateTime": (["2026-11-25T20:57:01Z", "2026-11-25t21:57:01.123456+01:00"],
                 ["2026-11-25T20:57:01", "2026-11-25T20:57:01.1234567Z", "2026-11-25T24:00:00Z",
                  "2026-11-25T20:57:01+24:00", "2026-02-30T00:00:00Z", "2026-11-25 20:57:01Z",
                  "2026-11-25T20:57:60Z", "2026-11-25"]),
    "Stamp": (["2026-11-25T20:57:01.120Z", "2026-11-25T21:57:01.120000+01:00"],
              ["2026-11-25T20:57:01.1201Z", "2026-11-25T20:57:01", "2026-02-30T00:00:00.000Z"]),
    "Url": (["https://example.com/a?b=c", "http://[::1]:8080/"],
            ["example.com", "http://", "ftp://x.org", "http://a@", "http://a b"]),
    "id": (["0", "5"], ["-1", "a", "1.5", "+1"]),
}
_TEXT_VALUES = (["Ada", "a b", "é"], [])        # (any text: a text kind's is a Folded)
_ANY_REFUSED = ["", "\x00", "a\x01b", "\x85"]


def _value_sent(text, schema):
    """What a typed query parameter's text stands for, as a client writes
    it (OpenAPI's form style: the plain text of a number or a boolean),
    to validate; else the text."""
    if schema.get("type") == "boolean" and text in ("true", "false"):
        return text == "true"
    if schema.get("type") == "integer" and re.fullmatch("-?[0-9]+", text):
        return int(text)
    if schema.get("type") == "number" and re.fullmatch(
            r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?", text):
        return float(text)
    return text


def _asked_values(kind, op):
    """The values of a page's ``field[op]`` (``op`` None: the filter) the
    service takes and those it refuses, for ``kind`` (None: ``id``)."""
    from usersvc.fields import Folded
    if op == "exists":
        return ["true", "false"], [*_ANY_REFUSED, "1", "0", "maybe"]
    good, bad = (_TEXT_VALUES if isinstance(kind, Folded) else
                 _ASKED_VALUES["id" if kind is None else type(kind).__name__])
    bad = [*_ANY_REFUSED[int(isinstance(kind, Folded)):], *bad]     # (text: "" is one)
    if op != "in":
        return good, bad
    one = good[0]
    quoted_good = [f'"{one}"', f'{one},"{good[-1]}"']
    if isinstance(kind, Folded):
        return ([*good, ",".join(good), *quoted_good, '"a,b",c', r'"a\"b"', f"{one},",
                 ",".join([one] * 100)],
                [*bad, f'{one}"', f'"{one}', 'a"b', f'"{one}"x', ",".join([one] * 101)])
    return ([*good, ",".join(good), *quoted_good, ",".join([one] * 100)],
            [*bad, f"{one},{bad[-1]}", f"{one},", f",{one}", f"{one},,{one}", f'{one}"',
             f'"{one}', f'"{one}"x', ",".join([one] * 101),
             *([f'"{one},{one}"'] if type(kind).__name__ != "Url" else [])])    # (a URL may)


@pytest.mark.parametrize("declared", ["things", "tasks"])
def test_a_page_parameters_schema_refuses_the_values_the_service_refuses(declared):
    """What the service refuses in a page's filter or ``field[op]``, alone,
    its schema refuses too, and what it answers its schema admits, for
    every kind: words that are not its values (``done[in]=maybe``, a
    choice's unknown value, a date that does not exist, a date-time with 7
    fraction digits), an ``in`` list malformed, with an empty value or of
    101 values (it was ``{"type": "string"}``: schemathesis's valid
    request refused), and a control character; ``q`` too."""
    from urllib.parse import quote

    import jsonschema
    from every_kind import THINGS
    from webob import Request
    app = TASKS_APP if declared == "tasks" else make_app(
        "memory://", collections=(USER, THINGS), max_waiting=0)
    declaration = TASKS if declared == "tasks" else THINGS
    document = Request.blank("/openapi.json").get_response(app).json
    checked = collections.Counter()
    for parameter in document["paths"][f"/{declared}"]["get"]["parameters"]:
        field, _, op = parameter["name"].rstrip("]").partition("[")
        if parameter["in"] != "query":
            continue
        if field in declaration.fields or field == "id":
            good, bad = _asked_values(declaration.fields.get(field), op or None)
        else:
            good, bad = [], _ANY_REFUSED
        for value in [*good, *bad]:
            target = f"/{declared}?{quote(parameter['name'])}={quote(value)}"
            status = Request.blank(target).get_response(app).status_int
            try:
                jsonschema.validate(_value_sent(value, parameter["schema"]), parameter["schema"],
                                    format_checker=jsonschema.FormatChecker())
                admitted = True
            except jsonschema.ValidationError:
                admitted = False
            said = (parameter["name"], value, parameter["schema"])
            if value in good:
                assert status == 200 and admitted, said
            else:
                assert not (status == 400 and admitted), said
                checked[status, bool(good)] += 1
    # (every value refused of a field's condition is a 400: the test's lists are right)
    assert checked[400, True] > 300 and not checked[200, True], checked


def test_the_feeds_after_schema_refuses_what_the_service_refuses(app):
    """``after`` on the feed: a number past the positions (20 digits, which
    schemathesis sent: the pattern admitted it and the service answered
    400), malformed places, refused by both; a position and a place the
    feed gave, admitted by both."""
    import jsonschema
    from webob import Request
    Request.blank("/users", method="POST", json={"name": "Ada", "email": "ada@example.org"}
                  ).get_response(app)
    document = Request.blank("/openapi.json").get_response(app).json
    schema, = (p["schema"] for p in document["paths"]["/users/changes"]["get"]["parameters"]
               if p["name"] == "after")
    given = link_after(Request.blank("/users/changes").get_response(app).headers["Link"])
    for value, answered in [("12345678901234567890", False), ("9223372036854775808", False),
                            ("1.2", False), ("", False), ("-1", False), ("1.x.1.abc", False),
                            ("0", True), ("1", True), (given, True)]:
        status = Request.blank(f"/users/changes?after={value}").get_response(app).status_int
        try:
            jsonschema.validate(value, schema)
            admitted = True
        except jsonschema.ValidationError:
            admitted = False
        assert (status == 200, admitted) == (answered, answered), (value, status)


def link_after(link: str) -> str:
    return re.search(r"after=([^&>]+)", link).group(1)
