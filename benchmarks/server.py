"""Servers: pagemind through an OpenAI-compatible server, compared with the embedded backend, plus throughput.

(a) ``agreement``: the same ReadAgent-P question on a QuALITY article through the embedded backend and through
    llama-cpp-python's own server (``python -m llama_cpp.server``) with the same model file, both at temperature 0:
    every call's prompt tokens (as each backend counts them), every reply, the answer, and the page token counts
    of the embedded tokenizer and of the server's tokenize endpoint must agree exactly.
(b) ``format``: format errors of the tiny model (SmolLM2-135M) on ``--questions`` QuALITY questions through the
    server, with the decisions constrained by the server's grammar and ``--unconstrained``. A format error is a
    reply its parser rejects (it is re-asked, bounded); a fallback is a decision no attempt produced. Each
    finished question is appended to ``--progress`` (JSON lines), so a killed run resumes where it stopped.
(c) ``throughput``: ``pagemind eval`` (the runner, ``--by-document``) over many documents against the mock
    server with a fixed latency, at ``--concurrency`` 1, 8 and 32. The method is ``full`` (one call per
    question), so the figure is the runner's parallelism across documents. The ideal time at concurrency c with
    D single-question documents is ceil(D / c) x L; reported: speed-up T_1 / T_c and its fraction of the ideal
    speed-up D / ceil(D / c) (the goal: >= 90% at 32), with T the answering phase (the mock's first request to
    its last reply) and, separately, the whole run (plus loading the dataset and writing results, which do not
    depend on c).

    python benchmarks/server.py [--part agreement,format,throughput] [--model smollm2-135m] [--questions 20]
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from common import DATA, quality_rows, write_result
from pagemind import Pagemind
from pagemind.llm import catalogue
from pagemind.llm.llamaserver import LlamaCppPythonServer
from pagemind.llm.servers import LlamaCppPython
from pagemind.text import Document


def record_calls(pm: Pagemind) -> list[tuple[Any, Any]]:
    """Every (request, response) the session's backend exchanges from now on (wraps ``execute``)."""
    calls: list[tuple[Any, Any]] = []
    backend = pm.llm.backend
    execute = backend.execute

    def recorded(request):
        response = execute(request)
        calls.append((request, response))
        return response

    backend.execute = recorded
    return calls


def question_of(row: dict) -> tuple[Document, str, list[str], int]:
    doc = Document.from_text(row["article"], f"quality-{row['article_id']}")
    return doc, row["question"], list(row["options"]), int(row["gold_label"])


# --- (a) ----------------------------------------------------------------------------------------------
def agreement(rows: list[dict], model: str, n_ctx: int, row_index: int, threads: int) -> dict:
    doc, question, options, gold = question_of(rows[row_index])
    runs: dict[str, dict] = {}
    path = catalogue.model_path(model)
    with tempfile.TemporaryDirectory() as tmp, LlamaCppPythonServer(path, n_ctx=n_ctx, threads=threads) as server:
        sessions = {
            "embedded": Pagemind(f"local:{model}", store=Path(tmp) / "e.db", n_ctx=n_ctx, threads=threads,
                                 concurrency=1, cache=False),
            "server": Pagemind(f"openai:{model}", base_url=server.url, context_window=n_ctx, store=Path(tmp) / "s.db",
                               concurrency=1, cache=False),
        }
        for name, pm in sessions.items():
            calls = record_calls(pm)
            started = time.perf_counter()
            answer = pm.ask(doc, question, options=options, method="readagent-p")
            memory = pm.reader("readagent-p").load(doc)
            runs[name] = {"answer": answer, "calls": calls, "seconds": time.perf_counter() - started,
                          "pages": [p.text for p in memory.pages], "caps": pm.llm.backend.capabilities}
        pages = runs["embedded"]["pages"]
        counted = {name: pm.llm.count_tokens_many(pages) for name, pm in sessions.items()}
        for pm in sessions.values():
            pm.close()
    e, s = runs["embedded"], runs["server"]
    pairs = list(zip(e["calls"], s["calls"]))
    same_prompt = [a[0].messages == b[0].messages for a, b in pairs]
    same_tokens = [a[1].prompt_tokens == b[1].prompt_tokens for a, b in pairs]
    same_reply = [a[1].text == b[1].text for a, b in pairs]
    first_difference = next((i for i, ok in enumerate(zip(same_prompt, same_tokens, same_reply)) if not all(ok)), None)
    difference = None
    if first_difference is not None:
        (req_e, res_e), (_, res_s) = pairs[first_difference]
        difference = {"index": first_difference, "role": req_e.role, "same_prompt": same_prompt[first_difference],
                      "prompt_tokens": [res_e.prompt_tokens, res_s.prompt_tokens],
                      "replies": [res_e.text[:300], res_s.text[:300]]}
    return {
        "model": model, "n_ctx": n_ctx, "threads": threads, "question_row": row_index, "document_words": doc.words,
        "calls": {"embedded": len(e["calls"]), "server": len(s["calls"])},
        "roles": dict(Counter(r.role for r, _ in e["calls"])),
        "prompt_tokens": {"embedded": sum(r.prompt_tokens for _, r in e["calls"]),
                          "server": sum(r.prompt_tokens for _, r in s["calls"])},
        "calls_with_equal_prompt_tokens": sum(same_tokens), "calls_with_equal_prompts": sum(same_prompt),
        "calls_with_equal_replies": sum(same_reply), "first_difference": difference,
        "answer": {"embedded": e["answer"].letter, "server": s["answer"].letter, "gold": "ABCD"[gold]},
        "page_token_counts": {"pages": len(pages), "embedded": sum(counted["embedded"]),
                              "server": sum(counted["server"]),
                              "equal_pages": sum(a == b for a, b in zip(counted["embedded"], counted["server"]))},
        "server_token_counts": s["caps"].token_counts, "server_constraint": s["caps"].constraint,
        "seconds": {"embedded": round(e["seconds"], 1), "server": round(s["seconds"], 1)},
    }


