"""The ``pagemind`` command: a thin layer over :mod:`pagemind.api`."""

from __future__ import annotations

import json
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import click

from ..errors import PagemindError
from .lazy import LazyGroup, lazy
from .main_errors import handle_errors
from .options import SectionedCommand, llm_options, method_options, session, split_method_options
from .render import markers, print_answer, print_memory, progress_view

SAMPLES = {"short": "lighthouse.txt",  # 1,655 words: fits the default model's window (auto reads it whole)
           "long": "keepers-ledger.txt"}  # 16,895 words, ~22k tokens: beyond it (auto builds a gist memory)


def sample_path(which: str = "short") -> Path:
    return Path(str(resources.files("pagemind").joinpath(f"samples/{SAMPLES[which]}")))


@click.group(cls=LazyGroup)
@click.version_option(package_name="pagemind")
def cli() -> None:
    """Read, remember and answer over text far longer than the model's context window.

    \b
    pagemind ask --sample "Who finds the map, and why?"    # the bundled story, the default method (auto)
    pagemind ask book.txt "Who is Isobel?" -m memwalker     # any method: see `pagemind methods`
    pagemind index book.txt && pagemind show book.txt       # build a memory once, look at it
    pagemind COMMAND --help                                 # every command explains itself with examples
    """


@cli.command(cls=SectionedCommand)
@click.argument("file", required=False)
@click.argument("question", required=False)
@click.option("--option", "-o", "options", multiple=True, help="a multiple-choice option (repeat, in order)")
@click.option("--sample", is_flag=True, help="ask about the bundled short story (1,655 words) instead of FILE")
@click.option("--long-sample", is_flag=True, help="ask about the bundled novella (16,895 words, longer than the "
                                                  "default model's window) instead of FILE")
@click.option("--trace", is_flag=True, help="print every LLM call: role, tokens, seconds, decision")
@click.option("--json", "as_json", is_flag=True, help="print the answer as JSON")
@method_options
@llm_options
@click.pass_context
@handle_errors
def ask(ctx: click.Context, file: str | None, question: str, options: tuple[str, ...], sample: bool,
        long_sample: bool, trace: bool, as_json: bool, encoding: str, **kw: Any) -> None:
    """Answer QUESTION about FILE (builds and stores its memory the first time); FILE may also be a folder of
    documents or the name of a library (`pagemind add`), read as one with any method, or a source tree (the code
    method).

    Multiple choice: repeat --option, or put "(A) ..." lines in the question.

    \b
    pagemind ask --sample "Who finds the map, and why?"
    pagemind ask --long-sample "What did Isobel write against the gull?"
    pagemind ask book.txt "Who is Isobel?" -m memwalker --trace
    pagemind ask book.txt "Who finds the map?" -o Wren -o Abel -o Tam
    pagemind ask src/ "Where are prompts rendered?"
    pagemind ask reports/ "Which quarter had the highest churn?" -m rag
    pagemind ask reports "Which quarter had the highest churn?"      # a library: pagemind add reports FILES…
    """
    if (sample or long_sample) and question is None:
        file, question = None, file
    if not question:
        raise click.UsageError("give FILE and QUESTION (or --sample QUESTION)")
    path = _source(file, sample, long_sample)
    method, opts = split_method_options(kw, "code" if source_tree(ctx, path) else None)
    with session(ctx, kw) as pm:
        if not as_json and sys.stderr.isatty():
            click.echo(f"opening the model ({pm.settings.llm})…", err=True)  # a local model loads for seconds
        plan = pm.plan(read_with_progress(pm, path, encoding, not as_json), method, encoding=encoding,
                       **opts)  # a choice (auto) is made here, once
        if plan.said() and not as_json:
            click.echo(f"{plan.said()} (--method picks another)", err=True)
        streamed: list[str] = []

        def on_text(piece: str) -> None:  # the free-form answer, as the model writes it, on a terminal
            if not streamed:
                click.echo("", err=True)
            streamed.append(piece)
            click.echo(piece, nl=False)

        live = not as_json and sys.stdout.isatty()
        with progress_view(enabled=not as_json) as progress:
            answer = pm.ask(plan, question, options=options, progress=progress, on_text=on_text if live else None)
        if streamed:
            click.echo(markers(answer))  # the markers follow the streamed text on its line
        print_answer(answer, trace=trace, as_json=as_json, streamed=bool(streamed))


