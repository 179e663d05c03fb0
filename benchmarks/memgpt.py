"""MemGPT benchmarks on the embedded model: nested key-value retrieval, LoCoMo and MSC answer accuracy,
tokens and LLM calls per user turn, and the valid-action rate of the agent's steps.

* ``kv``: the paper's nested KV task (../shared/data/memgpt-nested-kv). ``levels`` in the data = total lookups
  (1 = a plain lookup, i.e. 0 nested hops; the paper's figure's "nesting levels 0-4" are hops, so data levels 1-4
  cover hops 0-3 and level 5 would be hop 4). The agent gets the 140 pairs in archival storage as
  "Key-value pair: key = K, value = V" and searches them by text (10 per page, as the paper's nested_kv.py did);
  the full-context baseline gets all 140 pairs as a JSON object in the prompt (~8k tokens) and answers with a
  grammar-forced UUID.
* ``locomo``: questions (categories 1-4) about LoCoMo conversation 1 (conv-26). The agent has the whole
  conversation in recall storage, out of context (the paper's DMR setting "dialogue (Recall)"), and must search.
  Baselines: the full text truncated to the most recent part that fits the same 8k window, and a recursive
  summary (a running summary updated chunk by chunk). Scored by LoCoMo's token F1 and by gold-token recall.
* ``msc``: MSC has no QA labels, so each episode gets a mechanically built 4-way probe: "which of these did I
  tell you about myself?" with one of the user's (speaker 1's) persona facts from the previous session and three
  facts of other episodes' speakers (chance 25%). Agent: previous session in recall only; baselines: the previous
  session in the prompt, or its summary.
* ``save``: the scenario of tests/test_agent_integration.py, repeated at ``--save-n`` agent clocks (the time stamps
  in the prompt are all that differs between trials): the user asks the agent to save a fact, 30 messages of small
  talk push it out of the window, then asks for it. Counted: saved to a core memory block, answered after the
  eviction, and each step's function.

    nice -n 19 python benchmarks/memgpt.py --tasks kv,locomo,msc,save [--model qwen2.5-coder-1.5b]
        [--kv-seeds 2] [--kv-baseline-seeds 1] [--locomo-n 6] [--msc-n 5] [--save-n 8] [--budget-minutes 25]

Results are merged into results/memgpt.json under by_model/<model>/<task> (written after every instance).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import string
import tempfile
import time
import uuid
from collections import Counter
from contextlib import redirect_stdout
from datetime import datetime, timedelta
from io import StringIO
from pathlib import Path

from common import DATA, RESULTS, write_result
from pagemind import Pagemind
from pagemind.agent import Agent, AgentOptions, Block
from pagemind.eval.metrics import UUID
from pagemind.eval.sets_dialogue import locomo_turns
from pagemind.llm.base import Constraint, LLMRequest
from pagemind.prompts import get_prompt

UUID_GBNF = 'root ::= "\\"" h{8} "-" h{4} "-" h{4} "-" h{4} "-" h{12} "\\""\nh ::= [0-9a-f]\n'
LETTER_GBNF = 'root ::= "Answer: (" [ABCD] ")"\n'


class Run:
    """Shared state: session, budget, the results file (merged, rewritten after every instance)."""

    def __init__(self, pm: Pagemind, budget_minutes: float, constrained: bool = True) -> None:
        self.pm, self.deadline = pm, time.monotonic() + budget_minutes * 60
        self.constrained = constrained
        self.suffix = "" if constrained else "_unconstrained"
        path = RESULTS / "memgpt.json"
        self.data = json.loads(path.read_text()) if path.exists() else {}
        self.data.pop("benchmark", None), self.data.pop("date", None)
        self.turns: list[dict] = []
        self.n = 0

    def out_of_time(self) -> bool:
        return time.monotonic() > self.deadline

    def agent(self, human: str | None = None, **options) -> Agent:
        self.n += 1
        opts = AgentOptions(embedder="none", constrained=self.constrained, **options)
        return Agent.create(self.pm.llm, self.pm.store, f"bench-{uuid.uuid4().hex[:10]}", human=human, options=opts)

    def turn(self, agent: Agent, text: str, task: str) -> tuple[list[str], dict]:
        t0 = time.perf_counter()
        turn = agent.say(text)
        u = turn.usage
        record = {"task": task, "steps": len(turn.steps), "llm_calls": u.calls, "prompt_tokens": u.prompt_tokens,
                  "completion_tokens": u.completion_tokens, "valid": turn.valid_actions,
                  "invalid": turn.invalid_actions, "evictions": turn.evictions, "stop": turn.stop_reason,
                  "calls": [s.function for s in turn.steps], "seconds": round(time.perf_counter() - t0, 1)}
        self.turns.append(record)
        return turn.messages, record

    def ask(self, prompt: str, gbnf: str | None = None, max_tokens: int = 48, role: str = "answer") -> str:
        c = Constraint("answer", gbnf=gbnf) if gbnf and self.pm.llm.backend.capabilities.supports_grammar else None
        return self.pm.llm.text(LLMRequest.user(prompt, role=role, max_tokens=max_tokens, constraint=c))

    def save(self, task: str, section: dict) -> None:
        """Store ``section`` under this model and task; the file keeps every model's results."""
        task += self.suffix
        if self.turns:
            section["agent_turns"] = turn_summary(self.turns)
        section["turn_records"] = list(self.turns)
        model = self.data.setdefault("by_model", {}).setdefault(self.pm.settings.llm, {})
        model[task] = section
        every = [t for key in ("nested_kv", "locomo", "msc") for t in model.get(key, {}).get("turn_records", [])]
        model["agent_turns_all_tasks"] = turn_summary(every) if every else {}
        with redirect_stdout(StringIO()):  # quiet while a task runs; main() prints the final file
            write_result("memgpt", self.data)


