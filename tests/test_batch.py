"""docs/api.md, "Batch writes": ``POST /batch`` on every store, with users
and books (``books.BOOKS``: optional, unique and integer fields beside the
users' text and e-mail): all of a batch kept, or none of it.

Each failing status at each position leaves the store as it was (records,
feed, versions); a batch's own earlier writes count against its later
ones; racing batches for one unique value leave one winner and none of the
losers' records; feed entries of a batch are consecutive with other
writers about; the limits, the document's checks and the features every
write has (keys, tokens, cross-origin protection, CORS, metrics, OpenAPI)
hold for ``/batch``. SIGKILL during batches: test_crash.py."""
from __future__ import annotations

import json
import threading
import uuid

import pytest
from books import BOOKS
from conftest import LINT_EXEMPT, Client, lint_exchange, problem
from hypothesis import HealthCheck, given, settings, strategies as st

from usersvc import USER, Mount, Schema, make_app, text

ADA = {"name": "Ada Lovelace", "email": "ada@example.org"}
DUNE = {"title": "Dune", "isbn": "0441013597", "year": 1965}
EMMA = {"title": "Emma", "isbn": "x-2"}


class BatchClient(Client):
    """The tests' client, and httplint's one note a batch earns by design:
    the contract answers a batch with the status of the request that failed,
    and a 412's preconditions are in that request, inside the body."""

    def send(self, req):
        if req.path != "/batch":
            return super().send(req)
        response = req.get_response(self.checked)
        notes = lint_exchange(req.method, req.path, list(req.headers.items()), response.status,
                              response.headerlist, response.body,
                              exempt={**LINT_EXEMPT, "STATUS_412_WITHOUT_PRECONDITION": ""})
        assert not notes, notes
        return response


def serving(store_url, **options):
    app = make_app(store_url, collections=(USER, BOOKS), **options)
    yield BatchClient(app)
    app.close()


@pytest.fixture
def library(store_url):
    """Users and books, with user 1 (Ada) and books 1 (Dune) and 2 (Emma)."""
    for client in serving(store_url):
        assert client.post("/users", json_body=ADA).status_code == 201
        assert client.post("/books", json_body=DUNE).status_code == 201
        assert client.post("/books", json_body=EMMA).status_code == 201
        yield client


@pytest.fixture
def memory_library():
    """The same on the memory store alone, for what is judged before any
    store is asked (the batch document itself)."""
    for client in serving("memory://"):
        for created in (client.post("/users", json_body=ADA), client.post("/books", json_body=DUNE),
                        client.post("/books", json_body=EMMA)):
            assert created.status_code == 201
        yield client


def batch(client, *requests, headers=None, **document):
    return client.post("/batch", json_body={"requests": list(requests), **document},
                       headers=headers)


def everything(client) -> list:
    """What a failed batch must leave as it was: every record, by page and
    one by one (with its ETag), and both feeds."""
    seen = []
    for plural in ("users", "books"):
        page = client.get(f"/{plural}?limit=1000").json
        seen += [page, client.get(f"/{plural}/changes").json]
        seen += [client.get(f"/{plural}/{r['id']}").headers["ETag"] for r in page]
    return seen


@pytest.mark.parametrize("query", ["fields=name", "x=1"])
def test_a_batch_with_a_query_parameter_is_a_400_naming_it_and_writes_nothing(library, query):
    """``POST /batch`` takes no parameter, as no write does (docs/api.md):
    one is refused before a request of the batch is made, not passed over."""
    before = everything(library)
    response = library.post(f"/batch?{query}", json_body={"requests": [
        {"method": "POST", "path": "/users", "body": {"name": "Bea", "email": "bea@example.org"}}]})
    assert response.status_code == 400, response.text
    assert response.content_type == "application/problem+json"
    detail = response.json["detail"]
    assert query.split("=")[0] in detail and "POST /batch" in detail
    assert everything(library) == before


# -- all of it -------------------------------------------------------------

