"""Every shell example in the README and docs/ runs, and answers what the
page shows: the docs cannot go stale.

A page's examples are a transcript: ``$ command`` lines (continued by a
trailing ``\\`` or by ``> `` lines), each followed by what it prints. They
run in order, with bash, in a folder of their own, against ``serve.py`` on
an empty database, exactly as written: curl's ``--connect-to`` (from a
``.curlrc`` in that folder) takes ``127.0.0.1:8080`` to the test server's
port, so URLs, ``Host`` and every ETag are the page's own. Three kinds of
line are not run but understood:

- ``$ python serve.py ARGS``: (re)start the server with those arguments;
  before the first one, the server is ``python serve.py`` (SQLite,
  ``users.db``, empty); ``$ python SCRIPT ARGS`` (re)starts it with another
  script that serves as serve.py does (``examples/library.py``, or one the
  page has the reader write);
- ``$ cat FILE`` shows a file the reader is to write: the test writes it;
- ``...`` in an answer stands for any lines, and a time the store wrote
  (``created``, ``updated``: ``2026-11-25T20:57:01.120Z``, always three
  fraction digits) for any such time, a history token in a place of the
  feed (``after=8.3f2a9c61d0b7``: 12 hex digits after a position) for any.

Headers that differ from run to run or belong to the server, not the app
(``Date``, ``Server``, ``Content-Length``, ``X-Request-Id``, ``Connection``)
are left out of answers, as the pages say.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import Served

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MASKED = ("date:", "server:", "content-length:", "x-request-id:", "connection:")
STAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z")
#: A store's history token in a place of its feed (``usersvc.places``): made at random.
HISTORY = re.compile(r"(?<=[0-9d]\.)[0-9a-f]{12}(?![0-9a-z])")


def transcript(page: Path) -> list[tuple[str, list[str]]]:
    """The page's ``(command, expected lines)``, in order."""
    steps: list[tuple[str, list[str]]] = []
    lines = [line[4:] if line.startswith("    ") else None
             for line in page.read_text().splitlines()]
    i = 0
    while i < len(lines):
        line = lines[i]
        if line is None or not line.startswith("$ "):
            i += 1
            continue
        command = [line[2:]]
        i += 1
        while command[-1].endswith("\\") or (i < len(lines) and (lines[i] or "").startswith("> ")):
            command.append(lines[i][2:] if lines[i].startswith("> ") else lines[i])
            i += 1
        expected = []
        # The answer runs to the next command or the end of the block (a
        # blank line inside it, as between headers and body, is kept).
        while i < len(lines) and lines[i] is not None and not lines[i].startswith("$ "):
            expected.append(lines[i])
            i += 1
        while i < len(lines) and lines[i] is None and i + 1 < len(lines) \
                and lines[i + 1] is not None and not lines[i + 1].startswith("$ ") and expected:
            expected.append("")         # a blank line inside the block
            i += 1
            while i < len(lines) and lines[i] is not None and not lines[i].startswith("$ "):
                expected.append(lines[i])
                i += 1
        steps.append(("\n".join(command), expected))
    return steps


def matches(actual: list[str], expected: list[str]) -> bool:
    """Whether the lines agree, ``...`` in ``expected`` standing for any lines."""
    if not expected:
        return not actual
    if expected[0] == "...":
        return any(matches(actual[k:], expected[1:]) for k in range(len(actual) + 1))
    return bool(actual) and (masked(actual[0]) == masked(expected[0])
                             and matches(actual[1:], expected[1:]))


def masked(line: str) -> str:
    """A line with what is made anew each run (a time, a history token) as ``*``."""
    return HISTORY.sub("*", STAMP.sub("*", line))


def shown(output: str) -> list[str]:
    """What a command printed, as the pages show it."""
    lines = [line.rstrip("\r") for line in output.split("\n")]
    while lines and lines[-1] == "":
        lines.pop()
    return [line for line in lines if not line.lower().startswith(MASKED)]


class Session:
    """One page's folder and server."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.server: Served | None = None
        #: The history token in the places the server gave last (a page shows
        #: its own, made at random: a command that gives a place back gets
        #: the server's).
        self.history: str | None = None

    def serve(self, *args: str, script: Path = ROOT / "serve.py") -> None:
        self.stop()
        self.history = None
        self.server = Served(*args, cwd=self.folder, script=script)
        (self.folder / ".curlrc").write_text(
            f"connect-to = 127.0.0.1:8080:127.0.0.1:{self.server.address[1]}\n")

    def stop(self) -> None:
        if self.server is not None:
            assert self.server.stop() == 0
            self.server = None

    def run(self, command: str, expected: list[str]) -> list[str] | None:
        """Run (or understand) one step; the lines it printed, or ``None``
        for a step with nothing to compare."""
        if command.startswith("python ") and command.split()[1].endswith(".py"):
            script = command.split()[1]
            self.serve(*command.split()[2:], script=(self.folder / script) if (
                self.folder / script).exists() else ROOT / script)
            return None
        if command.startswith("cat ") and "|" not in command:
            (self.folder / command.split()[1]).write_text("\n".join(expected) + "\n")
        if self.server is None:
            self.serve()
        if self.history is not None:        # a place in a command: the one the server gave
            command = HISTORY.sub(self.history, command)
        result = subprocess.run(["bash", "-c", command], cwd=self.folder, capture_output=True,
                                text=True, timeout=60, env={"PATH": "/usr/bin:/bin",
                                                            "CURL_HOME": str(self.folder)})
        assert result.returncode == 0, (command, result.stderr)
        given = HISTORY.search(result.stdout)
        if given is not None:
            self.history = given.group()
        return shown(result.stdout)


@pytest.mark.skipif(shutil.which("curl") is None,
                    reason="curl is not installed (apt-get install curl)")
@pytest.mark.parametrize("page", [p for p in PAGES if transcript(p)], ids=lambda p: p.name)
def test_every_example_answers_what_the_page_shows(page, tmp_path):
    session = Session(tmp_path)
    try:
        for command, expected in transcript(page):
            actual = session.run(command, expected)
            if actual is not None:
                assert matches(actual, expected), (
                    f"\n$ {command}\n--- the page shows:\n" + "\n".join(expected)
                    + "\n--- the server answered:\n" + "\n".join(actual))
    finally:
        session.stop()


def test_the_transcripts_are_read_as_written():
    """The reader of the pages: commands, continuations and answers."""
    steps = transcript(ROOT / "README.md")
    assert len(steps) >= 30
    commands = [c for c, _ in steps]
    assert any("\n" in c and c.startswith("curl -i http://127.0.0.1:8080/users") for c in commands)
    assert all(not re.match(r"\s", c) for c in commands)
    assert matches(["a", "b", "c"], ["a", "...", "c"]) and not matches(["a", "b"], ["a", "c"])


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_curl_command_shown_is_in_a_transcript(page):
    """No curl command hides in prose or in a block the transcript skips."""
    run = "\n".join(command for command, _ in transcript(page))
    for line in page.read_text().splitlines():
        for shown_command in re.findall(r"`(curl [^`]+)`", line):
            assert shown_command in run, shown_command
        if line.startswith("    curl ") or line.startswith("\tcurl "):
            assert line.strip() in run, line
