"""(k) Libraries (issue 24): the price of not knowing where to look, scale, and updates.

Three parts, each a subcommand; every LLM call goes to pagemind's OpenAI-compatible mock server (the replies of
``scale.mock_reply``: read from the prompt, valid for every method) unless ``--llm`` names a real model, and the
response cache is off, so every call is counted:

* ``quality``: the staged QuALITY articles (``quality_dev_slice.json``, 47 articles, one question each) as one
  library; each question asked against the whole library and against its own article alone, with every document
  method: accuracy, tokens and LLM calls per question (the builds apart). With the mock, accuracy is not a measure
  (it always answers A); with ``--llm local:qwen2.5-coder-1.5b --articles N`` it is, on the first N articles.
* ``scale``: libraries of ``--sizes`` generated documents (``--doc-words`` each, QuALITY-like prose of invented
  words) per method, each size in its own process: build wall time and calls, one question's latency and tokens,
  peak RSS; the growth exponent of question tokens and latency (the slope of log cost over log size: 0 flat, 1
  linear).
* ``updates``: a ``--words`` document grown by ``--grow`` (10%) at its end, its memory updated from the previous
  one: LLM calls of the update ÷ a full build of the grown text (ReadAgent, MemWalker; for retrieval the fragments
  embedded, with the hashing embedder); and one document of a library of ``--library`` changed the same way: the
  calls of updating the library ÷ building that document alone.

    python benchmarks/library.py quality
    python benchmarks/library.py quality --llm local:qwen2.5-coder-1.5b --articles 4
    python benchmarks/library.py scale --sizes 100,1000,10000
    python benchmarks/library.py updates
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import DATA, peak_rss_mb, quality_rows, write_result
from scale import make_text, mock_reply

METHODS = ("full", "rag", "op-rag", "readagent-p", "readagent-s", "gistmem", "memwalker")
WINDOW = 8192


def session(llm: str | None, url: str | None, store: Path, cache: bool = False, **given: Any) -> Any:
    from pagemind import Pagemind

    if llm:
        return Pagemind(llm, store=store, cache=cache, **given)
    return Pagemind("openai:mock", store=store, base_url=url, context_window=WINDOW, cache=cache,
                    server_kind="openai", **given)


def mock() -> Any:
    from pagemind.llm.mockserver import MockServer

    return MockServer(latency=0.0, text=mock_reply)


# --- quality ------------------------------------------------------------------------------------------------------
def quality(args: argparse.Namespace) -> None:
    from pagemind import Document
    from pagemind.library import Library

    rows = quality_rows(args.data)[: args.articles or None]
    articles = [Document.from_text(r["article"], f"{r['article_id']}.txt") for r in rows]
    library = Library("quality", tuple(sorted(articles, key=lambda d: d.name)))
    methods = [m for m in args.methods.split(",") if m]
    folder = Path(tempfile.mkdtemp(prefix="pagemind-library-"))
    out: dict[str, Any] = {"articles": len(articles), "library_words": library.words, "questions": len(rows),
                           "model": args.llm or "mock", "methods": {}}
    with (mock() if not args.llm else _nothing()) as server, \
            session(args.llm, server.url if server else None, folder / "store.db") as pm:
        for method in methods:
            row: dict[str, Any] = {}
            for scope in ("article", "library"):
                started = time.perf_counter()
                build = pm.index(library, method, **_opts(method)) if scope == "library" else None
                if scope == "article":
                    for a in articles:
                        pm.index(a, method, **_opts(method))
                build_s = time.perf_counter() - started
                asked = []
                for r, article in zip(rows, articles):
                    source = library if scope == "library" else article
                    t0 = time.perf_counter()
                    try:
                        answer = pm.ask(source, r["question"], options=r["options"], method=method,
                                        **_opts(method))
                    except Exception as err:  # a refusal (full text beyond the window) is the measurement
                        asked.append({"error": f"{type(err).__name__}: {str(err)[:160]}"})
                        continue
                    use = answer.trace.usage
                    cited = [c.document_name for c in answer.citations]
                    asked.append({"correct": answer.choice == r["gold_label"],
                                  "tokens": use.prompt_tokens + use.completion_tokens, "calls": use.calls,
                                  "seconds": time.perf_counter() - t0,
                                  "cites_own_article": bool(cited) and cited[0] == article.name})
                ok = [a for a in asked if "error" not in a]
                row[scope] = {
                    "answered": len(ok), "refused": len(asked) - len(ok),
                    "refusal": next((a["error"] for a in asked if "error" in a), None),
                    "accuracy": _mean([float(a["correct"]) for a in ok]),
                    "tokens_per_q": _mean([a["tokens"] for a in ok]),
                    "calls_per_q": _mean([a["calls"] for a in ok]),
                    "seconds_per_q": _mean([a["seconds"] for a in ok]),
                    "first_citation_in_own_article": _mean([float(a["cites_own_article"]) for a in ok]),
                    "build_s": round(build_s, 2),
                    **({"build": pm.reader(method, document=library, **_opts(method)).describe(build)}
                       if build is not None and method != "full" else {})}
                print(method, scope, row[scope], flush=True)
            lib, own = row["library"], row["article"]
            if lib["tokens_per_q"] and own["tokens_per_q"]:
                row["tokens_ratio"] = round(lib["tokens_per_q"] / own["tokens_per_q"], 2)
                row["calls_ratio"] = round(lib["calls_per_q"] / own["calls_per_q"], 2)
            out["methods"][method] = row
    name = "library-quality" + ("" if not args.llm else "-" + args.llm.replace(":", "-")) + \
        (f"-a{args.articles}" if args.articles else "")
    write_result(name, out)


def _opts(method: str) -> dict[str, Any]:
    return {"memwalker": {"segment_tokens": 1000}}.get(method, {})


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


# --- scale --------------------------------------------------------------------------------------------------------
def scale_part(spec: dict[str, Any]) -> dict[str, Any]:
    """One library size and method, in its own process (its own peak RSS)."""
    from pagemind import Document
    from pagemind.library import Library

    docs = tuple(Document.from_text(make_text(spec["doc_words"], seed=i), f"doc{i:05d}.txt")
                 for i in range(spec["size"]))
    library = Library("scale", docs)
    folder = Path(tempfile.mkdtemp(prefix="pagemind-libscale-"))
    out: dict[str, Any] = {"size": spec["size"], "method": spec["method"], "words": library.words}
    from pagemind.llm.usage import Trace

    with session(None, spec["url"], folder / "store.db", concurrency=8, record_runs=False) as pm:
        started = time.perf_counter()
        trace = Trace()
        memory = pm.index(library, spec["method"], trace=trace)
        out["build_s"] = round(time.perf_counter() - started, 2)
        out["build_calls"] = trace.usage.calls
        out["units"] = pm.reader(spec["method"], document=library).describe(memory)
        started = time.perf_counter()
        answer = pm.ask(library, "What does the keeper of the lighthouse find in the end?",
                        options=["a letter", "a boat", "a key", "nothing at all"], method=spec["method"],
                        memory=memory)
        out["ask_s"] = round(time.perf_counter() - started, 3)
        use = answer.trace.usage
        out["ask_tokens"] = use.prompt_tokens + use.completion_tokens
        out["ask_calls"] = use.calls
        out["fallbacks"] = answer.fallbacks[:2]
    out["peak_rss_mb"] = round(peak_rss_mb(), 1)
    return out


def scale(args: argparse.Namespace) -> None:
    sizes = [int(s) for s in args.sizes.split(",")]
    methods = [m for m in args.methods.split(",") if m]
    results: dict[str, list[dict[str, Any]]] = {}
    with mock() as server:
        for method in methods:
            for size in sizes:
                spec = {"size": size, "method": method, "doc_words": args.doc_words, "url": server.url}
                done = subprocess.run([sys.executable, __file__, "part", json.dumps(spec)], capture_output=True,
                                      text=True, timeout=args.timeout, env={**os.environ, "PYTHONUNBUFFERED": "1"})
                got = (json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0
                       else {"size": size, "method": method, "error": done.stderr.strip()[-500:]})
                print(json.dumps(got), flush=True)
                results.setdefault(method, []).append(got)
    growth = {}
    for method, rows in results.items():
        ok = [r for r in rows if "error" not in r]
        if len(ok) >= 2:
            growth[method] = {key: _slope([r["size"] for r in ok], [max(r[key], 1e-6) for r in ok])
                              for key in ("ask_tokens", "ask_s", "build_s", "peak_rss_mb")}
    write_result("library-scale", {"doc_words": args.doc_words, "sizes": sizes, "results": results,
                                   "growth_exponent": growth})


def _slope(xs: list[float], ys: list[float]) -> float:
    """The least-squares slope of log y over log x."""
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    return round(sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx), 3)


# --- updates ------------------------------------------------------------------------------------------------------
def updates(args: argparse.Namespace) -> None:
    from dataclasses import replace

    from pagemind import LLM, Document, Store
    from pagemind.llm.openai import OpenAICompatible
    from pagemind.llm.usage import Trace
    from pagemind.methods import registry
    from pagemind.retrieval.embed import HashingEmbedder

    class Counting(HashingEmbedder):
        texts = 0

        def embed(self, texts: Any) -> Any:
            Counting.texts += len(texts)
            return super().embed(texts)

    old = Document.from_text(make_text(args.words, seed=1), "log.txt")
    grown_text = old.text + "\n\n" + make_text(int(args.words * args.grow), seed=2)
    folder = Path(tempfile.mkdtemp(prefix="pagemind-updates-"))
    out: dict[str, Any] = {"words": old.words, "grown_words": len(grown_text.split()), "document": {}}
    with mock() as server:
        backend = OpenAICompatible("mock", base_url=server.url, context_window=WINDOW)
        def built(method: str, options: dict[str, Any], document: Document, store: Store) -> tuple[int, float]:
            """The LLM calls (retrieval: the texts embedded) and seconds of building ``document``'s memory."""
            Counting.texts = 0
            extra = {"embedder": Counting()} if method == "rag" else {}
            reader = registry.get(method)(LLM(backend, concurrency=8), store, **options, **extra)
            trace = Trace()
            started = time.perf_counter()
            reader.build(document, trace=trace)
            cost = trace.usage.calls if method != "rag" else Counting.texts
            return cost, time.perf_counter() - started

        for method, options in (("gistmem", {}), ("memwalker", {}), ("rag", {"scorer": "dense"})):
            store = Store(folder / f"{method}.db")
            built(method, options, old, store)
            update, update_s = built(method, options, Document(grown_text, "log.txt", previous=old), store)
            full, full_s = built(method, options, Document(grown_text, "log.txt"), Store(folder / f"{method}-fresh.db"))
            out["document"][method] = {"unit": "texts embedded" if method == "rag" else "LLM calls",
                                       "update": update, "full_build": full, "ratio": round(update / full, 3),
                                       "update_s": round(update_s, 2), "full_s": round(full_s, 2)}
            print(method, out["document"][method], flush=True)
        # one document of a library changed: the library's update against building that document alone
        docs = [Document.from_text(make_text(args.doc_words, seed=100 + i), f"doc{i:03d}.txt")
                for i in range(args.library)]
        changed = Document(docs[7].text + "\n\n" + make_text(int(args.doc_words * args.grow), seed=3), "doc007.txt")
        out["library"] = {"documents": args.library, "doc_words": args.doc_words}
        for method in ("gistmem", "memwalker"):
            for cache in (False, True):  # the library's own levels are recomputed: with the cache, unchanged ones
                with session(None, server.url, folder / f"lib-{method}-{cache}.db", cache, concurrency=8) as pm:
                    pm.add("shelf", docs)
                    pm.index("shelf", method)
                    pm.add("shelf", [changed])
                    before = len(server.requests)  # the calls the server saw (a cached reply is no call)
                    pm.index("shelf", method)
                    update = len(server.requests) - before
                with session(None, server.url, folder / f"alone-{method}-{cache}.db", cache, concurrency=8) as pm:
                    before = len(server.requests)
                    pm.index(replace(changed, previous=None), method)
                    alone = len(server.requests) - before
                row = {"update_calls": update, "document_alone_calls": alone, "ratio": round(update / alone, 3)}
                out["library"][f"{method}{' (response cache on)' if cache else ''}"] = row
                print(method, cache, row, flush=True)
    write_result("library-updates", out)


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "part":
        print(json.dumps(scale_part(json.loads(sys.argv[2]))))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="part", required=True)
    q = sub.add_parser("quality", help="47 QuALITY articles as one library vs each article alone")
    q.add_argument("--data", type=Path, default=DATA)
    q.add_argument("--llm", default=None, help="a real model (default: the mock server)")
    q.add_argument("--articles", type=int, default=0, help="the first N articles only (0: all)")
    q.add_argument("--methods", default=",".join(METHODS))
    s = sub.add_parser("scale", help="libraries of many generated documents")
    s.add_argument("--sizes", default="100,1000,10000")
    s.add_argument("--methods", default="rag,op-rag,gistmem,readagent-p,memwalker")
    s.add_argument("--doc-words", type=int, default=400)
    s.add_argument("--timeout", type=float, default=3600)
    u = sub.add_parser("updates", help="an appended document, a changed library document")
    u.add_argument("--words", type=int, default=50_000)
    u.add_argument("--grow", type=float, default=0.1)
    u.add_argument("--library", type=int, default=100)
    u.add_argument("--doc-words", type=int, default=2000)
    args = parser.parse_args()
    {"quality": quality, "scale": scale, "updates": updates}[args.part](args)


if __name__ == "__main__":
    main()