def test_a_batch_makes_every_write_and_answers_each_in_order(library):
    response = batch(
        library,
        {"method": "POST", "path": "/users", "body": {"name": "Bea", "email": "bea@example.org"}},
        {"method": "PATCH", "path": "/books/1", "headers": {
            "If-Match": '"1-1"', "Content-Type": "application/merge-patch+json"},
         "body": {"year": 1966}},
        {"method": "PUT", "path": "/books/2",
         "body": {"title": "Emma", "isbn": "x-2", "year": 1815}},
        {"method": "DELETE", "path": "/users/1", "headers": {"if-match": '"1-1"'}})
    assert response.status_code == 200, response.text
    assert response.content_type == "application/json"
    assert response.json == {"responses": [
        {"status": 201, "headers": {"Location": "http://localhost/users/2", "ETag": '"2-1"'},
         "body": {"id": 2, "name": "Bea", "email": "bea@example.org"}},
        {"status": 200, "headers": {"ETag": '"1-2"'}, "body": {**DUNE, "id": 1, "year": 1966}},
        {"status": 200, "headers": {"ETag": '"2-2"'},
         "body": {"id": 2, "title": "Emma", "isbn": "x-2", "year": 1815}},
        {"status": 204, "headers": {}}]}
    assert library.get("/users").json == [{"id": 2, "name": "Bea", "email": "bea@example.org"}]
    assert library.get("/books/1").json["year"] == 1966
    assert library.get("/books/2").headers["ETag"] == '"2-2"'


def test_each_request_sees_what_the_ones_before_it_left(library):
    response = batch(
        library,
        {"method": "POST", "path": "/books", "body": {"title": "Kim", "isbn": "x-3"}},
        {"method": "PATCH", "path": "/books/3", "headers": {"If-Match": '"3-1"'},
         "body": {"year": 1901}},
        {"method": "DELETE", "path": "/books/3", "headers": {"If-Match": '"3-2"'}},
        {"method": "POST", "path": "/books", "body": {"title": "Kim again", "isbn": "X-3"}})
    assert [r["status"] for r in response.json["responses"]] == [201, 200, 204, 201]
    assert library.get("/books/4").json == {"id": 4, "title": "Kim again", "isbn": "X-3"}


def test_a_batch_uniqueness_counts_its_own_earlier_writes(library):
    before = everything(library)
    body = problem(batch(
        library,
        {"method": "POST", "path": "/books", "body": {"title": "A", "isbn": "z-1"}},
        {"method": "POST", "path": "/books", "body": {"title": "B", "isbn": "Z-1"}}), 409)
    assert body["request"] == 1 and body["errors"] == [{"pointer": "/isbn",
                                                        "detail": "is already taken"}]
    assert everything(library) == before


# -- or none of it ---------------------------------------------------------

VALID = [
    {"method": "POST", "path": "/users", "body": {"name": "Bea", "email": "bea@example.org"}},
    {"method": "PATCH", "path": "/books/1", "headers": {"If-Match": '"1-1"'},
     "body": {"year": 1966}},
    {"method": "DELETE", "path": "/books/2"},
    {"method": "POST", "path": "/books", "body": {"title": "Kim", "isbn": "x-3"}},
]
FAILING = {
    400: {"method": "POST", "path": "/books"},                          # no body
    404: {"method": "DELETE", "path": "/books/99"},
    405: {"method": "DELETE", "path": "/books"},
    409: {"method": "POST", "path": "/books", "body": {"title": "Dup", "isbn": "0441013597"}},
    412: {"method": "PUT", "path": "/users/1", "headers": {"If-Match": '"1-7"'}, "body": ADA},
    422: {"method": "POST", "path": "/users", "body": {"name": "", "email": "nope"}},
}


@pytest.mark.parametrize("status", sorted(FAILING))
def test_a_failing_request_at_any_position_leaves_the_store_as_it_was(library, status):
    before = everything(library)
    for at in range(len(VALID) + 1):
        requests = VALID[:at] + [FAILING[status]] + VALID[at:]
        body = problem(batch(library, *requests), status)
        assert body["request"] == at, body
        assert everything(library) == before, (status, at)
    # The same batch without the failing request is made whole: the others were valid.
    assert batch(library, *VALID).status_code == 200
    assert everything(library) != before


