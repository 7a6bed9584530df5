"""The docs name tests and files that exist: docs/conformance.md maps each
RFC rule to tests, docs/security.md each claim, and a reader following
them must find them."""
from __future__ import annotations

import ast
import json
import re
import sys
import threading
from pathlib import Path

import pytest
from webob import Request

from usersvc import USER, make_app

ROOT = Path(__file__).resolve().parent.parent


def defined_tests() -> dict[str, set[str]]:
    """Each test module's tests, with those it takes from a shared suite
    (``from store_contract import *``)."""
    def names(path: Path) -> set[str]:
        tree = ast.parse(path.read_text())
        found = {node.name for node in ast.walk(tree)
                 if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
                found |= names(ROOT / "tests" / f"{node.module}.py")
        return found
    return {path.stem: names(path) for path in (ROOT / "tests").glob("test_*.py")}


@pytest.mark.parametrize("doc", ["conformance.md", "security.md"])
def test_every_test_a_doc_names_exists(doc):
    tests = defined_tests()
    named = []
    for line in (ROOT / "docs" / doc).read_text().splitlines():
        # `module::test` sets the module; `::test` later in the same row reuses it.
        module = None
        for given, test in re.findall(r"`(test_\w+)?(?:\.py)?::(test_\w+)`", line):
            module = given or module
            named.append((module, test))
    assert len(named) > 10
    missing = [f"{m}::{t}" for m, t in named if t not in tests.get(m, ())]
    assert missing == []


def test_every_repository_file_the_docs_link_to_exists():
    for doc in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]:
        for target in re.findall(r"\]\(((?!https?:)[^)#]+)\)", doc.read_text()):
            assert (doc.parent / target).exists(), (doc.name, target)


def _nested(node: ast.AST, prefix: str) -> set[str]:
    """``prefix.inner`` for each function defined in ``node``'s body, and theirs."""
    found = set()
    for inner in ast.iter_child_nodes(node):
        if isinstance(inner, ast.FunctionDef):
            found.add(f"{prefix}.{inner.name}")
            found |= _nested(inner, f"{prefix}.{inner.name}")
        elif not isinstance(inner, (ast.ClassDef, ast.Lambda)):
            found |= _nested(inner, prefix)     # (inside a with, a try, an if)
    return found


