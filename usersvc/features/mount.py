"""Deprecated: ``Mount`` is ``usersvc.serving.mount``'s (still
``usersvc.Mount``), as it is no feature but WSGI around the app, which a
server adds. This module is kept for this release; it warns when imported."""
from __future__ import annotations

import warnings

from ..serving.mount import Mount, moved_under

__all__ = ["Mount", "moved_under"]

warnings.warn("usersvc.features.mount is deprecated: import Mount from usersvc "
              "(or usersvc.serving.mount)", DeprecationWarning, stacklevel=2)
