"""``usersvc copy SOURCE_URL DEST_URL``: every user from one store to another.

(The module is ``transfer``, not ``copy``: that name is the standard library's.)

    usersvc copy sqlite:///users.db postgresql://db.internal/users

Ids and versions are kept (so links and ETags that clients hold stay true),
and the destination's next id continues above the highest id the source ever
handed out, deleted ones included: no id is reused across the move. The copy
refuses a destination that already holds users. It reads the source page by
page and writes each page in one transaction; stop the servers that write to
the source first, or users written during the copy may be missed.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import TextIO

from .storage import StoreError, UserStore, open_store, redact

BATCH = 1000


class DestinationNotEmpty(StoreError):
    """``copy`` writes only into a store without users."""


def copy_users(source: UserStore, dest: UserStore, *, batch: int = BATCH,
               progress: Callable[[int, int, int], None] | None = None) -> int:
    """Copy every user; returns how many. ``progress(copied, id, last_id)``
    is called after each batch."""
    if dest.list(limit=1):
        raise DestinationNotEmpty("The destination already holds users; copy only into an empty store.")
    last_id = source.last_id()
    copied = after = 0
    while page := source.list(after=after, limit=batch):
        dest.restore(page)
        copied += len(page)
        after = page[-1].id
        if progress is not None:
            progress(copied, after, max(last_id, after))
    dest.restore([], last_id=max(last_id, after))
    return copied


def main(argv: Sequence[str] | None = None, *, stderr: TextIO | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="usersvc copy",
        description="Copy every user from one store to an empty one, keeping ids.")
    p.add_argument("source", metavar="SOURCE_URL", help="e.g. sqlite:///users.db")
    p.add_argument("dest", metavar="DEST_URL", help="e.g. postgresql://127.0.0.1/users")
    p.add_argument("--batch", type=int, default=BATCH, metavar="N",
                   help="users per transaction (default: %(default)s)")
    args = p.parse_args(argv)
    if args.batch < 1:
        p.error("--batch must be at least 1")
    err = stderr or sys.stderr
    stores: list[UserStore] = []
    try:
        for url, create in ((args.source, False), (args.dest, True)):
            try:
                stores.append(open_store(url, create=create))
            except Exception as e:
                print(f"usersvc copy: cannot open {redact(url)}: {e}", file=err)
                return 2
        show = _progress(err) if err.isatty() else None
        try:
            copied = copy_users(*stores, batch=args.batch, progress=show)
        except StoreError as e:
            if show:
                err.write("\n")
            print(f"usersvc copy: {e}", file=err)
            return 1
        if show:
            err.write("\n")
        print(f"usersvc copy: copied {copied:,} users from {redact(args.source)} "
              f"to {redact(args.dest)}; new ids start at {stores[1].last_id() + 1:,}", file=err)
        return 0
    finally:
        for store in stores:
            store.close()


def _progress(err: TextIO) -> Callable[[int, int, int], None]:
    def show(copied: int, at_id: int, last_id: int) -> None:
        share = at_id / last_id if last_id else 1.0
        err.write(f"\r{copied:,} users copied, up to id {at_id:,} of {last_id:,} ({share:.0%})")
        err.flush()
    return show
