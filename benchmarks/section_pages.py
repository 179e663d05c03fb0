"""(x) ReadAgent's pagination on the document's sections vs the paper's: pagination calls, all build calls, tokens.

Document: the long sample (16,895 words, 12 chapters its text shows). ``pagination=sequential`` (the paper's) asks
the model where every page ends; ``pagination=sections`` paginates inside each section only (a section's remainder
within a page's length is a page with no call). Default model: pagemind's scripted reader (it picks the middle break
and gists by the first words: calls and tokens only); ``--llm local:...`` builds with a real model and times it.

    python benchmarks/section_pages.py [--llm local:qwen2.5-coder-1.5b]
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path

from common import ROOT, write_result

sys.path.insert(0, str(ROOT / "tests"))
from helpers import first_words_gist, middle_label


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--llm", default=None, help="a real model (default: the scripted reader)")
    args = parser.parse_args()
    from pagemind import Pagemind, ScriptedLLM
    from pagemind.cli.main import sample_path
    from pagemind.llm.usage import Trace

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for pagination in ("sequential", "sections"):
            llm = args.llm or ScriptedLLM(by_role={"paginate": middle_label, "gist": first_words_gist})
            with Pagemind(llm, store=Path(tmp) / f"{pagination}.db", cache=False) as pm:
                plan = pm.plan(sample_path("long"), "readagent-p", pagination=pagination)
                trace = Trace()
                start = time.perf_counter()
                memory = pm.index(plan, trace=trace)
                seconds = time.perf_counter() - start
                roles: dict[str, int] = {}
                for event in trace.events:
                    roles[event.role] = roles.get(event.role, 0) + 1
                usage = trace.usage.as_dict()
                rows.append({"pagination": pagination, "pages": len(memory.pages), "calls": usage.get("calls"),
                             "pagination_calls": roles.get("paginate", 0), "gist_calls": roles.get("gist", 0),
                             "prompt_tokens": usage.get("prompt_tokens"),
                             "completion_tokens": usage.get("completion_tokens"), "seconds": round(seconds, 2)})
                print(rows[-1], flush=True)
    model = re.sub(r"[^A-Za-z0-9.-]+", "-", args.llm).strip("-") if args.llm else ""
    write_result("section_pages" + (f"-{model}" if model else ""), {"llm": args.llm or "scripted", "rows": rows})


if __name__ == "__main__":
    main()
