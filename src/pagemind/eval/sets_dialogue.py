"""Conversational-memory sets: LoCoMo, MSC and MTBench+.

Each example carries the conversation twice: as turns (MemGPT puts them into recall storage, out of context)
and as a dated transcript (the document every reader method reads). Formats are the upstream ones (the staged
files are byte copies or same-schema slices):

* LoCoMo (``locomo10.json``): a list of conversations with ``session_<n>`` turn lists and ``qa``; category 5
  (adversarial) is correct when the answer says the information is not available (LoCoMo's evaluation).
* MSC (ParlAI ``msc_dialogue/session_<n>/<split>.txt``, JSON lines): MSC has no QA labels, so each episode gets
  a 4-way probe "which of these did I tell you about myself?" with one of the user's persona facts and three
  facts of other episodes' users (chance 25%), drawn with the seed (as benchmarks/memgpt.py did).
* LongMemEval (``longmemeval_{s_cleaned,oracle,m_cleaned}.json``): 500 questions, each with its own chat history
  of dated sessions; the sessions become turns (MemGPT: recall storage) and a transcript with a header per session;
  the question is asked at its date (the agent's clock; the readers see ``(Current date: ...)``).
* MTBench+ (``mtbenchplus.json``): 54 chats whose last user turn is a memory probe; bot turns are empty
  upstream, so the conversation is the user's turns. Scored by the MemoChat judge prompt read from the
  ``prompts.json`` beside the data file (1-100, reported as 0-1).
"""

from __future__ import annotations

import random
import re
from datetime import datetime, timedelta
from pathlib import Path

from ..errors import DatasetError
from .datasets import QUALITY_PRESETS, DatasetSpec, Example, Turn, field_of, find_file, read_json, read_rows
from .evidence import Span, line_offsets, locomo_spans

STAMP = "%Y-%m-%d %H:%M:%S"


# --- LoCoMo ----------------------------------------------------------------------------------------
def locomo_time(text: str) -> datetime | None:
    """``1:56 pm on 8 May, 2023`` (LoCoMo's session dates), or None."""
    try:
        return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y")
    except ValueError:
        return None


def locomo_turns(conversation: dict, where: str, dia_ids: dict[str, int] | None = None) -> tuple[list[Turn], list[str]]:
    """(turns with speaker A as the user, transcript lines ``[date] Speaker: text``); ``dia_ids`` is filled with
    each turn's dialogue id (``D1:3``) and its index."""
    a = field_of(conversation, "speaker_a", where)
    turns, lines = [], []
    sessions = sorted(int(m.group(1)) for k in conversation if (m := re.fullmatch(r"session_(\d+)", k)))
    for n in sessions:
        raw_date = str(conversation.get(f"session_{n}_date_time", ""))
        when = locomo_time(raw_date)
        for j, turn in enumerate(field_of(conversation, f"session_{n}", where, list)):
            if not isinstance(turn, dict) or "text" not in turn or "speaker" not in turn:
                raise DatasetError(f"{where}: session_{n} turn {j} needs speaker and text")
            text = turn["text"] + (f" [shares a photo: {turn['blip_caption']}]" if turn.get("blip_caption") else "")
            stamp = (when + timedelta(seconds=30 * j)).strftime(STAMP) if when else ""
            turns.append(Turn(turn["speaker"], f"{turn['speaker']}: {text}",
                              "user" if turn["speaker"] == a else "assistant", stamp,
                              f"session {n}, turn {j + 1}" + (f" ({turn['dia_id']})" if turn.get("dia_id") else "")))
            lines.append(f"[{stamp[:10] if stamp else raw_date}] {turn['speaker']}: {text}")
            if dia_ids is not None and turn.get("dia_id"):
                dia_ids.setdefault(str(turn["dia_id"]), len(lines) - 1)
    return turns, lines


# LoCoMo's category numbers by name, as its scorer's comments map them (snap-research/locomo task_eval/evaluation.py;
# the paper lists the types in another order, and the data's numbers follow the scorer)
LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}


