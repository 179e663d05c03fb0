"""Printing answers, memories and progress for the terminal."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from ..answering.question import Answer
from ..citations import numbered


@contextmanager
def progress_view(enabled: bool = True, stream: Any = None) -> Iterator[Any]:
    """What the work is doing, on stderr: a line for each phase, and a bar with an estimate for a phase that
    counts (pages read, gists written, segments summarised). Nothing at all unless stderr is a terminal (or
    ``enabled`` is False, as with ``--json``). Yields the ``progress(phase, done, total, unit)`` callback or None."""
    stream = stream or sys.stderr
    if not enabled or not stream.isatty():
        yield None
        return
    state: dict[str, Any] = {"phase": None, "bar": None}

    def update(phase: str, done: int, total: int, unit: str) -> None:
        if phase != state["phase"]:
            if state["bar"] is not None:
                state["bar"].close()
                state["bar"] = None
            state["phase"] = phase
            if total:
                from tqdm import tqdm  # here: only a terminal with work to show needs it

                state["bar"] = tqdm(total=total, desc=phase, unit=unit or "it", file=stream, leave=False,
                                    dynamic_ncols=True, smoothing=0.1)
            else:
                stream.write(f"{phase}…\n")
                stream.flush()
        if state["bar"] is not None:
            state["bar"].update(done - state["bar"].n)

    try:
        yield update
    finally:
        if state["bar"] is not None:
            state["bar"].close()


def progress_bar(label: str = "", enabled: bool = True) -> Any:
    """The progress display (``label`` is no longer shown: each phase names itself)."""
    return progress_view(enabled)


def print_answer(answer: Answer, trace: bool = False, as_json: bool = False, streamed: bool = False) -> None:
    """The answer (unless ``streamed``: its text was already written as it came), then a line of what it read
    and cost on stderr, then the fallbacks."""
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
    if answer.question.is_choice and not answer.abstained:
        if answer.letter:
            click.echo(f"Answer: ({answer.letter}) {answer.text}{markers(answer)}")
        else:
            click.echo(f"No option chosen (the model's reply: {answer.text!r})")
    elif not streamed or answer.replaced:  # a streamed draft is followed by what replaces it
        click.echo(("\n" if streamed else "") + answer.text + ("" if answer.abstained else markers(answer)))
    print_sources(answer)
    print_support(answer)
    usage = answer.usage
    if answer.read_unit == "text":
        read = f"read {answer.context_words} words of the text"
    else:
        read = f"{answer.read_unit}s read: " + (", ".join(str(p) for p in answer.pages_read) or "none")
    cr = f"{answer.compression_rate:.1f}%" if answer.compression_rate is not None else "n/a"
    click.echo(f"[{answer.method}] {read} | compression rate {cr} | {usage_line(usage)}", err=True)
    for fb in answer.fallbacks:
        click.echo(f"note: {fb}", err=True)


def markers(answer: Answer) -> str:
    """`` [1] [2]``: the answer's citation markers, as they follow its text (empty without citations)."""
    tty = sys.stdout.isatty()
    return "".join(" " + (click.style(f"[{n}]", fg="cyan") if tty else f"[{n}]")
                   for n, _ in numbered(answer.citations))


def print_sources(answer: Answer, width: int = 300) -> None:
    """The sources the markers name: location, how it was found, and the quoted text (highlighted on a
    terminal)."""
    if not answer.citations:
        return
    tty = sys.stdout.isatty()
    click.echo("\nSources:")
    library = "library" in answer.details  # an answer over several documents names the document of each source
    for n, c in numbered(answer.citations):
        quote = " ".join(c.quote.split())
        quote = quote if len(quote) <= width else quote[:width - 1] + "…"
        where = (f"{c.document}, {c.location}" if c.unit == "window"
                 else f"{c.document_name}, {c.location}" if library and c.document_name else c.location)
        head = f"[{n}] {where} ({c.found_by})"
        click.echo(f"{click.style(head, fg='cyan') if tty else head}: "
                   f"\"{click.style(quote, fg='yellow', bold=True) if tty else quote}\"")


def print_support(answer: Answer) -> None:
    """One line after the sources: how far they support the answer (and, when it abstained, the model's draft)."""
    line = answer.support_line
    if answer.support is None or line is None:
        return
    tty = sys.stdout.isatty()
    colour = {"supported": "green", "partial": "yellow"}.get(answer.support.label, "red")
    own = answer.probability.value
    if own is not None:  # the model's own probability of its answer, beside the support of its sources
        line += f"; the model's own probability {own:.2f}"
        if answer.probability.reordered is not None:  # the chosen option's, the options asked in reverse order
            line += f", {answer.probability.reordered:.2f} with the options reversed"
    if answer.probability.agreement is not None:  # sampled replies to the same prompt, as far as they say the same
        line += f"; {answer.probability.samples} samples agree {answer.probability.agreement:.2f}"
    click.echo(f"\nSupport: {click.style(line, fg=colour) if tty else line}")
    if answer.abstained and answer.draft and not answer.support.declined:
        draft = " ".join(answer.draft.split())
        click.echo(f"The model's draft (not supported): {draft[:300]}")


def usage_line(usage: Any) -> str:
    """Calls, tokens and seconds; calls served from the cache say so and what they would have cost."""
    calls = f"{usage.calls} LLM call{'s' if usage.calls != 1 else ''}"
    if usage.cached_calls == usage.calls and usage.calls:
        return (f"{calls}, all served from the cache (they would have cost {usage.cached_prompt_tokens}+"
                f"{usage.cached_completion_tokens} tokens)")
    cached = ""
    if usage.cached_calls:
        cached = (f" ({usage.cached_calls} served from the cache, which would have cost {usage.cached_prompt_tokens}+"
                  f"{usage.cached_completion_tokens} tokens)")
    return f"{calls}{cached}, {usage.prompt_tokens}+{usage.completion_tokens} tokens, {usage.seconds:.1f}s"


def print_trace(answer: Answer) -> None:
    events = list(answer.trace.events)
    if answer.index_trace is not None:
        u = answer.index_trace.usage
        click.echo(f"building the memory: {usage_line(u)}", err=True)
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


def print_memory(memory: Any, summary: dict[str, Any], as_json: bool = False) -> None:
    """A memory as it renders itself (``outline``/``as_json``), then its summary line."""
    if as_json:
        click.echo(json.dumps({**summary, **memory.as_json()}, ensure_ascii=False, indent=2))
        return
    for line in memory.outline():
        click.echo(line)
    click.echo(" | ".join(f"{k}: {v}" for k, v in summary.items()))