@cli.command(cls=SectionedCommand)
@click.argument("file", required=False)
@click.option("--sample", is_flag=True, help="index the bundled short story")
@click.option("--long-sample", is_flag=True, help="index the bundled novella")
@method_options
@llm_options
@click.pass_context
@handle_errors
def index(ctx: click.Context, file: str | None, sample: bool, long_sample: bool, encoding: str, **kw: Any) -> None:
    """Build and store the memory of FILE without asking anything (resumes a build that was cut short).

    \b
    pagemind index book.txt -m readagent-p --preset qmsum
    pagemind index book.txt -m memwalker --segment-tokens 800
    """
    path = _source(file, sample, long_sample)
    method, opts = split_method_options(kw, "code" if source_tree(ctx, path) else None)
    with session(ctx, kw) as pm:
        plan = pm.plan(read_with_progress(pm, path, encoding), method, encoding=encoding,
                       **opts)  # auto: the reader it picks for this document
        with progress_view() as progress:  # recorded as a run (pagemind logs) unless record_runs is off
            memory = pm.index(plan, progress=progress)
        click.echo(json.dumps(plan.reader.describe(memory)))


def read_with_progress(pm: Any, path: Any, encoding: str, show: bool = True) -> Any:
    """A file read as a document with its pages shown as they are read (a long PDF, OCR'd pages), once: the plan
    then takes the document; anything else (a folder, a library's name, a source tree) as it was given."""
    if not isinstance(path, (str, Path)) or not Path(path).is_file() or \
            pm.store.library(pm.scope(None), str(path)) is not None:  # the plan says which of the two is meant
        return path
    with progress_view(show) as progress:
        return pm.document(Path(path), encoding, progress=progress)


@cli.command(cls=SectionedCommand)
@click.argument("file", required=False)
@click.option("--sample", is_flag=True, help="show the memory of the bundled short story")
@click.option("--long-sample", is_flag=True, help="show the memory of the bundled novella")
@click.option("--sections", "sections", is_flag=True,
              help="the document's own structure instead (its outline, headings or the text's): no memory needed")
@click.option("--text", "text", is_flag=True,
              help="the document's text as pagemind reads it, page by page, sections and OCR'd pages marked")
@click.option("--json", "as_json", is_flag=True)
@method_options
@llm_options
@click.pass_context
@handle_errors
def show(ctx: click.Context, file: str | None, sample: bool, long_sample: bool, sections: bool, text: bool,
         as_json: bool, encoding: str, **kw: Any) -> None:
    """Print the stored memory of FILE (ReadAgent: gists with page numbers and the compression rate;
    MemWalker: the tree with depth, node sizes and the root summary; RAG: the fragments), or with --sections the
    document's own sections (a PDF's outline, the headings of Markdown, HTML or DOCX, or the text's), with pages.

    \b
    pagemind show --sample
    pagemind show book.txt -m memwalker --json
    pagemind show report.pdf --sections
    pagemind show report.pdf --text | less
    """
    path = _source(file, sample, long_sample)
    if text:
        with session(ctx, kw) as pm:
            document = pm.document(Path(path), encoding=encoding)
        if as_json:
            click.echo(json.dumps({"document": document.name, "id": document.id, "format": document.format,
                                   "pages": [{"page": n, "ocr": n in document.ocr_pages, "text": part}
                                             for n, part in enumerate(document.parts(), 1)],
                                   "sections": [s.as_dict() for s in document.sections]}, ensure_ascii=False))
        else:
            click.echo(document.annotated())
        return
    if sections:
        from ..text.sections import outline_text

        with session(ctx, kw) as pm:
            document = pm.document(Path(path), encoding=encoding)
        if as_json:
            click.echo(json.dumps({"document": document.name, "id": document.id, "pages": len(document.pages),
                                   "sections": [s.as_dict() for s in document.sections]}, ensure_ascii=False))
        elif document.sections:
            click.echo(outline_text(document.sections))
        else:
            click.echo(f"{document.name}: no sections found (no outline, no headings the text shows)")
        return
    method, opts = split_method_options(kw, "code" if source_tree(ctx, path) else None)
    with session(ctx, kw) as pm:
        plan = pm.plan(path, method, encoding=encoding, **opts)  # auto: the reader it picks for this document
        source, reader = plan.source, plan.reader
        memory = reader.load(source)
        if memory is None:
            others = [m for m in pm.store.list_memories() if m.document_id == source.id]
            listed = "".join(f"\n  {m.key[:12]} {m.method} {m.model} {m.status} "
                             f"{', '.join(f'{k}={v}' for k, v in m.settings.items() if not isinstance(v, dict))}"
                             for m in others)
            hint = (f"; stored for this document:{listed}\n(show them with the same --method, --llm and settings)"
                    if others else "; run `pagemind index` first")
            raise PagemindError(f"no finished memory for {source.name} with {method}, {pm.llm.model_id} and these "
                                f"settings{hint}")
        print_memory(memory, reader.describe(memory), as_json=as_json)