def turn_summary(turns: list[dict]) -> dict:
    """Steps, valid-action rate, LLM calls and tokens per user turn of the agent."""
    steps = sum(t["steps"] for t in turns)
    n = len(turns)
    return {"turns": n, "steps": steps, "valid_actions": sum(t["valid"] for t in turns),
            "valid_action_rate": round(sum(t["valid"] for t in turns) / steps, 4) if steps else None,
            "mean_llm_calls_per_turn": round(sum(t["llm_calls"] for t in turns) / n, 2),
            "mean_prompt_tokens_per_turn": round(sum(t["prompt_tokens"] for t in turns) / n),
            "mean_completion_tokens_per_turn": round(sum(t["completion_tokens"] for t in turns) / n),
            "mean_seconds_per_turn": round(sum(t["seconds"] for t in turns) / n, 1),
            "evictions": sum(t["evictions"] for t in turns), "stop_reasons": dict(Counter(t["stop"] for t in turns))}


# --- nested KV -------------------------------------------------------------------------------------
def kv_pairs(instance: dict) -> list[tuple[str, str]]:
    base = json.loads((DATA / "lost-in-the-middle-kv" / "kv-retrieval-140_keys.jsonl").open().readline())
    overrides = dict(instance["value_overrides"])
    return [(k, overrides.get(k, v)) for k, v in base["ordered_kv_records"]]


def run_kv(run: Run, levels: list[int], seeds: int, baseline_seeds: int) -> None:
    rows = [json.loads(line) for line in (DATA / "memgpt-nested-kv" / "nested_kv_instances.jsonl").open()]
    results: list[dict] = []
    for seed in range(max(seeds, baseline_seeds)):
        for level in levels:
            if run.out_of_time():
                break
            inst = next(r for r in rows if r["levels"] == level and r["seed"] == seed)
            pairs = kv_pairs(inst)
            baseline = seed < baseline_seeds and run.constrained
            for method in (["memgpt"] if seed < seeds else []) + (["full-context"] if baseline else []):
                t0 = time.perf_counter()
                if method == "memgpt":
                    agent = run.agent(archival_search="text", page_size=10, max_steps=level + 5)
                    agent.archive.insert([f"Key-value pair: key = {k}, value = {v}" for k, v in pairs], agent.now())
                    messages, rec = run.turn(agent, get_prompt("eval", "memgpt.kv").render(key=inst["query_key"]),
                                             "kv")
                    reply = messages[-1] if messages else ""
                else:
                    prompt = ("Extract the value corresponding to the specified key in the JSON object below. If a "
                              "value is itself also a key, return the value of that key (do a nested lookup).\n\n"
                              f"JSON data:\n{json.dumps(dict(pairs), indent=1)}\n\nKey: \"{inst['query_key']}\"\n"
                              "Corresponding value:")
                    reply, rec = run.ask(prompt, UUID_GBNF, max_tokens=64), {}  # digits are single tokens
                found = UUID.findall(reply)
                chain = [inst["query_key"]] + [v for _, v in inst["value_overrides"]] + [inst["answer"]]
                results.append({"id": inst["id"], "levels": level, "method": method, "reply": reply[-200:],
                                "correct": bool(found) and found[-1] == inst["answer"],
                                "returned_chain_step": chain.index(found[-1]) if found and found[-1] in chain else None,
                                "seconds": round(time.perf_counter() - t0, 1), **rec})
                print(json.dumps(results[-1]), flush=True)
                run.save("nested_kv", summarise_kv(results))


