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
* MMLongBench-Doc-V2 (VectifyAI's corrected MMLongBench-Doc, Ma et al., NeurIPS 2024): ``samples.json``, a list of
  ``doc_id, doc_type, question, answer, answer_format, evidence_pages, evidence_sources`` (the lists spelled as
  Python strings: ``"[19, 20]"``, ``"['Table']"``, a List answer ``"['White', '10%']"``; ``Not answerable`` for the
  unanswerable ones), ``question_types.json`` beside it (task types, joined on doc_id and question) and the PDFs in
  ``documents/`` (named by ``doc_id``). PageIndex-OSS-Benchmark's ``questions.json`` is 62 of those rows with
  their ``task_type``, over 34 of the PDFs. Each PDF is read as pagemind reads any PDF (its text layer, page starts
  kept); the evidence pages become evidence labels (the spans of those pages), so the evidence recall of an
  answer's citations is the **evidence-page accuracy**; answers are scored by V2's judge (``raters.mmlongbench``).
"""

from __future__ import annotations

import ast
import warnings
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import DatasetError, InputError
from .datasets import (
    QUALITY_PRESETS,
    DatasetSpec,
    DatasetWarning,
    Example,
    field_of,
    find_file,
    read_json,
    read_rows,
    short_hash,
)
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


# --- Long PDFs with evidence pages: MMLongBench-Doc(-V2) and PageIndex-OSS-Benchmark ----------------------------
NOT_ANSWERABLE = "Not answerable"


def _pdf_of(folder: Path, doc_id: str) -> Path | None:
    for sub in ("documents", "pdfs", "."):
        for name in (doc_id, f"{doc_id}.pdf"):
            if (folder / sub / name).is_file():
                return folder / sub / name
    return None


def published_list(value: Any, where: str, what: str) -> list[Any]:
    """A list as the sets publish it: a JSON list, or its Python spelling in a string (``"[3, 4]"``,
    ``"['Pure-text (Plain-text)']"``); a single value is a list of one, nothing an empty list."""
    if isinstance(value, list):
        return value
    if value is None or value == "":
        return []
    if isinstance(value, str) and value.strip().startswith("["):
        try:
            parsed = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            raise DatasetError(f"{where}: {what} {value[:80]!r} is not a list") from None
        if isinstance(parsed, (list, tuple)):
            return list(parsed)
        raise DatasetError(f"{where}: {what} {value[:80]!r} is not a list")
    return [value]


def _pages(value: Any, where: str) -> list[int]:
    try:
        pages = [int(p) for p in published_list(value, where, "evidence_pages")]
    except (TypeError, ValueError):
        raise DatasetError(f"{where}: evidence_pages should be page numbers, not {value!r}") from None
    return list(dict.fromkeys(pages))  # "[1, 1]" names one page


def _question_types(folder: Path) -> dict[tuple[str, str], str]:
    """MMLongBench-Doc-V2's ``question_types.json`` (model-made task types, joined on doc_id and question)."""
    path = folder / "question_types.json"
    if not path.is_file():
        return {}
    rows = read_json(path)
    if not isinstance(rows, list):
        raise DatasetError(f"{path}: expected a JSON list")
    return {(str(r.get("doc_id")), str(r.get("question"))): str(r.get("task_type", ""))
            for r in rows if isinstance(r, dict)}


def load_mmlongbench(path: Path, *, doc_type: str = "", task_type: str = "", source: str = "",
                     library: bool = False) -> list[Example]:
    """MMLongBench-Doc-V2: questions about long PDFs (answers, evidence pages, evidence sources); ``doc_type``,
    ``task_type`` (lookup, count, enumerate, derive, compare, verify) and ``source`` (text in an evidence source:
    ``Pure-text``, ``Table``, ``Chart``, ...) keep a part; ``library`` asks every question of all the PDFs at once."""
    return _pdf_questions(find_file(path, "samples.json"), "mmlongbench-doc", doc_type, task_type, source, library)


def load_pageindex(path: Path, *, doc_type: str = "", task_type: str = "", library: bool = False) -> list[Example]:
    """PageIndex-OSS-Benchmark: 62 MMLongBench-Doc-V2 questions answered by a fact in running text; ``library``
    asks each of all 34 PDFs at once (the right document must be found before its page)."""
    return _pdf_questions(find_file(path, "questions.json"), "pageindex", doc_type, task_type, "", library)


def _pdf_questions(path: Path, dataset: str, doc_type: str, task_type: str, source: str,
                   library: bool) -> list[Example]:
    """A question about one long PDF, answered in free form (token F1; the V2 judge) and cited by page: each
    evidence page becomes an evidence label (the page's span of the PDF's text), so the evidence recall of an
    answer's citations is its evidence-page accuracy. As a library, every PDF the file names is one source read
    by every question (one memory per method), and a citation counts only on the question's own PDF."""
    from ..text import Document, load_document

    rows = read_json(path)
    if not isinstance(rows, list):
        raise DatasetError(f"{path}: expected a JSON list of questions")
    types = _question_types(path.parent)
    documents: dict[Path, Document | str] = {}  # a PDF's text, or why it cannot be read
    examples, left_out, mended = [], 0, []
    for index, row in enumerate(rows):
        where = f"{path}: question {index}"
        if not isinstance(row, dict):
            raise DatasetError(f"{where}: not an object")
        name, question = str(field_of(row, "doc_id", where)), str(field_of(row, "question", where))
        kind = str(row.get("task_type") or types.get((name, question), ""))
        sources = [str(x) for x in published_list(row.get("evidence_sources"), where, "evidence_sources")]
        asked = not ((doc_type and row.get("doc_type") != doc_type) or (task_type and kind != task_type) or (
            source and not any(source.lower() in x.lower() for x in sources)))
        if not (asked or library):  # a library holds the PDFs of every question; the filters pick those asked
            continue
        pdf = _pdf_of(path.parent, name)
        if pdf is None:
            raise DatasetError(f"{where}: no PDF for {name!r} in {path.parent / 'documents'}")
        if pdf not in documents:  # each PDF read once, however its questions name it
            try:
                documents[pdf] = load_document(pdf)
            except InputError as err:  # no text layer (slides saved as images), or a PDF its parser refuses
                documents[pdf] = str(err).removeprefix(f"{pdf}: ")
        if not asked:
            continue
        document = documents[pdf]
        if isinstance(document, str):
            left_out += 1
            continue
        starts = list(getattr(document, "pages", ()))
        text = str(document.text)
        evidence_pages = _pages(row.get("evidence_pages"), where)
        outside = [p for p in evidence_pages if not 1 <= p <= len(starts)]
        if outside:
            mended.append(f"question {index} ({name}, {len(starts)} pages): {outside}")
            evidence_pages = [p for p in evidence_pages if p not in outside]
        spans = []
        for page in evidence_pages:
            end = starts[page] if page < len(starts) else len(text)
            spans.append(Span(f"page {page}", starts[page - 1], end))
        answer = field_of(row, "answer", where, (str, int, float))
        fmt = str(row.get("answer_format", ""))
        reference = str(answer)
        if fmt == "List" and isinstance(answer, str) and answer.strip().startswith("["):
            reference = "; ".join(str(a) for a in published_list(answer, where, "answer"))
        answerable = not reference.startswith(NOT_ANSWERABLE)  # V2: some read "Not answerable or none"
        examples.append(Example(
            id=f"{dataset}-{index}", dataset=dataset, task="qa", question=question,
            document_id=f"{dataset}-{pdf.stem}", document=text, references=(reference,), evidence=tuple(spans),
            read=document if isinstance(document, Document) else None,
            meta={"doc": name, "doc_type": str(row.get("doc_type", "")), "task_type": kind, "pages": len(starts),
                  "answer": str(answer), "answer_format": fmt, "evidence_pages": evidence_pages,
                  "evidence_sources": sources, "rater": "mmlongbench",
                  # V2's slices (eval/metrics.py): one evidence page, else cross-page when answerable
                  "evidence_kind": ("unanswerable" if not answerable else
                                    "single-page" if len(evidence_pages) == 1 else "cross-page")}))
    if library:
        shelf = tuple((p.name, str(d.text)) for p, d in sorted(documents.items()) if not isinstance(d, str))
        examples = [replace(e, document_id=f"{dataset}-library", library=shelf) for e in examples]
    unreadable = {p.name: why for p, why in documents.items() if isinstance(why, str)}
    if unreadable:
        warnings.warn(DatasetWarning(
            f"{dataset}: {left_out} question(s) left out, about {len(unreadable)} PDF(s) pagemind cannot read as "
            f"text ({'; '.join(f'{n}: {why}' for n, why in list(unreadable.items())[:3])}"
            f"{'; ...' if len(unreadable) > 3 else ''})"),
            stacklevel=2)
    if mended:
        warnings.warn(DatasetWarning(
            f"{dataset}: {len(mended)} question(s) name evidence pages their PDF does not have; those pages are "
            f"not evidence labels ({'; '.join(mended[:3])}{'; ...' if len(mended) > 3 else ''})"), stacklevel=2)
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
    DatasetSpec("mmlongbench-doc", load_mmlongbench, "mmlongbench-doc/samples.json",
                "MMLongBench-Doc-V2: 1,071 questions over 134 long PDFs, by single-page / cross-page / unanswerable; "
                "the V2 judge (accuracy) and the evidence-page accuracy of the citations", "judge", QUALITY_PRESETS,
                "Ma et al., NeurIPS 2024 D&B; VectifyAI MMLongBench-Doc-V2 (Apache-2.0)"),
    DatasetSpec("pageindex", load_pageindex, "pageindex/questions.json",
                "PageIndex-OSS-Benchmark: 62 questions over 34 long PDFs answered by facts in running text; the "
                "MMLongBench-Doc-V2 judge (accuracy) and the evidence-page accuracy of the citations", "judge",
                QUALITY_PRESETS, "VectifyAI PageIndex-OSS-Benchmark (questions from MMLongBench-Doc-V2)"),
)
