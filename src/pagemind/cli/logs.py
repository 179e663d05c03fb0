"""``pagemind logs``: the runs recorded by the CLI and the Python API (every index, ask and agent turn), one line
each, and one run's steps."""

from __future__ import annotations

import json
import time
from typing import Any

import click

from ..api import Pagemind
from ..config import resolve_settings
from ..runs import KINDS, summarize
from ..steps import as_json as step_json
from ..steps import from_row, line
from .main_errors import handle_errors
from .options import setting_flags

store_option = setting_flags("store")  # the store flag as the settings declare it


def _when(t: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) if t else "-"


def _what(request: dict[str, Any], kind: str) -> str:
    if kind == "turn":
        return f"{request.get('agent', '')}: {request.get('message', '')}"
    if kind == "consolidate":
        return f"{request.get('agent', '')}: consolidation"
    if kind == "ask":
        return f"{request.get('document', '')}: {request.get('question', '')}"
    return str(request.get("document", ""))


def _line(run: Any) -> str:
    took = f"{run.finished - run.started:.1f}s" if run.finished and run.started else ""
    what = _what(run.request, run.kind).replace("\n", " ")
    if len(what) > 70:
        what = what[:67] + "..."
    return f"{run.id}  {_when(run.created)}  {run.kind:5}  {run.method or '-':12}  {run.status:9} {took:>7}  {what}"


@click.group(invoke_without_command=True)
@click.option("-n", "--count", default=20, show_default=True, help="how many runs, newest first")
@click.option("--kind", type=click.Choice(KINDS), default=None, help="only runs of this kind")
@click.option("--json", "as_json", is_flag=True, help="as JSON")
@store_option
@click.pass_context
@handle_errors
def logs(ctx: click.Context, count: int, kind: str | None, as_json: bool, store: str | None) -> None:
    """The runs recorded here, newest first: every pagemind index, ask, chat (the document's build, each question,
    each agent turn) and agent say, and the Python API's index, ask and send without a user_id. Runs of
    pagemind serve and pagemind mcp belong to their users: /v1/runs and the viewer list those. Nothing is
    recorded while record_runs is off (PAGEMIND_RECORD_RUNS=false).

    \b
    pagemind logs                  # the last 20 runs, one line each
    pagemind logs show run_3f2a…   # one run: its request, every step, its result
    pagemind logs show --last      # the newest run
    """
    if ctx.invoked_subcommand is not None:
        ctx.obj = {**(ctx.obj or {}), "store": store}
        return
    with Pagemind(settings=resolve_settings(store=store)) as pm:
        found = pm.runs.list(None, kind=kind, limit=count)
    if as_json:
        click.echo(json.dumps([r.__dict__ for r in found], indent=2, default=str))
    elif not found:
        click.echo("no recorded runs yet (pagemind ask, index, chat and agent say record them unless "
                   "PAGEMIND_RECORD_RUNS=false)")
    for run in [] if as_json else found:
        click.echo(_line(run))


@logs.command("show")
@click.argument("run_id", required=False)
@click.option("--last", is_flag=True, help="the newest run")
@click.option("--json", "as_json", is_flag=True, help="the run and all its steps as JSON")
@click.pass_context
@handle_errors
def show(ctx: click.Context, run_id: str | None, last: bool, as_json: bool) -> None:
    """One run: what was asked, every step (LLM calls with tokens and seconds, decisions, phases, agent steps)
    and the result."""
    with Pagemind(settings=resolve_settings(store=(ctx.obj or {}).get("store"))) as pm:
        runs = pm.runs
        if last or not run_id:
            newest = runs.list(None, limit=1)
            if not newest:
                raise click.UsageError("no recorded runs yet")
            run_id = newest[0].id
        run = runs.get(run_id)
        if run is None:  # a prefix of one run's id
            found = runs.list(None, prefix=run_id, limit=2)
            if len(found) > 1:
                raise click.UsageError(f"{run_id!r} begins the ids of several runs; give more of the id")
            run = found[0] if found else None
        if run is None:
            raise click.UsageError(f"no run {run_id!r} (pagemind logs lists them)")
        steps = runs.steps(run.id)
    if as_json:
        shown = {**run.__dict__, "steps": [step_json(from_row(s)) for s in steps]}
        click.echo(json.dumps(shown, indent=2, default=str))
        return
    click.echo(_line(run))
    click.echo(f"request: {json.dumps(run.request, default=str)}")
    for step in steps:
        click.echo(f"{step.seq:4}  {line(from_row(step))}")
    usage = summarize(steps)
    click.echo(f"cost: {usage['calls']} calls ({usage['cached_calls']} cached), {usage['prompt_tokens']:,} prompt + "
               f"{usage['completion_tokens']:,} completion tokens, {usage['seconds']:.1f}s")
    if run.error:
        click.echo(f"error: {run.error}")
