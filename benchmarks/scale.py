"""(d) Scale: ReadAgent, MemWalker and RAG on generated texts of 10k, 100k and 1M words, against the
OpenAI-compatible mock server (``pagemind.llm.mockserver``), which answers every request by reading its prompt:
pagination gets the middle offered label, a gist the first 15% of the page, a summary the first 15% of its text
(at most 120 words), a look-up the first page shown, a MemWalker triage child 0, a leaf "-2" with an answer, an
answer "(A)". No data is downloaded: the text is QuALITY-like prose made of invented words (``make_text``).

Part 1 (latency 0, ``--concurrency`` slots, default 8): per method and size, the build's LLM calls, prompt
tokens ÷ document words (the mock counts whitespace words as tokens), wall time and CPU per 1k words, peak RSS,
store size, and for each reader whether one multiple-choice question is answered on an ``--window`` (8k)
context window (the error text when it is not). Each part runs in its own process, so CPU and peak RSS are that
part's and the mock server's CPU is not counted (it runs in the parent). The build's CPU per word at the largest
size ÷ at the second largest is reported: 1.0 means a linear build.

Part 2 (latency ``--latency``, default 0.05 s): a ReadAgent build with the paper's sequential pagination and with
chunked pagination (``--chunk-words``) at concurrency 8 and 32 on ``--pagination-words`` words (100k and 1M):
wall time, speed-up over sequential at the same concurrency, the requests the mock saw in flight at most, and how
many page boundaries differ from the sequential pages.

    python benchmarks/scale.py [--sizes 10000,100000,1000000] [--pagination-words 100000,1000000] [--levels 8,32]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import write_result
from pagemind.llm.mockserver import MockServer

QUESTION = ("What does the keeper of the lighthouse find in the end?",
            ("a letter", "a boat", "a key", "nothing at all"))
READERS = {"readagent": ("readagent-p", "readagent-s", "gistmem"), "memwalker": ("memwalker",), "rag": ("rag",)}
_LABEL = re.compile(r"^<(\d+)>$", re.MULTILINE)
_PAGE = re.compile(r"<Page (\d+)>")
SUMMARY_TAILS = (". Summarize the above text comprehensively into a fluent passage.",
                 ". Compress each summary into a much shorter summary.")


# --- the text -------------------------------------------------------------------------------------------
def make_text(words: int, seed: int = 0) -> str:
    """About ``words`` words of QuALITY-like prose: paragraphs of 20-160 words, sentences of 5-24 words, an
    invented vocabulary of a few thousand words (a Zipf-like mix) with names, dialogue and punctuation."""
    rng = random.Random(seed)
    syllables = ["ka", "lo", "mer", "an", "te", "ri", "sol", "ven", "dra", "ith", "or", "pel", "us", "na", "gar",
                 "el", "fin", "to", "bra", "quo", "sh", "ly", "ad", "mon", "ce", "vi", "ro", "tha", "ne", "is"]
    vocab = sorted({"".join(rng.choice(syllables) for _ in range(rng.randint(1, 4))) for _ in range(6000)})
    rng.shuffle(vocab)
    common = ["the", "of", "and", "to", "a", "in", "was", "he", "she", "that", "it", "his", "her", "with", "as",
              "had", "for", "on", "at", "not", "but", "they", "from", "by", "were", "said", "there", "would"]
    names = [w.capitalize() for w in vocab[:40]]
    weights = [1 / (rank + 1) for rank in range(len(vocab))]
    pool = rng.choices(vocab, weights=weights, k=50_000)  # drawn once, sampled from cheaply below

    def sentence() -> str:
        n = rng.randint(5, 24)
        parts = [rng.choice(common) if rng.random() < 0.45 else pool[rng.randrange(len(pool))] for _ in range(n)]
        if rng.random() < 0.3:
            parts[rng.randrange(n)] = rng.choice(names)
        text = " ".join(parts)
        text = text[0].upper() + text[1:] + rng.choice(".....?!")
        return f'"{text}" said {rng.choice(names)}.' if rng.random() < 0.12 else text

    paragraphs, total = [], 0
    while total < words:
        target = rng.randint(20, 160)
        sentences, n = [], 0
        while n < target:
            s = sentence()
            sentences.append(s)
            n += len(s.split())
        paragraphs.append(" ".join(sentences))
        total += n
    return "\n\n".join(paragraphs)


# --- the mock's replies ---------------------------------------------------------------------------------
def mock_reply(body: dict) -> str:
    """A valid reply to any pagemind prompt, read from the prompt (an HTTP request carries no role)."""
    messages = body["messages"]
    first = str(messages[0]["content"]).lstrip()
    last = str(messages[-1]["content"]).lstrip()
    if first.startswith("You are given a passage"):
        if last.startswith("Please shorten the part"):  # continue mode's gist
            return " ".join(first.split()[:60])
        labels = _LABEL.findall(first)
        return f"Break point: <{labels[len(labels) // 2]}>\n Because it is a natural pause." if labels else "?"
    if first.startswith("Please shorten"):
        words = first.split("Passage:\n", 1)[-1].split()
        return " ".join(words[: max(1, round(len(words) * 0.15))])
    for tail in SUMMARY_TAILS:
        if first.endswith(tail):
            words = first[: -len(tail)].split()
            return " ".join(words[: min(120, max(1, round(len(words) * 0.15)))])
    if "MOST LIKELY to contain information" in first:
        return "Reasoning: the first part.\nAction: 0"
    if first.startswith("Read the text in triple quotes"):
        return "Reasoning: it is said.\nAction: -2\nAnswer: (A)"
    if "Which page(s) would you like to read again" in first:
        pages = _PAGE.findall(first)
        return f"I want to look up Page [{', '.join(pages[:2])}] to check." if pages else "None."
    if "Specify a SINGLE page to read again" in first:
        pages = _PAGE.findall(first)
        already = first.split("Pages re-read already", 1)[-1].split("Question:", 1)[0]
        return f"Page {pages[0]}" if pages and not re.search(r"\d", already) else "STOP"
    return "Answer: (A)"


# --- one part, in its own process -----------------------------------------------------------------------
def store_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def run_part(spec: dict) -> dict:
    """Build one memory (and answer with its readers); what it cost. Runs in a fresh process."""
    import resource

    from pagemind import LLM, Document, Store
    from pagemind.answering.question import Question
    from pagemind.llm.openai import OpenAICompatible
    from pagemind.llm.usage import Trace
    from pagemind.methods import registry
    from pagemind.store import StoreResponseCache

    text = make_text(spec["words"])
    document = Document.from_text(text)
    folder = Path(tempfile.mkdtemp(prefix="pagemind-scale-"))
    path = folder / "store.db"
    store = Store(path)
    backend = OpenAICompatible("mock", base_url=spec["url"], context_window=spec["window"])
    llm = LLM(backend, cache=StoreResponseCache(store), concurrency=spec["concurrency"])
    options = {"preset": "quality", **spec.get("options", {})}
    readers = READERS[spec["method"]]
    first = registry.get(readers[0])(llm, store, **options)
    trace = Trace()
    wall, cpu = time.perf_counter(), time.process_time()
    memory = first.build(document, trace=trace)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    usage = trace.usage
    out: dict = {
        "method": spec["method"], "words": document.words, "concurrency": spec["concurrency"],
        "build": {"calls": usage.calls, "prompt_tokens": usage.prompt_tokens,
                  "prompt_per_document": round(usage.prompt_tokens / document.words, 3),
                  "completion_tokens": usage.completion_tokens, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
                  "wall_ms_per_1k_words": round(1e6 * wall / document.words, 2),
                  "cpu_ms_per_1k_words": round(1e6 * cpu / document.words, 2)},
        "memory": first.describe(memory),
    }
    if spec.get("boundaries"):
        out["boundaries"] = [p.end for p in memory.pages]
        out["chunks"] = len(store.items(memory.key, "chunk"))
    answers = {}
    variants = [(name, name, {}) for name in readers]
    if spec["method"] == "readagent" and "overflow" in {s.name for s in first.Options.specs()}:
        variants += [(f"{name} overflow=refuse", name, {"overflow": "refuse"}) for name in readers]
    for label, name, extra in variants if spec.get("answer", True) else ():
        reader = registry.get(name)(llm, store, **options, **extra)
        loaded = reader.load(document)
        wall = time.perf_counter()
        try:
            answer = reader.answer(loaded, Question(*QUESTION))
        except Exception as err:  # recorded, not raised: whether it answers is the measurement
            answers[label] = {"answered": False, "error": f"{type(err).__name__}: {err}"[:400]}
            continue
        use = answer.trace.usage
        answers[label] = {"answered": answer.choice is not None or bool(answer.text), "letter": answer.letter,
                         "calls": use.calls, "prompt_tokens": use.prompt_tokens,
                         "seconds": round(time.perf_counter() - wall, 2), "fallbacks": answer.fallbacks[:3],
                         **({"gists_shown": len(answer.details["gists_shown"])}
                            if "gists_shown" in answer.details else {})}
    out["answers"] = answers
    store.close()
    out["store_mb"] = round(store_bytes(path) / 1e6, 2)
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return out


def part(spec: dict, timeout: float) -> dict:
    """``run_part`` in a child process (its own CPU time and peak RSS)."""
    started = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, __file__, "--part", json.dumps(spec)], capture_output=True,
                              text=True, timeout=timeout, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    except subprocess.TimeoutExpired:
        return {"method": spec["method"], "words": spec["words"], "error": f"over the {timeout:.0f} s limit"}
    if done.returncode != 0:
        return {"method": spec["method"], "words": spec["words"], "error": done.stderr.strip()[-600:]}
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["process_s"] = round(time.perf_counter() - started, 1)
    return result


# --- the two series -------------------------------------------------------------------------------------
def scale_series(sizes: list[int], methods: list[str], args: argparse.Namespace) -> list[dict]:
    rows = []
    with MockServer(latency=0.0, text=mock_reply) as server:
        for words in sizes:
            for method in methods:
                server.max_in_flight = 0
                server.requests.clear()
                spec = {"method": method, "words": words, "url": server.url, "window": args.window,
                        "concurrency": args.concurrency}
                row = part(spec, args.timeout)
                row["mock_max_in_flight"] = server.max_in_flight
                rows.append(row)
                print(json.dumps({k: row.get(k) for k in ("method", "words", "build", "answers", "error")}),
                      file=sys.stderr, flush=True)
    return rows


def differing(sequential: list[int], chunked: list[int]) -> dict:
    seq, ch = set(sequential), set(chunked)
    return {"sequential_pages": len(seq), "chunked_pages": len(ch), "same": len(seq & ch),
            "only_sequential": len(seq - ch), "only_chunked": len(ch - seq)}


def pagination_series(args: argparse.Namespace) -> list[dict]:
    rows = []
    with MockServer(latency=args.latency, text=mock_reply) as server:
        for words, level in [(w, c) for w in args.pagination_words for c in args.levels]:
            runs = {}
            for mode in ("sequential", "chunked"):
                server.max_in_flight = 0
                server.requests.clear()
                options = {"pagination": mode, "chunk_words": args.chunk_words} if mode == "chunked" else {}
                spec = {"method": "readagent", "words": words, "url": server.url,
                        "window": args.window, "concurrency": level, "options": options, "boundaries": True,
                        "answer": False}
                runs[mode] = part(spec, args.timeout)
                runs[mode]["mock_max_in_flight"] = server.max_in_flight
            seq, ch = runs["sequential"], runs["chunked"]
            if "error" in seq or "error" in ch:
                rows.append({"concurrency": level, "words": words, "sequential": seq, "chunked": ch})
                continue
            row = {"concurrency": level, "words": seq["words"], "latency_s": args.latency,
                   "chunk_words": args.chunk_words, "chunks": ch["chunks"],
                   "sequential_wall_s": seq["build"]["wall_s"], "chunked_wall_s": ch["build"]["wall_s"],
                   "speed_up": round(seq["build"]["wall_s"] / ch["build"]["wall_s"], 2),
                   "sequential_calls": seq["build"]["calls"], "chunked_calls": ch["build"]["calls"],
                   "sequential_max_in_flight": seq["mock_max_in_flight"],
                   "chunked_max_in_flight": ch["mock_max_in_flight"],
                   "boundaries": differing(seq["boundaries"], ch["boundaries"])}
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", help=argparse.SUPPRESS)
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--methods", default="readagent,memwalker,rag")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--window", type=int, default=8192)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--levels", default="8,32")
    parser.add_argument("--pagination-words", default="100000,1000000")
    parser.add_argument("--chunk-words", type=int, default=10_000)
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per part")
    parser.add_argument("--skip", default="", help="scale or pagination: a series not to run")
    args = parser.parse_args()
    if args.part:
        print(json.dumps(run_part(json.loads(args.part))))
        return
    args.levels = [int(n) for n in args.levels.split(",")]
    args.pagination_words = [int(n) for n in args.pagination_words.split(",")]
    sizes = [int(n) for n in args.sizes.split(",")]
    started = time.perf_counter()
    scale = [] if "scale" in args.skip else scale_series(sizes, args.methods.split(","), args)
    linear = {}
    for method in args.methods.split(","):
        cpu = {r["words"]: r["build"]["cpu_ms_per_1k_words"] for r in scale if r["method"] == method and "build" in r}
        if len(cpu) >= 2:
            small, large = sorted(cpu)[-2:]
            linear[method] = {"from_words": small, "to_words": large, "cpu_per_word_ratio": round(cpu[large] /
                                                                                                   cpu[small], 2)}
    pagination = [] if "pagination" in args.skip else pagination_series(args)
    revision = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True, text=True,
                              cwd=Path(__file__).parent).stdout.strip()
    write_result("scale", {"settings": {k: v for k, v in vars(args).items() if k != "part"}, "revision": revision,
                           "question": QUESTION,
                           "scale": scale, "build_cpu_per_word_ratio": linear, "pagination": pagination,
                           "seconds": round(time.perf_counter() - started, 1)})


if __name__ == "__main__":
    main()
