"""The ``usersvc`` command: ``usersvc [serve] [options]`` runs the server
(what ``serve.py`` runs), ``usersvc copy SOURCE_URL DEST_URL`` moves users
between stores."""
from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["copy"]:
        from .transfer import main as copy
        return copy(args[1:])
    if args[:1] == ["serve"]:
        args = args[1:]
    from .server import main as serve
    return serve(args)


if __name__ == "__main__":
    sys.exit(main())
