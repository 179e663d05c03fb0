"""A method from another package (tests/plugin_reader: one module and its entry point, nothing in pagemind edited)
runs through ``pagemind methods``, ``index``, ``show``, ``ask`` and ``eval`` in a real process, against an
OpenAI-compatible server on loopback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pagemind.llm.mockserver import MockServer

PLUGIN = Path(__file__).parent / "plugin_reader"
DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
STORY = "\n\n".join(f"Paragraph {i} tells of the keeper Wren and lamp number {i} on the tower." for i in range(12))


def run(*args: str, home: Path, url: str, check: bool = True) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(PLUGIN), os.environ.get("PYTHONPATH", "")]),
               PAGEMIND_HOME=str(home), PAGEMIND_CONTEXT_WINDOW="8192")
    done = subprocess.run([sys.executable, "-m", "pagemind", *args, "--llm", "openai:mock", "--base-url", url]
                          if args[0] not in ("methods",) else [sys.executable, "-m", "pagemind", *args],
                          env=env, capture_output=True, text=True, timeout=120)
    if check:
        assert done.returncode == 0, done.stderr
    return done


@pytest.fixture()
def server():
    def reply(body):
        return "Wren, from the lead: " + str(body["messages"][-1]["content"].count("Paragraph"))

    with MockServer(text=reply) as s:
        yield s


def test_a_plugin_reader_runs_through_every_command(tmp_path, server):
    home = tmp_path / "home"
    story = tmp_path / "story.txt"
    story.write_text(STORY)
    listed = run("methods", home=home, url=server.url)
    assert "lead" in listed.stdout and "a test plugin" in listed.stdout
    schema = json.loads(run("methods", "lead", "--json", home=home, url=server.url).stdout)[0]["options"]
    assert schema["properties"]["paragraphs"] == {"type": "integer", "description":
                                                  "paragraphs from the start shown to the model", "default": 2,
                                                  "minimum": 1}

    built = json.loads(run("index", str(story), "-m", "lead", home=home, url=server.url).stdout)
    assert built == {"paragraphs": 12}
    shown = run("show", str(story), "-m", "lead", home=home, url=server.url).stdout
    assert shown.splitlines()[0].startswith("¶0: Paragraph 0 tells") and "paragraphs: 12" in shown

    asked = run("ask", str(story), "Who keeps the lamps?", "-m", "lead", "--paragraphs", "3", "--json",
                home=home, url=server.url)
    answer = json.loads(asked.stdout)
    assert answer["method"] == "lead" and answer["answer"] == "Wren, from the lead: 3"  # three paragraphs shown
    assert answer["pages_read"] == [0, 1, 2] and answer["read_unit"] == "paragraph"

    wrong = run("ask", str(story), "q?", "-m", "lead", "--max-pages", "3", home=home, url=server.url, check=False)
    assert wrong.returncode == 2 and "--max-pages applies to readagent-p, readagent-s, not lead" in wrong.stderr
    bad = run("ask", str(story), "q?", "-m", "lead", "--paragraphs", "0", home=home, url=server.url, check=False)
    assert bad.returncode == 2 and "paragraphs must be at least 1" in bad.stderr


@pytest.mark.skipif(not (DATA / "quality" / "quality_dev_slice.json").exists(), reason="staged data absent")
def test_a_plugin_reader_is_evaluated_with_its_declared_options(tmp_path, server):
    home, run_dir = tmp_path / "home", tmp_path / "run"
    run("eval", "quality", "-m", "lead", "--limit", "2", "--data", str(DATA), "--run-dir", str(run_dir),
        "-O", "lead:paragraphs=1", "--no-progress", home=home, url=server.url)
    records = [json.loads(line) for line in (run_dir / "examples.jsonl").read_text().splitlines()]
    assert [r["method"] for r in records] == ["lead", "lead"] and all(r["status"] == "ok" for r in records)
    config = json.loads((run_dir / "config.json").read_text())
    assert config["method_options"]["lead"]["paragraphs"] == 1
    refused = run("eval", "quality", "-m", "lead", "--limit", "1", "--data", str(DATA), "--run-dir",
                  str(tmp_path / "r2"), "-O", "lead:paragraphs=many", home=home, url=server.url, check=False)
    assert refused.returncode != 0 and "paragraphs takes a whole number" in refused.stderr
