"""Printing answers, memories and progress for the terminal."""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from typing import Any, Iterator

import click
from tqdm import tqdm

from ..methods.question import Answer


@contextmanager
def progress_bar(label: str, enabled: bool = True) -> Iterator[Any]:
    """A words-read progress bar on stderr; yields the ``progress(done, total)`` callback."""
    bar: tqdm | None = None

    def update(done: int, total: int) -> None:
        nonlocal bar
        if not enabled:
            return
        if bar is None:
            bar = tqdm(total=total, desc=label, unit="word", file=sys.stderr, leave=False)
        bar.update(done - bar.n)

    try:
        yield update
    finally:
        if bar is not None:
            bar.close()


def print_answer(answer: Answer, trace: bool = False, as_json: bool = False) -> None:
    if as_json:
        data = answer.as_dict()
        if trace:
            data["trace"] = [e.__dict__ for e in answer.trace.events]
        click.echo(json.dumps(data, ensure_ascii=False, indent=2))
        return
    if trace:
        print_trace(answer)
        if answer.details.get("trajectory"):
            print_walk(answer)
    if answer.question.is_choice:
        if answer.letter:
            click.echo(f"Answer: ({answer.letter}) {answer.text}")
        else:
            click.echo(f"No option chosen (the model's reply: {answer.text!r})")
    else:
        click.echo(answer.text)
    usage = answer.usage
    pages = ", ".join(str(p) for p in answer.pages_read) or "none"
    cr = f"{answer.compression_rate:.1f}%" if answer.compression_rate is not None else "n/a"
    click.echo(
        f"[{answer.method}] pages read: {pages} | compression rate {cr} | "
        f"{usage.calls} LLM calls ({usage.cached_calls} cached), {usage.prompt_tokens}+{usage.completion_tokens} "
        f"tokens, {usage.seconds:.1f}s",
        err=True,
    )
    for fb in answer.fallbacks:
        click.echo(f"note: {fb}", err=True)


def print_trace(answer: Answer) -> None:
    events = list(answer.trace.events)
    if answer.index_trace is not None:
        u = answer.index_trace.usage
        click.echo(f"building the memory: {u.calls} calls ({u.cached_calls} cached), "
                   f"{u.prompt_tokens}+{u.completion_tokens} tokens, {u.seconds:.1f}s", err=True)
        events = list(answer.index_trace.events) + events
        click.echo("calls, indexing first:", err=True)
    for i, e in enumerate(events, 1):
        cached = " cached" if e.cached else ""
        decision = f" -> {e.decision}" if e.decision else ""
        reply = e.reply.strip().replace("\n", " ")
        reply = reply[:100] + ("…" if len(reply) > 100 else "")
        click.echo(
            f"#{i} {e.role:<9} {e.prompt_tokens:>6}+{e.completion_tokens:<4} tok {e.seconds:6.1f}s{cached}"
            f"{decision} | {reply}", err=True,
        )


def print_walk(answer: Answer) -> None:
    """MemWalker: the path as a tree walk, then each decision with its reasoning."""
    from ..methods.memwalker import format_walk

    d = answer.details
    click.echo(f"walk: {format_walk(d['trajectory'])}", err=True)
    for s in d["trajectory"]:
        action = "" if s["action"] is None else f" {s['action']}"
        reasoning = s["reasoning"][:120] + ("…" if len(s["reasoning"]) > 120 else "")
        click.echo(f"  {s['node']:<8} {s['kind']}{action} ({s['calls']} calls, {s['invalid']} invalid) {reasoning}",
                   err=True)
    click.echo(f"read {d['fraction_read']:.0%} of the text ({d['fraction_read_with_nodes']:.0%} with tree nodes) | "
               f"reverts {d['reverts']} | recovered {d['recovered']} | valid actions {d['valid_action_rate']:.0%}",
               err=True)


def print_tree(memory: Any, summary: dict[str, Any], as_json: bool) -> None:
    """MemWalker: every node indented under its parent (size, summary size), then the root summary."""
    if as_json:
        data = dict(summary, nodes=[{k: v for k, v in n.__dict__.items() if k != "text"} for n in memory.nodes])
        click.echo(json.dumps(data, ensure_ascii=False, indent=2))
        return

    def show(node: Any, depth: int) -> None:
        kind = "leaf" if node.is_leaf else f"level {node.level}, {len(node.children)} children"
        squeeze = " (compressed)" if node.compressed else ""
        click.echo(f"{'  ' * depth}{node.id}  [{kind}] {node.tokens} tokens -> summary {node.summary_tokens}{squeeze}")
        for child in memory.children(node):
            show(child, depth + 1)

    show(memory.root, 0)
    click.echo()
    click.echo("root summary:")
    click.echo(memory.root.summary)
    click.echo()
    click.echo(" | ".join(f"{k}: {v}" for k, v in summary.items()))


def print_memory(memory: Any, summary: dict[str, Any], as_json: bool = False) -> None:
    if hasattr(memory, "nodes") and hasattr(memory, "root"):
        print_tree(memory, summary, as_json)
        return
    pages = getattr(memory, "pages", None)
    if as_json:
        data = dict(summary)
        if pages is not None:
            data["gists"] = [{"page": p.index, "words": p.words, "gist": g.text}
                             for p, g in zip(memory.pages, memory.gists)]
        click.echo(json.dumps(data, ensure_ascii=False, indent=2))
        return
    if pages is not None:
        for p, g in zip(memory.pages, memory.gists):
            click.echo(f"<Page {p.index}> ({p.words} words -> {g.words}, paragraphs {p.start}-{p.end - 1}, "
                       f"break: {p.label_source})")
            click.echo(g.text)
            click.echo()
    click.echo(" | ".join(f"{k}: {v}" for k, v in summary.items()))
