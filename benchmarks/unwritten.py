"""(bd) How often a question asks of a name its document never writes (:func:`pagemind.answering.support.unwritten`,
an abstention whatever the answer): over every staged set's answerable questions — each firing is a right answer
the rule would withhold, listed — and over unanswerable variants (:mod:`pagemind.eval.unanswerable`: the evidence
taken out), each firing a variant withheld; with the check's time per question (no model call).

    python benchmarks/unwritten.py [--data DIR] [--variants N]   → results/unwritten.json
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from common import DATA, write_result

# (dataset, params): the staged sets a question comes with its own document in (BABILong's haystack is bundled)
SETS = (("locomo", {}), ("msc", {}), ("qmsum", {}), ("narrativeqa", {}), ("quality", {}), ("financebench", {}),
        ("babilong", {"tokens": "2000", "samples": "120"}))
VARIANTS = ("locomo", "babilong")  # the sets whose variants the labelled runs asked


def examples(name: str, params: dict[str, str], data: Path) -> list:
    from pagemind.eval.sets import load_dataset

    return load_dataset(name, None if name == "babilong" else data, params)


def measure(items: list) -> dict:
    """The questions of ``items`` (examples) whose document never writes a name they ask of, and the check's time."""
    from pagemind.answering.support import unwritten
    from pagemind.eval.memgpt import document_of
    from pagemind.text import Document

    fired, seconds, asked = [], [], 0
    for e in items:
        document = document_of(e)
        if not isinstance(document, Document):
            continue
        asked += 1
        start = time.perf_counter()
        names = unwritten(e.question, document.text)
        seconds.append(time.perf_counter() - start)
        if names:
            fired.append({"id": e.id, "question": e.question, "names": list(names)})
    return {"questions": asked, "fired": len(fired), "share": round(len(fired) / asked, 4) if asked else None,
            "ms_median": round(1000 * statistics.median(seconds), 3) if seconds else None,
            "ms_max": round(1000 * max(seconds), 3) if seconds else None, "firings": fired}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="the folder holding the staged sets")
    parser.add_argument("--variants", type=int, default=120, help="variants made of each set's first N questions")
    args = parser.parse_args()
    from pagemind.eval.unanswerable import variant

    out: dict = {"answerable": {}, "variants": {}}
    for name, params in SETS:
        items = examples(name, params, args.data)
        out["answerable"][name] = measure(items)
        print(name, {k: v for k, v in out["answerable"][name].items() if k != "firings"}, flush=True)
        if name in VARIANTS:
            made = [v for v in (variant(e) for e in items[:args.variants]) if v is not None]
            out["variants"][name] = {k: v for k, v in measure(made).items() if k != "firings"}
            print(f"{name} variants", out["variants"][name], flush=True)
    answerable = out["answerable"].values()
    out["answerable_total"] = {"questions": sum(a["questions"] for a in answerable),
                               "fired": sum(a["fired"] for a in answerable)}
    print("answerable in all", out["answerable_total"])
    write_result("unwritten", out)


if __name__ == "__main__":
    main()
