"""Progress you can see: every stage names its phase, counts what it can, and nothing is printed off a terminal."""

from __future__ import annotations

import io

from helpers import first_words_gist, make_text, middle_label
from pagemind.api import Pagemind
from pagemind.cli.render import progress_view
from pagemind.llm.fake import ScriptedLLM
from pagemind.text import Document


def recorder():
    seen: list[tuple[str, int, int, str]] = []
    return seen, lambda phase, done, total, unit: seen.append((phase, done, total, unit))


def fake():
    return ScriptedLLM(by_role={"paginate": middle_label, "gist": first_words_gist, "summarise": "a summary",
                                "navigate": "Reasoning: r\nAction: -2\nAnswer: (A)",
                                "lookup": "I want to look up Page [0] to", "answer": "Answer: (A) one"})


def phases(seen):
    return list(dict.fromkeys(p for p, *_ in seen))


def test_readagent_names_each_stage_with_honest_counts_and_a_stored_memory_says_so(tmp_path):
    doc = Document.from_text(make_text(30, 60))
    seen, progress = recorder()
    with Pagemind(fake(), store=tmp_path / "s.db") as pm:
        pm.ask(doc, "Which?", options=["one", "two"], method="readagent-p", progress=progress)
        assert phases(seen) == ["reading pages", "writing gists", "looking up pages", "answering"]
        reading = [s for s in seen if s[0] == "reading pages"]
        assert reading[-1][1:] == (doc.words, doc.words, "word")  # the last page read completes the count
        gists = [s for s in seen if s[0] == "writing gists"]
        assert gists[-1][1] == gists[-1][2] and gists[-1][3] == "page"
        seen.clear()
        pm.ask(doc, "Which?", options=["one", "two"], method="readagent-p", progress=progress)
        assert phases(seen) == ["readagent-p: the memory was found in the store", "looking up pages", "answering"]


def test_memwalker_counts_segments_then_tree_nodes(tmp_path):
    doc = Document.from_text(make_text(16, 10))
    seen, progress = recorder()
    with Pagemind(fake(), store=tmp_path / "s.db") as pm:
        pm.index(doc, method="memwalker", segment_tokens=25, max_children=2, progress=progress)
    assert phases(seen) == ["summarising segments", "building the tree"]
    nodes = [s for s in seen if s[0] == "building the tree"]
    assert nodes[-1][1] == nodes[-1][2] and nodes[-1][3] == "node"


def test_nothing_is_printed_off_a_terminal_or_with_json():
    class Pipe(io.StringIO):
        def isatty(self) -> bool:
            return False

    with progress_view(stream=Pipe()) as progress:
        assert progress is None
    with progress_view(enabled=False) as progress:
        assert progress is None


def test_on_a_terminal_each_phase_shows_a_line_or_a_bar():
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    screen = Terminal()
    with progress_view(stream=screen) as progress:
        progress("reading pages", 300, 1200, "word")
        progress("reading pages", 1200, 1200, "word")
        progress("looking up pages", 0, 0, "")
        progress("answering", 0, 0, "")
    shown = screen.getvalue()
    assert "reading pages:" in shown and "/1200" in shown  # a bar with its total (redraws are throttled)
    assert "looking up pages…\n" in shown and shown.index("looking up pages") < shown.index("answering…")


def test_an_agent_turn_reports_each_step_and_the_function_it_called(tmp_path):
    import json as _json

    from pagemind.agent import Agent, AgentOptions
    from pagemind.llm.client import LLM
    from pagemind.store import Store

    search = _json.dumps({"thoughts": "look it up", "function": "archival_memory_search",
                          "arguments": {"query": "map", "page": 0, "request_heartbeat": True}})
    reply = _json.dumps({"thoughts": "ok", "function": "send_message", "arguments": {"message": "Wren found it."}})
    agent = Agent.create(LLM(ScriptedLLM(by_role={"agent-step": [search, reply]})), Store(tmp_path / "a.db"), "ann",
                         options=AgentOptions(search_again=0))
    seen, progress = recorder()
    turn = agent.say("Who found the map?", progress=progress)
    assert turn.messages == ["Wren found it."]
    assert phases(seen) == ["step 1: thinking", "step 1: archival_memory_search", "step 2: thinking"]
