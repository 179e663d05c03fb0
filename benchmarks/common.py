"""Shared helpers for the benchmarks: data from ../shared/data (never copied), timing, JSON output."""

from __future__ import annotations

import json
import os
import platform
import re
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# the staged data as a path from where the script runs ("../shared/data" from the checkout): what a run's config
# records, so a kept run names no machine's folders (a child process run elsewhere is given it resolved)
DATA = Path(os.path.relpath(ROOT.parent / "shared" / "data"))
RESULTS = Path(__file__).resolve().parent / "results"


def quality_rows(data: Path = DATA) -> list[dict]:
    path = data / "quality" / "quality_dev_slice.json"
    if not path.exists():
        raise SystemExit(f"QuALITY slice not found at {path}; pass --data DIR (the folder holding quality/)")
    return json.loads(path.read_text())


def quality_articles(data: Path, n: int) -> list[dict]:
    """The first QuALITY question of each of the first ``n`` articles of the slice (one question an article)."""
    rows, seen = [], set()
    for row in quality_rows(data):
        if row["article"][:200] not in seen:
            seen.add(row["article"][:200])
            rows.append(row)
    return rows[:n]


def concatenated_articles(rows: list[dict], words: int) -> tuple[str, list[dict]]:
    """Whole QuALITY articles joined until ``words`` is reached (the last one cut at a paragraph)."""
    parts, used, total = [], [], 0
    for row in rows:
        article = row["article"].strip()
        n = len(article.split())
        if total + n > words:
            paragraphs, kept = article.split("\n\n\n"), []
            for para in paragraphs:
                if total + len(para.split()) > words:
                    break
                kept.append(para)
                total += len(para.split())
            parts.append("\n\n\n".join(kept))
            break
        parts.append(article)
        used.append(row)
        total += n
    return "\n\n\n\n".join(parts), used


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def read_grades(path: Path, answers: dict[tuple[str, str], str] | None = None) -> dict[tuple[str, str], bool]:
    """Answers graded by hand: ``{(example_id, method): right}`` from a ``grades.jsonl`` (one ``{"example_id",
    "method", "right"[, "answer", "why"]}`` a line; a free-form answer a token-F1 score undercounts); empty where
    there is none. A grade that gives the ``answer`` it graded holds only for that answer: given ``answers`` (the
    run's, by the same key), a grade of another answer is left out — a run made again after a change is graded
    again where its answers changed. A grade that is not true or false stops the benchmark."""
    grades: dict[tuple[str, str], bool] = {}
    for line in path.read_text().splitlines() if path.exists() else []:
        if line.strip():
            grade = json.loads(line)
            if not isinstance(grade.get("right"), bool):
                sys.exit(f"{path}: 'right' must be true or false: {line}")
            key = (grade["example_id"], grade["method"])
            if answers is None or "answer" not in grade or answers.get(key) == grade["answer"]:
                grades[key] = grade["right"]
    return grades


RUNS = RESULTS.parent / "runs"  # where a benchmark's run directories go unless its --runs says elsewhere


def results_for(runs: Path) -> Path | None:
    """Where a benchmark that made its runs in ``runs`` writes its result (``write_result``'s ``into``): ``results/``
    for the default runs directory, else beside the runs — a run made elsewhere (from a copy of the checkout, a
    worktree) leaves this checkout's results alone."""
    return None if runs == RUNS else runs


def write_result(name: str, data: dict, into: Path | None = None) -> Path:
    """``results/NAME.json`` (``into``: that directory instead, e.g. a run directory given with ``--runs``)."""
    where = into or RESULTS
    where.mkdir(parents=True, exist_ok=True)
    data = {"benchmark": name, "date": time.strftime("%Y-%m-%d %H:%M"), "machine": platform.machine(),
            "python": platform.python_version(), **data}
    path = where / f"{name}.json"
    path.write_text(json.dumps(data, indent=2))
    print(json.dumps(data, indent=2))
    return path


# pagemind's mock OpenAI-compatible server as a command's LLM (benchmarks that start pagemind serve)
MOCK_LLM_FLAGS = ["--llm", "openai:mock", "--context-window", "8192", "--server-kind", "openai", "--no-cache"]


def pct(values: list[float], q: float) -> float:
    """The ``q`` quantile of ``values`` (nearest rank; 0.0 for none)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


def long_sample() -> tuple[str, list[tuple[str, tuple[str, ...], int]]]:
    """The bundled long sample (the novella) and its five questions (text, options, gold index)."""
    from importlib import resources

    folder = resources.files("pagemind.samples")
    text = folder.joinpath("keepers-ledger.txt").read_text(encoding="utf-8")
    raw = folder.joinpath("keepers-ledger.questions.txt").read_text(encoding="utf-8")
    questions = []
    for block in re.split(r"\n(?=Question \d+:)", raw.strip()):
        head = re.match(r"Question \d+:\s*(.*?)\n\(A\)", block, re.S)
        options = re.findall(r"^\(([A-D])\) (.*)$", block, re.M)
        gold = re.search(r"^Answer: ([A-D])", block, re.M)
        if head and options and gold:
            questions.append((head.group(1).strip(), tuple(o for _, o in options), "ABCD".index(gold.group(1))))
    return text, questions


def method_options(items: list[str]) -> dict[str, dict[str, str]]:
    """``-O METHOD:KEY=VALUE`` arguments (as ``pagemind eval`` takes them) by method."""
    options: dict[str, dict[str, str]] = {}
    for item in items:
        method, _, pair = item.partition(":")
        key, _, value = pair.partition("=")
        options.setdefault(method, {})[key] = value
    return options