# --- (b) ----------------------------------------------------------------------------------------------
ROLES = ("paginate", "gist", "lookup", "answer")
FIXED_FORM = ("paginate", "lookup", "answer")  # the decisions a grammar constrains; a gist is free text


def one_question(pm: Pagemind, row: dict, constrained: bool, max_tokens: int) -> dict:
    """One question: per role, the replies that carried a decision, those its parser rejected (a format error, then
    re-asked), the decisions no reply produced (fallbacks), and the first rejected reply of each role. The build's
    figures are those of this call's build (``index``; None when the memory was already stored)."""
    doc, question, options, gold = question_of(row)
    started = time.perf_counter()
    try:
        answer = pm.ask(doc, question, options=options, method="readagent-p", constrained=constrained,
                        max_tokens=max_tokens)
    except Exception as err:  # a benchmark counts failures instead of stopping
        return {"error": f"{type(err).__name__}: {err}"}

    def tally(events: list, fallbacks: dict[str, int]) -> dict:
        replies: Counter[str] = Counter()
        invalid: Counter[str] = Counter()
        examples: dict[str, str] = {}
        for event in events:
            if event.decision:
                replies[event.role] += 1
                if event.decision.startswith("invalid"):
                    invalid[event.role] += 1
                    examples.setdefault(event.role, f"{event.reply[:100]!r} -> {event.decision[:100]}")
        return {"replies": dict(replies), "invalid": dict(invalid), "fallbacks": fallbacks, "examples": examples}

    index = None
    if answer.index_trace is not None:
        memory = pm.reader("readagent-p", constrained=constrained, max_tokens=max_tokens).load(doc)
        index = tally(list(answer.index_trace.events), {
            "paginate": sum(p.label_source == "fallback" for p in memory.pages),
            "gist": sum(g.source == "fallback" for g in memory.gists)})
        index["pages"] = len(memory.pages)
    asked = tally(list(answer.trace.events), {
        "lookup": sum(f.startswith("look-up named no valid page") for f in answer.fallbacks),
        "answer": sum(f.startswith("no option named") for f in answer.fallbacks)})
    return {"article": row["article_id"], "index": index, "question": asked, "letter": answer.letter,
            "gold": "ABCD"[gold], "seconds": round(time.perf_counter() - started, 1)}