def summarise_kv(results: list[dict]) -> dict:
    table: dict = {}
    for r in results:
        cell = table.setdefault(r["method"], {}).setdefault(f"levels={r['levels']}", {"n": 0, "correct": 0})
        cell["n"] += 1
        cell["correct"] += int(r["correct"])
    return {"accuracy": table, "instances": results,
            "note": "levels = total lookups (hops + 1); agent: archival text search, 10 results per page"}


# --- LoCoMo and MSC --------------------------------------------------------------------------------
def normalise(text: str) -> list[str]:
    text = "".join(ch for ch in str(text).lower() if ch not in string.punctuation)
    return [w for w in text.split() if w not in ("a", "an", "the", "and")]


def scores(prediction: str, gold: str) -> dict:
    p, g = normalise(prediction), normalise(gold)
    common = sum((Counter(p) & Counter(g)).values())
    if not p or not g or not common:
        return {"f1": 0.0, "gold_recall": 0.0}
    precision, recall = common / len(p), common / len(g)
    return {"f1": round(2 * precision * recall / (precision + recall), 3), "gold_recall": round(recall, 3)}


def fit_right(run: Run, lines: list[str], budget: int) -> str:
    """The most recent lines that fit ``budget`` tokens."""
    kept, used = [], 0
    for line in reversed(lines):
        used += run.pm.llm.count_tokens(line) + 1
        if used > budget:
            break
        kept.append(line)
    return "\n".join(reversed(kept))


def recursive_summary(run: Run, lines: list[str], chunk_tokens: int = 2500, words: int = 200) -> tuple[str, int]:
    summary, chunk, used, calls = "", [], 0, 0
    for line in lines + [None]:
        n = run.pm.llm.count_tokens(line) + 1 if line else 0
        if line is None or used + n > chunk_tokens:
            summary = run.ask(f"Summary of the conversation so far:\n{summary or '(none)'}\n\nNext part of the "
                              f"conversation:\n" + "\n".join(chunk) + f"\n\nWrite an updated summary of the whole "
                              f"conversation in at most {words} words. Keep names, dates, events and facts.",
                              max_tokens=words * 2, role="summarise").strip()
            chunk, used, calls = [], 0, calls + 1
        if line:
            chunk.append(line)
            used += n
    return summary, calls