def test_a_failed_batch_answers_with_its_request_s_errors_and_headers(library):
    response = batch(library, VALID[0], FAILING[405])
    body = problem(response, 405)
    assert body["request"] == 1 and body["headers"] == {"Allow": "GET, HEAD, POST, OPTIONS"}
    assert "Allow" not in response.headers      # it speaks of /books, not of /batch
    body = problem(batch(library, FAILING[422]), 422)
    assert body["request"] == 0
    assert {e["pointer"] for e in body["errors"]} == {"/name", "/email"}


# -- the batch document ----------------------------------------------------

@pytest.mark.parametrize("document, pointer", [
    ({}, ""),
    ({"requests": []}, "/requests"),
    ({"requests": {}}, "/requests"),
    ({"requests": [VALID[0]], "atomic": True}, "/atomic"),
    ({"requests": [7]}, "/requests/0"),
    ({"requests": [{**VALID[0], "query": "x"}]}, "/requests/0/query"),
    ({"requests": [{"method": "GET", "path": "/users"}]}, "/requests/0/method"),
    ({"requests": [{"method": "post", "path": "/users", "body": ADA}]}, "/requests/0/method"),
    ({"requests": [{"method": "POST", "body": ADA}]}, "/requests/0/path"),
    ({"requests": [{"method": "POST", "path": "users", "body": ADA}]}, "/requests/0/path"),
    ({"requests": [{"method": "POST", "path": "/users?x=1", "body": ADA}]}, "/requests/0/path"),
    ({"requests": [VALID[0], {"method": "DELETE", "path": "/users/1", "body": {}}]},
     "/requests/1/body"),
    ({"requests": [{**VALID[0], "headers": {"Authorization": "Bearer x"}}]},
     "/requests/0/headers/Authorization"),
    ({"requests": [{**VALID[0], "headers": {"Idempotency-Key": "k"}}]},
     "/requests/0/headers/Idempotency-Key"),
    ({"requests": [{**VALID[0], "headers": {"If-Match": 7}}]}, "/requests/0/headers/If-Match"),
    ({"requests": [{**VALID[1], "headers": {"If-Match": '"1-1"', "if-match": '"1-2"'}}]},
     "/requests/0/headers/if-match"),
    ({"requests": [{**VALID[0], "headers": {"Content-Type": "application/xml"}}]},
     "/requests/0/headers"),
    # (once a 415 when its turn came, offering XML, which a batch cannot hold)
    ({"requests": [{**VALID[0], "headers": {"Content-Type": "application/json; charset=latin1"}}]},
     "/requests/0/headers"),
])
def test_a_batch_document_usersvc_cannot_make_is_a_400_naming_what(memory_library, document,
                                                                    pointer):
    before = everything(memory_library)
    body = problem(memory_library.post("/batch", json_body=document), 400)
    assert [e["pointer"] for e in body["errors"]] == [pointer] and "request" not in body
    assert everything(memory_library) == before


@pytest.mark.parametrize("raw, status, pointer", [
    ('{"requests": [{"method": "POST", "path": "/users", "body": '
     '{"name": "A\\ud800", "email": "a@example.org"}}]}', 422, "/name"),
    ('{"requests": [{"method": "POST", "path": "/users", "body": '
     '{"name": "A", "name": "B", "email": "a@example.org"}}]}', 422, "/name"),
    ('{"requests": [{"method": "POST", "path": "/users", "body": '
     '{"name": "A", "email": "a@example.org", "x": [{"y": 1, "y": 2}]}}]}', 422, "/y"),
    ('{"requests": [], "requests": []}', 400, ""),
    ('{"requests": [{"method": "POST", "method": "PUT", "path": "/users"}]}', 400,
     "/requests/0"),
    ('{"requests": [{"method": "POST", "path": "/users", "body": {"n": NaN}}]}', 400, None),
    ('{"requests": [{"method": "POST", "path": "/users", "body": ' + "[" * 30_000 + "]" * 30_000
     + "}]}", 400, None),
    ('[{"method": "POST", "path": "/users"}]', 400, ""),
    ('"requests"', 400, ""),
])
def test_a_hostile_batch_is_a_4xx_that_changes_nothing(memory_library, raw, status, pointer):
    before = everything(memory_library)
    body = problem(memory_library.post("/batch", body=raw, content_type="application/json"),
                   status)
    if pointer is not None:
        assert [e["pointer"] for e in body["errors"]] == [pointer]
        assert body.get("request") == (0 if status == 422 else None)
    assert everything(memory_library) == before


