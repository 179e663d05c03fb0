"""(aa) The agent's write side, on MSC read in order: what the MemGPT agent writes to its memory while it talks.

Each sampled MSC dialogue (the staged session-2 test split: its first session, then its second, the time between them
as MSC dates it) is read turn by turn as a conversation: speaker 1 is the user, every one of their messages one
``Agent.say``; the agent answers in its own words (speaker 2's lines are not used). Per session: the turns' LLM
calls and tokens, archival inserts the agent asked for, those stored, those not stored because they repeat a stored
passage, core-memory writes; after the dialogue: the archive's audit (repeats and junk share of what is stored) and,
for "before", the same shares over every insert the agent asked for (what an archive without the check keeps: the
agent's earlier behaviour stored each one). Then one probe, as ``benchmarks/memgpt.py``'s MSC task asks it: which of
four facts the user told the agent about themselves (chance 0.25), and whether the fact's content words are in the
agent's core or archival memory at all.

With ``--imported`` the user's messages are imported as history instead of said (no agent turn, no reply): what is
measured is the consolidation pass alone (it implies ``--consolidate``) — its proposals stored, left out as junk or as
not in the messages, and the ``human`` lines it wrote — at one call a session rather than a turn's steps a message.

    python benchmarks/write_side.py [--data DIR] [--dialogues 4] [--model qwen2.5-coder-1.5b] [--consolidate]
                                    [--imported]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import time
from datetime import datetime, timedelta
from pathlib import Path

from common import DATA, write_result

UNITS = {"hour": 1, "hours": 1, "day": 24, "days": 24, "week": 168, "weeks": 168}


def gap(dialog: dict) -> timedelta:
    """The time MSC says passed before a session ("1 hour ago", "4 days ago"); a day when it says nothing."""
    unit = str(dialog.get("time_unit", "day")).strip().lower()
    return timedelta(hours=int(dialog.get("time_num", 1)) * UNITS.get(unit, 24))


def shares(texts: list[str]) -> dict[str, float | int]:
    """Repeats (exact, or near by the archive's own rule) and junk among ``texts``, as an unchecked archive keeps
    them: every one stored."""
    from pagemind.agent.archive import junk_reason
    from pagemind.text.words import keywords

    kept: list[str] = []
    repeats = junk = 0
    for text in texts:
        words = keywords(text)
        if any(text.strip().lower() == k.strip().lower() or (words and words <= keywords(k)) for k in kept):
            repeats += 1
        junk += junk_reason(text) is not None
        kept.append(text)
    n = len(texts)
    return {"passages": n, "repeats": repeats, "repeat_share": round(repeats / n, 3) if n else 0.0,
            "junk": junk, "junk_share": round(junk / n, 3) if n else 0.0}


def read_dialogue(pm: object, row: dict, consolidate: bool, imported: bool = False) -> dict:
    from pagemind.agent import Agent, AgentOptions

    sessions = [d["dialog"] for d in row["previous_dialogs"]] + [row["dialog"]]
    gaps = [timedelta(0)] + [gap(d) for d in row["previous_dialogs"][1:]] + [gap(row)]
    start = datetime(2024, 3, 1, 18, 0)
    ticks = {"now": start}

    def clock() -> datetime:
        ticks["now"] += timedelta(seconds=20)
        return ticks["now"]

    options = AgentOptions(embedder="minilm", context_window=4096, max_steps=4)
    agent = Agent.create(pm.llm, pm.store, f"msc-{row['metadata']['initial_data_id']}", human="",  # type: ignore[attr-defined]
                         options=options, clock=clock)
    asked: list[str] = []
    per_session = []
    for number, (dialog, before) in enumerate(zip(sessions, gaps), 1):
        ticks["now"] += before
        record = {"session": number, "turns": 0, "calls": 0, "prompt_tokens": 0, "completion_tokens": 0,
                  "seconds": 0.0, "inserts_asked": 0, "stored": 0, "repeats_not_stored": 0, "core_writes": 0,
                  "searches": 0, "held": 0}
        said = dialog[0::2]  # speaker 1: the user
        if imported:  # the user's messages as history: the consolidation pass alone is measured
            agent.import_messages([("user", u["text"], clock()) for u in said])
            record["turns"] = len(said)
            said = []
        for utterance in said:
            t0 = time.perf_counter()
            turn = agent.say(utterance["text"])
            record["seconds"] += time.perf_counter() - t0
            record["turns"] += 1
            record["calls"] += turn.usage.calls
            record["prompt_tokens"] += turn.usage.prompt_tokens
            record["completion_tokens"] += turn.usage.completion_tokens
            for step in turn.steps:
                if step.function == "send_message" and step.status != "OK":  # held back: search on
                    record["held"] += 1
                elif step.function == "archival_memory_insert" and step.status == "OK":
                    record["inserts_asked"] += 1
                    asked.append(str(step.arguments.get("content", "")))
                    if "not stored again" in (step.result or ""):
                        record["repeats_not_stored"] += 1
                    else:
                        record["stored"] += 1
                elif step.function in ("core_memory_append", "core_memory_replace") and step.status == "OK":
                    record["core_writes"] += 1
                elif step.function in ("conversation_search", "archival_memory_search"):
                    record["searches"] += 1
        if consolidate:
            t0 = time.perf_counter()
            done = agent.consolidate()
            passed = {k: v for k, v in done.as_dict().items() if k != "usage"}
            record["consolidation"] = {"seconds": round(time.perf_counter() - t0, 1), **passed}
        record["seconds"] = round(record["seconds"], 1)
        per_session.append(record)
        print(json.dumps(record), flush=True)
    audit, _ = agent.audit_memory()
    stored = [p.text for p in agent.passages(limit=10_000)[1]]
    return {"dialogue": row["metadata"]["initial_data_id"], "sessions": per_session,
            "before": shares(asked), "after": {**shares(stored), **{k: v for k, v in audit.as_dict().items()
                                                                   if k in ("repeat_share", "junk_share")}},
            "core": {b.label: b.value for b in agent.blocks() if b.label != "persona"}, "passages": stored,
            "core_versions": len(agent.store.block_versions(agent.id)), "agent": agent}


def choice(reply: str, options: list[str]) -> str | None:
    """The one option a reply picks — by its letter ("(B)", "B.", "answer: B"), its text, or else the most of its
    content words (at least two, more than any other option's) — or None when it names none or several (a reply
    that repeats the question names all four)."""
    from pagemind.text.words import keywords

    letters = set(re.findall(r"\(([ABCD])\)", reply)) | set(re.findall(
        r"(?:^|answer(?: is)?:?\s*)([ABCD])\b", reply, re.IGNORECASE | re.MULTILINE))
    texts = {chr(65 + i) for i, o in enumerate(options) if o.lower().rstrip(".") in reply.lower()}
    named = {x.upper() for x in letters} | texts
    if named:
        return named.pop() if len(named) == 1 else None
    shared = sorted(((len(keywords(o) & keywords(reply)), chr(65 + i)) for i, o in enumerate(options)), reverse=True)
    return shared[0][1] if shared[0][0] >= 2 and shared[0][0] > shared[1][0] else None


def probe(agent: object, row: dict, rows: list[dict], rng: random.Random) -> dict:
    """Which of four facts the user told the agent (MSC's persona of speaker 1 against three other users')."""
    from pagemind.text.words import keywords

    facts = [f for f in row["personas"][0] if len(f.split()) >= 3]
    fact = rng.choice(facts)
    others = [f for other in rows if other is not row for f in other["personas"][0] if len(f.split()) >= 3]
    options = rng.sample(others, 3) + [fact]
    rng.shuffle(options)
    gold = chr(65 + options.index(fact))
    question = ("Which of these did I tell you about myself?\n" + "\n".join(
        f"({chr(65 + i)}) {o}" for i, o in enumerate(options)) + "\nSearch your memory, then answer with the letter.")
    turn = agent.say(question)  # type: ignore[attr-defined]
    reply = " ".join(turn.messages)
    chosen = choice(reply, options)
    memory = " ".join([b.value for b in agent.blocks()] + [p.text for p in agent.passages(limit=10_000)[1]])  # type: ignore[attr-defined]
    held = keywords(fact) & keywords(memory)
    return {"fact": fact, "options": options, "gold": gold, "reply": reply[:300], "chosen": chosen,
            "correct": chosen == gold,
            "fact_words_in_memory": round(len(held) / max(1, len(keywords(fact))), 2),
            "calls": turn.usage.calls, "prompt_tokens": turn.usage.prompt_tokens}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--dialogues", type=int, default=4)
    ap.add_argument("--model", default="qwen2.5-coder-1.5b")
    ap.add_argument("--consolidate", action="store_true", help="a consolidation pass after each session")
    ap.add_argument("--imported", action="store_true",
                    help="the user's messages imported, not said: the consolidation pass alone (implies --consolidate)")
    ap.add_argument("--minutes", type=float, default=75.0, help="no new dialogue after this")
    ap.add_argument("--tag", default="")
    args = ap.parse_args()
    consolidate = args.consolidate or args.imported

    import tempfile

    from pagemind import Pagemind

    rows = [json.loads(line) for line in (args.data / "msc" / "msc_dialogue_session_2_test.jsonl").open()]
    rng = random.Random(0)
    chosen = rng.sample(range(len(rows)), args.dialogues)
    results = []
    with tempfile.TemporaryDirectory() as tmp, \
            Pagemind(f"local:{args.model}", store=Path(tmp) / "s.db", n_ctx=6144, concurrency=1, cache=False) as pm:
        deadline = time.monotonic() + args.minutes * 60
        for index in chosen:
            if time.monotonic() > deadline:
                break
            read = read_dialogue(pm, rows[index], consolidate, args.imported)
            agent = read.pop("agent")
            read["probe"] = probe(agent, rows[index], rows, rng)
            print(json.dumps({k: v for k, v in read.items() if k != "sessions"})[:600], flush=True)
            results.append(read)
    sessions = [s for r in results for s in r["sessions"]]
    asked = sum(s["inserts_asked"] for s in sessions)
    total = {
        "dialogues": len(results), "sessions": len(sessions), "turns": sum(s["turns"] for s in sessions),
        "inserts_asked": asked, "stored": sum(s["stored"] for s in sessions),
        "repeats_not_stored": sum(s["repeats_not_stored"] for s in sessions),
        "core_writes": sum(s["core_writes"] for s in sessions),
        "tokens_per_session": round(sum(s["prompt_tokens"] + s["completion_tokens"] for s in sessions)
                                    / max(1, len(sessions))),
        "calls_per_session": round(sum(s["calls"] for s in sessions) / max(1, len(sessions)), 1),
        "seconds_per_turn": round(sum(s["seconds"] for s in sessions) / max(1, sum(s["turns"] for s in sessions)), 1),
        "probe_correct": sum(r["probe"]["correct"] for r in results), "probe_of": len(results),
        "fact_words_in_memory": round(sum(r["probe"]["fact_words_in_memory"] for r in results) / max(1, len(results)),
                                      2),
    }
    passes = [s["consolidation"] for s in sessions if "consolidation" in s]
    if passes:  # what the consolidation passes proposed and what of it was kept
        total["consolidation"] = {
            "passes": len(passes), "stored": sum(len(c["stored"]) for c in passes),
            "known": sum(c["known"] for c in passes), "junk": sum(c["junk"] for c in passes),
            "ungrounded": sum(c["ungrounded"] for c in passes),
            "human_versions": sum(len(c["versions"]) for c in passes),
            "human_lines": sum(len([x for x in r["core"].get("human", "").splitlines() if x.strip()])
                               for r in results),
            "seconds": round(sum(c["seconds"] for c in passes), 1)}
    print(json.dumps(total))
    write_result("write_side" + (f"-{args.tag}" if args.tag else ""), {
        "model": args.model, "consolidate": consolidate, "imported": args.imported,
        "total": total, "dialogues": results})


if __name__ == "__main__":
    main()