def run_locomo(run: Run, n: int) -> None:
    conv = json.loads((DATA / "locomo" / "locomo_conversations_1-5.json").read_text())[0]
    c = conv["conversation"]
    a, b = c["speaker_a"], c["speaker_b"]
    turns, lines = locomo_turns(c, conv["sample_id"])  # the harness's transcript (pagemind.eval)
    history = [(t.role, t.text, t.time) for t in turns]
    qa = [q for q in conv["qa"] if q["category"] in (1, 2, 3, 4)]
    questions = random.Random(0).sample(qa, n)
    agent = run.agent(max_steps=6)
    agent.store.put_block(agent.id, Block("persona", f"I am {b}. {a} is my friend.", 2000))
    agent.import_messages(history)
    window = min(8192, run.pm.llm.context_window)
    context = fit_right(run, lines, window - 400)
    summary, summary_calls = recursive_summary(run, lines)
    results = []
    for q in questions:
        if run.out_of_time():
            break
        gold = str(q["answer"])
        messages, rec = run.turn(agent, f"A question about our past conversations: {q['question']} Search your "
                                        "memory, then answer in a few words with send_message.", "locomo")
        answers = {"memgpt": " ".join(messages),
                   "full-context": run.ask(f"A conversation between {a} and {b} (most recent part):\n{context}\n\n"
                                           f"Answer in a few words.\nQuestion: {q['question']}\nAnswer:"),
                   "recursive-summary": run.ask(f"A summary of conversations between {a} and {b}:\n{summary}\n\n"
                                                f"Answer in a few words.\nQuestion: {q['question']}\nAnswer:")}
        results.append({"question": q["question"], "gold": gold, "category": q["category"], "agent": rec,
                        **{m: {"answer": ans, **scores(ans, gold)} for m, ans in answers.items()}})
        print(json.dumps(results[-1])[:400], flush=True)
        run.save("locomo", {"conversation": conv["sample_id"], "transcript_lines": len(lines),
                            "full_context_kept_lines": context.count("\n") + 1, "summary_calls": summary_calls,
                            "summary_words": len(summary.split()), "by_method": table(results), "questions": results})


def table(results: list[dict]) -> dict:
    out = {}
    for m in ("memgpt", "full-context", "recursive-summary"):
        rows = [r[m] for r in results if m in r]
        if rows:
            out[m] = {"n": len(rows), "mean_f1": round(sum(r["f1"] for r in rows) / len(rows), 3),
                      "mean_gold_recall": round(sum(r["gold_recall"] for r in rows) / len(rows), 3),
                      "accuracy": round(sum(r.get("correct", r["gold_recall"] == 1.0) for r in rows) / len(rows), 3)}
    return out


def letter(text: str, options: list[str]) -> str | None:
    m = re.search(r"\(([ABCD])\)", text) or re.search(r"(?:^|answer(?: is)?:?\s*)([ABCD])\b", text,
                                                     re.IGNORECASE | re.MULTILINE)
    if m:
        return m.group(1).upper()
    hits = [chr(65 + i) for i, o in enumerate(options) if o.lower().rstrip(".") in text.lower()]
    return hits[0] if len(hits) == 1 else None


def run_msc(run: Run, n: int) -> None:
    episodes = [json.loads(line) for line in (DATA / "msc" / "msc_dialogue_session_2_test.jsonl").open()]
    rng = random.Random(0)
    results = []
    for index in rng.sample(range(len(episodes)), n):
        if run.out_of_time():
            break
        ep = episodes[index]
        prev = ep["previous_dialogs"][-1]["dialog"]
        facts = [f for f in ep["personas"][0] if len(f.split()) >= 3]
        fact = rng.choice(facts)
        others = [f for i, e in enumerate(episodes) if i != index for f in e["personas"][0] if len(f.split()) >= 3]
        options = rng.sample(others, 3) + [fact]
        rng.shuffle(options)
        gold = chr(65 + options.index(fact))
        question = "Which of these did I tell you about myself last time?\n" + "\n".join(
            f"({chr(65 + i)}) {o}" for i, o in enumerate(options))
        start = datetime(2024, 1, 1, 18, 0)
        lines = [("User" if i % 2 == 0 else "You") + ": " + t["text"] for i, t in enumerate(prev)]
        agent = run.agent(max_steps=6)
        stamps = [(start + timedelta(minutes=i)).strftime("%Y-%m-%d %H:%M:%S") for i in range(len(prev))]
        agent.import_messages([("user" if i % 2 == 0 else "assistant", t["text"], stamps[i])
                               for i, t in enumerate(prev)])
        messages, rec = run.turn(agent, question + "\nSearch your memory, then answer with the letter.", "msc")
        summary, _ = recursive_summary(run, lines, words=80)
        row = {"episode": ep["metadata"]["initial_data_id"], "gold": gold, "fact": fact, "agent": rec}
        for method, context in (("full-context", "\n".join(lines)), ("recursive-summary", summary)):
            reply = run.ask(f"Our previous conversation ({'transcript' if method == 'full-context' else 'summary'}):"
                            f"\n{context}\n\n{question}\n", LETTER_GBNF, max_tokens=8)
            row[method] = {"answer": reply, "correct": letter(reply, options) == gold}
        row["memgpt"] = {"answer": " ".join(messages), "correct": letter(" ".join(messages), options) == gold}
        for m in ("memgpt", "full-context", "recursive-summary"):
            row[m].update({"f1": float(row[m]["correct"]), "gold_recall": float(row[m]["correct"])})
        results.append(row)
        print(json.dumps(row)[:400], flush=True)
        run.save("msc", {"probe": "4-way persona-fact recognition (chance 0.25)", "by_method": table(results),
                         "episodes": results})


