"""(a) Tokens: LLM tokens processed to build the index, divided by the document's tokens, and the prompt tokens
of one question, for ReadAgent-P, ReadAgent-S, GistMem and the full text, on a ~50k-word text, for both gist
modes (separate = the paper's; continue = the gist asked as a follow-up turn of the pagination conversation).

No model runs: the decisions are simulated (pagination takes the middle offered label, a gist is the first
15% of the page's words, ReadAgent-P asks for 3 pages spread over the document, ReadAgent-S reads the same 3
then says STOP, every answer is "Answer: (A)"), but every token count is real: the Qwen2.5 tokenizer (a
vocab-only load of the default model) on the prompt rendered with the model's own chat template. For a local
model with a prompt cache (llama.cpp keeps the previous request's tokens), "new tokens" are the prompt tokens
minus the longest common token prefix with what the cache holds (previous prompt + its reply).

    python benchmarks/tokens.py [--words 50000] [--model qwen2.5-coder-1.5b] [--n-ctx 32768] [--questions 5]
"""

from __future__ import annotations

import argparse
import re
import statistics
import threading
from pathlib import Path

from common import DATA, concatenated_articles, quality_rows, write_result
from pagemind import LLM, Document, Store
from pagemind.answering.question import Question
from pagemind.llm.base import Backend, Capabilities, LLMRequest, LLMResponse, estimate_tokens
from pagemind.llm.usage import Trace
from pagemind.methods import registry
from pagemind.methods.full import FullText
from pagemind.methods.readagent import ReadAgentP

GIST_FRACTION = 0.15  # the paper's QuALITY compression rate is ~84%
LOOKUP_PAGES = 3
_LABEL = re.compile(r"^<(\d+)>$", re.MULTILINE)
_PAGE_TAG = re.compile(r"^<Page (\d+)>$", re.MULTILINE)
_LISTED = re.compile(r"one of ((?:<\d+>(?:, )?)+)\.")
_SPAN = re.compile(r"from label <(\d+)> to label <(\d+)>")


