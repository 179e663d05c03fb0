"""A retriever that retrieves (issue 36): what a LangChain or LlamaIndex retriever call costs now that it ranks a
method's memory instead of answering.

On the embedded tiny model (SmolLM2-135M, in this process) and the sample story, for two questions in LangChain's
``batch`` (the issue's case: 408 s before, each call a full answer of up to 512 tokens):

* **retrieve** — ``PagemindRetriever(search_kwargs={"k": 2}).batch([...])`` over RAG (its fragments are built by
  the first call: embeddings only), then the same batch again (memory built);
* **answer** — the same two questions through ``answering(...)`` (the method's answer call, what the retriever used
  to run), with the response cache off so every call is paid.

Reported: seconds, and the LLM calls each made (the retriever's must be 0).

    python benchmarks/retrievers.py
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import write_result
from pagemind import Pagemind
from pagemind.cli.main import sample_path
from pagemind.integrations.langchain import PagemindRetriever, answering

QUESTIONS = ["What is the name of the supply boat?", "Who finds the map?"]


def main() -> None:
    home = Path(tempfile.mkdtemp())
    book = home / "story.txt"
    book.write_text(sample_path().read_text())
    rows: dict[str, dict] = {}
    with Pagemind("local:smollm2-135m", store=home / "s.db", n_ctx=4096, concurrency=1, cache=False,
                  embedded="process") as pm:
        retriever = PagemindRetriever(pm=pm, source=str(book), method="rag", search_kwargs={"k": 2})
        for label in ("retrieve (memory built by it)", "retrieve (memory built)"):
            calls, start = pm.llm.usage.calls, time.perf_counter()
            found = retriever.batch(QUESTIONS)
            rows[label] = {"seconds": round(time.perf_counter() - start, 3), "llm_calls": pm.llm.usage.calls - calls,
                           "passages": [len(d) for d in found]}
        chain = answering(pm, str(book), method="rag")
        calls, start = pm.llm.usage.calls, time.perf_counter()
        answers = chain.batch(QUESTIONS)
        rows["answer (what the retriever ran before)"] = {
            "seconds": round(time.perf_counter() - start, 3), "llm_calls": pm.llm.usage.calls - calls,
            "cited": [len(a["citations"]) for a in answers]}
    write_result("retrievers", {"model": "local:smollm2-135m", "document_words": len(book.read_text().split()),
                                "questions": QUESTIONS, "runs": rows})


if __name__ == "__main__":
    main()
