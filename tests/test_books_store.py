"""The store contract (``store_contract``) on the example books store: a
store for another collection joins the suite with one fixture."""
from __future__ import annotations

import pytest
from books import MemoryBookStore
from store_contract import *  # noqa: F403  (the suite's tests)
from store_contract import Contract


@pytest.fixture
def contract():
    return Contract(MemoryBookStore(), lambda text: {"title": text})