def summarise(results: list[dict]) -> dict:
    """One mode's totals. A build is counted once per article (a resumed run may have built it again)."""
    ok = [r for r in results if "error" not in r]
    parts, built = [], set()
    for r in ok:
        if r["index"] is not None and r["article"] not in built:
            built.add(r["article"])
            parts.append(r["index"])
        parts.append(r["question"])
    replies, invalid, fallbacks = Counter(), Counter(), Counter()
    for part in parts:
        replies.update(part["replies"])
        invalid.update(part["invalid"])
        fallbacks.update(part["fallbacks"])
    roles = [r for r in ROLES if replies[r] or fallbacks[r]] + sorted(set(replies) - set(ROLES))
    # a decision ends with an accepted reply or, when every attempt was rejected, with a fallback
    decisions = {r: replies[r] - invalid[r] + fallbacks[r] for r in roles}
    total = sum(replies.values())
    examples: dict[str, list[str]] = {}
    for part in parts:
        for role, text in part["examples"].items():
            if len(examples.setdefault(role, [])) < 3:
                examples[role].append(text)
    return {
        "questions": len(ok), "failed": len(results) - len(ok), "errors": [r["error"] for r in results if "error" in r],
        "builds": len(built), "pages": sum(p.get("pages", 0) for p in parts),
        "correct": sum(r["letter"] == r["gold"] for r in ok), "unanswered": sum(r["letter"] is None for r in ok),
        "decisions": decisions, "replies": {r: replies[r] for r in roles},
        "format_errors": {r: invalid[r] for r in roles},
        "format_error_rate": round(sum(invalid.values()) / total, 3) if total else None,
        "format_error_rate_fixed_form": (round(sum(invalid[r] for r in FIXED_FORM) / fixed, 3)
                                         if (fixed := sum(replies[r] for r in FIXED_FORM)) else None),
        "format_error_rate_by_role": {r: round(invalid[r] / replies[r], 3) for r in roles if replies[r]},
        "fallbacks": {r: fallbacks[r] for r in roles}, "seconds": round(sum(r["seconds"] for r in ok), 1),
        "rejected_examples": examples,
    }


MODES = {"constrained": True, "unconstrained": False}


def read_progress(progress: Path, key: dict) -> dict[tuple[str, int], dict]:
    """The results ``progress`` holds for this model and settings, by (mode, row); a later line wins."""
    done: dict[tuple[str, int], dict] = {}
    if progress.exists():
        for line in progress.read_text().splitlines():
            item = json.loads(line)
            if all(item.get(k) == v for k, v in key.items()):
                done[(item["mode"], item["row"])] = item["result"]
    return done


def format_errors(rows: list[dict], model: str, n_ctx: int, questions: int, max_tokens: int, threads: int,
                  progress: Path, run: tuple[str, ...] = tuple(MODES), from_end: bool = False) -> dict:
    """Both modes on the same questions; each answered question is appended to ``progress`` (JSON lines), so an
    interrupted run resumes where it stopped (a question that failed, e.g. because the server died, is asked
    again). ``run``: the modes this process asks. Several processes can share ``progress``: each skips a question
    another has finished meanwhile, so one per mode, or two on one mode (one ``from_end``), split the work; the
    summary covers what ``progress`` holds."""
    key = {"model": model, "n_ctx": n_ctx, "max_tokens": max_tokens}
    done = read_progress(progress, key)
    n = min(questions, len(rows))
    todo = [(mode, i) for mode in run for i in (range(n - 1, -1, -1) if from_end else range(n))
            if "error" in done.get((mode, i), {"error": ""})]
    if todo:
        path = catalogue.model_path(model)
        with tempfile.TemporaryDirectory() as tmp, LlamaCppPythonServer(path, n_ctx=n_ctx, threads=threads) as server:
            for mode in run:
                with Pagemind(f"openai:{model}", base_url=server.url, context_window=n_ctx, concurrency=1,
                              cache=False, store=Path(tmp) / f"{mode}.db") as pm:
                    for m, i in todo:
                        if m != mode or "error" not in read_progress(progress, key).get((mode, i), {"error": ""}):
                            continue
                        done[(mode, i)] = result = one_question(pm, rows[i], MODES[mode], max_tokens)
                        with progress.open("a") as fh:
                            fh.write(json.dumps({**key, "mode": mode, "row": i, "result": result}) + "\n")
                        print(mode, i, result.get("error") or f"{result['letter']} (gold {result['gold']}) "
                              f"{result['seconds']} s", flush=True)
    done = read_progress(progress, key)  # with what other processes finished meanwhile
    modes = {mode: {**summarise([done[(mode, i)] for i in range(n) if (mode, i) in done]),
                    "not_run": sum((mode, i) not in done for i in range(n))} for mode in MODES}
    return {"model": model, "n_ctx": n_ctx, "threads": threads,
            "server_constraint": LlamaCppPython().describe_constraint(),
            "method": f"readagent-p (quality preset, max_tokens={max_tokens})", "modes": modes}


