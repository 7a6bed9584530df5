"""docs/api.md, "Running", embedded: a plain WSGI callable, apps that share
nothing, mounting under a prefix, and a second collection on the same
machinery."""
from __future__ import annotations

import itertools

import pytest
from books import BOOKS
from conftest import Client, problem
from helpers import link_to
from webob import Request

from usersvc import USER, App, Mount, Schema, make_app
from usersvc.storage.memory.collection import MemoryRecords


def test_make_app_takes_a_storage_url(tmp_path):
    app = make_app(f"sqlite:///{tmp_path}/users.db", max_body_size=100)
    client = Client(app)
    client.create()
    problem(client.post("/users", body="x" * 101, content_type="application/json"), 413)
    app.close()
    again = make_app(f"sqlite:///{tmp_path}/users.db")
    assert Client(again).get("/users/1").status_code == 200
    again.close()


def test_make_app_refuses_a_bad_storage_url():
    for url in ["users.db", "mysql://x", "memory://x", "sqlite:/x"]:
        with pytest.raises(ValueError):
            make_app(url)


def test_two_apps_in_one_process_share_nothing():
    first, second = make_app("memory://"), make_app("memory://", max_body_size=50)
    Client(first).create()
    assert Client(second).get("/users").json == []
    assert Client(second).create(email="b@example.org")["id"] == 1
    problem(Client(second).post("/users", body="x" * 51), 413)
    assert Client(first).post("/users", body="x" * 51,
                              content_type="application/json").status_code == 400
    first.router.routes.clear()
    assert Client(second).get("/users/1").status_code == 200


def test_two_private_sqlite_databases_share_nothing():
    first, second = make_app("sqlite://"), make_app("sqlite://")
    Client(first).create()
    assert Client(second).get("/users").json == []
    first.close(), second.close()


# -- under a prefix --------------------------------------------------------

def dispatcher(apps):
    """A host application's path dispatcher: /api goes to usersvc."""
    def dispatch(environ, start_response):
        req = Request(environ)
        prefix = req.path_info_peek()
        if prefix not in apps:
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"not here"]
        req.path_info_pop()
        return apps[prefix](environ, start_response)
    return dispatch


def test_mounted_under_a_prefix_urls_carry_it():
    client = Client(dispatcher({"api": make_app("memory://")}))
    response = client.post("/api/users", json_body={"name": "Ada", "email": "ada@example.org"})
    assert response.headers["Location"] == "http://localhost/api/users/1"
    assert client.get("/api/users/1").json["id"] == 1
    link = link_to(client.get("/api/users?limit=1").headers)
    assert link == "http://localhost/api/users?after=1&limit=1"
    assert client.get("/users").status_code == 404


def test_mount_serves_only_paths_under_its_prefix():
    client = Client(Mount("/v1", make_app("memory://")))
    assert client.post("/v1/users", json_body={"name": "A", "email": "a@example.org"}) \
        .headers["Location"] == "http://localhost/v1/users/1"
    assert client.get("/v1/users/1").status_code == 200
    problem(client.get("/users/1"), 404)
    problem(client.get("/v1users/1"), 404)
    root = client.get("/v1")               # the mount point is the app's root
    assert root.json["links"][0]["href"] == "http://localhost/v1/users"
    with pytest.raises(ValueError):
        Mount("/", make_app("memory://"))


# -- a second collection (tests/books.py) -------------------------------------

@pytest.fixture
def library(store_url):
    app = make_app(store_url, collections=(USER, BOOKS))   # the one line of wiring
    yield Client(app)
    app.close()


SKETCH = {"title": "Sketch of the Analytical Engine", "isbn": "978-0-00"}


def test_a_second_collection_gets_the_same_http_for_free(library):
    created = library.post("/books", json_body=SKETCH)
    assert created.status_code == 201
    assert created.headers["Location"] == "http://localhost/books/1"
    assert library.get("/books/1", headers={"Accept": "application/xml"}).body == \
        (b"<book><id>1</id><title>Sketch of the Analytical Engine</title>"
         b"<isbn>978-0-00</isbn></book>")
    assert library.get("/books", headers={"Accept": "text/xml"}).body.startswith(b"<books><book>")
    tag = created.headers["ETag"]
    assert library.get("/books/1", headers={"If-None-Match": tag}).status_code == 304
    problem(library.put("/books/1", json_body={**SKETCH, "title": "New"},
                        headers={"If-Match": '"1-9"'}), 412)
    assert library.patch("/books/1", json_body={"title": "Notes"}).json["title"] == "Notes"
    assert library.request("OPTIONS", "/books/1").headers["Allow"] == \
        "GET, HEAD, PUT, PATCH, DELETE, OPTIONS"
    assert library.delete("/books/1").status_code == 204
    problem(library.get("/books/1"), 404)


def test_a_second_collection_validates_with_its_own_schema(library):
    body = problem(library.post("/books", json_body={"title": "", "isbn": "1", "year": 10_000,
                                                     "email": "a@example.org"}), 422)
    assert body["errors"] == [{"pointer": "/title", "detail": "must not be empty"},
                              {"pointer": "/year", "detail": "must be from 0 to 9999"},
                              {"pointer": "/email", "detail": "is not a field of a book"}]
    refused = library.post("/books", body="<user/>", content_type="text/xml")
    assert "<book>" in problem(refused, 422)["detail"]


def test_the_collections_do_not_mix(library):
    library.post("/books", json_body={"title": "T", "isbn": "1"})
    assert library.get("/users").json == []
    problem(library.get("/users/1"), 404)


def test_an_app_without_collections_serves_only_404s():
    problem(Client(App()).get("/users"), 404)


class ForgetfulBooks(MemoryRecords):
    """A store that breaks the contract: it hands out the lowest free id
    again, at version 1, so a new book can look like a deleted one."""

    def create(self, **fields):
        contents = self.contents
        with contents.lock:
            contents.last_id = next(i for i in itertools.count(1) if i not in contents.records) - 1
        return super().create(**fields)


@pytest.mark.parametrize("accept", ["application/json", "application/xml"])
def test_kept_encodings_never_serve_another_records_bytes_even_from_a_broken_store(accept):
    app = make_app("memory://")
    app.add_collection(BOOKS, ForgetfulBooks(BOOKS))
    client, headers = Client(app), {"Accept": accept}
    for title in ("A", "B"):
        assert client.post("/books", json_body={"title": title, "isbn": title},
                           headers=headers).status_code == 201
    assert client.get("/books", headers=headers).status_code == 200      # a page is kept too
    assert client.delete("/books/1").status_code == 204
    created = client.post("/books", json_body={"title": "C", "isbn": "C"}, headers=headers)
    assert created.headers["Location"] == "http://localhost/books/1"     # id 1 again, version 1
    assert b"C" in created.body and b"A" not in created.body
    assert b"C" in client.get("/books/1", headers=headers).body
    page = client.get("/books", headers=headers).body
    assert b"C" in page and b"A" not in page


def test_a_collection_without_a_field_of_its_own_is_refused_where_it_is_declared():
    """Once accepted, and every POST was a 500."""
    empty = Schema("e", "empties", {})
    for url in ("memory://", "sqlite://"):
        with pytest.raises(ValueError, match="empties: a collection needs at least one field"):
            make_app(url, collections=(USER, empty))
    with pytest.raises(ValueError, match="empties: a collection needs at least one field"):
        make_app("memory://").add_collection(empty, None)
