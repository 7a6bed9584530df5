"""docs/api.md, "Errors": every error is an RFC 9457 problem document, in the
negotiated format, and a 500 tells nothing about the code."""
from __future__ import annotations

import logging
import xml.etree.ElementTree as ET

import pytest
from conftest import Client, problem

from usersvc import USER, make_app
from usersvc.storage.memory.collection import MemoryRecords

NS = "{urn:ietf:rfc:7807}"


def test_a_422_lists_each_field_problem_with_a_pointer(client):
    body = problem(client.post("/users", json_body={"email": "bad", "nickname": "x"}), 422)
    assert body == {
        "type": "about:blank", "title": "Unprocessable Content", "status": 422,
        "detail": "The user has 3 invalid fields.",
        "errors": [{"pointer": "/email", "detail": "is not a valid e-mail address"},
                   {"pointer": "/nickname", "detail": "is not a field of a user"},
                   {"pointer": "/name", "detail": "is required"}]}


def test_problems_are_xml_when_xml_is_preferred(client):
    response = client.post("/users", json_body={"email": "bad"},
                           headers={"Accept": "application/xml"})
    assert response.status_code == 422
    assert response.headers["Content-Type"] == "application/problem+xml; charset=utf-8"
    root = ET.fromstring(response.body)
    assert root.tag == NS + "problem"
    assert root.findtext(NS + "type") == "about:blank"
    assert root.findtext(NS + "title") == "Unprocessable Content"
    assert root.findtext(NS + "status") == "422"
    assert root.findtext(NS + "detail") == "The user has 2 invalid fields."
    errors = root.findall(f"{NS}errors/{NS}error")
    assert [(e.findtext(NS + "pointer"), e.findtext(NS + "detail")) for e in errors] == [
        ("/email", "is not a valid e-mail address"), ("/name", "is required")]


@pytest.mark.parametrize("accept", ["application/problem+xml", "text/xml"])
def test_problem_xml_is_chosen_by_problem_and_xml_types(client, accept):
    response = client.get("/nowhere", headers={"Accept": accept})
    assert response.headers["Content-Type"] == "application/problem+xml; charset=utf-8"


def test_a_problem_falls_back_to_json_when_nothing_is_acceptable(client):
    response = client.get("/nowhere", headers={"Accept": "image/png"})
    problem(response, 404)


def test_a_406_is_json_and_lists_the_types_in_xml_too(client):
    problem(client.get("/users", headers={"Accept": "application/pdf"}), 406)


def test_problem_xml_escapes_client_text(client):
    response = client.post("/users", body='{"<&>\\u0001\\ud800": 1}',
                           content_type="application/json", headers={"Accept": "application/xml"})
    root = ET.fromstring(response.body)          # well-formed, whatever the field was called
    pointers = [e.findtext(NS + "pointer") for e in root.iter(NS + "error")]
    assert "/<&>\ufffd\ufffd" in pointers


def test_problem_json_survives_a_lone_surrogate_in_a_field_name(client):
    body = problem(client.post("/users", body='{"\\ud800": 1}', content_type="application/json"),
                   422)
    assert {"pointer": "/\ud800", "detail": "is not a field of a user"} in body["errors"]


def test_an_unknown_path_is_a_404_problem(client):
    body = problem(client.get("/nowhere"), 404)
    assert body["title"] == "Not Found"


def test_a_405_names_the_allowed_methods(client):
    response = client.request("DELETE", "/users")
    problem(response, 405)
    assert response.headers["Allow"] == "GET, HEAD, POST, OPTIONS"
    response = client.post("/users/1", json_body={})
    problem(response, 405)
    assert response.headers["Allow"] == "GET, HEAD, PUT, PATCH, DELETE, OPTIONS"


@pytest.mark.parametrize("method", ["PROPFIND", "TRACE", "CONNECT", "FOO", "get"])
def test_a_method_the_service_has_never_heard_of_is_405(client, method):
    response = client.request(method, "/users")
    problem(response, 405)
    assert response.headers["Allow"] == "GET, HEAD, POST, OPTIONS"


class BrokenStore(MemoryRecords):
    def get(self, user_id):
        raise RuntimeError("secret: /srv/db password hunter2")


def test_a_500_is_a_problem_that_says_nothing_about_the_code(caplog):
    client = Client(make_app(BrokenStore(USER)))
    with caplog.at_level(logging.ERROR, logger="usersvc"):
        response = client.get("/users/1")
    body = problem(response, 500)
    assert body == {"type": "about:blank", "title": "Internal Server Error", "status": 500,
                    "detail": "The server could not complete the request."}
    assert b"secret" not in response.body and b"Traceback" not in response.body
    # The trace goes to the log instead.
    assert "GET '/users/1' failed" in caplog.text
    assert "secret" in caplog.text and "Traceback" in caplog.text


def test_a_500_is_xml_when_xml_is_preferred():
    client = Client(make_app(BrokenStore(USER)))
    response = client.get("/users/1", headers={"Accept": "application/xml"})
    assert response.status_code == 500
    assert ET.fromstring(response.body).findtext(NS + "status") == "500"


def test_problems_to_get_are_not_reused_without_revalidation(client):
    assert client.get("/users/5").headers["Cache-Control"] == "no-cache"
