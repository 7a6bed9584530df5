"""This release: its version, from the package's metadata (``usersvc
--version``, ``/healthz``, ``usersvc_build_info``), and how to add one of
its extras to it, for the one-line error a missing one gives."""
from __future__ import annotations

import os
from importlib import metadata

try:
    VERSION = metadata.version("usersvc")
except metadata.PackageNotFoundError:     # run from a checkout that was never installed
    VERSION = "unknown"


def install_hint(extra: str) -> str:
    """How to add ``extra`` (``postgres``, ``metrics``), as usersvc was
    installed: from a checkout (its ``setup.cfg`` beside the package) or
    from a wheel."""
    checkout = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if os.path.exists(os.path.join(checkout, "setup.cfg")):
        return f"pip install -e '.[{extra}]' in {checkout}"
    return f"pip install 'usersvc[{extra}]'"
