"""The README's webhooks part, run as written (issue 60): its server, its
subscription by curl, its receiver (which verifies with
``standardwebhooks``), and a new user that reaches the receiver,
verified; each answer is what the page shows.

As test_examples runs the transcripts: in a folder of its own, curl's
``--connect-to`` (a ``.curlrc``) takes ``127.0.0.1:8080`` to the server's
port, so the commands are the page's own; but for the receiver's port
(the page's 8000 is a free one here), the secret (the page shows one, the
server makes its own), the time and the store's history token.
"""
from __future__ import annotations

import json
import os
import queue
import re
import shlex
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from helpers import Served, call, free_port

ROOT = Path(__file__).resolve().parent.parent
TITLE = "### Webhooks: each change POSTed to your service"
#: The longest any step here may take before the test fails.
DEADLINE = 30.0
STAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.[0-9]{3}Z")
HISTORY = re.compile(r"(?<=[0-9]\.)[0-9a-f]{12}\b")


def section() -> str:
    """The README's webhooks part, to the next heading."""
    text = (ROOT / "README.md").read_text()
    start = text.index(TITLE)
    return text[start:text.index("\n#", start + len(TITLE))]


def fences(text: str) -> list[tuple[str, str]]:
    """Each fenced block of ``text``: its language and its text."""
    return re.findall(r"^```(\w*)\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)


def shown_commands() -> list[str]:
    """Each command of the part's ``sh`` blocks (a trailing ``\\`` joins
    the next line, as test_docs reads them)."""
    commands = []
    for language, block in fences(section()):
        if language == "sh":
            commands += [re.sub(r"\\\n\s*", "", command)
                         for command in re.split(r"(?<!\\)\n", block.strip())]
    return commands


def test_the_readme_s_receiver_gets_a_change_verified(tmp_path):
    blocks = {language: block for language, block in fences(section()) if language != "sh"}
    serve, subscribe, receive, change = shown_commands()
    assert serve.startswith("python serve.py ") and receive.endswith(" python receiver.py")
    assert subscribe.startswith("curl ") and change.startswith("curl ")
    answer_shown = json.loads(blocks["json"])
    code = blocks["python"]
    port = free_port()      # the receiver's, where the page has 8000
    assert '("127.0.0.1", 8000)' in code and "http://127.0.0.1:8000/" in subscribe
    (tmp_path / "receiver.py").write_text(code.replace("8000", str(port)))
    setting, _, command = receive.partition(" ")
    name, _, secret_shown = setting.partition("=")
    assert shlex.split(secret_shown) == [answer_shown["secret"]] and command == "python receiver.py"

    server = Served(*shlex.split(serve)[2:], cwd=tmp_path)
    receiver = None
    try:
        (tmp_path / ".curlrc").write_text(
            f"connect-to = 127.0.0.1:8080:127.0.0.1:{server.address[1]}\n")

        def curl(command: str) -> str:
            done = subprocess.run(["bash", "-c", command.replace("8000", str(port))],
                                  cwd=tmp_path, capture_output=True, text=True, timeout=DEADLINE,
                                  env={"PATH": "/usr/bin:/bin", "CURL_HOME": str(tmp_path)})
            assert done.returncode == 0, (command, done.stderr)
            return done.stdout

        # The subscription: as the page shows it, but for its time, its secret and the port.
        answer = json.loads(curl(subscribe))
        secret = answer["secret"]
        assert re.fullmatch(r"whsec_[A-Za-z0-9+/]{43}=", secret)
        assert STAMP.fullmatch(answer["created"])
        assert {**answer, "created": "", "secret": ""} == {
            **answer_shown, "url": f"http://127.0.0.1:{port}/", "created": "", "secret": ""}

        # The receiver, as written, with the secret the server gave.
        receiver = subprocess.Popen([sys.executable, "receiver.py"], cwd=tmp_path, text=True,
                                    env={**os.environ, name: secret},
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        printed: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: [printed.put(line) for line in receiver.stdout],
                         daemon=True).start()
        listening(port)
        # It refuses what is not signed with the secret (and prints nothing of it).
        forged = json.dumps({"type": "user.deleted", "data": {"seq": 9, "id": 1}}).encode()
        status, _, _ = call(("127.0.0.1", port), "POST", "/", forged, headers={
            "Content-Type": "application/json", "webhook-id": "users.9.000000000000",
            "webhook-timestamp": str(int(time.time())),
            "webhook-signature": "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4="})
        assert status == 400

        curl(change)
        try:
            line = printed.get(timeout=DEADLINE)
        except queue.Empty:
            raise AssertionError(f"the receiver printed nothing: {server.log()}") from None
        assert HISTORY.sub("*", line.rstrip("\n")) == HISTORY.sub("*", blocks["text"].strip())
        # The service recorded the receiver's 204: the subscription moved on.
        for _ in range(int(DEADLINE / 0.05)):
            state = json.loads(curl("curl -s http://127.0.0.1:8080/webhooks/1"))
            if state["delivered"] == {"users": 1}:
                break
            time.sleep(0.05)
        assert state["delivered"] == {"users": 1} and state["failures"] == 0, state
    finally:
        if receiver is not None:
            receiver.terminate()
            receiver.communicate(timeout=DEADLINE)
        assert server.stop() == 0


def listening(port: int) -> None:
    """Once something listens on ``port`` (failing past the deadline)."""
    for _ in range(int(DEADLINE / 0.05)):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"nothing listens on {port}")
