"""The docs name tests and files that exist: docs/conformance.md maps each
RFC rule to tests, docs/security.md each claim, and a reader following
them must find them."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

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
