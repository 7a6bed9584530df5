"""The HTML representation, through the WSGI app: which requests get a
page, what a page holds and may load, and that every value on it is text.
What a person does with the pages runs in Chromium (test_pages_in_browser.py)."""
from __future__ import annotations

import html
import json
import re
from html.parser import HTMLParser

import html5lib
import pytest
from conftest import Client, problem
from helpers import link_to

from usersvc import make_app

BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
       "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
HOSTILE = '<script>alert(1)</script> "Bobby" & \'Tables\''


def page(response, status=200):
    assert response.status_code == status, response.text
    assert response.headers["Content-Type"] == "text/html; charset=utf-8"
    assert response.headers["Content-Security-Policy"] == CSP
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    # A conforming HTML5 document: html5lib's strict parser raises on any parse error.
    html5lib.HTMLParser(strict=True).parse(response.body)
    return response.text


class Loads(HTMLParser):
    """Every URL a page loads or links to, with what refers to it."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[tuple[str, str, str]] = []
        self.inline: list[str] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("src", "href", "action", "data-url", "data-next"):
                self.urls.append((tag, name, value))
            if name.startswith("on") or name == "style":
                self.inline.append(f"<{tag} {name}>")
        if tag == "style":
            self.inline.append("<style>")

    def handle_data(self, data):
        if self.lasttag == "script" and data.strip():
            self.inline.append("<script> with a body")


def loads(text):
    parser = Loads()
    parser.feed(text)
    return parser


@pytest.mark.parametrize("path", ["/", "/users", "/users/1", "/users?q=ada", "/nowhere",
                                  "/users/2", "/users?limit=0"])
def test_a_browser_gets_pages_and_curl_gets_json(client, path):
    client.create()
    response = client.get(path, headers={"Accept": BROWSER})
    text = page(response, response.status_code)
    assert text.startswith("<!doctype html>")
    assert client.get(path, headers={"Accept": "*/*"}).content_type.startswith("application/")


def test_a_page_loads_nothing_from_elsewhere_and_nothing_inline(client):
    user = client.create(HOSTILE, "bobby@example.org")
    for path in ("/", "/users", f"/users/{user['id']}", "/nowhere"):
        found = loads(page(client.get(path, headers={"Accept": "text/html"}),
                           404 if path == "/nowhere" else 200))
        assert found.inline == []
        for tag, attribute, url in found.urls:
            assert url.startswith("/") and not url.startswith("//") or (
                tag == "a" and not re.match(r"[a-z]+:|//", url)), (tag, attribute, url)
        loaded = {url for tag, attribute, url in found.urls if tag in ("script", "link")}
        assert loaded == {"/assets/usersvc.js", "/assets/usersvc.css", "/assets/usersvc.svg"}


def test_every_value_is_text(client):
    user = client.create(HOSTILE, "bobby@example.org")
    escaped = "&lt;script&gt;alert(1)&lt;/script&gt; &quot;Bobby&quot; &amp; &#x27;Tables&#x27;"
    listing = page(client.get("/users", headers={"Accept": "text/html"}))
    assert escaped in listing and "<script>alert" not in listing
    one = page(client.get(f"/users/{user['id']}", headers={"Accept": "text/html"}))
    assert "<script>alert" not in one
    assert one.count(escaped) >= 3       # the heading, the field, the edit form's value
    # The JSON and XML shown as text are escaped once more.
    assert "&lt;user&gt;&lt;id&gt;1&lt;/id&gt;&lt;name&gt;&amp;lt;script&amp;gt;" in one
    # A problem's sentence echoes the client's text (an unknown parameter's name).
    text = page(client.get("/users?%3Cscript%3E=1", headers={"Accept": "text/html"}), 400)
    assert "Unknown query parameter: &lt;script&gt;" in text and "<script>=" not in text
    # The search box shows the search as sent, as a value.
    text = page(client.get("/users?q=%22%3E%3Cscript%3E", headers={"Accept": "text/html"}))
    assert 'value="&quot;&gt;&lt;script&gt;"' in text


def test_the_collection_page_links_each_user_the_next_page_and_has_the_forms(client):
    for i in range(3):
        client.create(f"User {i}", f"u{i}@example.org")
    response = client.get("/users?limit=2", headers={"Accept": "text/html"})
    text = page(response)
    next_url = html.unescape(
        re.search(r'<a rel="next" href="([^"]+)">Next page</a>', text).group(1))
    assert link_to(response.headers) == f"http://localhost{next_url}"
    assert '<a href="users/1">1</a>' in text and '<a href="users/2">User 1</a>' in text
    assert '<form class="search" role="search" method="get" action="/users">' in text
    assert '<form class="record" data-method="POST" data-url="/users"' in text
    for field in ("name", "email"):
        assert re.search(rf'<input id="new-{field}" name="{field}"', text)
        assert f'role="alert" id="new-{field}-error" data-error-for="{field}"' in text
    last = page(client.get(next_url, headers={"Accept": "text/html"}))
    assert 'rel="next"' not in last and "1 user on this page." in last


def test_the_record_page_shows_fields_etag_forms_and_both_representations(client):
    user = client.create()
    response = client.get("/users/1", headers={"Accept": "text/html"})
    text = page(response)
    assert response.headers["ETag"] == '"1-1-html"'
    assert "<dt>ETag</dt><dd><code>&quot;1-1-html&quot;</code></dd>" in text
    assert 'data-method="PUT" data-url="/users/1" data-etag="&quot;1-1-html&quot;"' in text
    assert '<button type="button" data-action="delete">Delete</button>' in text
    assert 'value="Ada Lovelace"' in text and 'type="email" value="ada@example.org"' in text
    shown = json.dumps(user, separators=(",", ":")).replace(chr(34), "&quot;")
    assert f"<pre>{shown}</pre>" in text
    assert "<pre>&lt;user&gt;&lt;id&gt;1&lt;/id&gt;" in text
    # The page's ETag names the version: a 304 while it holds, and If-Match takes it.
    assert client.get("/users/1", headers={"Accept": "text/html",
                                           "If-None-Match": '"1-1-html"'}).status_code == 304
    stale = client.put("/users/1", json_body={"name": "A", "email": "a@example.org"},
                       headers={"If-Match": '"1-1-html"'})
    assert stale.status_code == 200
    problem(client.put("/users/1", json_body={"name": "B", "email": "a@example.org"},
                       headers={"If-Match": '"1-1-html"'}), 412)


def test_a_problem_page_says_status_title_detail_and_each_field_error(client):
    response = client.post("/users", json_body={"name": " ", "email": "no"},
                           headers={"Accept": "text/html"})
    text = page(response, 422)
    assert '<h1><span class="status">422</span> Unprocessable Content</h1>' in text
    assert "<dt>name</dt><dd>must not be empty</dd>" in text
    assert re.search(r"<dt>email</dt><dd>[^<]+</dd>", text)
    text = page(client.get("/users/99", headers={"Accept": BROWSER}), 404)
    assert "<title>404 Not Found · usersvc</title>" in text
    assert "There is no user with id 99." in text


def test_writes_may_answer_with_the_page_of_the_record(client):
    response = client.post("/users", json_body={"name": "Ada", "email": "ada@example.org"},
                           headers={"Accept": "text/html"})
    assert "<h1>Ada</h1>" in page(response, 201)
    assert response.headers["Location"] == "http://localhost/users/1"
    assert response.headers["ETag"] == '"1-1-html"'


def test_the_assets_have_strong_etags_and_need_no_token(tmp_path):
    app = make_app("memory://", tokens={"reader-0123456789": "read"})
    client = Client(app)
    for path, media_type in (("/assets/usersvc.css", "text/css; charset=utf-8"),
                             ("/assets/usersvc.js", "text/javascript; charset=utf-8"),
                             ("/assets/usersvc.svg", "image/svg+xml")):
        response = client.get(path, headers={"Accept": "*/*"})
        assert response.status_code == 200 and response.headers["Content-Type"] == media_type
        tag = response.headers["ETag"]
        assert re.fullmatch(r'"[0-9a-f]{24}"', tag)
        assert client.get(path, headers={"If-None-Match": tag}).status_code == 304
        assert client.get(path, headers={"Accept": "application/json"}).status_code == 200
    app.close()


def test_with_tokens_on_a_page_asks_for_the_token(tmp_path):
    app = make_app("memory://", tokens={"reader-0123456789": "read"})
    client = Client(app)
    text = page(client.get("/users", headers={"Accept": BROWSER}), 401)
    assert '<form class="token" data-action="token">' in text
    assert '<input id="token" name="token" type="password"' in text
    listing = client.get("/users", headers={"Accept": BROWSER,
                                            "Authorization": "Bearer reader-0123456789"})
    assert "<h1>Users</h1>" in page(listing)
    app.close()


def test_pages_under_a_prefix_link_under_it():
    from usersvc import Mount
    app = make_app("memory://")
    client = Client(Mount("/v1", app))
    client.post("/v1/users", json_body={"name": "Ada", "email": "ada@example.org"})
    for path in ("/v1/", "/v1/users", "/v1/users/1"):
        found = loads(page(client.get(path, headers={"Accept": "text/html"})))
        for tag, _, url in found.urls:
            assert url.startswith("/v1/") or url == "users/1", (path, tag, url)
    app.close()


def test_every_page_links_every_collection_of_the_app():
    import sys

    from helpers import ROOT
    sys.path.insert(0, str(ROOT / "examples"))
    from tasks import TASKS

    from usersvc import USER
    app = make_app("memory://", collections=(USER, TASKS))
    client = Client(app)
    client.post("/users", json_body={"name": "Ada", "email": "ada@example.org"})
    client.post("/tasks", json_body={"title": "Write", "done": False, "priority": "low"})
    for path in ("/", "/users", "/users/1", "/tasks", "/tasks/1", "/tasks/99"):
        response = client.get(path, headers={"Accept": "text/html"})
        nav = response.text.split('<nav aria-label="Collections">')[1].split("</nav>")[0]
        assert nav == '<a href="/users">users</a><a href="/tasks">tasks</a>', path
    app.close()


def test_json_is_unchanged_for_clients_that_ask_for_it(client):
    client.create()
    for accept in (None, "*/*", "application/json", "application/*"):
        headers = {"Accept": accept} if accept else {}
        response = client.get("/users/1", headers=headers)
        assert response.content_type == "application/json"
        assert "Content-Security-Policy" not in response.headers


def test_a_ref_links_to_the_record_it_names_and_number_inputs_carry_their_bounds():
    """Once a ref was a bare number in the table and on the record's page,
    and no input carried min or max."""
    from usersvc import USER, Mount, Schema, integer, number, ref, text
    tasks = Schema("task", "tasks", {"title": text(9), "owner": ref("users"),
                                     "size": integer(1, 5), "weight": number(0, 2.5)},
                   optional=("owner", "size", "weight"))
    for prefix in ("", "/v1"):
        app = make_app("memory://", collections=(USER, tasks))
        client = Client(Mount(prefix, app) if prefix else app)
        client.post(f"{prefix}/users", json_body={"name": "Ada", "email": "ada@x.org"})
        client.post(f"{prefix}/tasks", json_body={"title": "t", "owner": 1})
        html = {"Accept": "text/html"}
        listed = client.get(f"{prefix}/tasks", headers=html).text
        assert '<td><a href="users/1">1</a></td>' in listed     # beside the row's tasks/1
        shown = client.get(f"{prefix}/tasks/1", headers=html).text
        assert f'<dt>owner</dt><dd><a href="{prefix}/users/1">1</a></dd>' in shown
        assert 'name="owner" type="number" value="1" min="1" max="9223372036854775807"' in shown
        assert 'name="size" type="number" value="" min="1" max="5"' in shown
        assert 'name="weight" type="number" value="" step="any" min="0" max="2.5"' in shown
        # The input offers the users it may name, by id, labelled by name.
        offered = ('list="edit-owner-records"' ' aria-describedby="edit-owner-error">'
                   '<datalist id="edit-owner-records"><option value="1">Ada</option></datalist>')
        assert offered in shown.replace("\n", " ").replace('  ', ' ')
        assert '<datalist id="new-owner-records"><option value="1">Ada</option>' in listed


def test_the_find_section_keeps_what_was_asked_escaped_and_sends_no_empty_value():
    """Each link and form of a collection page's "Find" section carries the
    page's other parameters (not its position), every value escaped; each
    form has one input, required, so a browser without script never sends
    an empty value (a 400)."""
    import sys

    from helpers import ROOT
    sys.path.insert(0, str(ROOT / "examples"))
    from tasks import TASKS

    from usersvc import USER
    app = make_app("memory://", collections=(USER, TASKS))
    client = Client(app)
    asked = "/tasks?q=%3Cb%3E%22x&done=true&priority%5Bgte%5D=normal&limit=5"
    text = page(client.get(asked, headers={"Accept": "text/html"}))
    find = text.split('<section class="find"')[1].split("</section>")[0]
    assert "<b>" not in find and "&lt;b&gt;&quot;x" in find
    links = [v for tag, name, v in loads(find).urls if tag == "a"]
    take_away_q = "/tasks?done=true&priority%5Bgte%5D=normal&limit=5"
    assert take_away_q in links
    assert "/tasks?q=%3Cb%3E%22x&priority%5Bgte%5D=normal&limit=5&done=false" in links
    assert "/tasks?q=%3Cb%3E%22x&done=true&priority%5Bgte%5D=normal&limit=5&sort=-created" in links
    forms = find.split('<form class="condition"')[1:]
    assert forms and all(form.count(" required") == 1 for form in forms)
    for form in forms:      # the page's parameters, hidden, but the form's own
        own = re.search(r'<(?:input|select) id="find-[^"]+" name="([^"]+)"', form).group(1)
        hidden = dict(re.findall(r'type="hidden" name="([^"]+)" value="([^"]*)"', form))
        assert hidden == {k: v for k, v in {"q": "&lt;b&gt;&quot;x", "done": "true",
                                           "priority[gte]": "normal", "limit": "5"}.items()
                          if k != own}, own
    for link in links:      # every link asks what the service takes
        assert client.get(html.unescape(link)).status_code == 200, link
    app.close()
