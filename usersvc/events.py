"""Deprecated: the feed as Server-Sent Events is the waiting feature's,
``usersvc.features.waiting.events``. This module is kept for this
release; it warns when imported."""
from __future__ import annotations

import warnings

from .features.waiting.events import *  # noqa: F403
from .features.waiting.events import __all__  # noqa: F401

warnings.warn("usersvc.events is deprecated: import it from usersvc.features.waiting.events",
              DeprecationWarning, stacklevel=2)
