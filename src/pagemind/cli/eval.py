"""``pagemind eval DATASET --method M ...``, ``pagemind eval report RUN_DIR`` and ``pagemind eval datasets``.

Registered at the bottom of ``cli/main.py``.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

import click

from ..errors import ConfigError
from ..eval.datasets import base_method, data_origin, data_root, how_to_get
from ..eval.report import markdown, summarise, write_report
from ..eval.rundir import default_run_dir
from ..eval.runner import EvalConfig, Runner, evaluable, option_class
from ..eval.sets import datasets
from .main_errors import handle_errors
from .options import llm_options, session


class DefaultGroup(click.Group):
    """A group whose first word, when it is not one of its commands, goes to the ``default`` command
    (``pagemind eval quality ...`` runs ``pagemind eval run quality ...``), like simonw/llm's DefaultGroup."""

    def __init__(self, *args: Any, default: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.default = default

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["eval_args"] = list(args)
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = [self.default, *args]
        return super().parse_args(ctx, args)


def _pairs(values: tuple[str, ...], what: str) -> dict[str, str]:
    out = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise click.UsageError(f"{what} {item!r}: use KEY=VALUE")
        out[key.strip()] = value.strip()
    return out


def _method_options(values: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """``METHOD:KEY=VALUE`` strings by method."""
    out: dict[str, dict[str, Any]] = {}
    for item in values:
        method, sep, rest = item.partition(":")
        if not sep or base_method(method) not in evaluable():
            raise click.UsageError(f"--option {item!r}: use METHOD:KEY=VALUE with a method of {', '.join(evaluable())}")
        options = option_class(base_method(method))
        for key, value in _pairs((rest,), "--option").items():
            out.setdefault(method, {})[key.replace("-", "_")] = options.coerce(key.replace("-", "_"), value)
    return out


def _command(ctx: click.Context) -> str:
    """The command line as typed (API keys masked), for config.json and the report."""
    args = list(ctx.meta.get("eval_args", []))
    for i, arg in enumerate(args[:-1]):
        if arg == "--api-key":
            args[i + 1] = "***"
    return shlex.join(["pagemind", "eval", *args])


@click.group("eval", cls=DefaultGroup, default="run")
def eval_group() -> None:
    """Evaluate methods on benchmark datasets: `pagemind eval DATASET -m METHOD ...`.

    \b
    pagemind eval quality -m readagent-p -m full --limit 10
    pagemind eval report runs/quality-20250101-120000
    pagemind eval datasets
    """


@eval_group.command("run")
@click.argument("dataset")
@click.option("--method", "-m", "methods", multiple=True, required=True,
              help="a method to evaluate (repeat, or comma-separated, or 'all'; see `pagemind methods`), or memgpt")
@click.option("--data", help="data root, set folder or file [env PAGEMIND_DATA; default: the user data directory, "
                             "where `pagemind data get` puts sets]")
@click.option("--limit", type=int, help="questions to sample (seeded; a larger limit extends the same sample)")
@click.option("--seed", type=int, default=0, show_default=True, help="sampling (and generated-set) seed")
@click.option("--ids", help="only these examples: their ids, comma-separated, as examples.jsonl names them "
                            "(financebench-00684,financebench-00302)")
@click.option("--by-document", is_flag=True, help="sample whole documents (fewer memories to build)")
@click.option("--budget", type=int, help="the same context-token budget for every method (matched cost)")
@click.option("--param", "-p", "params", multiple=True, help="dataset parameter KEY=VALUE (see `eval datasets`)")
@click.option("--option", "-O", "options", multiple=True,
              help="method option METHOD:KEY=VALUE, e.g. readagent-p:max_pages=3 or full:keep=right")
@click.option("--raters", is_flag=True, help="also score free-form answers with ReadAgent's LLM raters (LR-1/LR-2)")
@click.option("--rater-llm",
              help="model for the raters and the MTBench+ and LongMemEval judges [default: the evaluated model]")
@click.option("--run-dir", help="where results go [default runs/<dataset>-<timestamp>]; an existing one resumes")
@click.option("--retry-errors", is_flag=True, help="when resuming, run failed examples again")
@click.option("--unanswerable", is_flag=True,
              help="also ask each question of its document with its evidence removed (an unanswerable variant): the "
                   "report adds abstention precision and recall")
@click.option("--short-answers", is_flag=True,
              help="score the short phrase each question-answering answer gives, in its own words (one more call an "
                   "answer, counted; LoCoMo's QA prompt asks for a short phrase), the answer as given kept beside it")
@click.option("--no-progress", is_flag=True, help="no progress bar on stderr")
@llm_options
@click.pass_context
@handle_errors
def run(ctx: click.Context, dataset: str, methods: tuple[str, ...], data: str | None, limit: int | None, seed: int,
        ids: str | None, by_document: bool, budget: int | None, params: tuple[str, ...], options: tuple[str, ...],
        raters: bool, rater_llm: str | None, run_dir: str | None, retry_errors: bool, unanswerable: bool,
        short_answers: bool, no_progress: bool, encoding: str, **kw: Any) -> None:
    """Run METHODs on DATASET and write examples.jsonl, summary.md/csv/json and plot.png to the run dir."""

    config = EvalConfig(dataset=dataset, methods=methods, data=data, params=_pairs(params, "--param"), limit=limit,
                        seed=seed, budget=budget, raters=raters, by_document=by_document,
                        method_options=_method_options(options), retry_errors=retry_errors,
                        concurrency=kw.get("concurrency"), unanswerable=unanswerable,
                        short_answers=short_answers,
                        ids=tuple(i.strip() for i in (ids or "").split(",") if i.strip()))
    target = Path(run_dir) if run_dir else default_run_dir(dataset)
    with session(ctx, kw) as pm:
        rater = None
        if rater_llm:
            from ..api import Pagemind

            rater = Pagemind(rater_llm, store=pm.store).llm
        runner = Runner(pm, config, target, rater_llm=rater, progress=not no_progress, command=_command(ctx))
        try:
            result = runner.run()
        except KeyboardInterrupt:
            click.echo(f"interrupted: finished examples are saved in {target}; run the same command to resume",
                       err=True)
            sys.exit(130)
        finally:
            if rater is not None:
                rater.backend.close()
    _, warnings = write_report(result.run_dir)
    for warning in warnings:
        click.echo(f"warning: {warning}", err=True)
    click.echo(markdown(summarise(result.run_dir)))
    click.echo(f"{result.finished} answered now ({result.errors} failed), {result.skipped} done before; "
               f"results in {result.run_dir}", err=True)


@eval_group.command("report")
@click.argument("run_dir", type=click.Path(file_okay=False))
@handle_errors
def report(run_dir: str) -> None:
    """Regenerate summary.md/csv/json and plot.png of RUN_DIR from its examples.jsonl."""
    if not Path(run_dir).is_dir():
        raise ConfigError(f"{run_dir}: no such run directory")
    files, warnings = write_report(run_dir)
    for warning in warnings:
        click.echo(f"warning: {warning}", err=True)
    click.echo(markdown(summarise(run_dir)))
    click.echo("wrote " + ", ".join(str(f) for f in files), err=True)


@eval_group.command("datasets")
@click.option("--data", help="data root [env PAGEMIND_DATA; default: the user data directory]")
@handle_errors
def list_datasets(data: str | None) -> None:
    """Every dataset: its metric, parameters, whether its data is found, and how to get what is missing."""
    root = data_root(data)
    click.echo(f"data root: {root} ({data_origin(data)}{'' if root.exists() else '; it does not exist yet'})")
    missing: dict[str, list[str]] = {}
    for name, spec in datasets().items():
        found = not spec.needs_data or (root / spec.default_path).exists() or \
            (root / Path(spec.default_path).parts[0]).is_dir()
        params = ", ".join(f"{k}={','.join(map(str, v)) if isinstance(v, tuple) else v}"
                           for k, v in spec.params.items())
        click.echo(f"{name:13} {'found  ' if found else 'missing'} {spec.primary:9} {spec.description}"
                   + (f"  [-p {params}]" if params else ""))
        if not found:
            missing.setdefault(how_to_get(spec, data), []).append(name)
    if missing:
        click.echo(f"To get the missing sets into {root}:")
        for command, names in missing.items():
            named = command.split()[3:4] == names  # `pagemind data get NAME` for the set NAME alone
            click.echo(f"  {command}" + ("" if named else f"  # for {', '.join(names)}"))
        click.echo("(`pagemind data list` shows each source, its licence and size; --data PATH reads files "
                   "you already have)")
