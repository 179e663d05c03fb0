"""Options shared by the commands: the LLM/store flags, the method flags and the session they open."""

from __future__ import annotations

from typing import Any, Callable

import click

from ..api import METHODS, Pagemind
from ..config import resolve_settings


def llm_options(fn: Callable) -> Callable:
    for option in reversed([
        click.option("--llm", help="local:NAME | gguf:PATH | openai:MODEL  [env PAGEMIND_LLM; default: "
                                   "the embedded local model]"),
        click.option("--base-url", help="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1"),
        click.option("--api-key", help="API key (else OPENAI_API_KEY)"),
        click.option("--store", help="SQLite file for memories and the LLM cache [env PAGEMIND_STORE]"),
        click.option("--concurrency", type=int, help="LLM requests in flight at once [default 8]"),
        click.option("--n-ctx", type=int, help="context window for embedded models [default 16384]"),
        click.option("--threads", type=int, help="CPU threads for embedded models"),
        click.option("--no-cache", is_flag=True, help="do not reuse or store LLM replies"),
        click.option("--max-bytes", type=int, help="refuse files larger than this"),
        click.option("--encoding", default="utf-8", show_default=True, help="text encoding of FILE"),
    ]):
        fn = option(fn)
    return fn


READAGENT = ("readagent-p", "readagent-s", "gistmem")
RAG = ("rag", "op-rag")
ALL = METHODS
# CLI flag (python name) -> (method option, the methods it applies to). A flag given for another method is an error.
METHOD_FLAGS: dict[str, tuple[str, tuple[str, ...]]] = {
    "preset": ("preset", ALL),
    "budget": ("budget", ALL),
    "min_words": ("min_words", READAGENT), "max_words": ("max_words", READAGENT),
    "max_pages": ("max_pages", READAGENT), "gist_mode": ("gist_mode", READAGENT),
    "expand": ("expand", ("readagent-p",)),
    "max_children": ("max_children", ("memwalker",)), "segment_tokens": ("segment_tokens", ("memwalker",)),
    "max_steps": ("max_steps", ("memwalker",)),
    "keep": ("keep", ("full",)),
    "fragments": ("fragments", RAG), "fragment_words": ("fragment_words", RAG), "scorer": ("scorer", RAG),
    "fusion": ("fusion", RAG), "fragrel": ("fragrel", RAG), "relation": ("relation", RAG),
    "alpha": ("alpha", RAG), "w_rel": ("w_rel", RAG), "top_k": ("top_k", RAG),
    "top_m": ("top_m", ("a directory",)), "min_weight": ("min_weight", ("a directory",)),
}
NEGATIVE_FLAGS = {"no_reasoning": ("reasoning", ("memwalker",)),
                  "no_working_memory": ("working_memory", ("memwalker",)),
                  "unconstrained": ("constrained", ALL)}


