"""The ``pagemind`` command: a thin layer over :mod:`pagemind.api`."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import click

from ..errors import PagemindError
from .main_errors import handle_errors
from .options import llm_options, method_options, session, split_method_options
from .render import print_answer, print_memory, progress_bar


def sample_path() -> Path:
    return Path(str(resources.files("pagemind").joinpath("samples/lighthouse.txt")))


@click.group()
@click.version_option(package_name="pagemind")
def cli() -> None:
    """Read, remember and answer over text far longer than the model's context window."""


@cli.command()
@click.argument("file", required=False)
@click.argument("question", required=False)
@click.option("--option", "-o", "options", multiple=True, help="a multiple-choice option (repeat, in order)")
@click.option("--sample", is_flag=True, help="ask about the bundled sample story instead of FILE")
@click.option("--trace", is_flag=True, help="print every LLM call: role, tokens, seconds, decision")
@click.option("--json", "as_json", is_flag=True, help="print the answer as JSON")
@method_options
@llm_options
@click.pass_context
@handle_errors
def ask(ctx: click.Context, file: str | None, question: str, options: tuple[str, ...], sample: bool, trace: bool,
        as_json: bool, encoding: str, **kw: Any) -> None:
    """Answer QUESTION about FILE (builds and stores its memory the first time).

    Multiple choice: repeat --option, or put "(A) ..." lines in the question."""
    if sample and question is None:
        file, question = None, file
    if not question:
        raise click.UsageError("give FILE and QUESTION (or --sample QUESTION)")
    if file and not sample and Path(file).is_dir():  # a source tree: code retrieval with FragRel's code relation
        from .code import ask_directory

        return ask_directory(ctx, file, question, options, trace=trace, as_json=as_json, kw=kw)
    path = _source(file, sample)
    method, opts = split_method_options(kw)
    with session(ctx, kw) as pm:
        doc = pm.document(path, encoding=encoding)
        with progress_bar(f"reading {doc.name}", enabled=not as_json) as progress:
            answer = pm.ask(doc, question, options=options, method=method, progress=progress, **opts)
        print_answer(answer, trace=trace, as_json=as_json)


@cli.command()
@click.argument("file", required=False)
@click.option("--sample", is_flag=True, help="index the bundled sample story")
@method_options
@llm_options
@click.pass_context
@handle_errors
def index(ctx: click.Context, file: str | None, sample: bool, encoding: str, **kw: Any) -> None:
    """Build and store the memory of FILE without asking anything (resumes a build that was cut short)."""
    path = _source(file, sample)
    method, opts = split_method_options(kw)
    with session(ctx, kw) as pm:
        doc = pm.document(path, encoding=encoding)
        reader = pm.reader(method, **opts)
        with progress_bar(f"reading {doc.name}") as progress:
            memory = reader.build(doc, progress=progress)
        click.echo(json.dumps(reader.describe(memory)))


@cli.command()
@click.argument("file", required=False)
@click.option("--sample", is_flag=True, help="show the memory of the bundled sample story")
@click.option("--json", "as_json", is_flag=True)
@method_options
@llm_options
@click.pass_context
@handle_errors
def show(ctx: click.Context, file: str | None, sample: bool, as_json: bool, encoding: str, **kw: Any) -> None:
    """Print the stored memory of FILE (ReadAgent: gists with page numbers and the compression rate;
    MemWalker: the tree with depth, node sizes and the root summary)."""
    path = _source(file, sample)
    method, opts = split_method_options(kw)
    with session(ctx, kw) as pm:
        doc = pm.document(path, encoding=encoding)
        reader = pm.reader(method, **opts)
        memory = reader.load(doc)
        if memory is None:
            raise PagemindError(f"no finished memory for {doc.name} with these settings; run `pagemind index` first")
        print_memory(memory, reader.describe(memory), as_json=as_json)


def _source(file: str | None, sample: bool) -> str | Path:
    if sample:
        return sample_path()
    if not file:
        raise PagemindError("give a FILE (or --sample)")
    return file


from .agent import agent, chat  # noqa: E402
from .code import complete  # noqa: E402
from .eval import eval_group  # noqa: E402
from .models import models  # noqa: E402

cli.add_command(models)
cli.add_command(agent)
cli.add_command(chat)
cli.add_command(complete)
cli.add_command(eval_group)
