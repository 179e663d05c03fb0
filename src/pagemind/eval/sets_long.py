"""Sets of 100k-token-and-longer reading, and long PDFs with evidence pages.

Formats are the published ones (none is staged here; ``pagemind data get NAME`` fetches them, or ``--data`` names a
copy; the tests write format-exact samples):

* ∞Bench (InfiniteBench, Zhang et al., ACL 2024): ``longbook_choice_eng.jsonl`` (En.MC) and
  ``longbook_qa_eng.jsonl`` (En.QA), JSON lines of ``id``, ``context`` (a whole novel, ~150k+ tokens), ``input``
  (the question), ``answer`` (a list: En.MC the right option's text, En.QA the gold answers) and ``options``
  (En.MC). En.MC is scored by accuracy, En.QA by token F1 (its paper's metric) and the LLM raters.
* LongBench v2 (Bai et al., 2025): ``data.json``, a list of ``_id, domain, sub_domain, difficulty, length, question,
  choice_A..choice_D, answer`` (a letter) and ``context``; 503 four-way questions over 8k to 2M words, reported by
  ``length`` (short / medium / long) and ``difficulty``.
* PageIndex's open benchmark: ``questions.json`` (a list of ``doc_id, question, answer, answer_format,
  evidence_pages, evidence_sources, doc_type``) beside a ``pdfs/`` folder of the documents (``<doc_id>`` or
  ``<doc_id>.pdf``). Each PDF is read as pagemind reads any PDF (its text layer, page starts kept); the evidence
  pages become evidence labels (the spans of those pages), so the evidence recall of an answer's citations is the
  **evidence-page accuracy**; answers are judged by the LLM raters.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import DatasetError
from .datasets import QUALITY_PRESETS, DatasetSpec, Example, field_of, find_file, read_json, read_rows, short_hash
from .evidence import Span

if TYPE_CHECKING:
    from ..text import Document

LETTERS = "ABCD"


# --- ∞Bench ---------------------------------------------------------------------------------------------------
def load_infbench_mc(path: Path) -> list[Example]:
    """∞Bench En.MC: four-way choice over a whole novel."""
    return _infbench(path, "mc")


def load_infbench_qa(path: Path) -> list[Example]:
    """∞Bench En.QA: free answers about a whole novel."""
    return _infbench(path, "qa")


def _infbench(path: Path, task: str) -> list[Example]:
    path = find_file(path, "longbook_choice_eng.jsonl" if task == "mc" else "longbook_qa_eng.jsonl")
    examples = []
    for where, row in read_rows(path):
        context, question = field_of(row, "context", where), field_of(row, "input", where)
        answers = row.get("answer")
        answers = [str(a) for a in answers] if isinstance(answers, list) else [str(answers)] if answers else []
        if not answers:
            raise DatasetError(f"{where}: no answer")
        doc_id = f"infbench-{short_hash(context)}"
        id_ = f"infbench-{task}-{row.get('id', where)}"
        if task == "mc":
            options = tuple(str(o) for o in field_of(row, "options", where, list))
            if answers[0] not in options:
                raise DatasetError(f"{where}: the answer {answers[0]!r} is not one of the options")
            examples.append(Example(id=id_, dataset="infbench-mc", task="choice", question=question,
                                    document_id=doc_id, document=context, options=options,
                                    gold=options.index(answers[0]), meta={"task": "En.MC"}))
        else:
            examples.append(Example(id=id_, dataset="infbench-qa", task="qa", question=question, document_id=doc_id,
                                    document=context, references=tuple(answers), meta={"task": "En.QA"}))
    return examples


# --- LongBench v2 ---------------------------------------------------------------------------------------------
def load_longbench2(path: Path, *, length: str = "", difficulty: str = "", domain: str = "") -> list[Example]:
    """LongBench v2's four-way questions; ``length`` (short/medium/long), ``difficulty`` (easy/hard) and
    ``domain`` (e.g. ``Single-Document QA``) keep a part of it."""
    path = find_file(path, "data.json")
    examples = []
    for where, row in read_rows(path):
        if (length and row.get("length") != length) or (difficulty and row.get("difficulty") != difficulty) or \
                (domain and row.get("domain") != domain):
            continue
        context = field_of(row, "context", where)
        options = tuple(str(field_of(row, f"choice_{x}", where)) for x in LETTERS)
        answer = str(field_of(row, "answer", where)).strip().upper()
        if answer not in LETTERS:
            raise DatasetError(f"{where}: answer {answer!r} is not A, B, C or D")
        examples.append(Example(
            id=f"longbench2-{row.get('_id', where)}", dataset="longbench2", task="choice",
            question=field_of(row, "question", where), document_id=f"longbench2-{short_hash(context)}",
            document=context,
            options=options, gold=LETTERS.index(answer),
            meta={"length": str(row.get("length", "")), "difficulty": str(row.get("difficulty", "")),
                  "domain": str(row.get("domain", "")), "sub_domain": str(row.get("sub_domain", ""))}))
    return examples


# --- PageIndex's open benchmark -------------------------------------------------------------------------------
def _pdf_of(folder: Path, doc_id: str) -> Path | None:
    for candidate in (folder / "pdfs" / doc_id, folder / "pdfs" / f"{doc_id}.pdf", folder / doc_id,
                      folder / f"{doc_id}.pdf"):
        if candidate.is_file():
            return candidate
    return None


def _pages(value: Any, where: str) -> list[int]:
    items = value if isinstance(value, list) else [value] if value not in (None, "") else []
    try:
        return [int(p) for p in items]
    except (TypeError, ValueError):
        raise DatasetError(f"{where}: evidence_pages should be page numbers, not {value!r}") from None


def load_pageindex(path: Path, *, doc_type: str = "") -> list[Example]:
    """PageIndex's benchmark: a question about one long PDF, answered in free form (LLM raters) and cited by page
    (evidence-page accuracy from the citations); ``doc_type`` keeps one kind of document."""
    from ..text import load_document

    path = find_file(path, "questions.json")
    rows = read_json(path)
    if not isinstance(rows, list):
        raise DatasetError(f"{path}: expected a JSON list of questions")
    documents: dict[Path, Document] = {}
    examples = []
    for index, row in enumerate(rows):
        where = f"{path}: question {index}"
        if not isinstance(row, dict):
            raise DatasetError(f"{where}: not an object")
        if doc_type and row.get("doc_type") != doc_type:
            continue
        name = str(field_of(row, "doc_id", where))
        pdf = _pdf_of(path.parent, name)
        if pdf is None:
            raise DatasetError(f"{where}: no PDF for {name!r} in {path.parent / 'pdfs'}")
        if pdf not in documents:  # each PDF read once, however its questions name it
            documents[pdf] = load_document(pdf)
        document = documents[pdf]
        starts = list(getattr(document, "pages", ()))
        text = str(document.text)
        evidence_pages = _pages(row.get("evidence_pages"), where)
        spans = []
        for page in evidence_pages:
            if not 1 <= page <= len(starts):
                raise DatasetError(f"{where}: evidence page {page} is not a page of {name} (it has {len(starts)})")
            end = starts[page] if page < len(starts) else len(text)
            spans.append(Span(f"page {page}", starts[page - 1], end))
        examples.append(Example(
            id=f"pageindex-{index}", dataset="pageindex", task="qa", question=field_of(row, "question", where),
            document_id=f"pageindex-{pdf.stem}", document=text, references=(str(field_of(row, "answer", where,
                                                                                      (str, int, float))),),
            evidence=tuple(spans),
            meta={"doc": name, "doc_type": str(row.get("doc_type", "")), "pages": len(starts),
                  "answer_format": str(row.get("answer_format", "")),
                  "evidence_pages": evidence_pages}))
    return examples


SPECS = (
    DatasetSpec("infbench-mc", load_infbench_mc, "infbench/longbook_choice_eng.jsonl",
                "∞Bench En.MC: four-way questions over whole novels of 100k+ tokens (accuracy)", "accuracy",
                QUALITY_PRESETS, "Zhang et al., ACL 2024 (MIT)"),
    DatasetSpec("infbench-qa", load_infbench_qa, "infbench/longbook_qa_eng.jsonl",
                "∞Bench En.QA: free answers about whole novels of 100k+ tokens (token F1, LLM raters)", "f1",
                QUALITY_PRESETS, "Zhang et al., ACL 2024 (MIT)"),
    DatasetSpec("longbench2", load_longbench2, "longbench2/data.json",
                "LongBench v2: 503 four-way questions over 8k-2M words, by length and difficulty (accuracy)",
                "accuracy", QUALITY_PRESETS, "Bai et al., 2025 (Apache-2.0)"),
    DatasetSpec("pageindex", load_pageindex, "pageindex/questions.json",
                "PageIndex's open benchmark: questions over long PDFs, LLM-rated answers and evidence-page accuracy "
                "of the citations (token F1; --raters for LR-1/LR-2)", "f1", QUALITY_PRESETS,
                "VectifyAI PageIndex benchmark"),
)
