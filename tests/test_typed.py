"""The README's "Types": the package ships ``py.typed``, so an embedder's
``mypy --strict`` reads usersvc's annotations, and says what the README's
example says it says, line by line."""
from __future__ import annotations

import configparser
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MYPY = Path(sys.executable).parent / "mypy"


def example() -> str:
    """The README's first Python block under "### Types"."""
    section = (ROOT / "README.md").read_text().split("### Types\n", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_wheel_lists_py_typed_beside_the_package():
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    assert "py.typed" in config["options.package_data"]["usersvc"].split(",")
    assert (ROOT / "usersvc" / "py.typed").is_file()


def test_an_embedders_checker_sees_what_the_readme_shows(tmp_path):
    # The package as a wheel installs it, in a virtual environment of its own:
    # a checker reads an installed package's types only where it has py.typed.
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", tmp_path / "venv"],
                   check=True, timeout=60)
    python = tmp_path / "venv" / "bin" / "python"
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          check=True, capture_output=True, text=True, timeout=30).stdout.strip()
    shutil.copytree(ROOT / "usersvc", Path(site) / "usersvc",
                    ignore=shutil.ignore_patterns("__pycache__"))
    code = example()
    (tmp_path / "embedder.py").write_text(code)
    run = subprocess.run([MYPY, "--strict", "--python-executable", python, "--cache-dir",
                          tmp_path / "cache", "--no-error-summary", "embedder.py"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    said = {int(n): text for n, text in re.findall(r"^embedder\.py:(\d+): (.*?)(?:  \[[a-z-]+\])?$",
                                                    run.stdout, re.MULTILINE)}
    shown = {n: line.split("# ", 1)[1] for n, line in enumerate(code.splitlines(), 1)
             if "# " in line}
    assert len(shown) >= 3 and said == shown, run.stdout


def test_the_readmes_type_and_lint_commands_find_nothing(tmp_path):
    """The two commands the README shows (``.ci/run`` runs them too), as
    written, from the clone's root, with this suite's environment's tools."""
    readme = (ROOT / "README.md").read_text()
    commands = re.findall(r"^    (\.venv/bin/(?:mypy|ruff)\b.*)$", readme, re.MULTILINE)
    assert len(commands) == 2
    for command in commands:
        program, *args = command.split()
        run = subprocess.run([MYPY.parent / Path(program).name, *args], cwd=ROOT,
                             capture_output=True, text=True, timeout=300,
                             env={"PATH": "/usr/bin:/bin", "MYPY_CACHE_DIR": str(tmp_path)})
        assert run.returncode == 0, (command, run.stdout, run.stderr)