def defined_names(path: Path) -> set[str]:
    """A module's top-level names, ``Class.member`` for its classes' members,
    and ``function.inner`` for the functions defined inside functions."""
    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        if isinstance(node, ast.FunctionDef):
            names |= _nested(node, node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
        if isinstance(node, ast.ClassDef):
            for member in node.body:
                if isinstance(member, ast.FunctionDef):
                    names.add(f"{node.name}.{member.name}")
                    names |= _nested(member, f"{node.name}.{member.name}")
                if isinstance(member, ast.FunctionDef):     # (attributes its methods set)
                    names |= {f"{node.name}.{t.attr}" for t in ast.walk(member)
                              if isinstance(t, ast.Attribute) and isinstance(t.ctx, ast.Store)
                              and isinstance(t.value, ast.Name) and t.value.id == "self"}
    return names


def test_the_architecture_walkthrough_names_files_and_functions_that_exist():
    # A row: | what happens | `file.py`, `other.py` | `Name`, `Class.method` |
    rows = re.findall(r"^\|[^|]*\| ((?:`[\w/.]+\.py`(?:, )?)+) \| (.*) \|$",
                      (ROOT / "docs" / "architecture.md").read_text(), re.MULTILINE)
    assert len(rows) > 60
    missing = []
    for files, names in rows:
        defined: set[str] = set()
        for file in re.findall(r"`([\w/.]+\.py)`", files):
            path = ROOT / file
            if not path.exists():
                missing.append(file)
            else:
                defined |= defined_names(path)
        missing += [f"{files}: {name}" for name in re.findall(r"`([\w.]+)`", names)
                    if name not in defined]
    assert missing == []


def test_the_architecture_names_everything_a_kind_declares():
    """docs/architecture.md's "A kind of field" names each attribute and
    method of ``Field`` that a kind may declare (``ordered`` was missing:
    a reader's kind sorted but took no ranges)."""
    from usersvc.fields import Field
    text = (ROOT / "docs" / "architecture.md").read_text()
    start = text.index("- **A kind of field**")
    paragraph = text[start:text.index("\n- **", start + 1)]
    declared = [name for name in vars(Field) if not name.startswith("_") and name != "kinds"]
    assert "ordered" in declared and "to_stored" in declared
    assert [name for name in [*declared, "__call__"]
            if f"`{name}`" not in paragraph and f"`{name}(" not in paragraph] == []


WALKS = ("## `GET /users/1`, in XML, from SQLite", "## `POST /users`, in JSON, to SQLite",
         "## `PUT /users/1`, in JSON, with `If-Match`",
         "## `POST /tasks`, with a reference and timestamps, to SQLite")
TASK = {"title": "Write", "done": False, "estimate": 2.5, "due": "2026-12-01",
        "remind_at": "2026-11-30T09:00:00+01:00", "priority": "high",
        "link": "https://example.org/x", "owner": 1}


def _get(call, n):
    call("GET", "/users/1", status=200, Accept="application/xml")


def _post(call, n):
    call("POST", "/users", {"name": "Grace", "email": f"grace{n}@example.org"}, status=201)
    call("POST", "/users", {"name": "Twin", "email": "ada@example.org"}, status=409)


def _put(call, n):
    call("PUT", "/users/1", {"name": f"Ada {n}", "email": "ada@example.org"}, status=200,
         **{"If-Match": f'"1-{n}"'})
    call("PUT", "/users/1", {"name": "Ada", "email": "ada@example.org"}, status=412,
         **{"If-Match": '"1-999"'})


def _post_task(call, n):
    call("POST", "/tasks", TASK, status=201)


@pytest.mark.parametrize("walks, requests", [(1, _get), (2, _post), (3, _put), (4, _post_task)],
                         ids=["GET", "POST", "PUT", "POST tasks"])
def test_each_walk_names_every_file_and_function_its_request_runs(walks, requests, tmp_path):
    """docs/architecture.md follows a user's ``GET`` (XML), ``POST`` (and
    its 409) and ``PUT`` (and its 412), and a task's ``POST`` (a reference,
    timestamps), on SQLite, as the plain build serves them (no feature, no
    fast path: what a reader learns from): every package function the
    request runs, in every thread, is named in its walk or the walks
    before it that it shares, in a row naming its file."""
    examples = str(ROOT / "examples")
    sys.path.insert(0, examples)
    try:
        from tasks import TASKS
    finally:
        sys.path.remove(examples)
    package = str(ROOT / "usersvc")
    ran: set[tuple[str, str]] = set()
    tracing = threading.Event()

    def profile(frame, event, arg):
        if event == "call" and tracing.is_set() and frame.f_code.co_filename.startswith(package):
            name = frame.f_code.co_qualname.replace(".<locals>", "")
            # (a generator expression: its function's; a finalizer, the collector's)
            if "<" not in name and not name.endswith(".__del__"):
                path = Path(frame.f_code.co_filename).relative_to(ROOT).as_posix()
                ran.add((path, name))
    app = make_app(f"sqlite:///{tmp_path}/walk.db",      # (as serve.py serves, but tasks')
                   collections=(USER, TASKS) if requests is _post_task else (USER,),
                   features=(), speedups=False)

    def call(method: str, path: str, body: dict | None = None, status: int = 200,
             **headers: str) -> None:
        req = Request.blank(path, method=method, headers=headers)
        if body is not None:
            req.body, req.content_type = json.dumps(body).encode(), "application/json"
        res = req.get_response(app)
        assert res.status_int == status, (method, path, res.status, res.body[:300])
    try:
        call("POST", "/users", {"name": "Ada", "email": "ada@example.org"}, status=201)
        requests(call, 1)                       # (what is made once, made)
        threading.setprofile(profile)
        sys.setprofile(profile)
        tracing.set()
        try:
            requests(call, 2)
        finally:
            tracing.clear()
            sys.setprofile(None)
            threading.setprofile(None)
    finally:
        app.close()
    text = (ROOT / "docs" / "architecture.md").read_text()
    walk = "".join(text[text.index(t):text.index("\n## ", text.index(t) + 3)]
                   for t in WALKS[:walks])
    named = {(file, name) for files, names in re.findall(
                 r"^\|[^|]*\| ((?:`[\w/.]+\.py`(?:, )?)+) \| (.*) \|$", walk, re.MULTILINE)
             for file in re.findall(r"`([\w/.]+\.py)`", files)
             for name in re.findall(r"`([\w.]+)`", names)}
    named_files = {file for file, _ in named}
    names = {name for _, name in named}
    assert len(ran) > 20
    unnamed = sorted(f"{f}: {n}" for f, n in ran if f not in named_files or n not in names)
    assert unnamed == [], "not in the walk:\n" + "\n".join(unnamed)


def test_the_docs_need_nothing_outside_the_repository():
    """A clone is enough: no doc, docstring or test points at a file
    beside the repository, and every relative link stays inside it."""
    texts = [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "tests").glob("*.py"),
             *(ROOT / "usersvc").rglob("*.py"), *(ROOT / "bench").glob("*.*")]
    outside = ("../" + "shared", "CONTRACT" + ".md")    # spelt apart: this file is read too
    for path in texts:
        text = path.read_text()
        assert not any(name in text for name in outside), path
        if path.suffix == ".md":
            for target in re.findall(r"\]\(((?!https?:)[^)#]+)\)", text):
                assert ROOT in (path.parent / target).resolve().parents, (path.name, target)


