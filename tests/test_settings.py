"""usersvc/settings.py: one check for each setting, whichever of its three
sources gave it (make_app's keywords, serve.py's options, USERSVC_*
variables), said in that source's spelling."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from helpers import ROOT, Served, call

from usersvc import Settings, make_app
from usersvc.settings import SettingError, as_option, as_variable

#: (setting, a value it refuses as text, what every source says of it).
REFUSED = [
    ("max_body_size", "0", "must be a whole number of at least 1, not 0"),
    ("max_body_size", "lots", "must be a whole number of at least 1, not 'lots'"),
    ("idempotency_ttl", "0", "must be a whole number of at least 1, not 0"),
    ("max_batch", "0", "must be a whole number of at least 1, not 0"),
    ("max_batch", "a few", "must be a whole number of at least 1, not 'a few'"),
    ("max_waiting", "many", "must be a whole number of at least 0, not 'many'"),
    ("cors_origins", "app.example",
     "cannot be used: not an origin (scheme://host[:port]): 'app.example'"),
    ("features", "pages,sessions", "cannot be used: 'sessions' is not a feature (usersvc has "
                                   "pages, openapi, health, cors, tokens, idempotency, batch, "
                                   "waiting, metrics, webhooks)"),
]


def keyword_value(name, text):
    if name in ("cors_origins", "features"):
        return text.split(",")
    return int(text) if text.lstrip("-").isdigit() else text


@pytest.mark.parametrize("name, text, problem", REFUSED)
def test_make_app_refuses_a_value_naming_its_keyword(name, text, problem):
    with pytest.raises(ValueError) as refused:
        make_app("memory://", **{name: keyword_value(name, text)})
    assert str(refused.value) == f"{name} {problem}"


@pytest.mark.parametrize("name, text, problem", REFUSED)
def test_serve_py_refuses_a_value_naming_its_option_in_one_line(tmp_path, name, text, problem):
    done = subprocess.run([sys.executable, str(ROOT / "serve.py"), "--storage", "memory://",
                           "--port", "0", f"{as_option(name)}={text}"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr) == (2, f"usersvc: {as_option(name)} {problem}\n")


@pytest.mark.parametrize("name, text, problem", REFUSED)
def test_the_environment_refuses_a_value_naming_its_variable(name, text, problem):
    with pytest.raises(SettingError) as refused:
        Settings.from_environment({as_variable(name): text})
    assert str(refused.value) == f"{as_variable(name)} {problem}"


def test_the_same_settings_from_every_source():
    from usersvc.serving.server import parse_args
    expected = Settings("sqlite:///x.db", max_body_size=100, idempotency_ttl=60,
                        cors_origins=["https://app.example"], prefix="/v1", max_batch=7,
                        max_waiting=9)
    from_options = parse_args(["--storage", "sqlite:///x.db", "--max-body-size", "100",
                               "--idempotency-ttl", "60", "--cors-origin", "https://app.example",
                               "--prefix", "v1/", "--threads", "4", "--no-access-log",
                               "--max-batch", "7", "--max-waiting", "9"]).settings
    from_environment = Settings.from_environment({
        "USERSVC_STORAGE": "sqlite:///x.db", "USERSVC_MAX_BODY_SIZE": "100",
        "USERSVC_IDEMPOTENCY_TTL": "60", "USERSVC_CORS_ORIGINS": "https://app.example",
        "USERSVC_PREFIX": "/v1", "USERSVC_MAX_BATCH": "7", "USERSVC_MAX_WAITING": "9"})
    assert from_options == from_environment == expected
    assert expected.prefix == "/v1" and expected.cors_origins == frozenset({"https://app.example"})


def test_an_unknown_variable_is_refused_by_name():
    with pytest.raises(SettingError, match="^USERSVC_MAX_BODY is not a variable of usersvc's"):
        Settings.from_environment({"USERSVC_MAX_BODY": "1"})
    assert Settings.from_environment({"USERSVC_TEST_ANYTHING": "x"}) == Settings()


def test_tokens_are_checked_when_the_settings_are_made():
    with pytest.raises(SettingError, match="^tokens cannot be used: a token's scope"):
        Settings(tokens={"a-token-of-sixteen-chars": "admin"})
    assert Settings(tokens={"a-token-of-sixteen-chars": "read"}).tokens is not None


# -- the collections to serve, by name (module:NAME) -------------------------

def test_collections_are_named_module_colon_name_and_users_come_first(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    from examples.library import BOOKS
    from usersvc import USER
    from usersvc.serving.server import parse_args
    from_variable = Settings.from_environment({"USERSVC_COLLECTIONS": "examples.library:BOOKS"})
    from_option = parse_args(["--collections", "examples.library:BOOKS"]).settings
    assert from_variable.collections == from_option.collections == (USER, BOOKS)
    # A list that names users places them itself; a tuple is a whole set.
    assert Settings.from_environment({"USERSVC_COLLECTIONS": "examples.library:BOOKS, "
                                      "usersvc:USER"}).collections == (BOOKS, USER)
    monkeypatch.setattr("examples.library.SHELF", (BOOKS,), raising=False)
    assert Settings.from_environment(
        {"USERSVC_COLLECTIONS": "examples.library:SHELF"}).collections == (BOOKS,)
    assert Settings.from_environment({}).collections is None


@pytest.mark.parametrize("text, problem", [
    ("examples.library", "'examples.library' is not module:NAME"),
    ("no_such_module:BOOKS", "no_such_module:BOOKS: No module named 'no_such_module'"),
    ("usersvc:BOOKS", "usersvc has no BOOKS"),
    ("usersvc:text", "usersvc:text is not a Schema or a tuple of them"),
])
def test_a_collection_that_cannot_be_had_is_refused_in_the_sources_spelling(text, problem):
    with pytest.raises(SettingError) as refused:
        Settings.from_environment({"USERSVC_COLLECTIONS": text})
    assert str(refused.value) == f"USERSVC_COLLECTIONS cannot be used: {problem}"


def test_serve_py_serves_the_collections_it_is_told_and_refuses_a_bad_one_in_one_line(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "serve.py"), "--storage", "memory://",
                           "--port", "0", "--collections", "usersvc:BOOKS"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr) == (
        2, "usersvc: --collections cannot be used: usersvc has no BOOKS\n")


@pytest.mark.parametrize("module, problem", [
    ("from usersvc import Schema\nT = Schema('e', 'empties', {})\n",
     "cannot open storage memory://: empties: a collection needs at least one field of its own"),
    ("raise RuntimeError('no database configured')\n",
     "--collections cannot be used: tracker raised RuntimeError: no database configured"),
    ("import no_such_thing_here\n",
     "--collections cannot be used: tracker:T: No module named 'no_such_thing_here'"),
])
def test_serve_py_refuses_a_module_that_fails_in_one_line(tmp_path, module, problem):
    """The module is found in the directory serve.py starts in (as gunicorn
    and uWSGI find theirs), and whatever it raises is one line, exit 2."""
    (tmp_path / "tracker.py").write_text(module)
    done = subprocess.run([sys.executable, str(ROOT / "serve.py"), "--storage", "memory://",
                           "--port", "0", "--collections", "tracker:T"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr) == (2, f"usersvc: {problem}\n")


def test_serve_py_imports_collections_from_the_directory_it_starts_in(tmp_path):
    (tmp_path / "tracker.py").write_text(
        "from usersvc import Schema, text\n"
        "ISSUES = Schema('issue', 'issues', {'title': text(9)})\n")
    served = Served("--storage", "memory://", "--collections", "tracker:ISSUES", cwd=tmp_path)
    try:
        status, _, body = call(served.address, "POST", "/issues", {"title": "first"})
        assert status == 201 and json.loads(body)["title"] == "first"
    finally:
        served.stop()