# --- (c) ----------------------------------------------------------------------------------------------
def throughput(dataset: str, params: dict[str, str], levels: list[int], latency: float, data: Path) -> dict:
    from pagemind.eval.runner import EvalConfig, Runner
    from pagemind.llm.mockserver import MockServer

    runs = []
    for c in levels:
        with tempfile.TemporaryDirectory() as tmp, MockServer(latency=latency, text="Answer: (A)") as server:
            with Pagemind("openai:mock", base_url=server.url, context_window=32768, server_kind="openai",
                          concurrency=c, cache=False, store=Path(tmp) / "s.db") as pm:
                config = EvalConfig(dataset=dataset, methods=("full",), data=str(data), params=params,
                                    by_document=True, concurrency=c)
                runner = Runner(pm, config, Path(tmp) / "run", progress=False)
                documents = len({e.document_id for e in runner.examples()})
                started = time.perf_counter()
                result = runner.run()
                wall = time.perf_counter() - started
            ideal = math.ceil(documents / c) * latency
            phase = (server.last_reply_at or 0.0) - (server.first_request_at or 0.0)
            runs.append({"concurrency": c, "documents": documents, "answered": result.finished,
                         "errors": result.errors, "requests": len(server.requests),
                         "max_in_flight": server.max_in_flight, "wall_seconds": round(wall, 2),
                         "answering_seconds": round(phase, 2), "setup_and_report_seconds": round(wall - phase, 2),
                         "ideal_seconds": round(ideal, 2), "efficiency": round(ideal / phase, 3)})
            print(dataset, runs[-1], flush=True)
    base = next((r for r in runs if r["concurrency"] == 1), None)
    for r in runs if base else []:
        r["ideal_speedup"] = round(r["documents"] / math.ceil(r["documents"] / r["concurrency"]), 2)
        r["speedup"] = round(base["answering_seconds"] / r["answering_seconds"], 2)
        r["fraction_of_ideal_speedup"] = round(r["speedup"] / r["ideal_speedup"], 3)
        r["speedup_whole_run"] = round(base["wall_seconds"] / r["wall_seconds"], 2)
        r["fraction_of_ideal_speedup_whole_run"] = round(r["speedup_whole_run"] / r["ideal_speedup"], 3)
    return {"dataset": dataset, "params": params, "latency_seconds": latency, "runs": runs}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", default="agreement,format,throughput")
    ap.add_argument("--model", default="smollm2-135m", help="catalogue model for (a) and (b)")
    ap.add_argument("--n-ctx", type=int, default=8192)
    ap.add_argument("--threads", type=int, default=2,
                    help="(a), (b): llama.cpp threads of both backends (1 on a busy machine: spinning threads stall)")
    ap.add_argument("--row", type=int, default=0, help="(a): the QuALITY question")
    ap.add_argument("--questions", type=int, default=20, help="(b): QuALITY questions")
    ap.add_argument("--max-tokens", type=int, default=128,
                    help="(b): reply cap of every call in both modes (the tiny model's gists run to 512 otherwise)")
    ap.add_argument("--progress", type=Path,
                    help="(b): JSON-lines file of finished questions, read to resume (default: in the temp folder)")
    ap.add_argument("--modes", default="constrained,unconstrained",
                    help="(b): the modes this process runs (e.g. one process per mode sharing --progress)")
    ap.add_argument("--from-end", action="store_true",
                    help="(b): ask the questions last first (a second process on the same mode and --progress)")
    ap.add_argument("--latency", type=float, default=1.0, help="(c): seconds the mock takes per request")
    ap.add_argument("--levels", default="1,8,32", help="(c): concurrency levels")
    ap.add_argument("--data", type=Path, default=DATA)
    args = ap.parse_args()
    parts = set(args.part.split(","))
    if set(args.modes.split(",")) - set(MODES) - {""}:
        ap.error(f"--modes: choose from {', '.join(MODES)}")
    rows = quality_rows(args.data)
    if "agreement" in parts:
        write_result("server_agreement", {
            "method": "ReadAgent-P (quality preset, concurrency 1, no response cache, temperature 0) on one QuALITY "
                      "question, embedded llama-cpp-python vs llama-cpp-python's OpenAI-compatible server, same file",
            **agreement(rows, args.model, args.n_ctx, args.row, args.threads)})
    if "format" in parts:
        write_result(f"server_format_errors_{args.model}", {
            "method": "ReadAgent-P on QuALITY questions through llama-cpp-python's server: decisions with the "
                      "server's GBNF grammar vs --unconstrained; format error = a reply its parser rejects",
            **format_errors(rows, args.model, args.n_ctx, args.questions, args.max_tokens, args.threads,
                            args.progress or Path(tempfile.gettempdir()) / f"pagemind-server-format-{args.model}.jsonl",
                            tuple(m for m in args.modes.split(",") if m), args.from_end)})
    if "throughput" in parts:
        levels = [int(c) for c in args.levels.split(",") if c]
        write_result("server_throughput", {
            "method": "pagemind eval runner (--by-document, method full: one call per question, no response cache) "
                      f"against MockServer on 127.0.0.1 with {args.latency}s per request; ideal = ceil(D/c) x L",
            "series": [throughput("nested-kv", {"seeds": "24"}, levels, args.latency, args.data),
                       throughput("quality", {}, levels, args.latency, args.data)]})


if __name__ == "__main__":
    main()
