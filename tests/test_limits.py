"""One set of limits for every surface (issue 35): the JSON shape check that runs before any parser, the one block
rule, passages bounded where they are stored, and Agent Files whose fields have the wrong shape refused as input
(never a crash) before anything is stored."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from pagemind import Pagemind, ScriptedLLM
from pagemind.agent.agentfile import plan_import
from pagemind.errors import InputError
from pagemind.limits import MAX_BLOCK, MAX_PASSAGE, check_block, check_json_shape, check_label

DATA = Path(__file__).parent / "data" / "agentfiles"


# --- JSON bodies ------------------------------------------------------------------------------------------------
def test_a_deep_or_wide_json_body_is_refused_before_parsing_and_a_long_text_is_not():
    assert "nested over 64" in check_json_shape(b"[" * 990 + b"]" * 990)
    assert check_json_shape(json.dumps({"a": [[[[1]]]]}).encode()) is None
    many = json.dumps([{"a": 1}] * 300_000).encode()  # ~3 MB of tiny objects: ~100 MB once parsed
    assert "values" in check_json_shape(many)
    assert "values" in check_json_shape(json.dumps(list(range(300_000))).encode())
    # brackets, commas and escaped quotes inside strings are text, not structure
    text = 'a "quoted" [bracket], {brace}, \\ and more, ' * 50_000
    assert check_json_shape(json.dumps({"name": "x", "text": text}).encode()) is None
    assert check_json_shape(json.dumps({"t": "[" * 500, "u": "\\\\", "v": '"]]]'}).encode()) is None
    assert check_json_shape(json.dumps({"m": [{"role": "user", "content": "hi"}] * 100}).encode()) is None


# --- blocks and passages -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("label", ["<b>", "two\nlines", "x" * 3000, "Upper", "1st", "", "a/b", "a b", "-a"])
def test_one_label_rule(label):
    with pytest.raises(InputError, match="block label"):
        check_label(label)


def test_letta_labels_map_to_pagemind_labels_and_back():
    from pagemind.limits import label_from_letta, label_to_letta

    for letta in ("human", "customer-profile", "project/notes", "a_b/c-d"):
        assert check_label(label_from_letta(letta)) == label_from_letta(letta)
        assert label_to_letta(label_from_letta(letta)) == letta
    for bad in ("a.b", "Upper", "x" * 33, "/a"):  # no reversible counterpart: refused, never changed
        with pytest.raises(InputError, match="a Letta label here"):
            label_from_letta(bad)


def test_the_block_rule_bounds_the_limit_and_the_value():
    check_block("human", "x" * 10, 10)
    with pytest.raises(InputError, match="exceed its limit"):
        check_block("human", "x" * 11, 10)
    with pytest.raises(InputError, match="limit is 1 to"):
        check_block("human", "x", MAX_BLOCK + 1)


def test_every_path_that_writes_memory_keeps_the_rules(tmp_path):
    with Pagemind(ScriptedLLM(), store=tmp_path / "s.db") as pm:
        pm.create_agent("sam", options={"embedder": "none"})
        agent = pm.agent("sam", llm=False)
        with pytest.raises(InputError, match="block label"):
            agent.set_block("<script>", "x")  # what Letta's PATCH stored before
        with pytest.raises(InputError, match="passage"):
            agent.remember("x" * (MAX_PASSAGE + 1))
        assert agent.remember("kept").passage.text == "kept"
        with pytest.raises(InputError, match="block label"):
            pm.create_agent("bob", blocks={"Bad Label": "x"})
        assert [b.label for b in agent.blocks()] == ["persona", "human"]


# --- Agent Files --------------------------------------------------------------------------------------------------
def mutations(doc: dict) -> list[tuple[str, dict]]:
    """The file with one field at a time given a value of another shape (25 of them), as hand-edited or truncated
    files have."""
    agent_paths = ["name", "system", "messages", "memory_blocks", "block_ids", "tool_ids", "tools",
                   "in_context_message_ids", "tool_rules", "llm_config"]
    values = [None, 7, "text", [1, 2], {"k": "v"}, True, [None], [{"role": 5}]]
    out = []
    for n, path in enumerate(agent_paths * 3):
        mutated = copy.deepcopy(doc)
        mutated["agents"][0][path] = values[n % len(values)]
        out.append((f"agents[0].{path}={values[n % len(values)]!r}", mutated))
    for key, value in (("blocks", [{"label": 5, "value": []}]), ("tools", "x"), ("blocks", [{"value": {"a": 1}}])):
        mutated = copy.deepcopy(doc)
        mutated[key] = value
        out.append((f"{key}={value!r}", mutated))
    return out[:25]


def published() -> dict:
    raw = json.loads((DATA / "memgpt_agent.af").read_text())
    return json.loads(raw) if isinstance(raw, str) else raw


@pytest.mark.parametrize("name, doc", mutations(published()))
def test_a_malformed_agent_file_is_input_or_imports(name, doc):
    try:
        plans = plan_import(doc, skip_unsupported=True)
    except InputError:
        return  # said as the file's fault (422), nothing stored
    assert plans and all(p.name for p in plans), name


def test_an_agent_file_is_held_to_the_limits_of_every_other_surface():
    doc = published()
    big = copy.deepcopy(doc)
    block_id = big["agents"][0]["block_ids"][0] if big["agents"][0].get("block_ids") else None
    target = next(b for b in big["blocks"] if b["id"] == block_id) if block_id else big["agents"][0]["memory_blocks"][0]
    target["value"] = "x" * (MAX_BLOCK + 1)  # a 5 MB block imported, then every turn failed with 422
    with pytest.raises(InputError, match="limit is 1 to"):
        plan_import(big, skip_unsupported=True)
    long_system = copy.deepcopy(doc)
    long_system["agents"][0]["system"] = "s" * 200_000
    with pytest.raises(InputError, match="system prompt"):
        plan_import(long_system, skip_unsupported=True)


def test_a_long_passage_is_embedded_by_its_beginning_and_stored_whole(tmp_path):
    """The embedding work one request causes is bounded: a 100,000-character passage took 16 s of CPU to embed
    whole; its vector is taken of its first MAX_EMBEDDED characters (benchmarks/limits.py: 2.8 s)."""
    import numpy as np

    from pagemind import Store
    from pagemind.agent.archive import Archive
    from pagemind.agent.memory import AgentOptions
    from pagemind.agent.store import AgentStore
    from pagemind.limits import MAX_EMBEDDED

    seen: list[str] = []

    class Recording:  # an embedder that keeps what it was asked to embed
        model_id, dim = "recording", 4

        def embed(self, texts):
            seen.extend(texts)
            return [np.ones((1, 4), dtype=np.float32) for _ in texts]

    agents = AgentStore(Store(tmp_path / "s.db"))
    record = agents.create_agent("sam", AgentOptions(), [])
    archive = Archive(agents, record.id, AgentOptions(), Recording())
    text = "word " * (MAX_PASSAGE // 5)
    (pid,) = archive.insert([text], "2026-11-27 12:00:00")
    assert [len(t) for t in seen] == [MAX_EMBEDDED] and agents.passages(record.id, [pid])[0].text == text
