"""(c) Embedded default model on a ~10k-word text: seconds to the first answer (indexing included) divided by
the seconds the same model needs to read the whole text once as a single prompt, measured in the same run
(that read is the physical floor on this machine), and seconds to answer a second question.

    python benchmarks/first_answer.py [--words 10000] [--model qwen2.5-coder-1.5b] [--modes stream,fast,paper]

Modes: ``paper`` = the paper's ReadAgent-P (gists asked separately, pages expanded in place); ``fast`` =
pagemind's cache-friendly variant (gist as a follow-up turn of pagination, ``--gist-mode continue``; pages as a
follow-up turn of the look-up, ``--expand follow-up``); ``stream`` = ``--pagination streaming`` (each pagination
turn continues one conversation and shows only text not yet shown) with continued gists and the paper's in-place
expansion (on 8 QuALITY questions the follow-up expansion cost the default model 2 correct answers over the same
memory; ``stream-follow-up`` is that layout). The backend keeps a RAM prompt cache
(``prompt_cache_mb``, default 2048), as the CLI does.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from common import DATA, concatenated_articles, peak_rss_mb, quality_rows, write_result
from pagemind import LLM, Document, Store
from pagemind.answering.question import Question
from pagemind.config import resolve_settings
from pagemind.llm.local import open_local
from pagemind.llm.usage import Trace
from pagemind.methods.readagent import ReadAgentP
from pagemind.methods.reply import answer, answer_request

MODES = {"paper": ("separate", "in-place", "sequential"), "fast": ("continue", "follow-up", "sequential"),
         "stream": ("continue", "in-place", "streaming"), "stream-follow-up": ("continue", "follow-up", "streaming")}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--words", type=int, default=10_000)
    ap.add_argument("--model", default="qwen2.5-coder-1.5b")
    ap.add_argument("--modes", default="fast,paper")
    ap.add_argument("--n-ctx", type=int, default=16384)
    ap.add_argument("--data", type=Path, default=DATA)
    args = ap.parse_args()

    rows = quality_rows(args.data)
    text, used = concatenated_articles(rows, args.words)
    doc = Document.from_text(text, "quality-concat")
    q1 = Question(used[0]["question"], tuple(used[0]["options"]))
    q2 = Question(used[-1]["question"], tuple(used[-1]["options"]))
    settings = resolve_settings(llm=f"local:{args.model}", n_ctx=args.n_ctx)
    t0 = time.perf_counter()
    backend = open_local(settings.llm, settings)
    load_s = time.perf_counter() - t0
    llm = LLM(backend, cache=None, concurrency=1)
    doc_tokens = llm.count_tokens(text)

    # The floor: the whole text read once as one prompt (the QuALITY answer prompt, fresh KV cache).
    trace = Trace()
    t0 = time.perf_counter()
    full_reply = answer(llm, q1, answer_request(q1, text, "quality", True), trace, max_retries=0)
    read_once_s = time.perf_counter() - t0
    result = {
        "model": args.model, "threads": backend.threads, "n_ctx": backend.n_ctx, "load_seconds": round(load_s, 1),
        "document_words": doc.words, "document_tokens": doc_tokens, "read_once_seconds": round(read_once_s, 1),
        "read_once_tokens_per_second": round(doc_tokens / read_once_s, 1),
        "full_text_answer_correct": full_reply.choice == used[0]["gold_label"], "modes": {},
    }
    for mode in [m for m in args.modes.split(",") if m]:
        store = Store(":memory:")  # nothing reused between modes: no stored memory, no cached prompt state
        backend.forget_prompts()
        gist_mode, expand, pagination = MODES[mode]
        agent = ReadAgentP(llm, store, preset="quality", gist_mode=gist_mode, expand=expand, pagination=pagination)
        build_trace = Trace()
        t0 = time.perf_counter()
        memory = agent.build(doc, trace=build_trace)
        build_s = time.perf_counter() - t0
        first = agent.answer(memory, q1)
        first_s = time.perf_counter() - t0
        t1 = time.perf_counter()
        second = agent.answer(memory, q2)
        second_s = time.perf_counter() - t1
        u = build_trace.usage
        result["modes"][mode] = {
            "gist_mode": gist_mode, "expand": expand, "pagination": pagination,
            "pages": len(memory.pages), "compression_rate": round(memory.compression_rate, 1),
            "fallback_pages": sum(p.label_source == "fallback" for p in memory.pages),
            "fallback_gists": sum(g.source == "fallback" for g in memory.gists),
            "continued_gists_gisted_on_their_own": sum(n.startswith("continued gist of page")
                                                        for n in build_trace.notes),
            "index_seconds": round(build_s, 1), "first_answer_seconds": round(first_s, 1),
            "first_answer_over_read_once": round(first_s / read_once_s, 2),
            "second_answer_seconds": round(second_s, 1),
            "second_answer_over_read_once": round(second_s / read_once_s, 3),
            "index_prompt_tokens": u.prompt_tokens, "index_completion_tokens": u.completion_tokens,
            "index_prompt_tokens_over_document": round(u.prompt_tokens / doc_tokens, 2),
            "by_role": {k: v.as_dict() for k, v in build_trace.by_role().items()},
            "q1": {"correct": first.choice == used[0]["gold_label"], "pages_read": first.pages_read,
                   "usage": first.usage.as_dict()},
            "q2": {"correct": second.choice == used[-1]["gold_label"], "pages_read": second.pages_read,
                   "usage": second.usage.as_dict()},
        }
        print(mode, result["modes"][mode], flush=True)
    result["peak_rss_mb"] = round(peak_rss_mb(), 0)
    write_result(f"first_answer_{args.model}", result)


if __name__ == "__main__":
    main()