# --- save a fact, evict it, recall it ---------------------------------------------------------------
SAVE_FACT = "My locker code is 4417."


def run_save(run: Run, n: int) -> None:
    rng = random.Random(0)
    results = []
    for _ in range(n):
        if run.out_of_time():
            break
        start = datetime(2026, 1, 1, 8, 0) + timedelta(minutes=rng.randrange(365 * 24 * 60))
        ticks = iter(start + timedelta(seconds=7 * i) for i in range(10**6))
        agent = run.agent(human="", context_window=2600, max_tokens=300, max_steps=3, keep_last=2, summary_words=40)
        agent.clock = lambda ticks=ticks: next(ticks)
        _, first = run.turn(agent, f"Please save this in your core memory about me: {SAVE_FACT}", "save")
        agent.import_messages([("user" if i % 2 == 0 else "assistant", f"Small talk number {i} about the weather, "
                                "the sea and boats, the tides and the gulls over the harbour.", agent.now())
                               for i in range(30)], in_context=True)
        messages, second = run.turn(agent, "What is my locker code?", "save")
        blocks = {b.label: b.value for b in agent.blocks()}
        row = {"clock": start.isoformat(), "saved_in": [k for k, v in blocks.items() if "4417" in v],
               "answered": any("4417" in m for m in messages), "evictions": second["evictions"],
               "first_calls": first["calls"], "second_calls": second["calls"]}
        results.append(row)
        print(json.dumps(row), flush=True)
        k = len(results)
        run.save("save", {"trials": k, "saved": sum(bool(r["saved_in"]) for r in results) / k,
                          "answered": sum(r["answered"] for r in results) / k,
                          "saved_and_answered": sum(bool(r["saved_in"]) and r["answered"] for r in results) / k,
                          "results": results})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", default="kv,locomo,msc")
    ap.add_argument("--model", default="qwen2.5-coder-1.5b")
    ap.add_argument("--levels", default="1,2,3,4")
    ap.add_argument("--kv-seeds", type=int, default=2)
    ap.add_argument("--kv-baseline-seeds", type=int, default=1)
    ap.add_argument("--locomo-n", type=int, default=6)
    ap.add_argument("--msc-n", type=int, default=5)
    ap.add_argument("--save-n", type=int, default=8)
    ap.add_argument("--budget-minutes", type=float, default=25.0, help="per task: no new instance after this")
    ap.add_argument("--n-ctx", type=int, default=10240)
    ap.add_argument("--unconstrained", action="store_true",
                    help="agent steps without grammar (results under <task>_unconstrained; use with --tasks kv)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, Pagemind(f"local:{args.model}", store=Path(tmp) / "bench.db",
                                                         n_ctx=args.n_ctx, concurrency=1) as pm:
        for task in args.tasks.split(","):
            run = Run(pm, args.budget_minutes, constrained=not args.unconstrained)
            if task == "kv":
                run_kv(run, [int(x) for x in args.levels.split(",")], args.kv_seeds, args.kv_baseline_seeds)
            elif task == "locomo":
                run_locomo(run, args.locomo_n)
            elif task == "msc":
                run_msc(run, args.msc_n)
            elif task == "save":
                run_save(run, args.save_n)
            else:
                raise SystemExit(f"unknown task {task}")
    print((RESULTS / "memgpt.json").read_text())


if __name__ == "__main__":
    main()
