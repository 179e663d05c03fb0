"""``pagemind users``: the users of ``pagemind serve`` and their API keys; per-user export and erase."""

from __future__ import annotations

import json
import time
from pathlib import Path

import click

from ..api import Pagemind
from ..config import resolve_settings
from .logs import store_option
from .main_errors import handle_errors


def _open(ctx: click.Context) -> Pagemind:
    return Pagemind(settings=resolve_settings(store=(ctx.obj or {}).get("store")))


@click.group()
@store_option
@click.pass_context
def users(ctx: click.Context, store: str | None) -> None:
    """Users of `pagemind serve`: each request carries one of its user's API keys.

    \b
    pagemind users create ann        # prints ann's API key once (only its hash is stored)
    pagemind users list
    pagemind users key ann           # one more key for ann
    pagemind users export ann -o ann.json
    pagemind users erase ann --yes   # everything of ann's, nothing else; the account stays
    """
    ctx.obj = {**(ctx.obj or {}), "store": store}


@users.command("create")
@click.argument("name")
@click.pass_context
@handle_errors
def create(ctx: click.Context, name: str) -> None:
    """Create user NAME and print their API key (shown this once)."""
    with _open(ctx) as pm:
        user, key = pm.users.create(name)
    click.echo(f"user {user.name} (id {user.id}) created. API key, shown only now:", err=True)
    click.echo(key)


@users.command("key")
@click.argument("name")
@click.pass_context
@handle_errors
def key(ctx: click.Context, name: str) -> None:
    """Give user NAME one more API key and print it (shown this once)."""
    with _open(ctx) as pm:
        click.echo(pm.users.add_key(name))


@users.command("list")
@click.pass_context
@handle_errors
def list_(ctx: click.Context) -> None:
    """Every user, with how many documents, agents and runs they have."""
    with _open(ctx) as pm:
        found = pm.users.all()
        if not found:
            click.echo("no users yet (pagemind users create NAME)")
        for u in found:
            held = pm.users.holdings(u.id)
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(u.created))
            click.echo(f"{u.id:4}  {u.name:20}  {held['documents']} documents, {held['agents']} agents, "
                       f"{held['runs']} runs  (since {when})")


@users.command("export")
@click.argument("name")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="write the archive here (default: standard output)")
@click.pass_context
@handle_errors
def export(ctx: click.Context, name: str, output: Path | None) -> None:
    """Everything of user NAME as one JSON archive: documents with their texts, agents, runs with their steps."""
    with _open(ctx) as pm:
        archive = pm.users.export(pm.users.get(name).id)
    text = json.dumps(archive, indent=1, default=str)
    if output is None:
        click.echo(text)
    else:
        output.write_text(text, encoding="utf-8")
        click.echo(f"wrote {output}: {len(archive['documents'])} documents, {len(archive['agents'])} agents, "
                   f"{len(archive['runs'])} runs", err=True)


@users.command("erase")
@click.argument("name")
@click.option("--yes", is_flag=True, help="do it (without it, say what would be deleted)")
@click.pass_context
@handle_errors
def erase(ctx: click.Context, name: str, yes: bool) -> None:
    """Delete everything of user NAME (documents they alone hold, with their memories; agents; runs) and nothing
    else. Their account and keys stay."""
    with _open(ctx) as pm:
        user = pm.users.get(name)
        if not yes:
            held = pm.users.holdings(user.id)
            raise click.UsageError(f"this deletes {name}'s {held['documents']} documents, {held['agents']} agents "
                                   f"and {held['runs']} runs; add --yes to do it")
        counts = pm.users.erase(user.id)
    click.echo("deleted " + ", ".join(f"{n} {what.replace('_', ' ')}" for what, n in counts.items()))
