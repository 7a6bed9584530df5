"""``usersvc copy SOURCE_URL DEST_URL``: every collection moves (users and
books here), ids, versions and feed positions kept (tombstones too), new
ids continue above the source's highest, a store with records is refused.
Into every store, and SQLite -> PostgreSQL by the command line, the case
that matters."""
from __future__ import annotations

import io
import logging
import subprocess
import sys
from pathlib import Path

import pytest
from books import BOOKS
from conftest import opened
from helpers import ROOT

from usersvc import USER
from usersvc.serving.transfer import DestinationNotEmpty, copy_store, main
from usersvc.storage import open_store

User = USER.record

N = 3000


@pytest.fixture
def source_url(tmp_path):
    """A SQLite file of a few thousand users, some deleted, some changed."""
    url = f"sqlite:///{tmp_path}/source.db"
    storage = open_store(url, (USER, BOOKS))
    storage["books"].create(title="Dune", isbn="0441013597", year=1965)
    storage["books"].create(title="Emma", isbn="x-2")
    source = storage["users"]
    source.restore([User(id=i, name=f"User {i}", email=f"u{i}@example.org", version=1 + i % 3)
                    for i in range(1, N + 1) if i % 7])     # gaps: ids 7, 14, ...
    extra = source.create(name="Late", email="LATE@Example.org")
    source.update(extra.id, name="Later")
    gone = source.create(name="Gone", email="gone@example.org")
    source.delete(gone.id)                                   # the highest id is deleted
    storage.close()
    return url


def walked(read, position):
    """Every page ``read`` gives, from the start, each from the last one's ``position``."""
    found, after = [], 0
    while page := read(after=after, limit=1000):
        found += page
        after = position(page[-1])
    return found


def all_users(store):
    return walked(store.list, lambda user: user.id)


@pytest.fixture
def library(store_url):
    yield from opened(store_url, (USER, BOOKS))


def test_copy_into_each_store_keeps_everything(source_url, library):
    source = open_store(source_url, (USER, BOOKS))
    store = library["users"]
    try:
        expected = all_users(source["users"])
        copied = copy_store(source, library, batch=500)
        assert copied == {"users": len(expected), "books": 2}
        assert len(expected) == N - N // 7 + 1
        assert all_users(store) == expected
        assert all_users(library["books"]) == all_users(source["books"])
        assert store.list(email="late@example.org")[0].version == 2
        assert store.last_id() == source["users"].last_id() == N + 2
        assert all_changes(store) == all_changes(source["users"])       # tombstones included
        assert all_changes(library["books"]) == all_changes(source["books"])
        last = source["users"].position()
        assert store.position() == last
        new = store.create(name="New", email="new@example.org")
        assert new.id == N + 3
        # A client that followed the source's feed to its end follows the copy's.
        assert [(c.seq, c.id) for c in store.changes(after=last)] == [(last + 1, N + 3)]
    finally:
        source.close()


def all_changes(store):
    return walked(store.changes, lambda change: change.seq)


def test_copy_refuses_a_destination_with_records(source_url, library):
    library["books"].create(title="Mine", isbn="m-1")
    source = open_store(source_url, (USER, BOOKS))
    try:
        with pytest.raises(DestinationNotEmpty):
            copy_store(source, library)
        assert [b.title for b in library["books"].list()] == ["Mine"]
        assert library["users"].list() == []
    finally:
        source.close()


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_the_command_copies_sqlite_to_postgres_and_shows_progress(source_url, postgres_url):
    err = Terminal()
    assert main([source_url, postgres_url], stderr=err) == 0
    out = err.getvalue()
    # The restored users, Late created and changed, Gone and its tombstone.
    last = N - N // 7 + 4
    assert f"\r{N - N // 7 + 1:,} records copied, up to position {last:,} of {last:,} (100%)" in out
    assert f"copied 2 books from {source_url} to {postgres_url}; new ids start at 3\n" in out
    assert out.endswith(f"copied {N - N // 7 + 1:,} users from {source_url} "
                        f"to {postgres_url}; new ids start at {N + 3:,}\n")
    source, dest = open_store(source_url, (USER, BOOKS)), open_store(postgres_url, (USER, BOOKS))
    try:
        assert all_users(dest["users"]) == all_users(source["users"])
        assert all_users(dest["books"]) == all_users(source["books"])
        assert all_changes(dest["users"]) == all_changes(source["users"])
    finally:
        source.close()
        dest.close()


def test_no_progress_when_not_on_a_terminal(source_url, tmp_path):
    err = io.StringIO()
    assert main([source_url, f"sqlite:///{tmp_path}/dest.db"], stderr=err) == 0
    assert "\r" not in err.getvalue() and err.getvalue().count("\n") == 2     # books, users


def test_the_usersvc_command_refuses_a_full_destination(source_url, tmp_path):
    command = [sys.executable, "-m", "usersvc.serving.cli", "copy", source_url, f"sqlite:///{tmp_path}/d.db"]
    first = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert first.returncode == 0, first.stderr
    again = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert again.returncode == 1
    assert "already holds books" in again.stderr


def test_the_usersvc_command_refuses_a_bad_url(source_url):
    err = io.StringIO()
    assert main([source_url, "nosuch://x"], stderr=err) == 2
    assert "cannot open nosuch://x" in err.getvalue()


@pytest.fixture(params=["sqlite-file", "postgres"])
def kept_url(request, tmp_path):
    """A store that outlives its process (one a later start opens again)."""
    if request.param == "postgres":
        return request.getfixturevalue("postgres_url")
    return f"sqlite:///{tmp_path}/dest.db"


def test_a_copy_never_writes_to_its_source_and_records_the_declaration_as_it_was(
        source_url, kept_url, caplog):
    """The source file is byte for byte as it was after a copy, made or
    refused (once its declaration was rewritten loose, text(200) as
    text(2147483648)); the copy records the same declaration, so the next
    start of either changes nothing and logs nothing."""
    store_url = kept_url
    path = Path(source_url.removeprefix("sqlite:///"))
    before = path.read_bytes()
    assert main([source_url, store_url], stderr=io.StringIO()) == 0
    assert path.read_bytes() == before
    assert main([source_url, store_url], stderr=io.StringIO()) == 1    # refused: not empty
    assert path.read_bytes() == before
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="usersvc.storage"):
        for url in (source_url, store_url):
            open_store(url, (USER, BOOKS)).close()
    assert [r.getMessage() for r in caplog.records if r.name == "usersvc.storage"
            and "writes in" not in r.getMessage()] == []
    assert path.read_bytes() == before
