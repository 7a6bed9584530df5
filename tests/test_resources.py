"""docs/api.md, "Endpoints" and "The user resource": each row, through the app."""
from __future__ import annotations

import re

import pytest
from conftest import problem, snapshot
from helpers import link_to

pytestmark = pytest.mark.core       # runs on the plain core too (conftest.SERVED)

ADA = {"name": "Ada Lovelace", "email": "ada@example.org"}


# -- POST /users ---------------------------------------------------------

def test_create_answers_201_with_the_user_its_location_and_etag(client):
    response = client.post("/users", json_body=ADA)
    assert response.status_code == 201
    assert response.json == {"id": 1, **ADA}
    assert response.headers["Location"] == "http://localhost/users/1"
    assert response.headers["ETag"] == client.get("/users/1").headers["ETag"]
    assert response.headers["Vary"] == "Accept"


def test_create_assigns_increasing_ids_never_reused_after_delete(client):
    first = client.create(email="a@example.org")["id"]
    second = client.create(email="b@example.org")["id"]
    client.delete(f"/users/{second}")
    third = client.create(email="c@example.org")["id"]
    assert first < second < third


def test_create_trims_name_and_email(client):
    response = client.post("/users",
                           json_body={"name": "  Ada Lovelace \t", "email": " ada@example.org\n"})
    assert response.json == {"id": 1, **ADA}


def test_create_keeps_the_email_as_sent(client):
    assert client.create(email="Ada@Example.ORG")["email"] == "Ada@Example.ORG"


def test_create_with_an_id_is_422(client):
    body = problem(client.post("/users", json_body={"id": 7, **ADA}), 422)
    assert body["errors"] == [{"pointer": "/id",
                               "detail": "is assigned by the service and cannot be sent"}]
    assert snapshot(client) == []


def test_create_with_an_unknown_field_is_422_naming_it(client):
    body = problem(client.post("/users", json_body={**ADA, "nickname": "A"}), 422)
    assert body["errors"] == [{"pointer": "/nickname", "detail": "is not a field of a user"}]


def test_create_reports_every_invalid_field_at_once(client):
    body = problem(client.post("/users", json_body={"name": "", "email": "nope", "x": 1}), 422)
    assert [e["pointer"] for e in body["errors"]] == ["/name", "/email", "/x"]
    assert body["detail"] == "The user has 3 invalid fields."


def test_create_without_required_fields_is_422(client):
    body = problem(client.post("/users", json_body={}), 422)
    assert body["errors"] == [{"pointer": "/name", "detail": "is required"},
                              {"pointer": "/email", "detail": "is required"}]


@pytest.mark.parametrize("document", [
    {"name": 5, "email": "ada@example.org"},
    {"name": ["Ada"], "email": "ada@example.org"},
    {"name": True, "email": "ada@example.org"},
    {"name": "Ada", "email": {"local": "ada"}},
])
def test_create_with_a_field_of_the_wrong_type_is_422(client, document):
    body = problem(client.post("/users", json_body=document), 422)
    assert body["errors"][0]["detail"] == "must be a string"


def test_create_with_a_null_field_is_422_saying_it_is_required(client):
    body = problem(client.post("/users", json_body={"name": "Ada", "email": None}), 422)
    assert body["errors"] == [{"pointer": "/email", "detail": "is required and cannot be null"}]


def test_create_with_a_taken_email_in_other_case_is_409(client):
    client.create()
    body = problem(client.post("/users", json_body={"name": "B", "email": "ADA@EXAMPLE.ORG"}), 409)
    assert body["errors"] == [{"pointer": "/email", "detail": "is already taken"}]
    assert len(snapshot(client)) == 1


@pytest.mark.parametrize("body", ["[]", '"Ada"', "1", "null"])
def test_create_with_a_body_that_is_not_an_object_is_422(client, body):
    problem(client.post("/users", body=body, content_type="application/json"), 422)


def test_create_without_a_body_is_400(client):
    problem(client.post("/users", body=b"", content_type="application/json"), 400)


# -- GET /users/{id} -----------------------------------------------------

def test_get_answers_the_user_with_etag_and_no_cache(client):
    client.create()
    response = client.get("/users/1")
    assert response.status_code == 200
    assert response.json == {"id": 1, **ADA}
    assert response.headers["ETag"].startswith('"')
    assert response.headers["Cache-Control"] == "no-cache"
    assert response.headers["Vary"] == "Accept"


