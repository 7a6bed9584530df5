"""Hostile input: a corpus of requests meant to break the service, sent
over raw sockets to serve.py (waitress's own parsing and limits included)
and, where they are HTTP a WSGI app can be given, through the app.

Each gets a 4xx, or the success the contract gives valid input; never a
5xx, never a hang, never a write it should not make, never a header the
client put into the answer.
"""
from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass

import pytest
from conftest import BEFORE_THE_STORE, judged_before_the_store, snapshot
from helpers import Served, call
from webob import Request

LIMIT = 65536           # serve.py's default --max-body-size
INJECTED = "x-injected"  # a header name no answer may carry


@dataclass
class Case:
    name: str
    raw: bytes
    expect: tuple = ("4xx",)    # "4xx", or exact statuses; None: the server may just close
    creates: str | None = None  # the e-mail a valid case creates
    app: bool = True            # also through the WSGI app (False: only a socket can send it)

    def allows(self, status):
        return status in self.expect or ("4xx" in self.expect and status is not None
                                         and 400 <= status < 500)


def http(method, target, body=b"", headers=(), content_type="application/json", length=True):
    if isinstance(body, str):
        body = body.encode("utf-8", "surrogatepass")
    lines = [f"{method} {target} HTTP/1.1", "Host: localhost", "Connection: close"]
    if body or method in ("POST", "PUT", "PATCH"):
        if content_type:
            lines.append(f"Content-Type: {content_type}")
        if length:
            lines.append(f"Content-Length: {len(body)}")
    lines += list(headers)
    head = "\r\n".join(lines).encode("latin-1") + b"\r\n\r\n"
    return head + body


def post(body, content_type="application/json", **kw):
    return http("POST", "/users", body, content_type=content_type, **kw)


