"""The cost of citing (issue 23): added milliseconds and tokens per answer, every document method, the long sample.

The text is ``pagemind.samples`` ``keepers-ledger.txt`` (the 16,895-word novella) and its multiple-choice
questions (``keepers-ledger.questions.txt``). Every document reader (``readagent-p``, ``readagent-s``,
``gistmem``, ``memwalker``, ``rag``, ``op-rag``, ``full``; ``auto`` only picks one of these) answers each
question with the reader option ``cite`` set to

* ``off``: no citations (the baseline),
* ``sentences`` (the default): the read sentences aligned to the answer, no LLM call,
* ``lexical``: ``sentences`` with the MiniLM re-ranking turned off (what citing costs without the
  ``retrieval`` extra: content-word alignment only),
* ``quotes`` (opt-in): one more LLM call asking for quotes, each checked against the text,

through the OpenAI-compatible backend against ``pagemind.llm.mockserver.MockServer`` on 127.0.0.1 (latency 0;
replies read from the prompt as in ``scale.py``; the quote request is answered with one sentence of the text it
shows and one invented sentence, so each quoted answer must keep one quote and drop one). Memories are built once
per method (quality preset, 32k window); the LLM cache is off, so every answer makes its calls. Modes take turns
per question and ``--repeats`` rounds are run after a warm-up round (which loads the MiniLM encoder when the
``retrieval`` extra is installed).

Reported per method and mode: median wall milliseconds per answer, mean LLM calls, prompt and completion tokens
and citations per answer; per method the added milliseconds (median ``sentences`` − median ``off``) and the added
calls and tokens, which must be 0 for ``sentences``; for ``quotes`` the added calls and tokens and the share of
quotes dropped. Wall time here is pagemind's own work: the mock answers at once, so a real model's seconds per
call are to be added to the LLM-call columns.

    python benchmarks/citations.py [--repeats 3] [--questions 5] [--methods readagent-p,rag]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

from common import long_sample, write_result
from pagemind.llm.mockserver import MockServer
from scale import mock_reply

METHODS = ("readagent-p", "readagent-s", "gistmem", "memwalker", "rag", "op-rag", "full")
MODES = ("off", "sentences", "lexical", "quotes")  # lexical: ``sentences`` with the encoder re-ranking turned off
INVENTED = "The gull flew over the harbour office and read the ledger aloud to Wren."
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def reply(body: dict) -> str:
    """``scale.mock_reply``, and for the quote request one real sentence of the text shown plus one invented."""
    first = str(body["messages"][0]["content"]).lstrip()
    if first.startswith("Here is the text you read:"):
        shown = first.split("Here is the text you read:", 1)[1].split("\nQuestion:", 1)[0]
        shown = re.sub(r"<[^>\n]*>", "\n\n", shown)  # the prompt's markup (<Text>, <Page 3>) is not the story's
        pieces = [s.strip() for para in shown.split("\n\n") for s in _SENTENCE.split(para)]
        real = next((s for s in pieces if len(s.split()) >= 8 and "\n" not in s), shown.strip()[:200])
        return json.dumps({"quotes": [real, INVENTED]})
    return mock_reply(body)


def run(methods: tuple[str, ...], repeats: int, n_questions: int, window: int) -> dict:
    from pagemind import LLM, Document, Store
    from pagemind.answering.question import Question
    from pagemind.llm.openai import OpenAICompatible
    from pagemind.methods import registry

    text, questions = long_sample()
    questions = questions[:n_questions]
    document = Document.from_text(text, name="keepers-ledger")
    folder = Path(tempfile.mkdtemp(prefix="pagemind-cite-"))
    store = Store(folder / "store.db")
    results: dict = {"document_words": document.words, "questions": len(questions), "repeats": repeats,
                     "window": window, "methods": {}}
    with MockServer(text=reply) as server:
        llm = LLM(OpenAICompatible("mock", base_url=server.url, context_window=window), cache=None)
        for method in methods:
            readers = {mode: registry.get(method)(llm, store, preset="quality",  # sentences: MiniLM re-ranks
                                                  cite="sentences" if mode == "lexical" else mode,
                                                  cite_encoder="lexical" if mode == "lexical" else "minilm")
                       for mode in MODES}
            t0 = time.perf_counter()
            memory = readers["off"].build(document)
            build_s = time.perf_counter() - t0
            for reader in readers.values():  # each reader knows the document its answers cite into
                reader.build(document)
            rows: dict[str, dict[str, list[float]]] = {m: {} for m in MODES}
            for round_ in range(repeats + 1):  # round 0 warms up (the encoder, caches), not counted
                for q, options, _gold in questions:
                    for mode in MODES:
                        t = time.perf_counter()
                        answer = readers[mode].answer(memory, Question(q, options))
                        ms = 1000 * (time.perf_counter() - t)
                        if round_ == 0:
                            continue
                        use = answer.trace.usage
                        quotes_dropped = sum("quote" in f and ("not" in f or "dropped" in f)
                                             for f in answer.fallbacks)
                        row = rows[mode]
                        for key, value in (("ms", ms), ("calls", use.calls), ("prompt", use.prompt_tokens),
                                           ("completion", use.completion_tokens),
                                           ("citations", len(answer.citations)),
                                           ("quoted", sum(c.found_by == "quote" for c in answer.citations)),
                                           ("dropped", quotes_dropped)):
                            row.setdefault(key, []).append(float(value))
                        exact = all(document.text[c.start:c.end] == c.quote for c in answer.citations)
                        row.setdefault("exact", []).append(float(exact))
            summary = {mode: {"ms_median": round(statistics.median(r["ms"]), 2),
                              "ms_mean": round(statistics.fmean(r["ms"]), 2),
                              **{k: round(statistics.fmean(r[k]), 2)
                                 for k in ("calls", "prompt", "completion", "citations", "quoted", "dropped")},
                              "quotes_exact": min(r["exact"]) == 1.0}
                       for mode, r in rows.items()}
            off, sen, lex, quo = (summary[m] for m in MODES)

            def tokens(mode: dict) -> float:
                return mode["prompt"] + mode["completion"]

            asked = quo["quoted"] + quo["dropped"]
            results["methods"][method] = {
                "build_s": round(build_s, 2), "modes": summary,
                "sentences_added_ms": round(sen["ms_median"] - off["ms_median"], 2),
                "sentences_added_calls": round(sen["calls"] - off["calls"], 2),
                "sentences_added_tokens": round(tokens(sen) - tokens(off), 2),
                "lexical_added_ms": round(lex["ms_median"] - off["ms_median"], 2),
                "quotes_added_ms": round(quo["ms_median"] - off["ms_median"], 2),
                "quotes_added_calls": round(quo["calls"] - off["calls"], 2),
                "quotes_added_tokens": round(tokens(quo) - tokens(off), 2),
                "quotes_dropped_share": round(quo["dropped"] / asked, 3) if asked else None,
            }
            print(method, results["methods"][method], file=sys.stderr, flush=True)
    store.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--questions", type=int, default=5)
    parser.add_argument("--window", type=int, default=32768)
    args = parser.parse_args()
    methods = tuple(m.strip() for m in args.methods.split(",") if m.strip())
    started = time.perf_counter()
    result = run(methods, args.repeats, args.questions, args.window)
    result["seconds"] = round(time.perf_counter() - started, 1)
    write_result("citations", result)


if __name__ == "__main__":
    main()
