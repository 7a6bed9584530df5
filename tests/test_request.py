"""usersvc/request.py: what the app reads from the WSGI environ, and how."""
from __future__ import annotations

import io
from urllib.parse import parse_qsl

import pytest
from hypothesis import given, strategies as st

from usersvc.problems import Problem
from usersvc.request import Request
from usersvc.serving.mount import moved_under

# Query strings as WSGI hands them over: latin-1 strs of the bytes received,
# made mostly of the characters that matter to parsing.
RAW_QUERIES = st.text(alphabet=st.sampled_from("ab=&+%;2F0AcEd\x80\xc3\xa9\xff []5Bb"), max_size=30)


def reference_query(raw: str) -> dict[str, list[str]]:
    """The standard library's reading of a query, in ``Request.query``'s shape."""
    text = raw.encode("latin-1").decode("utf-8")
    query: dict[str, list[str]] = {}
    for name, value in parse_qsl(text, keep_blank_values=True, encoding="utf-8", errors="strict"):
        query.setdefault(name, []).append(value)
    return query


@given(RAW_QUERIES)
def test_the_query_is_read_as_parse_qsl_reads_it_or_refused_as_it_refuses(raw):
    req = Request({"QUERY_STRING": raw})
    try:
        expected = reference_query(raw)
    except UnicodeError:
        with pytest.raises(Problem) as refused:
            req.parameters()
        assert refused.value.status == 400
    else:
        assert req.parameters() == expected


def test_the_query_keeps_repeated_names_and_blank_values():
    query = Request({"QUERY_STRING": "a=1&a=2&b&c=&&d=x+y%2B"}).parameters()
    assert query == {"a": ["1", "2"], "b": [""], "c": [""], "d": ["x y+"]}


@pytest.mark.parametrize("environ, expected", [
    ({"HTTP_HOST": "example.org"}, "http://example.org"),
    ({"HTTP_HOST": "example.org:80"}, "http://example.org"),
    ({"HTTP_HOST": "example.org:443", "wsgi.url_scheme": "https"}, "https://example.org"),
    ({"HTTP_HOST": "example.org:8080", "SCRIPT_NAME": "/v1"}, "http://example.org:8080/v1"),
    ({"SERVER_NAME": "host", "SERVER_PORT": "8080"}, "http://host:8080"),
    # latin-1 of UTF-8 bytes
    ({"HTTP_HOST": "h", "SCRIPT_NAME": "/a b/\xc3\xa9"}, "http://h/a%20b/%C3%A9"),
])
def test_base_url_is_scheme_host_and_mount_point(environ, expected):
    assert Request(environ).base_url == expected


@pytest.mark.parametrize("declared, expected", [(None, b""), ("", b""), ("0", b""), ("2", b"ab"),
                                                ("-1", 400), ("1e3", 400), (" 5", 400)])
def test_a_declared_length_is_read_or_a_400_when_not_a_number(declared, expected):
    environ = {"REQUEST_METHOD": "POST", "wsgi.input": io.BytesIO(b"abc")}
    if declared is not None:
        environ["CONTENT_LENGTH"] = declared
    req = Request(environ)
    if expected == 400:
        with pytest.raises(Problem) as refused:
            req.read_body(10)
        assert refused.value.status == 400
    else:
        req.read_body(10)
        assert req.body == expected


def test_an_empty_path_is_the_root():
    assert Request({"PATH_INFO": ""}).path == "/"
    assert Request({}).path == "/"


def test_mount_moves_the_prefix_to_script_name_only_under_it():
    environ = {"SCRIPT_NAME": "/app", "PATH_INFO": "/v1/users/1"}
    req = Request(environ)
    assert moved_under(req, "/v1")
    assert (environ["SCRIPT_NAME"], environ["PATH_INFO"], req.path) == (
        "/app/v1", "/users/1", "/users/1")
    for path in ("/v1users", "/v2/users", "/"):
        assert not moved_under(Request({"PATH_INFO": path}), "/v1")
    assert moved_under(Request({"PATH_INFO": "/v1"}), "/v1")


def test_preconditions_are_parsed_only_when_sent():
    assert not Request({}).has_preconditions
    req = Request({"HTTP_IF_MATCH": '"1-2", W/"1-3"', "HTTP_IF_NONE_MATCH": "*"})
    assert req.has_preconditions
    assert list(req.if_match().etags) == ["1-2"]        # If-Match compares strongly: weak tags go
    assert "anything" in req.if_none_match()


def test_any_header_by_name():
    req = Request({"HTTP_X_REQUEST_ID": "abc"})
    assert req.header("X-Request-ID") == "abc" and req.header("X-Other") is None
