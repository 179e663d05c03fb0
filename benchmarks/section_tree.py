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
import tempfile
import time
from pathlib import Path

from common import write_result

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
    objects = {1: b"<< /Type /Catalog /Pages 2 0 R >>", 3: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"}
    kids, n = [], 4
    for page_lines in pages:
        page, content, n = n, n + 1, n + 2
        shown = [b"(%s) '" % line.replace("\\", "").replace("(", "[").replace(")", "]").encode("latin-1", "replace")
                 for line in page_lines]
        stream = b"\n".join([b"BT /F1 10 Tf 50 760 Td 15 TL", *shown, b"ET"])
        objects[page] = (b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> "
                         b">> /Contents %d 0 R >>" % content)
        objects[content] = b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream)
        kids.append(page)
    objects[2] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % k for k in kids), len(kids))
    out, offsets = bytearray(b"%PDF-1.4\n"), {}
    for num in sorted(objects):
        offsets[num] = len(out)
        out += b"%d 0 obj\n%s\nendobj\n" % (num, objects[num])
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offsets[num] for num in sorted(objects))
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(bytes(out))))
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
    write_result("section_tree", {"llm": args.llm or "scripted echo", "rows": rows})


if __name__ == "__main__":
    main()