def test_a_batch_is_json_and_only_json(memory_library):
    library = memory_library
    response = library.post("/batch", body="<requests/>", content_type="application/xml")
    assert problem(response, 415) and response.headers["Accept-Post"] == "application/json"
    assert problem(library.get("/batch"), 405)
    assert library.get("/batch").headers["Allow"] == "POST, OPTIONS"
    options = library.request("OPTIONS", "/batch")
    assert options.status_code == 204 and options.headers["Accept-Post"] == "application/json"
    response = library.post("/batch", json_body={"requests": [VALID[0]]},
                            headers={"Accept": "application/xml"})
    assert response.status_code == 406
    assert problem(library.post("/batch", body="{", content_type="application/json"), 400)
    assert problem(library.post("/batch", body=b"\xff", content_type="application/json"), 400)


def test_more_requests_than_the_limit_is_a_413_and_the_body_limit_is_the_batch_s(store_url):
    for client in serving(store_url, max_batch=2, max_body_size=400):
        many = [{"method": "POST", "path": "/users",
                 "body": {"name": f"U{i}", "email": f"u{i}@example.org"}} for i in range(3)]
        body = problem(batch(client, *many), 413)
        assert body["max_batch"] == 2 and "request" not in body
        assert batch(client, *many[:2]).status_code == 200
        big = [{"method": "POST", "path": "/books", "body": {"title": "T" * 190, "isbn": f"b{i}"}}
               for i in range(2)]
        assert problem(batch(client, *big), 413)["max_body_size"] == 400
        assert client.get("/books").json == []


def test_the_default_limit_is_a_hundred(store_url):
    for client in serving(store_url):
        many = [{"method": "POST", "path": "/books", "body": {"title": "T", "isbn": f"b{i}"}}
                for i in range(101)]
        assert problem(batch(client, *many), 413)["max_batch"] == 100
        assert batch(client, *many[:100]).status_code == 200
        assert len(client.get("/books?limit=1000").json) == 100


def test_under_a_mount_point_paths_are_the_service_s_and_urls_carry_the_prefix():
    app = make_app("memory://")
    client = BatchClient(Mount("/v1", app))
    made = client.post("/v1/batch", json_body={"requests": [VALID[0]]})
    assert made.json["responses"][0]["headers"]["Location"] == "http://localhost/v1/users/1"
    body = problem(client.post("/v1/batch", json_body={"requests": [
        {**VALID[0], "path": "/v1/users"}]}), 404)
    assert body["request"] == 0
    app.close()


def test_batch_is_not_a_collection_name():
    things = Schema("thing", "batch", {"title": text(10)})
    with pytest.raises(ValueError, match="/batch is served already"):
        make_app("memory://", collections=(USER, things))


def test_a_single_collection_s_records_have_no_batch():
    app = make_app(make_app.__globals__["open_store"]("memory://")["users"])
    client = Client(app)
    assert problem(batch(client, VALID[0]), 404)
    assert "/batch" not in client.get("/openapi.json").json["paths"]


# -- at once ---------------------------------------------------------------