def corpus():
    cases = []

    def add(name, raw, expect=("4xx",), **kw):
        cases.append(Case(name, raw, expect, **kw))

    valid = '{"name": "%s", "email": "%s"}'
    # -- malformed JSON
    for i, text in enumerate(['{', '}', '[', '{"name":}', '{"name": "a",}', "{'name': 'a'}",
                              '{"name": "a" "email": "b"}', '{} trailing', '"just a string"',
                              '{"name": "a\\x"}', '{"name": "\\u12"}', '\ufeff{}', 'nul\x00l',
                              '{"a": tru}', '{"a": 01}', '{"a": .5}', '{"a": +1}', '{"a": 1e}']):
        add(f"malformed JSON {i}: {text[:12]!r}", post(text))
    add("empty body", post(""))
    add("deeply nested arrays", post("[" * 100_000 + "]" * 100_000), (413,))
    add("deeply nested arrays under the limit", post("[" * 30_000 + "]" * 30_000))
    add("deeply nested objects", post('{"a":' * 5000 + "1" + "}" * 5000))
    # -- numbers
    for text in ["NaN", "Infinity", "-Infinity", "1e999999", "9" * 5000, "-" + "9" * 5000]:
        add(f"number {text[:10]}", post('{"name": ' + text + ', "email": "n@example.org"}'))
    add("huge id", post('{"id": %s, "name": "A", "email": "a@example.org"}' % ("9" * 4000)))
    # -- strings and encodings
    add("lone surrogate in a value", post(valid % ("\\ud800", "s@example.org")))
    add("lone surrogate in a key", post('{"\\udfff": 1, "name": "A", "email": "a@example.org"}'))
    add("duplicate keys", post('{"name": "A", "name": "B", "email": "d@example.org"}'))
    add("NUL escaped in a name", post(valid % ("a\\u0000b", "nul@example.org")))
    add("raw NUL byte in the body", post(b'{"name": "a\x00b", "email": "n@example.org"}'))
    for i, raw in enumerate([b'{"name": "\xff", "email": "x@example.org"}',
                             b'{"name": "\xc0\xaf"}', b'{"name": "\xed\xa0\x80"}',
                             b'\xef\xbb\xbf{"name": "A"}', b'{"name": "\xf8\x88\x80\x80\x80"}',
                             b"\xff\xfe{\x00}\x00"]):
        add(f"invalid UTF-8 {i}", post(raw))
    add("latin-1 charset declared",
        post(valid % ("A", "l@example.org"), "application/json; charset=iso-8859-1"))
    add("control characters in a name", post(valid % ("a\\u0007b", "c@example.org"), ), (422,))
    add("a name of 201 characters", post(valid % ("x" * 201, "long@example.org")), (422,))
    add("an e-mail of 255 characters", post(valid % ("A", "a" * 243 + "@example.org")), (422,))
    add("bidi override in a name (valid text)", post(valid % ("\\u202eevil", "bidi@example.org")),
        (201,), creates="bidi@example.org")
    # -- bodies far over the limit
    add("100 KB with Content-Length", post('{"name": "%s"}' % ("x" * 100_000)), (413,))
    add("2 MB with Content-Length (over waitress's cap)", post("x" * 2_000_000), (413,))
    add("declared 10 GB, sent little", post(b"{}", length=False) .replace(
        b"Connection: close\r\n", b"Connection: close\r\nContent-Length: 10000000000\r\n"),
        (413,), app=False)
    chunked = b"".join(b"%x\r\n%s\r\n" % (8192, b"x" * 8192) for _ in range(12)) + b"0\r\n\r\n"
    add("chunked, 96 KB", http("POST", "/users", chunked, headers=["Transfer-Encoding: chunked"],
                               length=False), (413,), app=False)
    add("chunked and Content-Length together", http(
        "POST", "/users", b"5\r\n{}{}{\r\n0\r\n\r\n", headers=["Transfer-Encoding: chunked"]),
        app=False)
    add("two Content-Lengths", http("POST", "/users", b"{}", headers=["Content-Length: 5"]),
        app=False)
    add("negative Content-Length", post(b"{}", length=False).replace(
        b"Connection: close\r\n", b"Connection: close\r\nContent-Length: -1\r\n"), app=False)
    add("Content-Length of words", post(b"{}", length=False).replace(
        b"Connection: close\r\n", b"Connection: close\r\nContent-Length: two\r\n"), app=False)
    # -- XML
    bomb = ('<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
            + "".join(f'<!ENTITY lol{i} "{("&lol%s;" % (i - 1 if i else "")) * 10}">'
                      for i in range(1, 10))
            + ']><user><name>&lol9;</name><email>b@example.org</email></user>')
    add("billion laughs", post(bomb.replace("&lol;", "&lol;"), "application/xml"), (400,))
    add("external entity", post('<?xml version="1.0"?>'
                                '<!DOCTYPE u [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
                                '<user><name>&x;</name><email>x@example.org</email></user>',
                                "application/xml"), (400,))
    add("external DTD", post('<!DOCTYPE user SYSTEM "http://example.org/evil.dtd"><user/>',
                             "application/xml"), (400,))
    add("parameter entity",
        post('<!DOCTYPE u [<!ENTITY % p SYSTEM "file:///etc/passwd"> %p;]><user/>',
             "application/xml"), (400,))
    add("plain DOCTYPE",
        post("<!DOCTYPE user><user><name>A</name><email>d@example.org</email></user>",
             "application/xml"), (400,))
    add("XML nested 10,000 deep",
        post("<user>" + "<a>" * 10000 + "</a>" * 10000 + "</user>", "application/xml"))
    add("XML not closed", post("<user><name>A</name>", "application/xml"), (400,))
    add("XML with a namespace",
        post('<user xmlns="urn:x"><name>A</name><email>ns@example.org</email></user>',
             "application/xml"), (422,))
    add("XML with an undefined entity",
        post("<user><name>&nope;</name></user>", "application/xml"), (400,))
    add("XML char reference to NUL",
        post("<user><name>&#0;</name></user>", "application/xml"), (400,))
    add("XML in UTF-16", post('<?xml version="1.0" encoding="UTF-16"?><user/>'.encode("utf-16"),
                              "application/xml"), (400,))
    add("valid XML with CDATA", post("<user><name><![CDATA[<b>Ada</b>]]></name>"
                                     "<email>cdata@example.org</email></user>",
                                     "application/xml"), (201,), creates="cdata@example.org")
    # -- URLs and paths
    add("100 KB URL", http("GET", "/users?x=" + "a" * 100_000), (431, 400, 414), app=False)
    add("100 KB path", http("GET", "/users/" + "1" * 100_000), (404, 431))
    for target in ["/users/../etc/passwd", "/users/%2e%2e/%2e%2e/etc/passwd",
                   "/..%2f..%2fetc%2fpasswd", "/users/..;/users", "/users/%2F", "/users/1/../../",
                   "/%00", "/users%00", "/users/1%00", "/users/%u0031", "/users/1%", "/users/%zz",
                   "/users/./1", "/./users"]:
        add(f"path {target}", http("GET", target), (404, 400))
    for target in ["0x1", "0o1", "0b1", "1e0", "1.0", "+1", "-0", "%D9%A1", "%E2%85%A0",
                   "%EF%BC%91", "01", "1_0", "%201", "1%20", "%091", "9" * 20, "0"]:
        add(f"id {target}", http("GET", f"/users/{target}"), (404,))
    # -- headers
    add("CR in a header value",
        http("GET", "/users", headers=["X-Request-ID: a\rX-Injected: 1"]), app=False)
    add("LF in a header value",
        http("GET", "/users", headers=["X-Request-ID: a\nX-Injected: 1"]), app=False)
    # waitress unfolds it into one value (RFC 9112 §5.2 allows that): not a header of its own.
    add("obs-fold continuation",
        http("GET", "/users", headers=["X-Request-ID: a", " X-Injected: 1"]), (200, 400), app=False)
    add("NUL in a header value", http("GET", "/users", headers=["Accept: a\x00b"]), app=False)
    add("space before the colon",
        http("GET", "/users", headers=["Accept : application/json"]), app=False)
    add("encoded CRLF request id",
        http("GET", "/users", headers=["X-Request-ID: a%0d%0aX-Injected:%201"]), (200,))
    add("a thousand headers (12 KB: under the cap, so valid)",
        http("GET", "/users", headers=[f"X-H{i}: {i}" for i in range(1000)]), (200,), app=False)
    add("ten thousand headers (240 KB)",
        http("GET", "/users", headers=[f"X-H{i}: {i:018d}" for i in range(10000)]), (431,),
        app=False)
    add("a 300 KB header", http("GET", "/users", headers=["X-Big: " + "b" * 300_000]), (431, 400),
        app=False)
    add("hostile Host",
        http("POST", "/users", json.dumps({"name": "H", "email": "host@example.org"}))
        .replace(b"Host: localhost", b"Host: evil.example/x?y=<script>"), (400,))
    add("Host with CRLF-like bytes",
        http("GET", "/users").replace(b"Host: localhost", b"Host: a b"), (400,))
    add("Accept of nonsense", http("GET", "/users", headers=["Accept: ;;;;,,,q=NaN"]), (406, 200))
    add("Accept 8 KB long",
        http("GET", "/users", headers=["Accept: " + "a/b;q=0.1, " * 700]), (406,))
    add("If-Match garbage",
        http("PUT", "/users/1", json.dumps({"name": "A", "email": "a@example.org"}),
             headers=['If-Match: "\x7f, W/, ""']), (404, 412, 400))
    add("If-None-Match of 5,000 tags", http("GET", "/users/1", headers=[
        "If-None-Match: " + ", ".join(f'"{i}-1"' for i in range(5000))]), (404, 304, 431))
    # -- SQL metacharacters, everywhere
    for i, value in enumerate(["'; DROP TABLE users; --", '" OR 1=1 --',
                               "Robert'); DELETE FROM users;--", "%", "_", "\\",
                               "' UNION SELECT * FROM sqlite_master --"]):
        email = f"sql{i}@example.org"
        add(f"SQL in a name {i}", post(json.dumps({"name": value, "email": email})), (201,),
            creates=email)
        add(f"SQL in the filter {i}", http("GET", "/users?email=" + value.replace(" ", "%20")
                                           .replace("#", "%23").replace("&", "%26")), (200, 400))
    add("SQL-ish e-mail (valid in WHATWG)",
        post(json.dumps({"name": "Q", "email": "o'neil--@example.org"})),
        (201,), creates="o'neil--@example.org")
    add("SQL in after", http("GET", "/users?after=1;DROP%20TABLE%20users"), (400,))
    add("SQL in limit", http("GET", "/users?limit=1%20OR%201=1"), (400,))
    # -- methods and request lines
    for method in ["FOO", "PROPFIND", "TRACE", "CONNECT", "DELETE", "PATCH", "M" * 200]:
        add(f"method {method[:10]} on the collection", http(method, "/users"), (405, 400))
    # Methods are case-sensitive (RFC 9110 §9.1); WebOb's parser would upper-case it.
    add("method get in lower case", http("get", "/users"), (405, 400), app=False)
    add("garbage request line", b"GARBAGE\r\n\r\n", app=False)
    # waitress answers an unknown HTTP version as HTTP/1.0 rather than with 505.
    add("HTTP/9.9", b"GET /users HTTP/9.9\r\nHost: localhost\r\n\r\n", (505, 400, 200), app=False)
    # waitress reads "//users" as an authority with an empty path: the root.
    add("path //users", http("GET", "//users"), (200, 404), app=False)
    add("absolute-form URI", http("GET", "http://evil.example/users"), (200,), app=False)
    add("no Host header", b"GET /users HTTP/1.1\r\nConnection: close\r\n\r\n", (200, 400),
        app=False)
    return cases