def test_get_of_a_missing_user_is_404(client):
    problem(client.get("/users/1"), 404)


def test_if_none_match_with_the_current_etag_is_304_with_the_same_headers(client):
    client.create()
    tag = client.get("/users/1").headers["ETag"]
    response = client.get("/users/1", headers={"If-None-Match": tag})
    assert response.status_code == 304
    assert response.body == b""
    assert response.headers["ETag"] == tag
    assert response.headers["Cache-Control"] == "no-cache"
    assert response.headers["Vary"] == "Accept"


def test_if_none_match_compares_weakly_and_takes_lists_and_star(client):
    client.create()
    tag = client.get("/users/1").headers["ETag"]
    for header in [f"W/{tag}", f'"nope", {tag}', "*"]:
        assert client.get("/users/1", headers={"If-None-Match": header}).status_code == 304


def test_if_none_match_with_an_old_etag_is_200(client):
    client.create()
    tag = client.get("/users/1").headers["ETag"]
    client.patch("/users/1", json_body={"name": "Ada K"})
    assert client.get("/users/1", headers={"If-None-Match": tag}).status_code == 200


def test_etag_changes_on_every_change_and_differs_by_format(client):
    created = client.post("/users", json_body=ADA).headers["ETag"]
    replaced = client.put("/users/1", json_body=ADA).headers["ETag"]
    patched = client.patch("/users/1", json_body={}).headers["ETag"]
    assert len({created, replaced, patched}) == 3
    xml = client.get("/users/1", headers={"Accept": "application/xml"}).headers["ETag"]
    assert xml != patched and not xml.startswith("W/")


# -- GET /users ----------------------------------------------------------

def test_list_is_a_bare_array_sorted_by_id(client):
    for i in range(3):
        client.create(email=f"u{i}@example.org")
    response = client.get("/users")
    assert response.status_code == 200
    assert [u["id"] for u in response.json] == [1, 2, 3]
    assert response.headers["Cache-Control"] == "no-cache"
    assert link_to(response.headers) is None


def test_list_of_nothing_is_an_empty_array(client):
    assert client.get("/users").json == []


def test_list_pages_follow_the_link_header_to_the_end(client):
    for i in range(5):
        client.create(email=f"u{i}@example.org")
    seen, url, pages = [], "/users?limit=2", 0
    while url:
        response = client.get(url)
        pages += 1
        seen += [u["id"] for u in response.json]
        link = link_to(response.headers)
        url = link.replace("http://localhost", "") if link else None
    assert seen == [1, 2, 3, 4, 5]
    assert pages == 3


def test_link_appears_only_when_the_page_is_full(client):
    for i in range(3):
        client.create(email=f"u{i}@example.org")
    assert link_to(client.get("/users?limit=3").headers) == \
        "http://localhost/users?after=3&limit=3"
    assert link_to(client.get("/users?limit=4").headers) is None


def test_link_keeps_other_query_parameters(client):
    client.create()
    link = link_to(client.get("/users?email=ADA%40example.org&limit=1&q=ad").headers)
    assert link == "http://localhost/users?email=ADA%40example.org&q=ad&after=1&limit=1"


def test_after_gives_only_larger_ids(client):
    for i in range(4):
        client.create(email=f"u{i}@example.org")
    assert [u["id"] for u in client.get("/users?after=2").json] == [3, 4]


def test_default_limit_is_100_and_1000_is_allowed(client, store):
    for i in range(101):
        store.create(name="U", email=f"u{i}@example.org")
    assert len(client.get("/users").json) == 100
    assert len(client.get("/users?limit=1000").json) == 101


def test_email_filter_is_exact_and_case_insensitive(client):
    client.create()
    client.create(email="adam@example.org")
    assert [u["id"] for u in client.get("/users?email=ADA@example.org").json] == [1]
    assert client.get("/users?email=ada@example").json == []
    assert client.get("/users?email=ada%25").json == []   # no wildcards
    assert client.get("/users?email=*").json == []


@pytest.mark.parametrize("query", [
    "limit=0", "limit=1001", "limit=", "limit=-1", "limit=1.5", "limit=+5",
    "limit=%201", "limit=1e2", "limit=%D9%A1", "limit=1_0", "limit=ten",
    "after=-1", "after=", "after=x", "after=9223372036854775808",
    "after=" + "9" * 50000, "limit=1&limit=2",
])
def test_bad_paging_parameters_are_400(client, query):
    detail = problem(client.get("/users?" + query), 400)["detail"]
    assert query.split("=")[0] in detail


