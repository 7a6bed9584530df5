"""The ``usersvc`` command: ``usersvc [serve] [options]`` runs the server
(what ``serve.py`` runs), ``usersvc copy SOURCE_URL DEST_URL`` moves users
between stores."""
from __future__ import annotations

import difflib
import sys
from collections.abc import Sequence

COMMANDS = ("serve", "copy")


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["copy"]:
        from .transfer import main as copy
        return copy(args[1:])
    if args[:1] == ["serve"]:
        args = args[1:]
    from .server import main as serve, parser
    if args and not args[0].startswith("-"):
        # Neither an option nor a command: argparse's usage line and error, exit 2.
        close = difflib.get_close_matches(args[0], COMMANDS, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        parser(commands=True).error(f"invalid command {args[0]!r}: choose from "
                       f"{', '.join(map(repr, COMMANDS))}{hint}")
    return serve(args, commands=True)


if __name__ == "__main__":
    sys.exit(main())
