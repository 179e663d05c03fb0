"""(u) The agent's recall search on LoCoMo: how often the first page of ``conversation_search`` holds a question's
evidence turn, ranked by BM25 alone (the last stop's ranking), MiniLM alone, both fused by reciprocal rank, and
both min-max normalised and summed, and that with each match read beside its neighbours in the exchange (next in
order, said within the hour: the agent's ranking now, ``pagemind.agent.functions.rank_messages``); at the first page (5
messages) and at 12 (about what recall before reply shows in its 400 tokens).

The query is the question itself (the agent searches with words of its own, often fewer): a figure of the ranking,
not of the agent. No LLM; the staged conversations and MiniLM only.

    python benchmarks/recall_search.py [--data DIR] [--page 5]
"""

from __future__ import annotations

import argparse
import re
import time

import numpy as np

from common import DATA, write_result
from pagemind.agent.functions import in_exchange, rank_messages
from pagemind.eval.sets import load_dataset
from pagemind.retrieval.embed import fragment_vectors, load_embedder
from pagemind.retrieval.scorers import rrf


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument("--page", type=int, default=5, help="messages on one page of search results (the agent's)")
    parser.add_argument("--recalled", type=int, default=12, help="messages recall before reply shows, about")
    args = parser.parse_args()
    examples = [e for e in load_dataset("locomo", args.data, {}) if e.evidence and e.conversation]
    encoder = load_embedder("minilm")
    by_doc: dict[str, tuple[list[str], list[str], list[bool], object]] = {}
    started = time.perf_counter()
    hits: dict[str, int] = {}
    matched: dict[str, int] = {}
    for e in examples:
        if e.document_id not in by_doc:
            turns = [t for t in e.conversation if t.text]
            texts = [t.text for t in turns]
            wheres = [t.where for t in turns]
            together = in_exchange([str(t.time) for t in turns])
            by_doc[e.document_id] = (texts, wheres, together, fragment_vectors(encoder.embed(texts)))
        texts, wheres, together, vectors = by_doc[e.document_id]
        labels = {s.label for s in e.evidence}
        q = fragment_vectors(encoder.embed([e.question]))[0]
        similar = [float(v) for v in vectors @ q]  # type: ignore[operator]
        rankings = {"bm25": rank_messages(e.question, texts),
                    "minilm": sorted(range(len(texts)), key=lambda i: -similar[i])}
        words = {i: r for r, i in enumerate(reversed(rankings["bm25"]), 1)}  # BM25's order as scores (0: no word)
        fused = rrf([np.array([words.get(i, 0) for i in range(len(texts))], dtype=float), np.array(similar)])
        rankings["rrf"] = [i for i in np.argsort(-fused, kind="stable") if i in words]
        rankings["mix"] = rank_messages(e.question, texts, similar)
        rankings["mix, beside neighbours (the agent's)"] = rank_messages(e.question, texts, similar, together)
        for name, order in rankings.items():
            for k, key in ((args.page, name), (args.recalled, f"{name} @{args.recalled}")):
                found = {m.group(1) for i in order[:k] for m in re.finditer(r"\((D\d+:\d+)\)", wheres[i])}
                hits[key] = hits.get(key, 0) + bool(found & labels)
                matched[key] = matched.get(key, 0) + len(order)
    n = len(examples)
    rows = {name: {"messages": args.recalled if name.endswith(f"@{args.recalled}") else args.page,
                   "holds_evidence": round(hits[name] / n, 4), "matched_mean": round(matched[name] / n, 1)}
            for name in hits}
    for name, row in rows.items():
        print(f"{name:42} the first {row['messages']:2} hold evidence {row['holds_evidence']:.3f}  "
              f"messages matched {row['matched_mean']}")
    write_result("recall_search", {"questions": n, "conversations": len(by_doc), "page": args.page,
                                   "seconds": round(time.perf_counter() - started, 1), "rankings": rows})


if __name__ == "__main__":
    main()
