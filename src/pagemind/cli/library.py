"""``pagemind add NAME PATHS…`` and ``pagemind libraries`` (list, ``show``, ``rm``): named sets of documents asked
as one (``pagemind ask NAME "…"``)."""

from __future__ import annotations

import json
import time
from typing import Any

import click

from .main_errors import handle_errors
from .options import llm_options, session


@click.command()
@click.argument("name")
@click.argument("files", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="what changed, as JSON")
@llm_options
@click.pass_context
@handle_errors
def add(ctx: click.Context, name: str, files: tuple[str, ...], as_json: bool, encoding: str, **kw: Any) -> None:
    """Put files and folders in the library NAME (made when new). A folder's documents (.txt .md .html .pdf .epub
    .docx ...) are named by their path inside it. A document added again under the same name with another text is
    updated. Nothing is built here: asking builds the documents not built yet, and only those.

    \b
    pagemind add reports ~/reports/              # every document in the folder
    pagemind add reports q3.pdf q4.pdf           # more (or newer versions of) documents
    pagemind ask reports "Which quarter had the highest churn?" -m rag
    pagemind libraries show reports
    """
    with session(ctx, kw) as pm:
        changes, skipped = pm.add(name, list(files), encoding=encoding)
    if as_json:
        click.echo(json.dumps({"library": name, "documents": [c.__dict__ for c in changes],
                               "skipped": [s.__dict__ for s in skipped]}, indent=2))
        return
    for c in changes:
        click.echo(f"{c.status:9}  {c.name} ({c.words:,} words)")
    for s in skipped:
        click.echo(f"skipped    {s.path}: {s.reason}", err=True)
    added = sum(c.status != "unchanged" for c in changes)
    click.echo(f"library {name}: {added} document(s) added or updated, {len(changes) - added} unchanged", err=True)


@click.group(invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="the libraries as JSON")
@llm_options
@click.pass_context
@handle_errors
def libraries(ctx: click.Context, as_json: bool, encoding: str, **kw: Any) -> None:
    """List your libraries: name, documents, words.

    \b
    pagemind libraries
    pagemind libraries show reports
    pagemind libraries rm reports q3.pdf      # one document (its memories go when nothing else holds it)
    pagemind libraries rm reports             # the whole library
    """
    if ctx.invoked_subcommand is not None:
        ctx.obj = {**(ctx.obj or {}), "kw": kw}
        return
    with session(ctx, kw) as pm:
        rows = pm.libraries()
    if as_json:
        click.echo(json.dumps([r.__dict__ for r in rows], indent=2))
        return
    if not rows:
        click.echo("no libraries (pagemind add NAME FILES… makes one)")
    for r in rows:
        click.echo(f"{r.name}  {r.documents} document(s), {r.words:,} words")


def _given(ctx: click.Context, kw: dict[str, Any]) -> dict[str, Any]:
    """The model and store flags of a ``libraries`` subcommand: those given to the group, with those given to the
    subcommand itself over them (``libraries show X --store S`` and ``libraries --store S show X`` alike)."""
    from click.core import ParameterSource

    mine = {k: v for k, v in kw.items() if ctx.get_parameter_source(k) not in (None, ParameterSource.DEFAULT)}
    return {**dict((ctx.obj or {}).get("kw", {})), **mine}


@libraries.command("show")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True)
@llm_options
@click.pass_context
@handle_errors
def show(ctx: click.Context, name: str, as_json: bool, **kw: Any) -> None:
    """List the documents of the library NAME: name, words, where it was read from, when it was added."""
    with session(ctx, _given(ctx, kw)) as pm:
        rows = pm.library_documents(name)
    if as_json:
        click.echo(json.dumps([r.__dict__ for r in rows], indent=2))
        return
    for r in rows:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(r.added))
        click.echo(f"{r.name}  {r.words:,} words  {r.document_id[:12]}  {when}" + (f"  {r.origin}" if r.origin else ""))


@libraries.command("rm")
@click.argument("name")
@click.argument("documents", nargs=-1)
@llm_options
@click.pass_context
@handle_errors
def remove(ctx: click.Context, name: str, documents: tuple[str, ...], **kw: Any) -> None:
    """Remove DOCUMENTS (their names in the library) from the library NAME, or the whole library when none are
    named. A document no other library (or service user) holds is forgotten with every memory of it."""
    with session(ctx, _given(ctx, kw)) as pm:
        gone = pm.remove(name, list(documents))
    click.echo(f"removed {len(gone)} document(s) from {name}" + ("" if documents else f"; library {name} deleted"))
