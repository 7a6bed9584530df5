"""CONTRACT.md, "Endpoints": paths that name nothing are 404, never 500."""
from __future__ import annotations

import pytest
from conftest import problem


@pytest.mark.parametrize("path", [
    "/users/abc", "/users/-1", "/users/0", "/users/01", "/users/001", "/users/+1", "/users/1e3",
    "/users/%201", "/users/1%20", "/users/1.0", "/users/0x1", "/users/1_0",
    "/users/%D9%A1", "/users/%EF%BC%91", "/users/" + "9" * 30, "/users/9223372036854775808",
    "/users/" + "1" * 5000, "/users/1/", "/users/1/x", "/users//1", "/users/", "/user",
    "/USERS", "//", "/users/../users", "/users/%2e%2e", "/books", "/users/1;x",
    "/users/%FF", "/users/%C0%B1", "/%ED%A0%80",
])
def test_paths_that_name_nothing_are_404(client, path):
    client.create()
    problem(client.get(path), 404)
    problem(client.request("DELETE", path), 404)
    assert client.get("/users/1").status_code == 200


def test_the_largest_id_any_store_can_hold_is_a_404_not_an_error(client):
    problem(client.get("/users/9223372036854775807"), 404)


def test_an_id_with_percent_encoded_digits_is_the_same_user(client):
    client.create()
    assert client.get("/users/%31").json["id"] == 1


def test_query_strings_do_not_change_the_route(client):
    client.create()
    assert client.get("/users/1?x=1").status_code == 200
