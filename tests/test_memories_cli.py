"""Stored memories are visible: ``pagemind memories``, ``memories rm``, ``cache clear``, and ``show`` naming what
exists when nothing matches its settings."""

from __future__ import annotations

import json

from click.testing import CliRunner

from helpers import first_words_gist, make_text, middle_label
from pagemind.cli.main import cli
from pagemind.llm.fake import ScriptedLLM


def fake() -> ScriptedLLM:
    return ScriptedLLM(by_role={"paginate": middle_label, "gist": first_words_gist, "answer": "Answer: (A) one"})


def run(args, tmp_path):
    """``args`` with ``--store``, given to the command (a group's options go before its subcommand)."""
    store = ["--store", str(tmp_path / "s.db")]
    if args[:1] == ["memories"] and args[1:2] == ["rm"]:
        return CliRunner().invoke(cli, ["memories"] + store + args[1:], obj={"backend": fake()})
    return CliRunner().invoke(cli, args + store, obj={"backend": fake()})


def test_memories_lists_with_cost_and_rm_deletes(tmp_path):
    book = tmp_path / "book.txt"
    book.write_text(make_text(30, 60))
    assert run(["index", str(book), "-m", "readagent-p"], tmp_path).exit_code == 0
    assert run(["index", str(book), "-m", "rag"], tmp_path).exit_code == 0
    listed = run(["memories", "--json"], tmp_path)
    assert listed.exit_code == 0, listed.output
    found = {m["method"]: m for m in json.loads(listed.stdout)}
    assert set(found) == {"readagent", "rag"} and all(m["document_name"] == "book.txt" for m in found.values())
    usage = found["readagent"]["build_usage"]
    assert usage["calls"] > 0 and usage["prompt_tokens"] > 0 and usage["attempts"] == 1
    assert found["rag"]["build_usage"]["calls"] == 0  # fragments cost no LLM call
    text = run(["memories"], tmp_path).stdout
    assert "book.txt (1,800 words)  readagent" in text and "calls" in text
    key = found["rag"]["key"]
    gone = run(["memories", "rm", key[:10]], tmp_path)
    assert gone.exit_code == 0 and "deleted" in gone.stdout
    assert {m["method"] for m in json.loads(run(["memories", "--json"], tmp_path).stdout)} == {"readagent"}
    unknown = run(["memories", "rm", "zzzz"], tmp_path)
    assert unknown.exit_code == 2 and "'zzzz' matches 0 memories" in unknown.output


def test_cache_clear_counts_and_a_repeat_calls_the_model_again(tmp_path):
    book = tmp_path / "book.txt"
    book.write_text(make_text(4, 30))
    assert run(["ask", str(book), "Which?", "-o", "one", "-o", "two"], tmp_path).exit_code == 0
    cleared = run(["cache", "clear"], tmp_path)
    assert cleared.exit_code == 0 and cleared.stdout.strip() == "deleted 1 cached reply and 0 file readings"


def test_show_without_a_matching_memory_names_the_stored_ones(tmp_path):
    book = tmp_path / "book.txt"
    book.write_text(make_text(30, 60))
    assert run(["index", str(book), "-m", "readagent-p", "--max-words", "500"], tmp_path).exit_code == 0
    shown = run(["show", str(book), "-m", "readagent-p"], tmp_path)
    assert shown.exit_code == 1
    assert "stored for this document:" in shown.stderr and "max_words=500" in shown.stderr
