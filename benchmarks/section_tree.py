"""(s) MemWalker's tree on the document's sections vs the paper's tree: build cost (LLM calls, tokens, seconds).

Documents: the long sample (12 chapters its text shows: "Chapter 1: ...") and the same text as a PDF of 50+ pages
with an outline of its chapters, made here. Trees: the paper's (``tree=paper``: every segment summarised, parents
compressed where their children's summaries exceed the node limit), ``tree=sections`` with LLM summaries only
where a section's children do not fit, and ``tree=sections summaries=titles`` (no LLM call). Default model:
pagemind's scripted echo summariser (calls and tokens only; seconds are not a model's); ``--llm local:...`` builds
with a real model and times it.

    python benchmarks/section_tree.py [--llm local:qwen2.5-coder-1.5b] [--documents sample,pdf]
"""

from __future__ import annotations

import argparse
import io
import re
import sys
import tempfile
import time
from pathlib import Path

from common import ROOT, write_result

sys.path.insert(0, str(ROOT / "tests"))
from helpers import make_pdf

LINES_PER_PAGE = 30


def sample_pdf(text: str) -> bytes:
    """The text as a PDF (Helvetica lines, 30 a page) with an outline entry per chapter on its page."""
    import pypdf

    lines: list[str] = []
    for paragraph in text.split("\n\n"):
        words = paragraph.split()
        while words:
            line: list[str] = []
            while words and len(" ".join(line + words[:1])) <= 90:
                line.append(words.pop(0))
            lines.append(" ".join(line) if line else words.pop(0))
        lines.append("")
    pages = [lines[i:i + LINES_PER_PAGE] for i in range(0, len(lines), LINES_PER_PAGE)]
    out = make_pdf([list(p) for p in pages], size=10, leading=15, top=760)
    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(out)))
    for number, page_lines in enumerate(pages):
        for line in page_lines:
            if line.startswith("Chapter "):
                writer.add_outline_item(title=line, page_number=number)
    made = io.BytesIO()
    writer.write(made)
    return made.getvalue()


def echo(request: object) -> str:
    content = request.messages[0].content  # type: ignore[attr-defined]
    return " ".join(content.split()[:60])  # a summary of about 60 words


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--llm", default=None, help="a real model (default: the scripted echo summariser)")
    parser.add_argument("--documents", default="sample,pdf")
    args = parser.parse_args()
    from pagemind import Pagemind, ScriptedLLM
    from pagemind.cli.main import sample_path
    from pagemind.llm.usage import Trace
    from pagemind.text import load_document

    text = sample_path("long").read_text(encoding="utf-8")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        files = {"sample": sample_path("long")}
        pdf = Path(tmp) / "ledger.pdf"
        pdf.write_bytes(sample_pdf(text))
        files["pdf"] = pdf
        for name in args.documents.split(","):
            document = load_document(files[name])
            for label, options in (("paper", {}), ("sections, llm", {"tree": "sections"}),
                                   ("sections, titles", {"tree": "sections", "summaries": "titles"})):
                llm = args.llm or ScriptedLLM(by_role={"summarise": echo})
                with Pagemind(llm, store=Path(tmp) / f"{name}-{len(rows)}.db", cache=False) as pm:
                    plan = pm.plan(files[name], "memwalker", **options)
                    trace = Trace()
                    start = time.perf_counter()
                    memory = pm.index(plan, trace=trace)
                    seconds = time.perf_counter() - start
                    usage = trace.usage.as_dict()
                    rows.append({"document": name, "pages": len(document.pages), "sections": len(document.sections),
                                 "tree": label, "calls": usage.get("calls"), "prompt_tokens":
                                 usage.get("prompt_tokens"), "completion_tokens": usage.get("completion_tokens"),
                                 "seconds": round(seconds, 2), "nodes": len(memory.nodes),
                                 "leaves": len(memory.leaves), "depth": memory.depth})
                    print(rows[-1], flush=True)
    model = re.sub(r"[^A-Za-z0-9.-]+", "-", args.llm).strip("-") if args.llm else ""
    write_result("section_tree" + (f"-{model}" if model else ""), {"llm": args.llm or "scripted echo", "rows": rows})


if __name__ == "__main__":
    main()