def load_locomo(path: Path, *, categories: tuple[int, ...] = (1, 2, 3, 4)) -> list[Example]:
    """LoCoMo QA over very long conversations (token F1 with LoCoMo's per-category rules)."""
    path = find_file(path, "locomo_conversations_1-5.json", "locomo10.json")
    examples = []
    for where, conv in read_rows(path):
        sample = str(conv.get("sample_id", where))
        c = field_of(conv, "conversation", where, dict)
        dia_ids: dict[str, int] = {}
        turns, lines = locomo_turns(c, where, dia_ids)
        transcript = "\n".join(lines)
        offsets = line_offsets(lines)
        for i, qa in enumerate(field_of(conv, "qa", where, list)):
            qwhere = f"{where}, qa {i}"
            category = field_of(qa, "category", qwhere, int)
            if category not in categories:
                continue
            answer = "Not mentioned in the conversation" if category == 5 else qa.get("answer")
            if answer is None:
                raise DatasetError(f"{qwhere}: no answer")
            spans, unresolved = locomo_spans(qa.get("evidence") or [], dia_ids, offsets)
            meta = {"category": category, "question_type": LOCOMO_CATEGORIES.get(category, str(category)),
                    "evidence": list(qa.get("evidence") or []),
                    "speakers": [c["speaker_a"], c.get("speaker_b", "")]}
            if unresolved:
                meta["evidence_unresolved"] = unresolved
            examples.append(Example(
                id=f"locomo-{sample}-{i}", dataset="locomo", task="qa", question=field_of(qa, "question", qwhere),
                document_id=f"locomo-{sample}", document=transcript, references=(str(answer),),
                conversation=tuple(turns), meta=meta, evidence=spans))
    return examples


# --- MSC -------------------------------------------------------------------------------------------
def _facts(episode: dict) -> list[str]:
    personas = episode.get("personas") or [[]]
    return [f for f in personas[0] if isinstance(f, str) and len(f.split()) >= 3]


def load_msc(path: Path, *, seed: int = 0, session: int = 2) -> list[Example]:
    """MSC persona-recall probe over the earlier sessions of each episode (4-way multiple choice)."""
    path = find_file(path, f"msc_dialogue_session_{session}_test.jsonl", f"session_{session}/test.txt", "test.txt")
    rows = read_rows(path)  # ParlAI's test.txt is JSON lines under another name: read by content
    episodes = [row for _, row in rows]
    pool = [(i, f) for i, ep in enumerate(episodes) for f in _facts(ep)]
    examples = []
    for index, (where, ep) in enumerate(rows):
        previous = field_of(ep, "previous_dialogs", where, list)
        facts = _facts(ep)
        if not previous or not facts:
            continue
        rng = random.Random(f"{seed}-{index}")
        fact = rng.choice(facts)
        others = [f for i, f in pool if i != index and f not in facts]
        if len(others) < 3:
            raise DatasetError(f"{path}: too few episodes for 4-way probes")
        options = rng.sample(others, 3) + [fact]
        rng.shuffle(options)
        start = datetime(2024, 1, 1, 18, 0)
        turns, lines = [], []
        for s, session_ in enumerate(previous):
            for i, t in enumerate(field_of(session_, "dialog", f"{where}, previous session {s}", list)):
                role = "user" if i % 2 == 0 else "assistant"
                stamp = (start + timedelta(days=7 * s, minutes=i)).strftime(STAMP)
                turns.append(Turn("User" if role == "user" else "You", t.get("text", ""), role, stamp))
                lines.append(f"{'User' if role == 'user' else 'You'}: {t.get('text', '')}")
        episode_id = str((ep.get("metadata") or {}).get("initial_data_id", index))
        examples.append(Example(
            id=f"msc-{episode_id}", dataset="msc", task="choice",
            question="Which of these did I tell you about myself last time?", document_id=f"msc-{episode_id}",
            document="\n".join(lines), options=tuple(options), gold=options.index(fact),
            conversation=tuple(turns), meta={"fact": fact}))
    return examples


