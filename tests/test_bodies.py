"""Request bodies (representation/__init__.py: ``read_document``): the format from Content-Type
(415 with Accept-Post / Accept-Patch otherwise), and UTF-8 only."""
from __future__ import annotations

import pytest
from conftest import BEFORE_THE_STORE, judged_before_the_store, problem, snapshot
from helpers import ADA, ADA_XML

store_url = pytest.fixture(params=BEFORE_THE_STORE, name="store_url")(judged_before_the_store)


@pytest.mark.parametrize("content_type", [
    "application/json", "application/json; charset=utf-8", "APPLICATION/JSON",
    "application/vnd.usersvc+json", "application/merge-patch+json"])
def test_json_bodies_are_read_by_type(client, content_type):
    response = client.post("/users", body='{"name": "Ada Lovelace", "email": "ada@example.org"}',
                           content_type=content_type)
    assert response.status_code == 201, response.text


@pytest.mark.parametrize("content_type", [
    "application/xml", "text/xml", "application/xml; charset=UTF-8", "application/vnd.usersvc+xml"])
def test_xml_bodies_are_read_by_type(client, content_type):
    response = client.post("/users", body=ADA_XML, content_type=content_type)
    assert response.status_code == 201, response.text
    assert response.json == {"id": 1, **ADA}


@pytest.mark.parametrize("content_type", [
    None, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
    "application/json; charset=latin-1", "text/html"])
def test_other_body_types_are_415_with_accept_post(client, content_type):
    response = client.post("/users", body='{"name": "A", "email": "a@example.org"}',
                           content_type=content_type)
    problem(response, 415)
    assert "application/json" in response.headers["Accept-Post"]
    assert snapshot(client) == []


def test_put_with_another_type_is_415(client):
    client.create()
    problem(client.put("/users/1", body="name=x",
                       content_type="application/x-www-form-urlencoded"), 415)


@pytest.mark.parametrize("name", ["Zoë Ångström", "李小龍", "Ελένη", "🦄 Unicorn", "अदा"])
def test_non_ascii_names_round_trip_in_both_formats(client, name):
    created = client.post("/users", json_body={"name": name, "email": "z@example.org"}).json
    assert created["name"] == name
    assert client.get("/users/1").body.decode("utf-8").count(name) == 1
    xml = client.get("/users/1", headers={"Accept": "application/xml"}).body
    assert f"<name>{name}</name>".encode() in xml
    client.delete("/users/1")
    xml_created = client.post("/users",
                              body=f"<user><name>{name}</name><email>z@example.org</email></user>",
                              content_type="application/xml")
    assert xml_created.json["name"] == name


@pytest.mark.parametrize("content_type", ["application/json", "application/xml"])
@pytest.mark.parametrize("raw", [b"\xff\xfe", b"\xc3\x28", b"\xed\xa0\x80", b"\xe9t\xe9", b"\x80"])
def test_a_body_that_is_not_utf8_is_400(client, content_type, raw):
    if content_type == "application/json":
        body = b'{"name": "' + raw + b'", "email": "ada@example.org"}'
    else:
        body = b"<user><name>" + raw + b"</name><email>ada@example.org</email></user>"
    result = problem(client.post("/users", body=body, content_type=content_type), 400)
    assert "UTF-8" in result["detail"]
