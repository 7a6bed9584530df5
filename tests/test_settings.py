"""usersvc/settings.py: one check for each setting, whichever of its three
sources gave it (make_app's keywords, serve.py's options, USERSVC_*
variables), said in that source's spelling."""
from __future__ import annotations

import subprocess
import sys

import pytest
from helpers import ROOT

from usersvc import Settings, make_app
from usersvc.settings import SettingError, as_option, as_variable

#: (setting, a value it refuses as text, what every source says of it).
REFUSED = [
    ("max_body_size", "0", "must be a whole number of at least 1, not 0"),
    ("max_body_size", "lots", "must be a whole number of at least 1, not 'lots'"),
    ("idempotency_ttl", "0", "must be a whole number of at least 1, not 0"),
    ("cors_origins", "app.example",
     "cannot be used: not an origin (scheme://host[:port]): 'app.example'"),
]


def keyword_value(name, text):
    if name == "cors_origins":
        return [text]
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
    from usersvc.server import parse_args
    expected = Settings("sqlite:///x.db", max_body_size=100, idempotency_ttl=60,
                        cors_origins=["https://app.example"], prefix="/v1")
    from_options = parse_args(["--storage", "sqlite:///x.db", "--max-body-size", "100",
                               "--idempotency-ttl", "60", "--cors-origin", "https://app.example",
                               "--prefix", "v1/", "--threads", "4", "--no-access-log"]).settings
    from_environment = Settings.from_environment({
        "USERSVC_STORAGE": "sqlite:///x.db", "USERSVC_MAX_BODY_SIZE": "100",
        "USERSVC_IDEMPOTENCY_TTL": "60", "USERSVC_CORS_ORIGINS": "https://app.example",
        "USERSVC_PREFIX": "/v1"})
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
