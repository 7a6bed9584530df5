"""``usersvc copy SOURCE_URL DEST_URL``: every collection from one store to
another (the module is not ``copy``: that name is the standard library's).

    usersvc copy sqlite:///users.db postgresql://db.internal/users

The collections are those the source recorded (``copy_store`` takes open
stores, for others). The copy walks the source's feed, so ids, versions
and feed positions are kept (links, ETags and a client following the feed
stay true), and each next id and position continue above the highest the
source handed out. A destination that holds records is refused; each page
is written in one transaction. Stop the servers that write to the source
first, or records written during the copy may be missed.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Protocol, TextIO

from ..settings import SettingError, imported
from ..storage import RecordStore, Storage, StoreError, open_store, redact
from ..storage.protocol import ChangeFeed

BATCH = 1000


class DestinationNotEmpty(StoreError):
    """``copy`` writes only into a store without records."""


class FedRecords(RecordStore, ChangeFeed, Protocol):
    """One collection's records with their change feed, which the copy walks."""


class FedStorage(Storage, Protocol):
    """A store whose collections keep a change feed: each of usersvc's does."""

    def __getitem__(self, plural: str) -> FedRecords: ...


def copy_store(source: FedStorage, dest: FedStorage, *, batch: int = BATCH,
               progress: Callable[[int, int, int], None] | None = None) -> dict[str, int]:
    """Copy every collection of ``source``; how many records of each."""
    for schema in source.schemas:
        if dest[schema.plural].list(limit=1):
            raise DestinationNotEmpty(f"The destination already holds {schema.plural}; "
                                      "copy only into an empty store.")
    return {s.plural: copy_records(source[s.plural], dest[s.plural], batch=batch,
                                   progress=progress) for s in source.schemas}


def copy_records(source: FedRecords, dest: FedRecords, *, batch: int = BATCH,
                 progress: Callable[[int, int, int], None] | None = None) -> int:
    """Copy every record of one collection; returns how many.
    ``progress(copied, id, last_id)`` is called after each batch."""
    if dest.list(limit=1):
        raise DestinationNotEmpty(f"The destination already holds {dest.schema.plural}; "
                                  "copy only into an empty store.")
    last_id, last_seq = source.last_id(), source.position()
    copied = seq = 0
    while page := source.changes(after=seq, limit=batch):
        dest.restore_changes(page)
        copied += sum(c.record is not None for c in page)
        seq = page[-1].seq
        if progress is not None:
            progress(copied, seq, max(last_seq, seq))
    dest.restore([], last_id=last_id)
    return copied


def main(argv: Sequence[str] | None = None, *, stderr: TextIO | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="usersvc copy",
        description="Copy every collection from one store to an empty one, keeping ids.")
    p.add_argument("source", metavar="SOURCE_URL", help="e.g. sqlite:///users.db")
    p.add_argument("dest", metavar="DEST_URL", help="e.g. postgresql://127.0.0.1/users")
    p.add_argument("--batch", type=int, default=BATCH, metavar="N",
                   help="records per transaction (default: %(default)s)")
    p.add_argument("--kinds", action="append", default=[], metavar="MODULE",
                   help="import MODULE first, for the kinds of field of your own it defines "
                        "(each joins usersvc's when its class is defined); repeat for more")
    args = p.parse_args(argv)
    if args.batch < 1:
        p.error("--batch must be at least 1")
    err = stderr or sys.stderr
    try:
        for module in args.kinds:
            imported(module, "kinds")
    except SettingError as e:
        print(f"usersvc copy: --kinds {e.problem}", file=err)
        return 2
    stores: list[FedStorage] = []
    try:
        for url, create in ((args.source, False), (args.dest, True)):
            try:
                collections = None if not stores else stores[0].schemas
                # (open_store's stores are usersvc's: each collection keeps a feed)
                stores.append(open_store(url, collections, create=create))  # type: ignore[arg-type]
            except Exception as e:
                print(f"usersvc copy: cannot open {redact(url)}: {e}", file=err)
                return 2
        show = _progress(err) if err.isatty() else None
        try:
            copied = copy_store(*stores, batch=args.batch, progress=show)
        except StoreError as e:
            if show:
                err.write("\n")
            print(f"usersvc copy: {e}", file=err)
            return 1
        if show:
            err.write("\n")
        for plural, count in copied.items():
            print(f"usersvc copy: copied {count:,} {plural} from {redact(args.source)} to "
                  f"{redact(args.dest)}; new ids start at {stores[1][plural].last_id() + 1:,}",
                  file=err)
        return 0
    finally:
        for store in stores:
            store.close()


def _progress(err: TextIO) -> Callable[[int, int, int], None]:
    def show(copied: int, at_id: int, last_id: int) -> None:
        share = at_id / last_id if last_id else 1.0
        err.write(f"\r{copied:,} records copied, up to position {at_id:,} of {last_id:,} "
                  f"({share:.0%})")
        err.flush()
    return show
