"""usersvc/representation/json_format.py: JSON both ways; the writer for
flat records gives the encoder's very bytes."""
from __future__ import annotations

import json
import sys

import pytest
from hypothesis import given, strategies as st

from usersvc import USER, Schema, boolean, integer, number, text
from usersvc.representation import JSON

User = USER.record


def test_json_is_sent_as_raw_utf8_not_escapes(client):
    client.create(name="Zoë")
    assert "Zoë".encode() in client.get("/users/1").body


@pytest.mark.parametrize("record", [
    {"id": 1, "name": "Ada", "email": "ada@example.org"},
    {"id": 2**63 - 1, "name": "\u00e9\u4e2d\U0001f600 \"quoted\" \\ back\nline\t\x7f\u2028",
     "email": "a@b"},
    {"id": 3, "name": "", "email": ""},
    {"id": 4, "flag": True, "none": None, "n": 1.5, "list": [1]},
])
def test_the_json_writer_gives_json_dumps_bytes(record):
    expected = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode(
        "utf-8", "surrogatepass")
    assert JSON.render(USER, record) == expected


@pytest.mark.parametrize("user", [
    User(id=1, name="Ada", email="ada@example.org", version=1),
    User(id=2**63 - 1, name="\u00e9\u4e2d\U0001f600 \"quoted\" \\ back\nline\t\x7f\u2028",
         email="a@b", version=7),
])
def test_a_stored_record_renders_as_its_fields_do(user):
    # render_record reads the fields straight from the record: the same bytes.
    assert JSON.render_record(USER, user) == JSON.render(USER, USER.as_dict(user))
    assert USER.as_dict(user) == {"id": user.id, "name": user.name, "email": user.email}


@given(st.lists(st.one_of(st.text(), st.integers(min_value=-2**70, max_value=2**70)),
                min_size=1, max_size=4))
def test_the_flat_writer_and_the_encoder_agree_on_any_strings_and_ints(values):
    record = {f"k{i}\u00e9\"": value for i, value in enumerate(values)}
    expected = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode(
        "utf-8", "surrogatepass")
    assert JSON.render(USER, record) == expected


ANY = Schema("any", "anys", {"t": text(100), "i": integer(-2**62, 2**62), "b": boolean,
                           "n": number(-1e300, 1e300)}, optional=("t", "i", "b", "n"))


@given(st.tuples(st.integers(1, 2**62), st.none() | st.text(max_size=10),
                 st.none() | st.integers(-2**62, 2**62), st.none() | st.booleans(),
                 st.none() | st.floats(-1e300, 1e300) | st.integers(-2**53, 2**53),
                 st.integers(1, 2**62)))
def test_a_record_of_every_json_type_renders_as_the_encoder_writes_it(fields):
    # render_record writes members from the values' types; the encoder
    # writes as_dict: the same bytes, an absent optional field left out.
    record = ANY.record._make(fields)
    expected = json.dumps(ANY.as_dict(record), ensure_ascii=False, separators=(",", ":"))
    assert JSON.render_record(ANY, record) == expected.encode("utf-8", "surrogatepass")


def test_a_number_too_long_to_read_is_a_400_in_jsons_words():
    """Once the 400 named Python's sys.set_int_max_str_digits()."""
    from conftest import Client

    from usersvc import make_app
    client = Client(make_app("memory://"))
    long = "9" * 5000
    for path, body in (("/users", '{"name": "A", "email": "a@x.org", "n": ' + long + '}'),
                       ("/batch", '{"requests": [{"method": "POST", "path": "/users", '
                                  '"body": {"n": ' + long + '}}]}')):
        answer = client.post(path, body=body, content_type="application/json")
        assert answer.status_code == 400
        assert answer.json["detail"] == ("The body is not valid JSON: a number has more than "
                                         f"{sys.get_int_max_str_digits()} digits.")
