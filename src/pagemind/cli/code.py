"""``pagemind complete DIR FILE[:LINE]`` and the directory branch of ``pagemind ask DIR QUESTION`` (``main``
registers ``complete`` and sends a directory given to ``ask`` to :func:`ask_directory`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import click

from ..methods.code import Completion, ask_repository, complete_file, parse_target
from .main_errors import handle_errors
from .options import METHOD_FLAGS, NEGATIVE_FLAGS, llm_options, session
from .render import print_answer

# flags of ``pagemind ask`` that mean something for a directory: CLI name -> CodeOptions field
ASK_FLAGS = {"budget": "budget", "scorer": "scorer", "fragrel": "fragrel", "alpha": "alpha", "top_k": "top_k",
             "top_m": "top_m", "min_weight": "min_weight", "no_fragrel": "fragrel"}


def code_options(fn: Callable) -> Callable:
    for option in reversed([
        click.option("--scorer", type=click.Choice(["bm25", "jaccard"]),
                     help="s_ind: BM25 (FragRel) or token-set Jaccard (RepoCoder) [default bm25]"),
        click.option("--no-fragrel", is_flag=True, help="rank by s_ind alone (no code-structure relation)"),
        click.option("--alpha", type=float, help="FragRel: weight of the environment score [default 0.5]"),
        click.option("--top-k", type=int, help="most fragments shown [default 10]"),
        click.option("--top-m", type=int, help="FragRel candidates re-scored with the relation [default 50]"),
        click.option("--min-weight", type=float,
                     help="code relation: paths lighter than this count as unrelated [default 0.01; 0: exact]"),
        click.option("--budget", type=int, help="tokens of the retrieved fragments [default 2000]"),
        click.option("--file-budget", type=int, help="tokens of the current file's last lines [default 2000]"),
        click.option("--max-tokens", type=int, help="tokens the model may write [default 128]"),
        click.option("--max-lines", type=int, help="most completed lines returned [default 8]"),
        click.option("--max-fanout", type=int,
                     help="call edges: most same-named definitions a call links to [default 5]"),
    ]):
        fn = option(fn)
    return fn


def _code_kwargs(kw: dict[str, Any]) -> dict[str, Any]:
    opts = {name: kw.pop(name) for name in ("scorer", "alpha", "top_k", "top_m", "min_weight", "budget",
                                            "file_budget", "max_tokens", "max_lines", "max_fanout")}
    if kw.pop("no_fragrel"):
        opts["fragrel"] = False
    return opts


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


@click.command()
@click.argument("directory", type=click.Path(file_okay=False))
@click.argument("target", metavar="FILE[:LINE]")
@code_options
@click.option("--prompt-only", is_flag=True, help="print the RepoCoder prompt and stop (no model call)")
@click.option("--trace", is_flag=True, help="print the fragments shown, with their scores")
@click.option("--json", "as_json", is_flag=True, help="print the completion, prompt and details as JSON")
@llm_options
@click.pass_context
@handle_errors
def complete(ctx: click.Context, directory: str, target: str, prompt_only: bool, trace: bool, as_json: bool,
             encoding: str, **kw: Any) -> None:
    """Complete line LINE of FILE (1-based; without LINE: after its last line) with code retrieved from the
    Python files of DIRECTORY: FragRel's code-structure relation over RepoCoder windows and prompt.

    FILE is a path, or a path relative to DIRECTORY. The file's own lines from LINE on are never retrieved."""
    if encoding.lower().replace("_", "-") not in ("utf-8", "utf8"):
        raise click.UsageError("source files are read as UTF-8; --encoding does not apply to complete")
    file, line = parse_target(target)
    opts = _code_kwargs(kw)
    with session(ctx, kw) as pm:
        done = complete_file(pm, directory, file, line, prompt_only=prompt_only, **opts)
    print_completion(done, prompt_only, trace, as_json)


def ask_directory(ctx: click.Context, directory: str, question: str, options: tuple[str, ...] = (), *,
                  trace: bool = False, as_json: bool = False, kw: dict[str, Any]) -> None:
    """``pagemind ask DIR QUESTION``: pop ``ask``'s method flags from ``kw`` (those of :data:`ASK_FLAGS` become
    code options, any other flag given is a usage error), open the session and print the answer."""
    source = ctx.get_parameter_source("method") if "method" in kw else None
    if kw.pop("method", None) is not None and source not in (None, click.core.ParameterSource.DEFAULT):
        raise click.UsageError("--method does not apply to a directory: it is read with code retrieval")
    opts: dict[str, Any] = {}
    for flag in [*METHOD_FLAGS, *NEGATIVE_FLAGS, *ASK_FLAGS]:
        if flag not in kw:
            continue
        value = kw.pop(flag)
        if value is None or (value is False and flag != "fragrel"):  # --no-fragrel is a choice; others are unset
            continue
        if flag not in ASK_FLAGS:
            takes = ", ".join("--" + f.replace("_", "-") for f in ASK_FLAGS)
            raise click.UsageError(f"--{flag.replace('_', '-')} does not apply to a directory "
                                   f"(code retrieval takes: {takes})")
        if flag == "scorer" and value not in ("bm25", "jaccard"):
            raise click.UsageError("code retrieval scores with bm25 or jaccard")
        opts[ASK_FLAGS[flag]] = False if flag == "no_fragrel" else value
    kw.pop("encoding", None)
    with session(ctx, kw) as pm:
        answer = ask_repository(pm, directory, question, options, **opts)
    print_answer(answer, trace=trace, as_json=as_json)
