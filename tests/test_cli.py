"""Start-up mistakes, as a new user makes them (usersvc/serving/server.py, cli.py,
transfer.py): each is one line on stderr and exit status 2, never a trace;
an unknown command or option is argparse's usage line and error, with the
closest match suggested. Every case runs as a subprocess, as a user runs it.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from conftest import POSTGRES_URL, unavailable
from helpers import SERVE, Served, call, one_line, run

ROOT = Path(__file__).resolve().parent.parent
USERSVC = [sys.executable, "-m", "usersvc.serving.cli"]


@pytest.fixture
def taken_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


@pytest.mark.parametrize("command", [SERVE, USERSVC], ids=["serve.py", "usersvc"])
def test_a_port_in_use_is_one_line(tmp_path, taken_port, command):
    one_line(run(command, tmp_path, "--port", str(taken_port), "--storage", "memory://"),
             f"usersvc: cannot listen on 127.0.0.1 port {taken_port}: Address already in use")


@pytest.mark.parametrize("host, says", [
    ("10.1.2.3", "cannot listen on 10.1.2.3 port 0: Cannot assign requested address"),
    ("no-such-host.invalid",
     "cannot listen on no-such-host.invalid port 0: Name or service not known"),
])
def test_a_host_it_cannot_listen_on_or_resolve_is_one_line_and_no_warning(tmp_path, host, says):
    one_line(run(SERVE, tmp_path, "--host", host, "--port", "0", "--storage", "memory://"), says)


@pytest.mark.parametrize("url, says", [
    ("sqlite:///no/such/folder/users.db", "the folder no/such/folder does not exist"),
    ("sqlite:////proc/users.db", "cannot open storage sqlite:////proc/users.db: "),
    ("nosuch://", "unknown storage scheme 'nosuch'"),
    ("postgresql://127.0.0.1:1/test", "cannot open storage postgresql://127.0.0.1:1/test: "),
])
def test_a_storage_url_it_cannot_open_is_one_line(tmp_path, url, says):
    one_line(run(SERVE, tmp_path, "--port", "0", "--storage", url), says)
    assert list(tmp_path.iterdir()) == []       # nothing made on the way


@pytest.mark.parametrize("command", [SERVE, USERSVC, [*SERVE, "--server", "granian"]],
                         ids=["serve.py", "usersvc", "granian"])
def test_webhooks_named_before_the_pages_is_one_line(tmp_path, command):
    one_line(run(command, tmp_path, "--port", "0", "--storage", "memory://",
                 "--features", "webhooks,default"),
             "usersvc: --features must name webhooks after pages (its pages are theirs): "
             "default,webhooks")


def another_database(url: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path="/usersvc_no_such_database"))


def another_role(url: str) -> str:
    """The URL with its user (and password, if any) replaced by a role that
    does not exist: ``postgresql://postgres@host/test`` too."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc="no_such_role@" + parts.netloc.rpartition("@")[2]))


def test_the_urls_are_built_whatever_the_url_carries():
    assert another_role("postgresql://postgres:pw@127.0.0.1:5432/test?x=1") == \
        "postgresql://no_such_role@127.0.0.1:5432/test?x=1"
    assert another_role("postgresql://127.0.0.1/test") == "postgresql://no_such_role@127.0.0.1/test"
    assert another_database("postgresql://postgres@127.0.0.1/test?x=1") == \
        "postgresql://postgres@127.0.0.1/usersvc_no_such_database?x=1"


@pytest.mark.parametrize("change, says", [
    (another_database, "does not exist"),
    (another_role, "does not exist"),
])
def test_a_permanent_postgresql_error_fails_at_once_in_one_line(tmp_path, change, says):
    """No database, or a role that does not exist: failing at once, not
    after the pool's 10 s of retries (the run's 60 s guard allows both; the
    one line shows no retry was logged)."""
    if not POSTGRES_URL:
        unavailable("USERSVC_TEST_POSTGRES_URL is not set")
    one_line(run(SERVE, tmp_path, "--port", "0", "--storage", change(POSTGRES_URL)), says)