# --- MTBench+ --------------------------------------------------------------------------------------
def load_mtbench_plus(path: Path) -> list[Example]:
    """MTBench+ memory probes (the last user turn), judged 1-100 with MemoChat's judge prompt."""
    path = find_file(path, "mtbenchplus.json")
    prompts_file = path.parent / "prompts.json"
    judge = None
    if prompts_file.exists():
        prompts = read_json(prompts_file)
        judge = (prompts.get("judge") or {}).get("system") if isinstance(prompts, dict) else None
    examples = []
    for where, row in read_rows(path):
        humans = [t for t in field_of(row, "conversations", where, list)
                  if isinstance(t, dict) and t.get("from") == "human"]
        if not humans or not str(humans[-1].get("turn-info", "")).endswith("-Q"):
            raise DatasetError(f"{where}: the last human turn is not a memory probe (turn-info ending in -Q)")
        probe, history = humans[-1], humans[:-1]
        topics = re.findall(r"([a-z]+)-(\d+)", probe["turn-info"])
        related = [t["value"] for t in history
                   if any(str(t.get("turn-info", "")).startswith(f"{c}-{q}-") for c, q in topics)]
        start = datetime(2024, 1, 1, 9, 0)
        turns = tuple(Turn("User", t["value"], "user", (start + timedelta(minutes=5 * i)).strftime(STAMP))
                      for i, t in enumerate(history))
        examples.append(Example(
            id=str(row.get("id", where)), dataset="mtbench-plus", task="open", question=probe["value"],
            document_id=str(row.get("id", where)), document="\n".join(f"User: {t.text}" for t in turns),
            conversation=turns,
            meta={"type": row.get("type", ""), "related_history": "\n".join(related), "judge": judge}))
    return examples


# --- LongMemEval ----------------------------------------------------------------------------------
LME_FILES = {"s": ("longmemeval_s_cleaned.json", "longmemeval_s.json"),
             "oracle": ("longmemeval_oracle.json",),
             "m": ("longmemeval_m_cleaned.json", "longmemeval_m.json")}
LME_TYPES = ("single-session-user", "single-session-assistant", "single-session-preference", "temporal-reasoning",
             "knowledge-update", "multi-session")


def lme_time(text: str) -> datetime | None:
    """``2023/05/20 (Sat) 02:21`` (LongMemEval's session and question dates), or None."""
    try:
        return datetime.strptime(re.sub(r"\s*\(\w+\)\s*", " ", text.strip()), "%Y/%m/%d %H:%M")
    except ValueError:
        return None


