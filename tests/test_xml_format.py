"""usersvc/representation/xml_format.py: XML both ways (shapes, escaping,
entities, DOCTYPEs refused, the wrong shape a 422)."""
from __future__ import annotations

import pytest
from conftest import BEFORE_THE_STORE, judged_before_the_store, problem, snapshot
from helpers import ADA_XML


def test_xml_user_and_list_shapes(client):
    client.create()
    one = client.get("/users/1", headers={"Accept": "application/xml"})
    assert one.body == (b"<user><id>1</id><name>Ada Lovelace</name>"
                        b"<email>ada@example.org</email></user>")
    many = client.get("/users", headers={"Accept": "application/xml"})
    assert many.body == b"<users>" + one.body + b"</users>"
    empty = client.get("/users?after=1", headers={"Accept": "application/xml"})
    assert empty.body == b"<users></users>"


def test_xml_answers_to_xml_requests(client):
    response = client.post("/users", body=ADA_XML, content_type="application/xml",
                           headers={"Accept": "application/xml"})
    assert response.status_code == 201
    assert response.body.startswith(b"<user><id>1</id>")


def test_xml_escapes_markup_in_values(client):
    client.create(name="<b>Ada</b> & \"co\"")
    body = client.get("/users/1", headers={"Accept": "application/xml"}).body
    assert b"<name>&lt;b&gt;Ada&lt;/b&gt; &amp; \"co\"</name>" in body


def test_xml_predefined_entities_and_character_references_decode(client):
    body = "<user><name>A &amp; B &#x263A; &#65;</name><email>ada@example.org</email></user>"
    response = client.post("/users", body=body, content_type="application/xml")
    assert response.json["name"] == "A & B \u263a A"


def test_xml_with_an_xml_declaration_and_comments_is_read(client):
    body = ('<?xml version="1.0" encoding="UTF-8"?><!-- hi -->'
            '<user><name>Ada</name><email>ada@example.org</email></user>')
    assert client.post("/users", body=body, content_type="application/xml").status_code == 201


def test_xml_id_may_be_sent_on_put_as_text(client):
    client.create()
    body = "<user><id>1</id><name>Ada</name><email>ada@example.org</email></user>"
    assert client.put("/users/1", body=body, content_type="text/xml").status_code == 200
    body = "<user><id>01x</id><name>Ada</name><email>ada@example.org</email></user>"
    problem(client.put("/users/1", body=body, content_type="text/xml"), 422)


store_url = pytest.fixture(params=BEFORE_THE_STORE, name="store_url")(judged_before_the_store)


@pytest.mark.parametrize("body, pointer", [
    ("<person><name>Ada</name><email>ada@example.org</email></person>", ""),
    ('<user xmlns="urn:x"><name>Ada</name><email>ada@example.org</email></user>', ""),
    ('<u:user xmlns:u="urn:x"><name>Ada</name><email>ada@example.org</email></u:user>', ""),
    ("<user><name>Ada</name><email>ada@example.org</email><nick>A</nick></user>", "/nick"),
    ("<user><name><first>Ada</first></name><email>ada@example.org</email></user>", "/name"),
    ("<user><name>Ada</name><name>Bea</name><email>ada@example.org</email></user>", "/name"),
    ("<user>text<name>Ada</name><email>ada@example.org</email></user>", ""),
    ('<user><name lang="en">Ada</name><email>ada@example.org</email></user>', "/name"),
    ("<user><id>1</id><name>Ada</name><email>ada@example.org</email></user>", "/id"),
])
def test_xml_of_the_wrong_shape_is_422(client, body, pointer):
    result = problem(client.post("/users", body=body, content_type="application/xml"), 422)
    assert pointer in [e["pointer"] for e in result.get("errors", [])]
    assert snapshot(client) == []


@pytest.mark.parametrize("body", [
    "<user><name>Ada</name>", "<user>", "not xml", "<user></wrong>", "<user/><user/>",
    "<user><name>&nbsp;</name><email>ada@example.org</email></user>",
])
def test_malformed_xml_is_400(client, body):
    problem(client.post("/users", body=body, content_type="application/xml"), 400)


BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<user><name>&lol9;</name><email>ada@example.org</email></user>"""

EXTERNAL_ENTITY = """<?xml version="1.0"?>
<!DOCTYPE user [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<user><name>&xxe;</name><email>ada@example.org</email></user>"""

EXTERNAL_DTD = """<?xml version="1.0"?>
<!DOCTYPE user SYSTEM "http://127.0.0.1:9/user.dtd">
<user><name>Ada</name><email>ada@example.org</email></user>"""

PARAMETER_ENTITY = """<!DOCTYPE user [<!ENTITY % p SYSTEM "file:///etc/passwd"> %p;]>
<user><name>Ada</name><email>ada@example.org</email></user>"""


@pytest.mark.parametrize("body", [
    BILLION_LAUGHS, EXTERNAL_ENTITY, EXTERNAL_DTD, PARAMETER_ENTITY,
    "<!DOCTYPE user><user><name>Ada</name><email>ada@example.org</email></user>",
], ids=["entity-bomb", "external-entity", "external-dtd", "parameter-entity", "plain"])
def test_any_doctype_is_refused_with_400(client, body):
    result = problem(client.post("/users", body=body, content_type="application/xml"), 400)
    assert "DOCTYPE" in result["detail"]
    assert "root:" not in result["detail"]
    assert snapshot(client) == []


def test_xml_declaring_another_encoding_is_still_read_as_utf8(client):
    body = ('<?xml version="1.0" encoding="ISO-8859-1"?>'
            '<user><name>Zoë</name><email>z@example.org</email></user>')
    response = client.post("/users", body=body.encode("utf-8"), content_type="application/xml")
    assert response.json["name"] == "Zoë"


def test_an_empty_required_element_is_refused_as_jsons_null_is():
    """Once ``<due/>`` said "must be a date", where JSON's null said it is required."""
    from conftest import Client

    from usersvc import Schema, date, make_app, text
    notes = Schema("note", "notes", {"text": text(9), "due": date})
    client = Client(make_app("memory://", collections=(notes,)))
    for body, content_type in (('<note><text>a</text><due/></note>', "application/xml"),
                               ('{"text": "a", "due": null}', "application/json")):
        answer = client.post("/notes", body=body, content_type=content_type)
        assert answer.status_code == 422
        assert answer.json["errors"] == [{"pointer": "/due",
                                          "detail": "is required and cannot be null"}]
