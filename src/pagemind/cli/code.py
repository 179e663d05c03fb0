"""``pagemind complete DIR FILE[:LINE]``: code completion with the code method (``pagemind ask DIR QUESTION`` is
the ``ask`` command with a directory)."""

from __future__ import annotations

import json
from typing import Any

import click

from ..methods.code import Completion, parse_target
from .main_errors import handle_errors
from .options import SectionedCommand, llm_options, reader_options, session, split_method_options


def print_completion(done: Completion, prompt_only: bool, trace: bool, as_json: bool) -> None:
    if as_json:
        data = done.as_dict()
        if trace:
            data["trace"] = [e.__dict__ for e in done.trace.events]
        click.echo(json.dumps(data, ensure_ascii=False, indent=2))
        return
    if trace:
        for f in done.fragments:
            rel = "" if f["s_rel"] is None else f", s_rel {f['s_rel']:.4f}"
            click.echo(f"fragment {f['index']}: {', '.join(f['paths'])} lines {f['start']}-{f['end']} "
                       f"(s_ind {f['s_ind']:.4f}{rel})", err=True)
    click.echo(done.prompt if prompt_only else done.text)
    usage = done.trace.usage
    click.echo(f"[code] {done.path}:{done.line} | {len(done.fragments)} fragments ({done.context_tokens} tokens), "
               f"file {done.code_tokens} tokens | {usage.calls} LLM calls ({usage.cached_calls} cached), "
               f"{usage.prompt_tokens}+{usage.completion_tokens} tokens, {usage.seconds:.1f}s", err=True)
    for note in done.notes:
        click.echo(f"note: {note}", err=True)


@click.command(cls=SectionedCommand)
@click.argument("directory", type=click.Path(file_okay=False))
@click.argument("target", metavar="FILE[:LINE]")
@click.option("--prompt-only", is_flag=True, help="print the RepoCoder prompt and stop (no model call)")
@click.option("--trace", is_flag=True, help="print the fragments shown, with their scores")
@click.option("--json", "as_json", is_flag=True, help="print the completion, prompt and details as JSON")
@reader_options("code")
@llm_options
@click.pass_context
@handle_errors
def complete(ctx: click.Context, directory: str, target: str, prompt_only: bool, trace: bool, as_json: bool,
             encoding: str, **kw: Any) -> None:
    """Complete line LINE of FILE (1-based; without LINE: after its last line) with code retrieved from the
    Python files of DIRECTORY: FragRel's code-structure relation over RepoCoder windows and prompt.

    FILE is a path, or a path relative to DIRECTORY. The file's own lines from LINE on are never retrieved.

    \b
    pagemind complete src/ src/pkg/module.py:42
    pagemind complete src/ new_file.py --prompt-only
    """
    if encoding.lower().replace("_", "-") not in ("utf-8", "utf8"):
        raise click.UsageError("source files are read as UTF-8; --encoding does not apply to complete")
    file, line = parse_target(target)
    _, opts = split_method_options(kw, "code")
    with session(ctx, kw) as pm:
        done = pm.complete(directory, file, line, prompt_only=prompt_only, **opts)
    print_completion(done, prompt_only, trace, as_json)