@pytest.mark.parametrize("query", ["email=%FF", "limit=%C0%B1", "email=%ED%A0%80", "%FF=1"])
def test_a_query_string_that_is_not_utf8_is_400(client, query):
    assert problem(client.get("/users?" + query), 400)["detail"] == \
        "The query string is not valid UTF-8."


def test_the_query_string_is_read_as_utf8_raw_or_escaped(client):
    client.create(email="zoe@example.org")
    client.create(name="Élodie", email="e@example.org")
    req_raw = "/users?email=e@example.org&q=" + "é".encode().decode("latin-1")
    assert len(client.get(req_raw).json) == 1
    assert link_to(client.get("/users?q=%C3%A9&limit=1").headers).endswith(
        "?q=%C3%A9&after=2&limit=1")
    problem(client.get("/users?q=" + "\xe9"), 400)       # a raw latin-1 byte


def test_email_given_twice_is_400(client):
    problem(client.get("/users?email=a@example.org&email=b@example.org"), 400)


def test_unknown_query_parameters_are_400_naming_them_and_the_known_ones(client):
    client.create()
    body = problem(client.get("/users?nmae=Ada&page=3"), 400)
    assert body["detail"] == ("Unknown query parameters: nmae, page. "
                              "/users takes: limit, sort, after, cursor, email, q, fields, "
                              "id[gt|gte|lt|lte], name[gt|gte|lt|lte], email[eq|ne|in].")


# -- PUT /users/{id} -----------------------------------------------------

def test_put_replaces_the_user(client):
    client.create()
    response = client.put("/users/1", json_body={"name": "Ada King", "email": "king@example.org"})
    assert response.status_code == 200
    assert response.json == {"id": 1, "name": "Ada King", "email": "king@example.org"}
    assert client.get("/users/1").json == response.json
    assert response.headers["ETag"] == client.get("/users/1").headers["ETag"]


def test_put_needs_every_field(client):
    client.create()
    body = problem(client.put("/users/1", json_body={"name": "Ada"}), 422)
    assert body["errors"] == [{"pointer": "/email", "detail": "is required"}]


def test_put_may_carry_the_same_id_but_no_other(client):
    client.create()
    assert client.put("/users/1", json_body={"id": 1, **ADA}).status_code == 200
    body = problem(client.put("/users/1", json_body={"id": 2, **ADA}), 422)
    assert body["errors"][0]["pointer"] == "/id"
    problem(client.put("/users/1", json_body={"id": "1", **ADA}), 422)


def test_put_of_a_missing_user_is_404_not_an_upsert(client):
    problem(client.put("/users/5", json_body=ADA), 404)
    assert snapshot(client) == []


def test_put_to_an_email_of_another_user_is_409(client):
    client.create()
    client.create(email="bob@example.org")
    problem(client.put("/users/2", json_body={"name": "Bob", "email": "Ada@example.org"}), 409)
    assert client.get("/users/2").json["email"] == "bob@example.org"


def test_put_may_change_the_case_of_its_own_email(client):
    client.create()
    response = client.put("/users/1", json_body={"name": "Ada", "email": "ADA@example.org"})
    assert response.json["email"] == "ADA@example.org"


# -- PATCH /users/{id} ---------------------------------------------------

def test_patch_merges_the_fields_sent(client):
    client.create()
    response = client.patch("/users/1", json_body={"name": "Ada King"})
    assert response.status_code == 200
    assert response.json == {"id": 1, "name": "Ada King", "email": ADA["email"]}
    assert response.headers["ETag"] == client.get("/users/1").headers["ETag"]


@pytest.mark.parametrize("content_type", ["application/merge-patch+json", "application/json"])
def test_patch_reads_merge_patch_and_json(client, content_type):
    client.create()
    response = client.patch("/users/1", body='{"email": "k@example.org"}',
                            content_type=content_type)
    assert response.json["email"] == "k@example.org"


def test_patch_reads_a_partial_xml_user(client):
    client.create()
    response = client.patch("/users/1", body="<user><name>Ada K</name></user>",
                            content_type="application/xml")
    assert response.json == {"id": 1, "name": "Ada K", "email": ADA["email"]}


