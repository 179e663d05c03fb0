"""``pagemind store copy SRC DST``: move a store between SQLite and Postgres (the work is ``store.copy``)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .main_errors import handle_errors


@click.group()
def store() -> None:
    """Move a store: SQLite files and Postgres databases (postgresql://user@host/db)."""


@store.command("copy")
@click.argument("src")
@click.argument("dst")
@click.option("--merge", is_flag=True,
              help="DST may hold data: add the documents, memories, embeddings and cached replies it lacks (agents, "
                   "users and runs only if it has none)")
@handle_errors
def copy(src: str, dst: str, merge: bool) -> None:
    """Copy everything of the store SRC into DST (a new SQLite file or an empty Postgres database), then compare
    the rows of every table; exits 1 if any count differs.

    \b
    pagemind store copy ~/.local/share/pagemind/pagemind.db postgresql://me@db.example/pagemind
    pagemind store copy postgresql://me@db.example/pagemind backup.db
    """
    from ..errors import InputError
    from ..store import open_store
    from ..store.copy import copy_store

    if "://" not in src and not Path(src).is_file():
        raise InputError(f"{src}: no such store (SRC is a SQLite file or a postgresql:// URL)")
    source = open_store(src)
    try:
        destination = open_store(dst)
        try:
            report = copy_store(source, destination, merge=merge)
        finally:
            destination.close()
    finally:
        source.close()
    click.echo(f"{'table':<16}{'source':>9}{'before':>9}{'copied':>9}{'after':>9}")
    for t in report.tables:
        click.echo(f"{t.table:<16}{t.source:>9}{t.before:>9}{t.copied:>9}{t.after:>9}"
                   + ("" if t.ok else "  DIFFERS"))
    if not report.ok:
        click.echo("error: the destination's counts do not match the source's (tables marked DIFFERS)", err=True)
        sys.exit(1)
    click.echo(f"copied {sum(t.copied for t in report.tables):,} rows; every table's count matches")
