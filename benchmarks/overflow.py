"""(e) ReadAgent beyond the window: ``overflow=retrieve`` (b) vs ``overflow=hierarchical`` (a) on a generated
1M-word text, an 8k window, the zero-latency mock of ``scale.py`` (same text generator, same prompt-reading
replies; a part look-up gets the first part shown, as a page look-up gets the first page).

One memory is built (the paper's pagination and gists), then ReadAgent-P, ReadAgent-S and GistMem answer two
different questions in each overflow mode, without a response cache: per answer, its LLM calls and prompt tokens,
split into the part gists made at that question (hierarchical: built lazily by the first question that needs
them, reused by every later one and by the other readers) and the answer step proper (look-ups and the answer),
with the gists shown and the levels.

    python benchmarks/overflow.py [--words 1000000] [--window 8192] [--group-size 10]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import tempfile
import time
from pathlib import Path

from common import write_result
from pagemind.llm.mockserver import MockServer
from scale import make_text, mock_reply

QUESTIONS = (("What does the keeper of the lighthouse find in the end?", ("a letter", "a boat", "a key", "nothing")),
             ("Why does the captain leave the harbour at night?", ("fear", "a storm", "a promise", "money")))
_PART = re.compile(r"<Part (\d+)>")
READERS = ("readagent-p", "readagent-s", "gistmem")


def reply(body: dict) -> str:
    """``scale.mock_reply``, plus the part look-ups of overflow=hierarchical (the first part shown)."""
    first = str(body["messages"][0]["content"]).lstrip()
    parts = _PART.findall(first)
    if "Which part(s) would you like to look into" in first:
        return f"I want to look into Part [{parts[0]}] to check." if parts else "None."
    if "Specify a SINGLE part to look into" in first:
        return f"Part {parts[0]}" if parts else "None."
    return mock_reply(body)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--words", type=int, default=1_000_000)
    parser.add_argument("--window", type=int, default=8192)
    parser.add_argument("--group-size", type=int, default=10)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()

    from pagemind import LLM, Document, Store
    from pagemind.answering.question import Question
    from pagemind.llm.openai import OpenAICompatible
    from pagemind.methods import registry
    from pagemind.methods.readagent.hierarchy import part_kind

    document = Document.from_text(make_text(args.words))
    folder = Path(tempfile.mkdtemp(prefix="pagemind-overflow-"))
    store = Store(folder / "store.db")
    rows, started = [], time.perf_counter()
    with MockServer(latency=0.0, text=reply) as server:
        backend = OpenAICompatible("mock", base_url=server.url, context_window=args.window)
        llm = LLM(backend, concurrency=args.concurrency)
        build_started = time.perf_counter()
        memory = registry.get("readagent-p")(llm, store, preset="quality").build(document)
        build = {"pages": len(memory.pages), "gist_tokens": llm.count_tokens(memory.tagged_gists()),
                 "seconds": round(time.perf_counter() - build_started, 1)}
        print(build, flush=True)
        for overflow in ("retrieve", "hierarchical"):
            for name in READERS:
                reader = registry.get(name)(llm, store, preset="quality", overflow=overflow,
                                            group_size=args.group_size)
                for n, (question, options) in enumerate(QUESTIONS, 1):
                    wall = time.perf_counter()
                    answer = reader.answer(memory, Question(question, options))
                    roles = answer.trace.by_role()
                    gist = roles.get("gist")
                    use = answer.trace.usage
                    tree = answer.details.get("hierarchy", {})
                    row = {"overflow": overflow, "reader": name, "question": n, "letter": answer.letter,
                           "calls": use.calls, "prompt_tokens": use.prompt_tokens,
                           "part_gist_calls": gist.calls if gist else 0,
                           "part_gist_prompt_tokens": gist.prompt_tokens if gist else 0,
                           "answer_step_calls": use.calls - (gist.calls if gist else 0),
                           "answer_step_prompt_tokens": use.prompt_tokens - (gist.prompt_tokens if gist else 0),
                           "lookup_calls": roles["lookup"].calls if "lookup" in roles else 0,
                           "gists_shown": len(answer.details.get("gists_shown", [])),
                           "levels": tree.get("levels"), "parts": tree.get("parts"),
                           "seconds": round(time.perf_counter() - wall, 2)}
                    rows.append(row)
                    print(row, flush=True)
        stored = {level: len(store.items(memory.key, part_kind(level, args.group_size))) for level in (1, 2, 3, 4)}
    revision = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True, text=True,
                              cwd=Path(__file__).parent).stdout.strip()
    write_result("overflow", {"settings": vars(args), "revision": revision, "questions": QUESTIONS,
                              "document_words": document.words, "build": build,
                              "stored_parts": {k: v for k, v in stored.items() if v}, "answers": rows,
                              "seconds": round(time.perf_counter() - started, 1)})
    store.close()


if __name__ == "__main__":
    main()