CORPUS = corpus()


def send(address, raw, timeout=15):
    """(status or None, headers) for one raw request; the server must
    answer or close within ``timeout`` seconds."""
    with socket.create_connection(address, timeout=timeout) as s:
        try:
            s.sendall(raw)
            s.shutdown(socket.SHUT_WR)      # no more: a server waiting for a body sees the end
        except OSError:
            pass                            # it may answer and close before reading it all
        data = b""
        try:
            while chunk := s.recv(65536):
                data += chunk
        except ConnectionResetError:
            pass
    head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1")
    lines = head.split("\r\n")
    if not lines[0].startswith("HTTP/1."):
        return None, {}
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(lines[0].split()[1]), headers


def test_the_corpus_is_large():
    assert len(CORPUS) >= 100
    assert len({c.name for c in CORPUS}) == len(CORPUS)


store_url = pytest.fixture(params=BEFORE_THE_STORE, name="store_url")(judged_before_the_store)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    served = Served("--storage", "sqlite:///users.db", cwd=tmp_path_factory.mktemp("hostile"))
    yield served
    assert served.stop() == 0


def test_over_raw_sockets(served):
    failures = []
    for case in CORPUS:
        status, headers = send(served.address, case.raw)
        if not case.allows(status) or INJECTED in headers:
            failures.append((case.name, status, headers.get(INJECTED)))
    assert failures == [], "\n".join(map(str, failures))
    # No stray write: exactly the valid cases' users exist.
    _, _, body = call(served.address, "GET", "/users?limit=1000")
    assert sorted(u["email"] for u in json.loads(body)) == sorted(
        c.creates for c in CORPUS if c.creates)
    assert " 500 " not in served.log() and "Traceback" not in served.log()