@pytest.mark.parametrize("content, says", [
    (None, "--tokens-file cannot be used: "),
    ("just-one-word\n", "--tokens-file cannot be used: tokens, line 1: expected TOKEN SCOPE"),
])
def test_a_missing_or_malformed_tokens_file_is_one_line(tmp_path, content, says):
    if content is not None:
        (tmp_path / "tokens").write_text(content)
    one_line(run(SERVE, tmp_path, "--storage", "memory://", "--tokens-file", "tokens"), says)


def test_an_unknown_command_gets_the_usage_and_the_closest_command(tmp_path):
    result = run(USERSVC, tmp_path, "sevre")
    assert result.returncode == 2
    assert result.stderr.startswith("usage: usersvc [serve] [options]")
    assert "usersvc: error: invalid command 'sevre': choose from 'serve', 'copy' " \
           "(did you mean 'serve'?)" in result.stderr


@pytest.mark.parametrize("command", [SERVE, USERSVC], ids=["serve.py", "usersvc"])
def test_an_unknown_option_gets_the_usage_and_the_closest_option(tmp_path, command):
    result = run(command, tmp_path, "--prot", "8081")
    assert result.returncode == 2 and result.stderr.startswith("usage: ")
    assert "error: unrecognized arguments: --prot 8081 (did you mean --port?)" in result.stderr


def test_usersvc_help_lists_the_commands(tmp_path):
    result = run(USERSVC, tmp_path, "--help")
    assert result.returncode == 0
    assert "usersvc [serve] [options]" in result.stdout
    assert "usersvc copy SOURCE_URL DEST_URL" in result.stdout
    assert "--storage" in result.stdout
    assert "copy moves every collection" in " ".join(result.stdout.split())


def test_copy_refuses_a_sqlite_source_that_does_not_exist_and_makes_nothing(tmp_path):
    result = run(USERSVC, tmp_path, "copy", "sqlite:///nonexistent.db", "memory://")
    one_line(result,
             "cannot open sqlite:///nonexistent.db: there is no database file at nonexistent.db")
    assert list(tmp_path.iterdir()) == []


def test_copy_says_how_many_from_where_to_where(tmp_path):
    served = Served("--storage", "sqlite:///from.db", cwd=tmp_path)
    for i in range(3):
        call(served.address, "POST", "/users", {"name": f"U{i}", "email": f"u{i}@example.org"})
    assert served.stop() == 0
    result = run(USERSVC, tmp_path, "copy", "sqlite:///from.db", "sqlite:///to.db")
    assert result.returncode == 0
    assert result.stderr.strip() == ("usersvc copy: copied 3 users from sqlite:///from.db "
                                     "to sqlite:///to.db; new ids start at 4")
    again = run(USERSVC, tmp_path, "copy", "sqlite:///from.db", "sqlite:///to.db")
    assert again.returncode == 1 and "already holds users" in again.stderr


NO_PSYCOPG = """
import sys
sys.modules["psycopg"] = None           # as if the postgres extra were not installed
from usersvc.storage import open_store
try:
    open_store("postgresql://127.0.0.1/test")
except ValueError as e:
    print(e)
"""


def test_without_psycopg_the_message_says_how_to_install_it_as_usersvc_was(tmp_path):
    from_checkout = subprocess.run([sys.executable, "-c", NO_PSYCOPG], cwd=ROOT,
                                   capture_output=True, text=True).stdout
    assert f"needs psycopg: pip install -e '.[postgres]' in {ROOT} " in from_checkout
    # A wheel puts the package alone in site-packages, no setup.cfg beside it.
    shutil.copytree(ROOT / "usersvc", tmp_path / "site" / "usersvc")
    from_wheel = subprocess.run([sys.executable, "-c", NO_PSYCOPG], cwd=tmp_path,
                                env={**os.environ, "PYTHONPATH": str(tmp_path / "site")},
                                capture_output=True, text=True).stdout
    assert "needs psycopg: pip install 'usersvc[postgres]' " in from_wheel