def method_options(fn: Callable) -> Callable:
    for option in reversed([
        click.option("--method", "-m", type=click.Choice(METHODS), default="readagent-p", show_default=True),
        click.option("--preset", type=click.Choice(["quality", "qmsum", "narrativeqa-book", "narrativeqa-movie",
                                                    "summscreen", "govreport"]),
                     help="settings of a paper dataset [default quality]; ReadAgent, RAG, full: quality, qmsum, "
                          "narrativeqa-book/-movie; MemWalker: quality, summscreen, govreport"),
        click.option("--budget", type=int,
                     help="every method: most tokens of document-derived text in one prompt (matched-cost runs)"),
        click.option("--unconstrained", is_flag=True, help="do not enforce reply formats with a grammar"),
        click.option("--min-words", type=int, help="ReadAgent: words before the first pause label"),
        click.option("--max-words", type=int, help="ReadAgent: most words in a pagination window"),
        click.option("--max-pages", type=int, help="ReadAgent: pages to look up (P) or steps (S)"),
        click.option("--gist-mode", type=click.Choice(["separate", "continue"]),
                     help="separate: paper's gist prompt; continue: gist as a follow-up turn (prompt-cache reuse)"),
        click.option("--expand", type=click.Choice(["in-place", "follow-up"]),
                     help="ReadAgent-P: pages replace their gists (paper) or follow as the next turn of the look-up "
                          "conversation (prompt-cache reuse) [default in-place]"),
        click.option("--max-children", type=int, help="MemWalker: most children per tree node [preset: 8]"),
        click.option("--segment-tokens", type=int, help="MemWalker: tokens per leaf segment [preset: 1000]"),
        click.option("--no-reasoning", is_flag=True, help="MemWalker: triage without reasoning (paper ablation)"),
        click.option("--no-working-memory", is_flag=True, help="MemWalker: leaf prompts without the path's summaries"),
        click.option("--max-steps", type=int, help="MemWalker: navigation calls before giving up [default 20]"),
        click.option("--keep", type=click.Choice(["left", "right", "middle-cut"]), help="full: what truncation keeps"),
        click.option("--fragments", type=click.Choice(["words", "pages"]),
                     help="RAG: fixed word windows, or ReadAgent's pages [default words]"),
        click.option("--fragment-words", type=int, help="RAG: words per fragment [preset: 500]"),
        click.option("--scorer", type=click.Choice(["bm25", "dense", "hybrid"]), help="RAG: s_ind [default bm25]"),
        click.option("--fusion", type=click.Choice(["rrf", "mix"]), help="RAG hybrid: rank fusion or score mix"),
        click.option("--fragrel/--no-fragrel", default=None,
                     help="RAG: re-score with FragRel's relations [default off; on for a directory]"),
        click.option("--relation", type=click.Choice(["context", "semantic", "semantic-distance"]),
                     help="RAG FragRel relation [default context]"),
        click.option("--alpha", type=float, help="RAG FragRel: weight of the environment score [default 0.5]"),
        click.option("--w-rel", type=float, help="RAG FragRel context relation: w_rel [default 0.3]"),
        click.option("--top-k", type=int, help="RAG: most fragments shown [default 5; 0: as many as fit the budget]; "
                                               "a directory: [default 10]"),
        click.option("--top-m", type=int, help="a directory: candidates re-scored with the code relation [default 50]"),
        click.option("--min-weight", type=float,
                     help="a directory: code-relation paths lighter than this count as unrelated [default 0.01]"),
    ]):
        fn = option(fn)
    return fn


def split_method_options(kw: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Pop the method flags from ``kw``: (method, its options). A flag of another method is a usage error."""
    method = kw.pop("method")
    opts: dict[str, Any] = {}
    for flag, (name, methods) in METHOD_FLAGS.items():
        value = kw.pop(flag)
        if value is None:
            continue
        if method not in methods:
            raise click.UsageError(f"--{flag.replace('_', '-')} applies to {', '.join(methods)}, not {method}")
        opts[name] = value
    for flag, (name, methods) in NEGATIVE_FLAGS.items():
        if kw.pop(flag):
            if method not in methods:
                raise click.UsageError(f"--{flag.replace('_', '-')} applies to {', '.join(methods)}, not {method}")
            opts[name] = False
    return method, opts


def session(ctx: click.Context, kw: dict[str, Any]) -> Pagemind:
    settings = resolve_settings(
        llm=kw.pop("llm"), base_url=kw.pop("base_url"), api_key=kw.pop("api_key"), store=kw.pop("store"),
        concurrency=kw.pop("concurrency"), n_ctx=kw.pop("n_ctx"), threads=kw.pop("threads"),
        cache=False if kw.pop("no_cache") else None, max_bytes=kw.pop("max_bytes"),
    )
    backend = (ctx.obj or {}).get("backend")  # tests inject a scripted backend here
    return Pagemind(backend, settings=settings)