def test_install_instructions_are_the_ones_that_work_from_a_clone():
    """usersvc is not on a package index: every install line installs this folder."""
    for doc in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]:
        for line in doc.read_text().splitlines():
            if "pip install" in line:
                assert "pip install -e" in line, (doc.name, line)


def test_the_license_file_is_the_one_setup_cfg_names():
    import configparser
    metadata = configparser.ConfigParser()
    metadata.read(ROOT / "setup.cfg")
    assert metadata["metadata"]["license"] == "MIT"
    assert metadata["metadata"]["license_files"] == "LICENSE"
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License\n") and "THE SOFTWARE IS PROVIDED \"AS IS\"" in text


def test_the_readme_layout_names_every_module_of_the_package():
    layout = (ROOT / "README.md").read_text().split("## Layout", 1)[1].split("\n## ", 1)[0]
    package = ROOT / "usersvc"
    for path in sorted(package.iterdir()):
        if path.name.startswith(("_", ".")):
            continue
        if path.suffix == ".py" or (path / "__init__.py").exists():
            named = f"usersvc/{path.name}" + ("/" if path.is_dir() else "")
            assert named in layout or path.name in layout, f"README's layout omits {named}"
    for path in sorted(package.rglob("*.py")):      # and each module in a folder, by its name
        if path.name != "__init__.py":
            assert path.name in layout, f"README's layout omits {path.relative_to(ROOT)}"