def test_patch_with_null_for_a_required_field_is_422(client):
    client.create()
    body = problem(client.patch("/users/1", json_body={"name": None}), 422)
    assert body["errors"] == [{"pointer": "/name", "detail": "is required and cannot be removed"}]
    assert client.get("/users/1").json["name"] == ADA["name"]


def test_patch_refuses_json_patch_documents(client):
    client.create()
    response = client.patch("/users/1", body='[{"op": "remove", "path": "/name"}]',
                            content_type="application/json-patch+json")
    problem(response, 415)
    assert "application/merge-patch+json" in response.headers["Accept-Patch"]


def test_patch_of_a_missing_user_is_404(client):
    problem(client.patch("/users/9", json_body={"name": "X"}), 404)


def test_patch_to_a_taken_email_is_409(client):
    client.create()
    client.create(email="bob@example.org")
    problem(client.patch("/users/1", json_body={"email": "BOB@example.org"}), 409)


def test_patch_with_a_wrong_id_is_422(client):
    client.create()
    problem(client.patch("/users/1", json_body={"id": 3}), 422)


# -- DELETE /users/{id} --------------------------------------------------

def test_delete_is_204_then_404(client):
    client.create()
    response = client.delete("/users/1")
    assert response.status_code == 204
    assert response.body == b""
    assert "Content-Type" not in response.headers
    problem(client.get("/users/1"), 404)
    problem(client.delete("/users/1"), 404)


# -- If-Match ------------------------------------------------------------

@pytest.mark.parametrize("method", ["put", "patch", "delete"])
def test_if_match_with_the_current_etag_succeeds(client, method):
    client.create()
    tag = client.get("/users/1").headers["ETag"]
    kw = {} if method == "delete" else {"json_body": ADA}
    response = getattr(client, method)("/users/1", headers={"If-Match": tag}, **kw)
    assert response.status_code in (200, 204)


@pytest.mark.parametrize("method", ["put", "patch", "delete"])
def test_if_match_with_a_stale_etag_is_412_and_changes_nothing(client, method):
    client.create()
    stale = client.get("/users/1").headers["ETag"]
    client.patch("/users/1", json_body={"name": "Ada K"})
    before = snapshot(client)
    kw = {} if method == "delete" else {"json_body": ADA}
    problem(getattr(client, method)("/users/1", headers={"If-Match": stale}, **kw), 412)
    assert snapshot(client) == before


def test_if_match_takes_a_list_and_star(client):
    client.create()
    tag = client.get("/users/1").headers["ETag"]
    assert client.patch("/users/1", json_body={},
                        headers={"If-Match": f'"x", {tag}'}).status_code == 200
    assert client.patch("/users/1", json_body={}, headers={"If-Match": "*"}).status_code == 200


def test_if_match_compares_strongly(client):
    client.create()
    tag = client.get("/users/1").headers["ETag"]
    problem(client.patch("/users/1", json_body={}, headers={"If-Match": "W/" + tag}), 412)


def test_if_match_accepts_the_etag_of_either_format(client):
    client.create()
    xml_tag = client.get("/users/1", headers={"Accept": "text/xml"}).headers["ETag"]
    assert client.patch("/users/1", json_body={}, headers={"If-Match": xml_tag}).status_code == 200


def test_if_match_with_another_users_etag_is_412(client):
    client.create()
    client.create(email="bob@example.org")
    tag_of_1 = client.get("/users/1").headers["ETag"]
    problem(client.delete("/users/2", headers={"If-Match": tag_of_1}), 412)


def test_if_match_on_a_missing_user_is_404(client):
    problem(client.delete("/users/3", headers={"If-Match": "*"}), 404)


def test_if_none_match_star_on_put_is_412(client):
    client.create()
    problem(client.put("/users/1", json_body=ADA, headers={"If-None-Match": "*"}), 412)


# -- HEAD and OPTIONS ----------------------------------------------------

def test_a_page_has_an_etag_of_its_bytes_and_revalidates_to_304(client):
    client.create()
    first = client.get("/users")
    tag = first.headers["ETag"]
    assert re.fullmatch(r'"[0-9a-f]{24}"', tag)
    assert first.headers["Cache-Control"] == "no-cache"
    assert client.get("/users", headers={"Accept": "application/xml"}).headers["ETag"] != tag
    same = client.get("/users", headers={"If-None-Match": tag})
    assert same.status_code == 304 and same.body == b""
    assert same.headers["ETag"] == tag and same.headers["Cache-Control"] == "no-cache"
    client.create(email="b@example.org")                 # the page changed
    changed = client.get("/users", headers={"If-None-Match": tag})
    assert changed.status_code == 200 and changed.headers["ETag"] != tag