@pytest.mark.parametrize("case", [c for c in CORPUS if c.app], ids=lambda c: c.name)
def test_through_the_app(case, client):
    req = Request.from_bytes(case.raw)
    req.environ.pop("HTTP_CONNECTION", None)
    before = snapshot(client)
    response = client.send(req)
    status = response.status_code
    assert case.allows(status), (status, response.body[:300])
    assert INJECTED not in {k.lower() for k in response.headers}
    after = snapshot(client)
    if case.creates and status == 201:
        assert [u["email"] for u in after if u not in before] == [case.creates]
    else:
        assert after == before


def test_a_chunked_body_that_never_ends_does_not_stop_other_clients(served):
    hanging = socket.create_connection(served.address, timeout=15)
    try:
        hanging.sendall(b"POST /users HTTP/1.1\r\nHost: localhost\r\n"
                        b"Content-Type: application/json\r\n"
                        b"Transfer-Encoding: chunked\r\n\r\n10\r\n{\"name\": \"slow\",\r\n")
        results = []

        def others():
            results.extend(call(served.address, "GET", "/healthz")[0] for _ in range(20))
        thread = threading.Thread(target=others)
        thread.start()
        thread.join(timeout=15)
        assert results == [200] * 20
        hanging.sendall(b"5\r\nmore \r\n")      # still going; still not in the way
        assert call(served.address, "GET", "/users?limit=1")[0] == 200
    finally:
        hanging.close()
    time.sleep(0.1)
    assert call(served.address, "GET", "/healthz")[0] == 200