def simulated_reply(request: LLMRequest) -> str:
    """A plausible, well-formed decision for each kind of request (what the grammar would allow)."""
    first, last = request.messages[0].content, request.messages[-1].content
    if request.role == "paginate":
        listed = _LISTED.search(last) if len(request.messages) > 1 else None  # a streaming turn lists its labels
        labels = re.findall(r"<(\d+)>", listed.group(1)) if listed else _LABEL.findall(first)
        return f"Break point: <{labels[len(labels) // 2]}>"
    if request.role == "gist":
        span = _SPAN.search(last)
        if len(request.messages) == 1:  # separate: the page is the passage
            page = first.split("Passage:\n", 1)[1]
        elif span:  # streaming: the page between two labels of the conversation's passages
            shown = "\n".join(m.content for m in request.messages if m.role == "user")
            page = _LABEL.sub("", shown.split(f"\n<{span.group(1)}>\n", 1)[1].split(f"\n<{span.group(2)}>\n", 1)[0])
        else:  # continue: the part of the pagination passage before the chosen label
            label = re.search(r"label <(\d+)>", last).group(1)
            page = _LABEL.sub("", first.split("Passage:\n", 1)[1].split(f"\n<{label}>\n", 1)[0])
        words = page.split()
        return " ".join(words[: max(1, round(len(words) * GIST_FRACTION))])
    if request.role == "lookup":
        n = len(_PAGE_TAG.findall(first))
        spread = list(dict.fromkeys(min(n - 1, k * n // (2 * LOOKUP_PAGES)) for k in range(1, 2 * LOOKUP_PAGES, 2)))
        if "SINGLE page" in first:  # ReadAgent-S: one page per step, then STOP
            past = re.search(r"DO NOT ask to read them again\):\n(.*)\n", first).group(1)
            read = [int(p) for p in re.findall(r"\d+", past)]
            todo = [p for p in spread if p not in read]
            return f"Page {todo[0]}" if todo and len(read) < LOOKUP_PAGES else "STOP"
        return "I want to look up Page [" + ", ".join(map(str, spread)) + "]"
    if request.role == "answer":
        return "Answer: (A)"
    raise ValueError(f"no simulated reply for role {request.role!r}")


class SimulatedQwen(Backend):
    """Simulated replies, real token counts; calls are serialised and logged in order, like one local slot."""

    def __init__(self, model: str, context_window: int) -> None:
        self.tokenizer = "estimate (pagemind.llm.base.estimate_tokens)"
        self._llm = self._formatter = None
        try:
            import llama_cpp
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            from pagemind.llm.catalogue import model_path

            path = model_path(model)
            self._llm = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
            text = lambda t: self._llm._model.token_get_text(t) if t != -1 else ""
            self._formatter = Jinja2ChatFormatter(self._llm.metadata["tokenizer.chat_template"],
                                                  eos_token=text(self._llm.token_eos()),
                                                  bos_token=text(self._llm.token_bos()))
            self.tokenizer = f"{model} (llama.cpp vocab-only load, model's chat template)"
        except Exception as err:  # any failure means: no real tokenizer here
            print(f"WARNING: real tokenizer unavailable ({type(err).__name__}: {err}); "
                  "token counts are pagemind.llm.base.estimate_tokens estimates")
        self.model_id = f"simulated:{model}"
        self.capabilities = Capabilities(context_window=context_window, supports_grammar=True, max_concurrency=1,
                                         has_tokenizer=self._llm is not None)
        self.log: list[tuple[str, object, object]] = []  # (role, prompt ids, reply ids), in execution order
        self._lock = threading.Lock()

    def _ids(self, text: str, special: bool = False):
        """Token ids (a list), or the text itself when there is no tokenizer (prefixes then in characters)."""
        if self._llm is None:
            return text
        return self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=special)

    def _size(self, ids) -> int:
        return estimate_tokens(ids) if isinstance(ids, str) else len(ids)

    def count_tokens(self, text: str) -> int:
        return self._size(self._ids(text)) if text else 0

    def prompt_ids(self, request: LLMRequest):
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        if self._formatter is not None:
            return self._ids(self._formatter(messages=messages).prompt, special=True)
        return "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)

    def prompt_tokens(self, request: LLMRequest) -> int:
        return self._size(self.prompt_ids(request))

    def execute(self, request: LLMRequest) -> LLMResponse:
        with self._lock:
            text = simulated_reply(request)
            ids, reply = self.prompt_ids(request), self._ids(text)
            self.log.append((request.role, ids, reply))
        return LLMResponse(text=text, prompt_tokens=self._size(ids), completion_tokens=self._size(reply),
                           seconds=0.0, model=self.model_id, constrained=request.constraint is not None)

    def new_tokens(self, start: int = 0) -> dict[str, int]:
        """Prompt tokens a prefix-caching server would evaluate, by role, for log entries from ``start``."""
        out: dict[str, int] = {}
        for i in range(start, len(self.log)):
            role, ids, _ = self.log[i]
            cached = self.log[i - 1][1] + self.log[i - 1][2] if i else ids[:0]
            n = 0
            while n < min(len(ids), len(cached)) and ids[n] == cached[n]:
                n += 1
            out[role] = out.get(role, 0) + self._size(ids[n:])
        return out


MODES = {"separate": ("separate", "sequential"), "continue": ("continue", "sequential"),
         "stream": ("continue", "streaming")}  # gist mode, pagination


def index_run(backend: SimulatedQwen, doc: Document, mode: str, doc_tokens: int):
    llm = LLM(backend, cache=None, concurrency=1)
    gist_mode, pagination = MODES[mode]
    agent = ReadAgentP(llm, Store(":memory:"), preset="quality", gist_mode=gist_mode, pagination=pagination)
    backend.log.clear()
    trace = Trace()
    memory = agent.build(doc, trace=trace)
    u, new = trace.usage, backend.new_tokens()
    by_role = {k: v.as_dict() for k, v in trace.by_role().items()}
    for role, n in new.items():
        by_role[role]["new_prompt_tokens"] = n
    return memory, {
        "pages": len(memory.pages), "fallback_pages": sum(p.label_source == "fallback" for p in memory.pages),
        "compression_rate": round(memory.compression_rate, 1), "llm_calls": u.calls,
        "index_prompt_tokens": u.prompt_tokens,
        "index_prompt_tokens_over_document": round(u.prompt_tokens / doc_tokens, 2),
        "index_completion_tokens": u.completion_tokens,
        "index_completion_tokens_over_document": round(u.completion_tokens / doc_tokens, 3),
        "index_new_prompt_tokens_with_prefix_cache": sum(new.values()),
        "index_new_prompt_tokens_over_document": round(sum(new.values()) / doc_tokens, 2),
        "by_role": by_role,
    }


def per_question(backend: SimulatedQwen, memory, doc: Document, questions: list[Question]) -> dict:
    llm = LLM(backend, cache=None, concurrency=1)
    readers = {m: registry.get(m)(llm, Store(":memory:"), preset="quality")
               for m in ("readagent-p", "readagent-s", "gistmem")}
    readers["full"] = FullText(llm, Store(":memory:"))
    out = {}
    for name, reader in readers.items():
        rows, notes = [], set()
        target = memory if name != "full" else reader.build(doc)
        for q in questions:
            start = len(backend.log)
            a = reader.answer(target, q)
            rows.append((a.usage.calls, a.usage.prompt_tokens, a.usage.completion_tokens,
                         sum(backend.new_tokens(start).values()), a.context_words, len(a.pages_read)))
            notes.update(f for f in a.fallbacks if "truncated" in f or "dropped" in f)
        mean = [round(statistics.mean(col), 1) for col in zip(*rows)]
        out[name] = dict(zip(("calls", "prompt_tokens", "completion_tokens", "new_prompt_tokens_with_prefix_cache",
                              "answer_context_words", "pages_read"), mean))
        # the first question follows another method's calls: only later ones show what the cache saves
        out[name]["new_prompt_tokens_with_prefix_cache"] = round(statistics.mean(r[3] for r in rows[1:] or rows), 1)
        if notes:
            out[name]["notes"] = sorted(notes)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--words", type=int, default=50_000)
    ap.add_argument("--model", default="qwen2.5-coder-1.5b")
    ap.add_argument("--n-ctx", type=int, default=32768, help="context window (the full text is cut to fit it)")
    ap.add_argument("--questions", type=int, default=5)
    ap.add_argument("--data", type=Path, default=DATA)
    args = ap.parse_args()

    text, used = concatenated_articles(quality_rows(args.data), args.words)
    doc = Document.from_text(text, "quality-concat")
    backend = SimulatedQwen(args.model, args.n_ctx)
    doc_tokens = backend.count_tokens(text)
    step = max(1, len(used) // args.questions)
    questions = [Question(r["question"], tuple(r["options"])) for r in used[::step][: args.questions]]
    result = {
        "method": ("SIMULATED decisions (no model ran): pagination picks the middle offered label, gists are the "
                   f"first {GIST_FRACTION:.0%} of each page's words, ReadAgent-P asks for {LOOKUP_PAGES} pages spread "
                   f"over the document, ReadAgent-S reads the same {LOOKUP_PAGES} then STOP, answers 'Answer: (A)'. "
                   "Token counts are REAL tokenizer counts of the prompts rendered with the model's chat template. "
                   "new_prompt_tokens_with_prefix_cache = prompt tokens minus the longest common token prefix with "
                   "the previous request's prompt + reply (what a llama.cpp prompt cache holds); calls are "
                   "serialised (one local slot), so in separate mode gists interleave with pagination."),
        "tokenizer": backend.tokenizer, "context_window": args.n_ctx,
        "document_words": doc.words, "document_tokens": doc_tokens, "index": {},
    }
    memories = {}
    for mode in MODES:
        memories[mode], result["index"][mode] = index_run(backend, doc, mode, doc_tokens)
        print(mode, result["index"][mode], flush=True)
    same = [g.text for g in memories["separate"].gists] == [g.text for g in memories["continue"].gists]
    result["per_question"] = {
        "questions": len(questions),
        "note": ("means over the questions, on the separate-mode memory" +
                 (" (the continue-mode memory is identical)" if same else " (continue-mode memory differs)") +
                 f"; full text = the whole document truncated (left) to the {args.n_ctx}-token window; "
                 "new_prompt_tokens_with_prefix_cache: mean over the 2nd..nth question, each asked right after "
                 "a question of the same method"),
        **per_question(backend, memories["separate"], doc, questions),
    }
    write_result("tokens", result)


if __name__ == "__main__":
    main()