@pytest.mark.parametrize("accept", ["application/json", "application/xml"])
def test_a_page_of_the_same_size_and_first_id_shows_every_change(client, accept):
    # Pages are kept with the records they were made from: a page with the
    # same first id and length but other records or versions is made anew.
    for i in range(3):
        client.create(email=f"u{i}@example.org")
    headers = {"Accept": accept}
    before = client.get("/users", headers=headers)
    assert client.get("/users", headers=headers).body == before.body
    client.patch("/users/2", json_body={"name": "Renamed"})
    renamed = client.get("/users", headers=headers)
    assert b"Renamed" in renamed.body and renamed.headers["ETag"] != before.headers["ETag"]
    client.delete("/users/3")
    client.create(email="u3@example.org")                 # ids 1, 2, 4: three again
    replaced = client.get("/users", headers=headers)
    assert b"u3@example.org" in replaced.body and b"u2@example.org" not in replaced.body
    assert replaced.headers["ETag"] not in (before.headers["ETag"], renamed.headers["ETag"])
    assert client.get("/users", headers=headers).headers["ETag"] == replaced.headers["ETag"]

# -- the service root and its description ----------------------------------

@pytest.mark.feature("openapi")
def test_the_root_links_to_the_collection_and_the_openapi_document(client):
    response = client.get("/")
    assert response.status_code == 200 and response.content_type == "application/json"
    assert response.json == {"title": "usersvc", "links": [
        {"rel": "collection", "href": "http://localhost/users", "title": "users"},
        {"rel": "service-desc", "href": "http://localhost/openapi.json",
         "type": "application/json"}]}
    assert response.headers["Link"] == '<http://localhost/openapi.json>; rel="service-desc"'
    assert client.get(response.json["links"][1]["href"]).json["openapi"] == "3.1.0"


@pytest.mark.feature("openapi")
def test_the_root_in_xml(client):
    response = client.get("/", headers={"Accept": "application/xml"})
    assert response.content_type == "application/xml"
    assert response.body == (
        b'<service><title>usersvc</title>'
        b'<link rel="collection" href="http://localhost/users" title="users"/>'
        b'<link rel="service-desc" href="http://localhost/openapi.json" type="application/json"/>'
        b'</service>')


@pytest.mark.feature("openapi")
def test_the_openapi_document_is_json_only(client):
    refused = client.get("/openapi.json", headers={"Accept": "application/xml"})
    assert refused.status_code == 406                     # told so in the format it reads
    assert refused.content_type == "application/problem+xml"
    assert b"<available><i>application/json</i></available>" in refused.body
    assert client.get("/openapi.json", headers={"Accept": "*/*"}).json["openapi"] == "3.1.0"
    assert client.request("POST", "/openapi.json").headers["Allow"] == "GET, HEAD, OPTIONS"


@pytest.mark.parametrize("path", ["/users", "/users/1", "/users?limit=1", "/", "/openapi.json"])
def test_head_is_get_without_the_body(client, features, path):
    client.create()
    get, head = client.get(path), client.request("HEAD", path)
    served = "openapi" in features or path not in ("/", "/openapi.json")
    assert head.status_code == get.status_code == (200 if served else 404)
    assert head.body == b""
    assert head.headers["Content-Length"] == get.headers["Content-Length"]
    for name in ("Content-Type", "ETag", "Link", "Cache-Control", "Vary"):
        assert head.headers.getall(name) == get.headers.getall(name)


def test_options_on_the_collection(client):
    response = client.request("OPTIONS", "/users")
    assert response.status_code == 204
    assert response.headers["Allow"] == "GET, HEAD, POST, OPTIONS"
    assert "application/json" in response.headers["Accept-Post"]
    assert "application/xml" in response.headers["Accept-Post"]


def test_options_on_a_user(client):
    response = client.request("OPTIONS", "/users/1")
    assert response.status_code == 204
    assert response.headers["Allow"] == "GET, HEAD, PUT, PATCH, DELETE, OPTIONS"
    assert "application/merge-patch+json" in response.headers["Accept-Patch"]