def test_every_benchmark_the_docs_quote_imports():
    # The benchmarks are not run here (they time things), but each must
    # still import: a name it takes from usersvc that moved fails now, not
    # on the day its figures are wanted. (serve_peer.py is a script run
    # with arguments; sql_layer.py needs SQLAlchemy, fastapi_peer.py and
    # sqlmodel_peer.py FastAPI and SQLModel, which only they use.)
    import subprocess
    import sys
    names = sorted(p.stem for p in (ROOT / "bench").glob("*.py")
                   if p.stem not in ("serve_peer", "sql_layer", "fastapi_peer", "sqlmodel_peer"))
    run = subprocess.run([sys.executable, "-c", "\n".join(
        f"import {name}" for name in names)], cwd=ROOT / "bench",
        capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr


# -- every command the docs show: run, or said why not -----------------------

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PROGRAMS = ("python3 ", "pip ", "createdb ", "usersvc ", "gunicorn ", "uwsgi ", "granian ",
            "rm -rf ")
#: The commands on a line of their own in the docs that the suite does not
#: run (a transcript's ``$`` commands are test_examples'), and why.
NOT_RUN = {
    "python3 -m venv .venv && .venv/bin/pip install -e '.[metrics]' && .venv/bin/python serve.py":
        "installs from a package index (serve.py itself: test_examples)",
    "python3 -m venv .venv && .venv/bin/pip install -e '.[test,postgres,metrics]' "
    "&& .venv/bin/python -m pytest": "installs, then runs this very suite",
    "pip install -e '.[postgres]'        # from usersvc's folder: psycopg 3 and psycopg_pool":
        "installs from a package index",
    "createdb users                         # or any database the service may create tables in":
        "makes a database on the PostgreSQL server (the suite has its own)",
}


def block_commands(page: Path) -> list[str]:
    """Each shell command on a line of its own in an indented block or a
    ``sh`` fence of ``page`` (a trailing ``\\`` joins the next line), not a
    transcript's ``$`` lines."""
    commands, fence, block, lines = [], None, False, page.read_text().splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        # An indented block follows a blank line (not a list item's next line).
        block = line.startswith("    ") and (block or i == 0 or not lines[i - 1].strip())
        if line.startswith("```"):
            fence = None if fence is not None else line[3:]
        elif (text := line if fence == "sh" else line[4:] if block else None) \
                and (text.startswith(PROGRAMS) or re.match(r"[A-Z_]+=\S+ ", text)):
            while text.endswith("\\"):
                i += 1
                text = text[:-1].rstrip() + " " + lines[i].strip()
            commands.append(text)
        i += 1
    return commands


def usersvc_commands() -> list[str]:
    return [c for page in DOCS for c in block_commands(page) if c.startswith("usersvc ")]


def test_every_command_the_docs_show_is_run_or_said_why_not():
    """A WSGI server's command is run as written from a clone's root by
    test_wsgi_servers; usersvc's by the test below; the README's webhook
    receiver's by test_readme_webhooks; the rest are in ``NOT_RUN``, each
    with its reason."""
    sys.path.insert(0, str(ROOT / "tests"))
    from test_readme_webhooks import shown_commands as webhooks_commands
    from test_wsgi_servers import shown_commands
    servers = {c for server in ("gunicorn", "uwsgi", "granian") for c in shown_commands(server)}
    run = servers | set(webhooks_commands())
    shown = [c for page in DOCS for c in block_commands(page)]
    assert len(shown) > 15 and len(usersvc_commands()) >= 4
    assert [c for c in shown if c not in run and c not in usersvc_commands()
            and c not in NOT_RUN] == []
    assert [c for c in NOT_RUN if c not in shown] == []      # (no reason outlives its command)


@pytest.mark.parametrize("command", usersvc_commands())
def test_each_usersvc_command_the_docs_show_serves_or_copies(command, tmp_path, postgres_url):
    """As written, from a clone's root, but for the database (the docs'
    ``db.internal`` or local ``users`` is the test server's) and the ports
    (free ones): a server answers, metrics too if asked, and stops on
    SIGTERM with 0; a copy carries a SQLite file's users over."""
    import os
    import shlex
    import signal
    import subprocess

    from conftest import Client
    from helpers import call, clone_root, free_port
    clone_root(tmp_path)
    port, metrics_port = free_port(), free_port()
    words = [postgres_url if w.startswith("postgresql://") else w for w in shlex.split(
             command.replace("--port 8081", f"--port {port}")
                    .replace("--metrics-port 9101", f"--metrics-port {metrics_port}"))]
    usersvc = [sys.executable, "-m", "usersvc.serving.cli"]     # (the installed script's module)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if words[1] == "copy":
        assert words[2] == "sqlite:///users.db"
        source = make_app(f"sqlite:///{tmp_path}/users.db")
        Client(source).create("Ada", "ada@example.org")
        source.close()
        done = subprocess.run([*usersvc, *words[1:]], cwd=tmp_path, capture_output=True,
                              text=True, timeout=120, env=env)
        assert done.returncode == 0, done.stderr
        copied = make_app(postgres_url)
        assert [u["name"] for u in Client(copied).get("/users").json] == ["Ada"]
        copied.close()
        return
    process = subprocess.Popen([*usersvc, *words[1:]], cwd=tmp_path, text=True, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        line = process.stdout.readline()
        assert line.startswith(f"usersvc serving http://127.0.0.1:{port}/"), line
        assert call(("127.0.0.1", port), "GET", "/healthz")[0] == 200
        if "--metrics-port" in command:
            assert call(("127.0.0.1", metrics_port), "GET", "/metrics")[0] == 200
    finally:
        process.send_signal(signal.SIGTERM)
        _, errors = process.communicate(timeout=30)
    assert process.returncode == 0, errors
