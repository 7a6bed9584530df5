"""The OpenAPI document is usable by a generator nobody here wrote: a Python
client made from it by openapi-python-client (offline, from the document a
real server answers) creates, reads, pages by the Link header, replaces with
If-Match and gets typed 409 and 412 problems.

openapi-python-client reads JSON bodies only: it leaves out the XML request
bodies (and says so, which is allowed here) and nothing else.
"""
from __future__ import annotations

import http.client
import importlib
import os
import re
import subprocess
import sys
from urllib.parse import parse_qs, urlsplit

import pytest
from helpers import link_to

GENERATOR = os.path.join(os.path.dirname(sys.executable), "openapi-python-client")


@pytest.fixture
def client_package(server, tmp_path, monkeypatch):
    """The generated package, imported, and a client of the test server."""
    if not os.path.exists(GENERATOR):
        pytest.skip("openapi-python-client is not installed: pip install -e '.[test]'")
    conn = http.client.HTTPConnection(*server, timeout=30)
    conn.request("GET", "/openapi.json")
    (tmp_path / "openapi.json").write_bytes(conn.getresponse().read())
    conn.close()
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]}
    result = subprocess.run([GENERATOR, "generate", "--path", "openapi.json", "--meta", "none",
                             "--output-path", "usersvc_client"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    # Every warning is about an XML request body, which the generator does not read.
    unsupported = re.findall(r"Unsupported content type (\S+)", result.stdout)
    assert result.stdout.count("WARNING parsing") == len(unsupported)
    assert set(unsupported) <= {"application/xml", "text/xml"}, result.stdout
    monkeypatch.syspath_prepend(str(tmp_path))
    client = importlib.import_module("usersvc_client").Client(base_url=f"http://{server[0]}:{server[1]}")
    with client:
        yield (lambda name: importlib.import_module(f"usersvc_client.{name}")), client
    for name in [m for m in sys.modules if m.startswith("usersvc_client")]:
        del sys.modules[name]


def test_a_generated_client_creates_reads_pages_replaces_and_gets_problems(client_package):
    module, client = client_package
    api = lambda name: module(f"api.users.{name}")  # noqa: E731
    models = module("models")

    created = [api("create_user").sync_detailed(
        client=client,
        body=models.UserCreate(name=name, email=f"{name.split()[0].lower()}@example.org"))
        for name in ("Grace Hopper", "Ada Lovelace", "Alan Turing")]
    assert [r.status_code for r in created] == [201] * 3
    ada = created[1].parsed
    assert isinstance(ada, models.User) and (ada.id, ada.name) == (2, "Ada Lovelace")
    assert created[1].headers["Location"].endswith("/users/2")

    read = api("get_user").sync_detailed(2, client=client)
    assert read.status_code == 200 and read.parsed.email == "ada@example.org"
    etag = read.headers["ETag"]

    # Pages in name order, following the cursor the Link header carries.
    names, cursor = [], None
    while True:
        page = api("list_users").sync_detailed(client=client, limit=1,
                                               sort=models.ListUsersSort.NAME,
                                               **({"cursor": cursor} if cursor else {}))
        assert page.status_code == 200
        names += [u.name for u in page.parsed]
        link = link_to(page.headers)
        if not link:
            break
        cursor = parse_qs(urlsplit(link).query)["cursor"][0]
    assert names == ["Ada Lovelace", "Alan Turing", "Grace Hopper"]

    # Conditions with an operator: each field[op] an argument of its own,
    # sent as named (name[gte]=...).
    asked = api("list_users").sync_detailed(client=client, namegte="b", emailin="ADA@example.org,"
                                            "grace@example.org", sort=models.ListUsersSort.NAME)
    assert asked.status_code == 200 and [u.name for u in asked.parsed] == ["Grace Hopper"]
    after_one = api("list_users").sync_detailed(client=client, idgt=1, idlte=3)
    assert [u.id for u in after_one.parsed] == [2, 3]

    replaced = api("replace_user").sync_detailed(
        2, client=client, body=models.UserReplace(name="Ada King", email="ada@example.org"),
        if_match=etag)
    assert replaced.status_code == 200 and replaced.parsed.name == "Ada King"
    stale = api("replace_user").sync_detailed(
        2, client=client, body=models.UserReplace(name="Ada B.", email="ada@example.org"),
        if_match=etag)
    assert stale.status_code == 412 and isinstance(stale.parsed, models.Problem)

    taken = api("create_user").sync_detailed(
        client=client, body=models.UserCreate(name="Another Ada", email="ADA@example.org"))
    assert taken.status_code == 409
    problem = taken.parsed
    assert isinstance(problem, models.Problem) and problem.status == 409
    assert problem.type_ == "about:blank" and [e.pointer for e in problem.errors] == ["/email"]

    # The change feed is typed: each entry a change or a tombstone.
    api("delete_user").sync_detailed(3, client=client)
    feed = api("list_user_changes").sync_detailed(client=client)
    assert feed.status_code == 200
    kinds = [(type(e).__name__, e.id) for e in feed.parsed]
    assert kinds == [("UserChanged", 1), ("UserChanged", 2), ("UserDeleted", 3)]
    assert feed.parsed[1].user.name == "Ada King" and feed.parsed[2].deleted is True