def load_longmemeval(path: Path, *, split: str = "s", types: tuple[str, ...] = (),
                     abstention: bool = True) -> list[Example]:
    """LongMemEval (Wu et al., ICLR 2025; the cleaned release of 2025-09): one question per chat history, asked at
    its date, judged with the benchmark's own prompt per question type (yes/no; abstention questions, ``_abs``,
    are right when the reply says the history does not tell). ``split``: ``s`` (~115k tokens, ~50 sessions per
    history), ``oracle`` (the evidence sessions only) or ``m`` (~500 sessions); ``types`` keeps those question
    types. Evidence labels are the answer sessions (``answer_session_ids``), so the evidence recall of cited
    answers is the benchmark's session-level recall; the turns marked ``has_answer`` are counted in ``meta``."""
    if split not in LME_FILES:
        raise DatasetError(f"longmemeval: split is one of {', '.join(LME_FILES)} (got {split!r})")
    unknown = set(types) - set(LME_TYPES)
    if unknown:
        raise DatasetError(f"longmemeval: unknown question types {sorted(unknown)} (have: {', '.join(LME_TYPES)})")
    path = find_file(path, *LME_FILES[split])
    examples = []
    for where, row in read_rows(path):
        qid = str(field_of(row, "question_id", where))
        qtype = str(field_of(row, "question_type", where))
        is_abs = qid.endswith("_abs")
        if (types and qtype not in types) or (is_abs and not abstention):
            continue
        sessions = field_of(row, "haystack_sessions", where, list)
        dates = field_of(row, "haystack_dates", where, list)
        ids = field_of(row, "haystack_session_ids", where, list)
        if not len(sessions) == len(dates) == len(ids):
            raise DatasetError(f"{where}: haystack_sessions, haystack_dates and haystack_session_ids differ in length")
        answer_ids = [str(i) for i in row.get("answer_session_ids") or []]
        order = sorted(range(len(sessions)), key=lambda k: (lme_time(str(dates[k])) or datetime.min, k))
        turns: list[Turn] = []
        lines: list[str] = []
        answer_turns = 0
        first: dict[str, int] = {}  # a session's header line and its last line
        last: dict[str, int] = {}
        for k in order:
            sid, raw_date = str(ids[k]), str(dates[k])
            when = lme_time(raw_date)
            first[sid] = len(lines)
            lines.append(f"Session {sid} ({raw_date}):")
            for j, turn in enumerate(sessions[k] if isinstance(sessions[k], list) else []):
                if not isinstance(turn, dict) or "content" not in turn or turn.get("role") not in ("user", "assistant"):
                    raise DatasetError(f"{where}: session {sid} turn {j} needs role user/assistant and content")
                stamp = (when + timedelta(minutes=j)).strftime(STAMP) if when else ""
                who = "User" if turn["role"] == "user" else "Assistant"
                turns.append(Turn(who, str(turn["content"]), turn["role"], stamp, f"session {sid}, turn {j + 1}"))
                lines.append(f"[{stamp[:16] if stamp else raw_date}] {who}: {turn['content']}")
                answer_turns += bool(turn.get("has_answer"))
            last[sid] = len(lines) - 1
        offsets = line_offsets(lines)
        spans = tuple(Span(sid, offsets[first[sid]][0], offsets[last[sid]][1], (first[sid], last[sid]))
                      for sid in answer_ids if sid in first)
        asked = lme_time(str(row.get("question_date", "")))
        question = str(field_of(row, "question", where))
        examples.append(Example(
            id=qid, dataset="longmemeval", task="qa",
            question=f"(Current date: {row.get('question_date')}) {question}" if asked else question,
            document_id=f"longmemeval-{split}-{qid}", document="\n".join(lines),
            references=(str(field_of(row, "answer", where, (str, int, float, list))),), conversation=tuple(turns),
            evidence=spans,
            meta={"question_type": qtype, "abstention": is_abs, "question": question, "rater": "longmemeval",
                  "question_date": str(row.get("question_date", "")), "sessions": len(sessions),
                  "answer_session_ids": answer_ids, "answer_turns": answer_turns,
                  **({"asked_at": asked.strftime(STAMP)} if asked else {})}))
    return examples


SPECS = (
    DatasetSpec("locomo", load_locomo, "locomo/locomo_conversations_1-5.json",
                "LoCoMo QA over ~13k-word conversations (token F1)", "f1", QUALITY_PRESETS,
                "Maharana et al., ACL 2024 (CC BY-NC 4.0)"),
    DatasetSpec("msc", load_msc, "msc/msc_dialogue_session_2_test.jsonl",
                "MSC persona-recall probe, 4-way (accuracy)", "accuracy", QUALITY_PRESETS, "Xu et al., ACL 2022"),
    DatasetSpec("mtbench-plus", load_mtbench_plus, "mtbench-plus/mtbenchplus.json",
                "MTBench+ memory probes (MemoChat judge, 0-1)", "judge", QUALITY_PRESETS, "Lu et al., 2023"),
    DatasetSpec("longmemeval", load_longmemeval, "longmemeval/longmemeval_s_cleaned.json",
                "LongMemEval: one question per ~115k-token chat history (S), asked at its date; the benchmark's "
                "judge per question type (accuracy), per-type report, session recall of cited answers", "judge",
                QUALITY_PRESETS, "Wu et al., ICLR 2025 (MIT)"),
)
