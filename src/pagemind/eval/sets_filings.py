"""FinanceBench (Islam et al., 2023): questions on public SEC filings — 10-Ks, 10-Qs, 8-Ks, earnings releases — with
gold answers and evidence pages, and the paper's graded runs of GPT-4-Turbo, Claude 2 and Llama 2 on the same
questions.

The upstream layout (``pagemind data get financebench``, or ``--data`` naming a copy): ``financebench_open_source
.jsonl`` (``financebench_id, company, doc_name, question_type, question_reasoning, question, answer,
justification, evidence``: a list of ``{evidence_text, evidence_doc_name, evidence_page_num (0-based),
evidence_text_full_page}``), ``financebench_document_information.jsonl`` (``doc_name, doc_type, doc_period``),
``pdfs/<doc_name>.pdf`` and the graded runs in ``published/`` (or upstream's ``results/``): one JSON line per
question with its ``label`` (Correct Answer, Incorrect Answer, Refusal).

Each PDF is read as pagemind reads any PDF; each evidence page becomes an evidence label (the page's span), so the
evidence recall of an answer's citations is its evidence-page recall. Answers are scored by
:func:`pagemind.eval.metrics.financebench` (the same figure within rounding after units and scales; refusals
counted apart), and every example carries the paper's labels for its question so the report prints the
published rows for exactly the questions run.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from ..errors import DatasetError, InputError
from .datasets import QUALITY_PRESETS, DatasetSpec, DatasetWarning, Example, field_of, find_file, read_rows
from .evidence import Span
from .sets_long import published_list

PUBLISHED_LABELS = {"Correct Answer": "correct", "Incorrect Answer": "incorrect", "Refusal": "refusal"}


def load_financebench(path: Path, *, doc_type: str = "", question_type: str = "", company: str = "") -> list[Example]:
    """FinanceBench's questions whose PDF is in ``pdfs/``; ``doc_type`` (10k, 10q, 8k, earnings),
    ``question_type`` (metrics-generated, domain-relevant, novel-generated) and ``company`` keep a part (only the
    PDFs of the questions kept are read)."""
    from ..text import load_document

    questions = find_file(path, "financebench_open_source.jsonl")
    folder = questions.parent
    kinds = _doc_types(folder)
    published, automatic = _published(folder)
    documents: dict[str, Any] = {}
    examples: list[Example] = []
    missing: set[str] = set()
    for where, row in read_rows(questions):
        qid, name = str(field_of(row, "financebench_id", where)), str(field_of(row, "doc_name", where))
        kind = kinds.get(name, "")
        if (doc_type and kind.lower() != doc_type.lower()) or (question_type and row.get("question_type") !=
                                                               question_type) or \
                (company and str(row.get("company", "")).lower() != company.lower()):
            continue
        pdf = folder / "pdfs" / f"{name}.pdf"
        if not pdf.is_file():
            missing.add(name)
            continue
        if name not in documents:
            try:
                documents[name] = load_document(pdf)
            except InputError as err:
                documents[name] = str(err)
        document = documents[name]
        if isinstance(document, str):
            missing.add(name)
            continue
        starts = list(document.pages)
        pages = sorted({int(e["evidence_page_num"]) + 1 for e in _evidence(row.get("evidence"), where)
                        if isinstance(e, dict) and str(e.get("evidence_page_num", "")).lstrip("-").isdigit()})
        pages = [p for p in pages if 1 <= p <= len(starts)]
        spans = tuple(Span(f"page {p}", starts[p - 1], starts[p] if p < len(starts) else len(document.text))
                      for p in pages)
        answer = str(field_of(row, "answer", where, (str, int, float)))
        examples.append(Example(
            id=f"financebench-{qid.removeprefix('financebench_id_')}", dataset="financebench", task="qa",
            question=str(field_of(row, "question", where)), document_id=f"financebench-{name}",
            document=document.text, references=(answer,), evidence=spans, read=document,
            meta={"doc": name, "doc_type": kind, "company": str(row.get("company", "")),
                  "question_type": str(row.get("question_type", "")),
                  "reasoning": str(row.get("question_reasoning", "")), "evidence_pages": pages,
                  "pages": len(starts), "rater": "financebench", "published": published.get(qid, {}),
                  "published_automatic": automatic.get(qid, {})}))
    if missing:
        warnings.warn(DatasetWarning(
            f"financebench: questions about {len(missing)} filing(s) left out: no readable PDF in {folder / 'pdfs'} "
            f"({', '.join(sorted(missing)[:3])}{', ...' if len(missing) > 3 else ''})"), stacklevel=2)
    if not examples:
        raise DatasetError(f"{questions}: no question kept (filters: doc_type={doc_type!r}, "
                           f"question_type={question_type!r}, company={company!r}) with its PDF in pdfs/")
    return examples


def _evidence(value: Any, where: str) -> list[Any]:
    return published_list(value, where, "evidence") if value is not None else []


def _doc_types(folder: Path) -> dict[str, str]:
    path = folder / "financebench_document_information.jsonl"
    if not path.is_file():
        return {}
    return {str(row.get("doc_name")): str(row.get("doc_type", "")) for _, row in read_rows(path)}


def _published(folder: Path) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, str]]]:
    """The paper's graded runs: question id -> {"<model> <mode>": correct | incorrect | refusal}, as graded by hand
    and as pagemind's automatic scorer grades the same answer (so our accuracy is read beside theirs in one
    currency)."""
    from .metrics import financebench_grade

    hand: dict[str, dict[str, str]] = {}
    automatic: dict[str, dict[str, str]] = {}
    for sub in ("published", "results"):
        for path in sorted((folder / sub).glob("*.jsonl")) if (folder / sub).is_dir() else []:
            for _, row in read_rows(path):
                label = PUBLISHED_LABELS.get(str(row.get("label", "")))
                if label is None or "financebench_id" not in row:
                    continue
                qid = str(row["financebench_id"])
                run = f"{row.get('model_name', path.stem.split('_')[0])} {row.get('eval_mode', '')}".strip()
                hand.setdefault(qid, {})[run] = label
                automatic.setdefault(qid, {})[run] = financebench_grade(
                    str(row.get("model_answer") or ""), str(row.get("gold_answer", "")), str(row.get("question", "")))
        if hand:
            break
    return hand, automatic


SPECS = (
    DatasetSpec("financebench", load_financebench, "financebench/financebench_open_source.jsonl",
                "FinanceBench: questions on public 10-K/10-Q/8-K filings and earnings releases; numeric answers "
                "scored within rounding after units and scales, refusals apart, evidence-page recall of the "
                "citations, and the paper's graded GPT-4-Turbo / Claude 2 / Llama 2 rows for the same questions",
                "accuracy", QUALITY_PRESETS, "Islam et al., arXiv:2311.11944 (2023); CC BY-NC 4.0 dataset card"),
)