def test_racing_batches_for_one_unique_value_leave_one_winner_and_nothing_of_the_others(library):
    n = 8
    barrier = threading.Barrier(n)
    answers = [None] * n

    def send(i):
        barrier.wait()
        answers[i] = batch(
            library,
            {"method": "POST", "path": "/books", "body": {"title": f"Own {i}", "isbn": f"own-{i}"}},
            {"method": "POST", "path": "/users",
             "body": {"name": f"R{i}", "email": "same@example.org"}})
    threads = [threading.Thread(target=send, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    won = [i for i, a in enumerate(answers) if a.status_code == 200]
    assert len(won) == 1, [a.status_code for a in answers]
    for a in answers:
        assert a.status_code == 200 or problem(a, 409)["request"] == 1
    books = {b["isbn"] for b in library.get("/books?limit=100").json}
    assert books == {"0441013597", "x-2", f"own-{won[0]}"}
    assert [u["email"] for u in library.get("/users").json] == ["ada@example.org",
                                                                 "same@example.org"]


def test_a_batch_s_feed_entries_are_consecutive_and_in_order_while_others_write(library):
    stop = threading.Event()

    def write_alone():
        i = 0
        while not stop.is_set():
            i += 1
            assert library.post("/books", json_body={"title": "Alone", "isbn": f"a-{i}"}
                                ).status_code == 201
    writer = threading.Thread(target=write_alone)
    writer.start()
    try:
        batches = []
        for n in range(10):
            response = batch(library, *({"method": "POST", "path": "/books",
                                         "body": {"title": "Batched", "isbn": f"b{n}-{i}"}}
                                        for i in range(3)))
            assert response.status_code == 200
            batches.append([r["body"]["id"] for r in response.json["responses"]])
    finally:
        stop.set()
        writer.join()
    seq_of = {}
    after = 0
    while page := library.get(f"/books/changes?after={after}&limit=1000").json:
        seq_of.update((c["id"], c["seq"]) for c in page)
        after = page[-1]["seq"]
    for ids in batches:
        seqs = [seq_of[i] for i in ids]
        assert seqs == list(range(seqs[0], seqs[0] + 3)), (ids, seqs)


# -- what every write has --------------------------------------------------

def test_an_idempotency_key_replays_the_whole_answer(library):
    key = {"Idempotency-Key": "b-1"}
    first = batch(library, VALID[0], VALID[3], headers=key)
    assert first.status_code == 200
    again = batch(library, VALID[0], VALID[3], headers=key)
    assert (again.status_code, again.body) == (200, first.body)
    assert len(library.get("/users").json) == 2 and len(library.get("/books").json) == 3
    body = problem(batch(library, VALID[0], headers=key), 422)       # another request
    assert "request" not in body


def test_a_refused_batch_s_answer_is_kept_with_its_key_and_nothing_else(library):
    key = {"Idempotency-Key": "b-2"}
    taken = {"method": "POST", "path": "/users",
             "body": {"name": "Twin", "email": "ada@example.org"}}
    before = everything(library)
    first = batch(library, VALID[3], taken, headers=key)
    assert problem(first, 409)["request"] == 1
    assert everything(library) == before
    assert library.delete("/users/1").status_code == 204        # the conflict is gone ...
    again = batch(library, VALID[3], taken, headers=key)
    assert (again.status_code, again.body) == (409, first.body)  # ... but the answer was kept
    assert library.get("/books/3").status_code == 404


def test_a_batch_needs_a_write_token_and_is_refused_from_another_site(store_url):
    for client in serving(store_url, tokens={"r" * 16: "read", "w" * 16: "write"},
                          cors_origins=["https://app.example"]):
        reader, writer = "Bearer " + "r" * 16, "Bearer " + "w" * 16
        assert batch(client, VALID[0], headers={"Authorization": reader}).status_code == 403
        assert batch(client, VALID[0]).status_code == 401
        assert batch(client, VALID[0], headers={
            "Authorization": writer, "Origin": "https://evil.example"}).status_code == 403
        assert client.get("/users", headers={"Authorization": writer}).json == []
        preflight = client.request("OPTIONS", "/batch", headers={
            "Origin": "https://app.example", "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type, idempotency-key"})
        assert preflight.headers["Access-Control-Allow-Origin"] == "https://app.example"
        assert "POST" in preflight.headers["Access-Control-Allow-Methods"]
        made = batch(client, VALID[0], headers={
            "Authorization": writer, "Origin": "https://app.example"})
        assert made.status_code == 200
        assert made.headers["Access-Control-Allow-Origin"] == "https://app.example"


def test_a_batch_is_counted_under_its_route(store_url):
    pytest.importorskip("prometheus_client")
    from prometheus_client import generate_latest
    for client in serving(store_url, metrics=True):
        assert batch(client, VALID[0]).status_code == 200
        scraped = generate_latest(client.app.plugged["metrics"].registry).decode()
        assert 'http_route="/batch"' in scraped
        assert 'http_request_method="POST",http_response_status_code="200",http_route="/batch"' \
            in scraped.replace(", ", ",")


def test_the_openapi_document_describes_the_batch(library):
    document = library.get("/openapi.json").json
    operation = document["paths"]["/batch"]["post"]
    assert operation["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Batch"}
    kinds = {k["$ref"].rsplit("/", 1)[1]
             for k in document["components"]["schemas"]["BatchRequest"]["anyOf"]}
    assert kinds == {f"Batch{m}{n}" for m in ("Post", "Put", "Patch", "Delete")
                     for n in ("User", "Book")}
    assert set(operation["responses"]) >= {"200", "400", "404", "405", "409", "412", "413",
                                           "415", "422"}
    assert "request" in document["components"]["schemas"]["Problem"]["properties"]
    assert json.dumps(document).count("Idempotency-Key") >= 3


# -- every store as the memory store -----------------------------------------

EMAILS = [f"e{i}@example.org" for i in range(5)]
ISBNS = [f"i-{i}" for i in range(5)]
#: What both stores hold first: three users and three books (ids 1 to 3).
SEEDS = [{"method": "POST", "path": "/users", "body": {"name": "S", "email": f"e{i}@example.org"}}
         for i in range(3)] + [{"method": "POST", "path": "/books",
                                "body": {"title": "S", "isbn": f"i-{i}"}} for i in range(3)]
IDS = st.integers(1, 4)
REQUEST = st.one_of(
    st.builds(lambda e: {"method": "POST", "path": "/users", "body": {"name": "U", "email": e}},
              st.sampled_from(EMAILS)),
    st.builds(lambda i, y: {"method": "POST", "path": "/books",
                            "body": {"title": "T", "isbn": i,
                                     **({} if y is None else {"year": y})}},
              st.sampled_from(ISBNS), st.none() | st.integers(1, 3)),
    st.builds(lambda n, e: {"method": "PATCH", "path": f"/users/{n}", "body": {"email": e}},
              IDS, st.sampled_from(EMAILS)),
    st.builds(lambda n, y: {"method": "PATCH", "path": f"/books/{n}", "body": {"year": y},
                            "headers": {"Content-Type": "application/merge-patch+json"}},
              IDS, st.none() | st.integers(1, 3)),
    st.builds(lambda n, v, i: {"method": "PUT", "path": f"/books/{n}", "body": {
        "title": "P", "isbn": i}, "headers": {"If-Match": f'"{n}-{v}"'}},
              IDS, st.integers(1, 3), st.sampled_from(ISBNS)),
    st.builds(lambda p, n: {"method": "DELETE", "path": f"/{p}/{n}"},
              st.sampled_from(["users", "books"]), IDS),
)


def seen(client) -> list:
    """What a client can read: both collections, and their feeds without
    positions (a failed batch's are skipped in memory, given again in SQL)."""
    return [client.get(f"/{plural}{changes}?limit=1000").json
            if not changes else [{k: v for k, v in c.items() if k != "seq"}
                                 for c in client.get(f"/{plural}/changes").json]
            for plural in ("users", "books") for changes in ("", "/changes")]


@pytest.mark.parametrize("kind", ["sqlite://", "sqlite-file"])
@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(st.lists(REQUEST, min_size=1, max_size=5), min_size=1, max_size=4))
def test_every_store_answers_each_batch_as_the_memory_store_does(tmp_path, kind, batches):
    url = kind if kind != "sqlite-file" else f"sqlite:///{tmp_path}/{uuid.uuid4().hex}.db"
    model = make_app("memory://", collections=(USER, BOOKS))
    store = make_app(url, collections=(USER, BOOKS))
    try:
        clients = BatchClient(model), BatchClient(store)
        for requests in [SEEDS, *batches]:
            answers = [batch(c, *requests) for c in clients]
            assert [(a.status_code, a.json) for a in answers][0] == \
                [(a.status_code, a.json) for a in answers][1], requests
            assert seen(clients[0]) == seen(clients[1]), requests
    finally:
        model.close()
        store.close()
