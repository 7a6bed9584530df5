"""usersvc/routing.py: paths that name nothing are 404, never 500
(docs/api.md, "Endpoints"), and how a path is matched."""
from __future__ import annotations

import re

import pytest
from conftest import problem
from hypothesis import given, strategies as st

from usersvc.routing import Router, canonical_int
from usersvc.storage import MAX_ID


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
    assert client.get("/users/1?fields=name").status_code == 200


# -- the int segment -------------------------------------------------------

@given(st.text(alphabet=st.sampled_from("0123456789+-e ١"), max_size=22))
def test_an_int_segment_is_exactly_a_canonical_decimal_that_fits(segment):
    canonical = re.fullmatch("[1-9][0-9]*", segment) and int(segment) <= MAX_ID
    expected = int(segment) if canonical else None
    assert canonical_int(segment) == expected


def test_routes_tell_literal_segments_from_parameters():
    router = Router()
    a, b = router.add("/users", "collection"), router.add("/users/{id:int}", "item")
    assert router.match("/users") == (a, {})
    assert router.match("/users/7") == (b, {"id": 7})
    assert router.match("/users/7/x") is None and router.match("/user/7") is None


def test_each_collections_records_are_found_by_their_own_first_segment():
    router = Router()
    routes = {plural: router.add(f"/{plural}/{{id:int}}", plural) for plural in ("users", "books")}
    assert router.match("/books/3") == (routes["books"], {"id": 3})
    assert router.match("/users/3") == (routes["users"], {"id": 3})
    assert router.match("/films/3") is None and router.match("/3") is None
    assert router.match("") is None
    with pytest.raises(ValueError, match="starts with a literal"):
        router.add("/{id:int}", "anything")
