"""CONTRACT.md, "Representations": negotiation, body types, JSON, XML, UTF-8."""
from __future__ import annotations

import pytest
from conftest import problem, snapshot

from usersvc.representation import JSON, XML
from usersvc.storage import User
from usersvc.validation import USER

ADA = {"name": "Ada Lovelace", "email": "ada@example.org"}
ADA_XML = "<user><name>Ada Lovelace</name><email>ada@example.org</email></user>"


# -- Accept ----------------------------------------------------------------

@pytest.mark.parametrize("accept, expected", [
    (None, "application/json"),
    ("*/*", "application/json"),
    ("application/*", "application/json"),
    ("application/json", "application/json"),
    ("application/xml", "application/xml; charset=utf-8"),
    ("text/xml", "application/xml; charset=utf-8"),
    ("application/json, application/xml", "application/json"),          # tie: JSON
    ("application/xml, application/json", "application/json"),          # tie: JSON
    ("application/json;q=0.5, application/xml", "application/xml; charset=utf-8"),
    ("application/xml;q=0.9, */*;q=0.1", "application/xml; charset=utf-8"),
    ("*/*;q=0.1, application/json;q=0", "application/xml; charset=utf-8"),
    ("text/*", "application/xml; charset=utf-8"),
    ("text/html, application/xml;q=0.2", "application/xml; charset=utf-8"),
    ("application/xml; charset=utf-8", "application/xml; charset=utf-8"),
    ('application/xml; charset="UTF-8"', "application/xml; charset=utf-8"),
    ("application/json; charset=UTF-8", "application/json"),
    ("application/json;charset=utf8, application/xml", "application/json"),
    ("application/json; version=2, text/xml;q=0.1", "application/xml; charset=utf-8"),
    ("", "application/json"),
    ("no such thing", "application/json"),       # not a valid header: ignored
])
def test_accept_chooses_the_format_by_q_values(client, accept, expected):
    client.create()
    headers = {"Accept": accept} if accept is not None else {}
    for path in ("/users", "/users/1"):
        response = client.get(path, headers=headers)
        assert response.status_code == 200
        assert response.headers["Content-Type"] == expected
        assert response.headers["Vary"] == "Accept"


@pytest.mark.parametrize("accept", ["text/html", "image/png", "application/json;q=0",
                                    "application/json; charset=latin-1", "application/json; version=2",
                                    "application/json;q=0, application/xml;q=0, text/xml;q=0"])
def test_an_unacceptable_accept_is_406_listing_the_types(client, accept):
    body = problem(client.get("/users", headers={"Accept": accept}), 406)
    assert body["available"] == ["application/json", "application/xml", "text/xml"]


def test_a_post_that_gets_406_creates_nothing(client):
    response = client.post("/users", json_body=ADA, headers={"Accept": "text/html"})
    problem(response, 406)
    assert snapshot(client) == []


def test_a_put_that_gets_406_changes_nothing(client):
    client.create()
    problem(client.put("/users/1", json_body={"name": "X", "email": "x@example.org"},
                       headers={"Accept": "image/png"}), 406)
    assert client.get("/users/1").json["name"] == ADA["name"]


# -- Content-Type ----------------------------------------------------------

@pytest.mark.parametrize("content_type", [
    None, "application/json", "application/json; charset=utf-8", "APPLICATION/JSON",
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
    "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
    "application/json; charset=latin-1", "text/html"])
def test_other_body_types_are_415_with_accept_post(client, content_type):
    response = client.post("/users", body='{"name": "A", "email": "a@example.org"}',
                           content_type=content_type)
    problem(response, 415)
    assert "application/json" in response.headers["Accept-Post"]
    assert snapshot(client) == []


def test_put_with_another_type_is_415(client):
    client.create()
    problem(client.put("/users/1", body="name=x", content_type="application/x-www-form-urlencoded"), 415)


# -- XML -------------------------------------------------------------------

def test_xml_user_and_list_shapes(client):
    client.create()
    one = client.get("/users/1", headers={"Accept": "application/xml"})
    assert one.body == b"<user><id>1</id><name>Ada Lovelace</name><email>ada@example.org</email></user>"
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
    body = '<?xml version="1.0" encoding="UTF-8"?><!-- hi --><user><name>Ada</name><email>ada@example.org</email></user>'
    assert client.post("/users", body=body, content_type="application/xml").status_code == 201


