"""(m) What ``auto`` should read a text beyond the window with (issue 26): the long sample's five questions, each
method from a fresh store (so the first answer pays for the memory), with the embedded default model.

    python benchmarks/auto_choice.py [--methods auto,op-rag,readagent-p,memwalker] [--model qwen2.5-coder-1.5b]

Per method: which method ``auto`` chose, the seconds to the first answer (memory build included), the median
seconds of the next answers, prompt tokens per question (answer time) and of the build, the answers right of 5,
and the passages the answers cite (first words), so one can see what each read. Methods run one after another
in this process; the in-process or shared backend is whatever the settings give (``--embedded``); shared model
servers are stopped before each method, so its first answer includes starting one.
Writes ``results/auto_choice.json`` (methods already there under other names are kept).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from common import RESULTS, long_sample, peak_rss_mb, write_result
from pagemind import Pagemind
from pagemind.cli.main import sample_path
from pagemind.llm.managed import stop


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--methods", default="auto,readagent-p,memwalker")
    ap.add_argument("--model", default="qwen2.5-coder-1.5b")
    ap.add_argument("--n-ctx", type=int, default=16384)
    ap.add_argument("--embedded", default=None, help="server | process (default: the settings')")
    ap.add_argument("--limit", type=int, default=5)
    args = ap.parse_args()
    asked = [{"question": q, "options": list(o), "gold": g} for q, o, g in long_sample()[1][: args.limit]]
    book = sample_path("long")
    previous = RESULTS / "auto_choice.json"
    result = json.loads(previous.read_text()) if previous.exists() else {}
    result.update({"model": args.model, "n_ctx": args.n_ctx, "document": book.name, "questions": len(asked)})
    methods = result.setdefault("methods", {})
    for method in args.methods.split(","):
        stop()  # a cold start: no shared server holding an earlier run's prompts (its start is part of the answer)
        with tempfile.TemporaryDirectory() as home, \
                Pagemind(f"local:{args.model}", store=Path(home) / "s.db", n_ctx=args.n_ctx,
                         embedded=args.embedded, cache=False) as pm:
            rows = []
            for q in asked:
                t0 = time.perf_counter()
                answer = pm.ask(book, q["question"], options=q["options"], method=method)
                seconds = time.perf_counter() - t0
                build = answer.index_trace.usage if answer.index_trace is not None else None
                rows.append({
                    "method": answer.method, "right": answer.choice == q["gold"], "choice": answer.choice,
                    "seconds": round(seconds, 1), "prompt_tokens": answer.trace.usage.prompt_tokens,
                    "calls": answer.trace.usage.calls,
                    "build_prompt_tokens": build.prompt_tokens if build else 0, "build_calls": build.calls if build
                    else 0, "cites": [" ".join(c.quote.split()[:12]) for c in answer.citations[:3]],
                    "why": answer.details.get("auto", {}).get("reason", ""),
                })
                print(method, rows[-1], flush=True)
        methods[method] = {
            "chosen": rows[0]["method"], "right": sum(r["right"] for r in rows), "of": len(rows),
            "first_answer_s": rows[0]["seconds"],
            "next_answers_median_s": round(statistics.median(r["seconds"] for r in rows[1:]), 1) if len(rows) > 1
            else None,
            "prompt_tokens_per_question": round(statistics.mean(r["prompt_tokens"] for r in rows)),
            "build_prompt_tokens": sum(r["build_prompt_tokens"] for r in rows), "peak_rss_mb": round(peak_rss_mb()),
            "questions": rows,
        }
    print(write_result("auto_choice", result))


if __name__ == "__main__":
    main()