@cli.command("methods")
@click.option("--json", "as_json", is_flag=True, help="every method with its options' JSON schema")
@click.argument("name", required=False)
def methods_command(name: str | None, as_json: bool) -> None:
    """List the methods (pagemind's and plugins'), their presets and options; NAME: one method in full."""
    from ..methods import registry

    readers = [registry.get(name)] if name else registry.all_readers()
    if as_json:
        click.echo(json.dumps([r.describe_method() for r in readers], indent=2))
        return
    for cls in readers:
        click.echo(f"{cls.name:<12} {cls.about.summary}")
        if not name:
            continue
        click.echo(f"  from: {cls.about.paper}; reads a {cls.source}; answers report the {cls.unit}s read")
        if cls.Options.presets:
            click.echo(f"  presets: {', '.join(cls.Options.presets)}")
        for spec in cls.Options.specs():
            kind = "|".join(spec.choices) if spec.choices else spec.type.__name__
            memory = " (shapes the memory)" if spec.memory else ""
            click.echo(f"  {spec.name} = {spec.default!r}  [{kind}{' | none' if spec.nullable else ''}]  "
                       f"{spec.help}{memory}")
    if not name:
        click.echo("\n`pagemind methods NAME` shows a method's options; `--json` gives their JSON schema.")


def source_tree(ctx: click.Context, path: str | Path) -> bool:
    """Whether a directory is read by the code method: it holds source code and no method was named (a folder of
    documents, or a folder asked with a document method, is read as a library)."""
    from ..library import is_document_folder

    if not Path(str(path)).is_dir() or ctx.get_parameter_source("method") not in (
            None, click.core.ParameterSource.DEFAULT):
        return False
    return not is_document_folder(path)


def _source(file: str | None, sample: bool, long_sample: bool = False) -> str | Path:
    if sample or long_sample:
        return sample_path("long" if long_sample else "short")
    if not file:
        raise PagemindError("give a FILE (or --sample)")
    return file


# Commands in their own modules are imported when run, not on every start (see cli/lazy.py): register one as
# NAME = lazy("NAME", ".MODULE:ATTRIBUTE") then cli.add_command(NAME), with its line in SHORT_HELP below.
agent, chat = lazy("agent", ".agent:agent"), lazy("chat", ".agent:chat")
complete = lazy("complete", ".code:complete")
eval_group = lazy("eval", ".eval:eval_group")
cache, memories = lazy("cache", ".memories:cache"), lazy("memories", ".memories:memories")
models = lazy("models", ".models:models")

cli.add_command(models)
cli.add_command(memories)
cli.add_command(cache)
cli.add_command(agent)
cli.add_command(chat)
cli.add_command(complete)
cli.add_command(eval_group)
data_group = lazy("data", ".data:data_group")
cli.add_command(data_group)
logs, users = lazy("logs", ".logs:logs"), lazy("users", ".users:users")
cli.add_command(logs)
cli.add_command(users)
cli.add_command(lazy("mcp", ".mcp:mcp_command", "Serve pagemind's tools to an MCP client over stdio"))
store = lazy("store", ".store:store")
cli.add_command(store)
cli.add_command(lazy("serve", ".serve:serve"))
cli.add_command(lazy("add", ".library:add"))
cli.add_command(lazy("libraries", ".library:libraries"))

# One line each in `pagemind --help`, short enough never to be cut.
SHORT_HELP = {
    "ask": "Answer a question about a file, a library or a source tree", "index": "Build and store a file's memory",
    "show": "Print a file's stored memory", "methods": "List the methods, their presets and options",
    "memories": "List and delete stored memories", "cache": "Clear the cache of LLM replies",
    "agent": "Create, inspect and talk to MemGPT agents", "chat": "Chat with a MemGPT agent or a document",
    "complete": "Complete a line of code from a source tree", "eval": "Evaluate methods on benchmark datasets",
    "models": "List, install and locate embedded models", "data": "Get benchmark datasets",
    "logs": "List recorded runs and show one's steps", "users": "Users and API keys of pagemind serve",
    "store": "Copy a store between SQLite and Postgres",
    "serve": "Serve the HTTP API, MCP and the trace viewer",
    "add": "Put documents in a library (asked as one)", "libraries": "List, show and remove libraries",
}
for _name, _command in cli.commands.items():
    _command.short_help = SHORT_HELP.get(_name, _command.short_help)


def _hide_encoding_without_files(command: click.Command) -> None:
    """``--encoding`` (shared by every command through llm_options) is shown only where a file is read."""
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            _hide_encoding_without_files(sub)
    reads_files = any(isinstance(p, click.Argument) and p.name in ("file", "files", "directory", "target")
                      for p in command.params)
    for param in command.params:
        if param.name == "encoding" and isinstance(param, click.Option) and not reads_files:
            param.hidden = True


_hide_encoding_without_files(cli)
cli.prepare = _hide_encoding_without_files  # and each lazy command as it loads