def test_xml_id_may_be_sent_on_put_as_text(client):
    client.create()
    body = "<user><id>1</id><name>Ada</name><email>ada@example.org</email></user>"
    assert client.put("/users/1", body=body, content_type="text/xml").status_code == 200
    body = "<user><id>01x</id><name>Ada</name><email>ada@example.org</email></user>"
    problem(client.put("/users/1", body=body, content_type="text/xml"), 422)


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


@pytest.mark.parametrize("body", [BILLION_LAUGHS, EXTERNAL_ENTITY, EXTERNAL_DTD, PARAMETER_ENTITY,
                                  "<!DOCTYPE user><user><name>Ada</name><email>ada@example.org</email></user>"],
                         ids=["entity-bomb", "external-entity", "external-dtd", "parameter-entity", "plain"])
def test_any_doctype_is_refused_with_400(client, body):
    result = problem(client.post("/users", body=body, content_type="application/xml"), 400)
    assert "DOCTYPE" in result["detail"]
    assert "root:" not in result["detail"]
    assert snapshot(client) == []


# -- UTF-8 -----------------------------------------------------------------

@pytest.mark.parametrize("name", ["Zoë Ångström", "李小龍", "Ελένη", "🦄 Unicorn", "अदा"])
def test_non_ascii_names_round_trip_in_both_formats(client, name):
    created = client.post("/users", json_body={"name": name, "email": "z@example.org"}).json
    assert created["name"] == name
    assert client.get("/users/1").body.decode("utf-8").count(name) == 1
    xml = client.get("/users/1", headers={"Accept": "application/xml"}).body
    assert f"<name>{name}</name>".encode() in xml
    client.delete("/users/1")
    xml_created = client.post("/users", body=f"<user><name>{name}</name><email>z@example.org</email></user>",
                              content_type="application/xml")
    assert xml_created.json["name"] == name


def test_json_is_sent_as_raw_utf8_not_escapes(client):
    client.create(name="Zoë")
    assert "Zoë".encode() in client.get("/users/1").body


@pytest.mark.parametrize("content_type", ["application/json", "application/xml"])
@pytest.mark.parametrize("raw", [b"\xff\xfe", b"\xc3\x28", b"\xed\xa0\x80", b"\xe9t\xe9", b"\x80"])
def test_a_body_that_is_not_utf8_is_400(client, content_type, raw):
    if content_type == "application/json":
        body = b'{"name": "' + raw + b'", "email": "ada@example.org"}'
    else:
        body = b"<user><name>" + raw + b"</name><email>ada@example.org</email></user>"
    result = problem(client.post("/users", body=body, content_type=content_type), 400)
    assert "UTF-8" in result["detail"]


def test_xml_declaring_another_encoding_is_still_read_as_utf8(client):
    body = '<?xml version="1.0" encoding="ISO-8859-1"?><user><name>Zoë</name><email>z@example.org</email></user>'
    response = client.post("/users", body=body.encode("utf-8"), content_type="application/xml")
    assert response.json["name"] == "Zoë"


@pytest.mark.parametrize("record", [
    {"id": 1, "name": "Ada", "email": "ada@example.org"},
    {"id": 2**63 - 1, "name": "\u00e9\u4e2d\U0001f600 \"quoted\" \\ back\nline\t\x7f\u2028", "email": "a@b"},
    {"id": 3, "name": "", "email": ""},
    {"id": 4, "flag": True, "none": None, "n": 1.5, "list": [1]},
])
def test_the_json_writer_gives_json_dumps_bytes(record):
    import json

    from usersvc.representation import JSON
    from usersvc.validation import USER
    expected = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
    assert JSON.render(USER, record) == expected


@pytest.mark.parametrize("user", [
    User(1, "Ada", "ada@example.org", 1),
    User(2**63 - 1, "\u00e9\u4e2d\U0001f600 \"quoted\" \\ back\nline\t\x7f\u2028", "a@b", 7),
])
@pytest.mark.parametrize("fmt", [JSON, XML], ids=["json", "xml"])
def test_a_stored_record_renders_as_its_fields_do(user, fmt):
    # render_record reads the fields straight from the record: the same bytes.
    assert fmt.render_record(USER, user) == fmt.render(USER, USER.as_dict(user))
    assert USER.as_dict(user) == {"id": user.id, "name": user.name, "email": user.email}
