"""docs/api.md, "Endpoints" (limits, malformed bodies) and "Errors": bad
input gets a 4xx problem, changes nothing, and is never read past the limit."""
from __future__ import annotations

import io
import json

import pytest
from conftest import Client, snapshot
from webob import Request

from usersvc import make_app

ADA = {"name": "Ada Lovelace", "email": "ada@example.org"}

# (method, path, body, content type, headers): each must be a 4xx.
BAD_REQUESTS = [
    ("POST", "/users", "[" * 100_000 + "]" * 100_000, "application/json", {}),
    ("POST", "/users", '{"a":' * 50_000 + "1" + "}" * 50_000, "application/json", {}),
    ("POST", "/users", '{"name": ' + "9" * 50_000 + ', "email": "a@example.org"}',
     "application/json", {}),
    ("POST", "/users", '{"name": 1e999999, "email": "a@example.org"}', "application/json", {}),
    ("POST", "/users", '{"name": NaN, "email": "a@example.org"}', "application/json", {}),
    ("POST", "/users", '{"name": -Infinity, "email": "a@example.org"}', "application/json", {}),
    ("POST", "/users", '{"name": "\\ud800", "email": "a@example.org"}', "application/json", {}),
    ("POST", "/users", '{"name": "\\udfff\\ud800", "email": "a@example.org"}',
     "application/json", {}),
    ("POST", "/users", '{"name": "A", "name": "B", "email": "a@example.org"}',
     "application/json", {}),
    ("POST", "/users", '{"name": "A\\u0000B", "email": "a@example.org"}', "application/json", {}),
    ("POST", "/users", b'{"name": "A\x00B", "email": "a@example.org"}', "application/json", {}),
    ("POST", "/users", b'{"name": "\xff", "email": "a@example.org"}', "application/json", {}),
    ("POST", "/users", b"\xef\xbb\xbf" + json.dumps(ADA).encode(), "application/json", {}),
    ("POST", "/users", '{"name": "A", "email": "a@example.org"', "application/json", {}),
    ("POST", "/users", "{'name': 'A'}", "application/json", {}),
    ("POST", "/users", "", "application/json", {}),
    ("POST", "/users", "   ", "application/json", {}),
    ("POST", "/users", '{"name": "A", "email": "a@example.org"} x', "application/json", {}),
    ("POST", "/users",
     '{"name": "Robert\'); DROP TABLE users;--", "email": "x\' OR 1=1--@example.org"}',
     "application/json", {}),
    ("POST", "/users", "<user><name>A</name><email>a@example.org</email></user>", "text/plain", {}),
    ("POST", "/users", json.dumps(ADA), "application/json", {"Accept": "image/png"}),
    ("POST", "/users", json.dumps({**ADA, "id": 99}), "application/json", {}),
    ("POST", "/users", "x" * 70_000, "application/json", {}),
    ("PUT", "/users/1", '{"name": "A"}', "application/json", {}),
    ("PUT", "/users/1", json.dumps({**ADA, "id": 2}), "application/json", {}),
    ("PUT", "/users/1", json.dumps({**ADA, "id": 1e0}), "application/json", {}),
    ("PUT", "/users/1", json.dumps({**ADA, "id": "9" * 50_000}), "application/json", {}),
    ("PUT", "/users/1", json.dumps(ADA), "application/json", {"If-Match": '"1-9"'}),
    ("PUT", "/users/1", "<user><id>" + "9" * 50_000 + "</id></user>", "application/xml", {}),
    ("PUT", "/users/1", "<user><id>&#xD800;</id></user>", "application/xml", {}),
    ("PUT", "/users/1", "<user><name>\x00</name></user>", "application/xml", {}),
    ("PUT", "/users/2", json.dumps(ADA), "application/json", {}),
    ("PUT", "/users/01", json.dumps(ADA), "application/json", {}),
    ("PATCH", "/users/1", '{"name": null}', "application/merge-patch+json", {}),
    ("PATCH", "/users/1", '{"email": "bob@example.org"}', "application/merge-patch+json", {}),
    ("PATCH", "/users/1", '[{"op": "remove", "path": "/name"}]', "application/json-patch+json", {}),
    ("PATCH", "/users/1", "<user><name><b>x</b></name></user>", "application/xml", {}),
    ("PATCH", "/users/1", "<!DOCTYPE user><user/>", "application/xml", {}),
    ("DELETE", "/users/1", None, None, {"If-Match": '"1-7", W/"1-1"'}),
    ("DELETE", "/users/99", None, None, {}),
    ("DELETE", "/users", None, None, {}),
    ("PROPFIND", "/users/1", None, None, {}),
]


@pytest.fixture
def populated(client):
    client.create()
    client.create(name="Bob", email="bob@example.org")
    return client


@pytest.mark.parametrize("method, path, body, content_type, headers", BAD_REQUESTS,
                         ids=[f"{i}-{r[0]}" for i, r in enumerate(BAD_REQUESTS)])
def test_bad_requests_get_a_4xx_problem_and_change_nothing(populated, method, path, body,
                                                           content_type, headers):
    before = snapshot(populated)
    response = populated.request(method, path, body=body, content_type=content_type,
                                 headers=headers)
    assert 400 <= response.status_code < 500, response.text
    assert response.content_type == "application/problem+json"
    assert response.json["status"] == response.status_code
    assert snapshot(populated) == before


def test_a_body_exactly_at_the_limit_is_read(tmp_path):
    body = json.dumps(ADA).encode()
    client = Client(make_app("memory://", max_body_size=len(body)))
    assert client.post("/users", body=body, content_type="application/json").status_code == 201


# -- the limit is enforced before the body is read ------------------------

class Endless(io.RawIOBase):
    """A request body that never ends, counting what is read of it."""

    def __init__(self):
        self.read_bytes = 0

    def readable(self):
        return True

    def readinto(self, buffer):
        self.read_bytes += len(buffer)
        buffer[:] = b"a" * len(buffer)
        return len(buffer)


def test_a_declared_length_over_the_limit_is_413_without_reading(client):
    stream = Endless()
    req = Request.blank("/users", method="POST", content_type="application/json")
    req.environ.update({"wsgi.input": stream, "CONTENT_LENGTH": str(10**12)})
    response = req.get_response(client.app)
    assert response.status_code == 413
    assert response.json["detail"] == "The request body is over the limit of 65536 bytes."
    assert stream.read_bytes == 0


def test_a_body_of_unknown_length_is_read_only_to_the_limit(client):
    stream = Endless()
    req = Request.blank("/users", method="POST", content_type="application/json")
    req.environ.update({"wsgi.input": stream, "wsgi.input_terminated": True})
    req.environ.pop("CONTENT_LENGTH", None)
    response = req.get_response(client.app)
    assert response.status_code == 413
    assert stream.read_bytes <= 65536 + 1
    assert snapshot(client) == []


def test_a_chunked_body_under_the_limit_is_read(client):
    req = Request.blank("/users", method="POST", content_type="application/json")
    req.environ.update({"wsgi.input": io.BytesIO(json.dumps(ADA).encode()),
                        "wsgi.input_terminated": True})
    req.environ.pop("CONTENT_LENGTH", None)
    assert req.get_response(client.app).status_code == 201


def test_a_get_with_an_oversized_body_is_413_too(client):
    req = Request.blank("/users", method="GET")
    req.environ.update({"wsgi.input": Endless(), "CONTENT_LENGTH": str(10**9)})
    assert req.get_response(client.app).status_code == 413
