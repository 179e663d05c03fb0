"""Reports from a run directory, and the `pagemind eval` command group end to end with the scripted fake."""

import csv
import io
import json

import pytest
from click.testing import CliRunner

from pagemind import ScriptedLLM
from pagemind.cli.main import cli
from pagemind.errors import ConfigError
from pagemind.eval import summarise, write_report
from pagemind.eval.report import wilson
from pagemind.eval.rundir import RunDir
from test_eval_datasets import quality_slice, write


def usage(prompt, completion, calls=1):
    return {"calls": calls, "cached_calls": 0, "prompt_tokens": prompt, "completion_tokens": completion, "seconds": 1.0}


def fake_run(path):
    rd = RunDir(path)
    rd.start({"dataset": "quality", "methods": ["readagent-p", "full"], "params": {}, "seed": 0, "limit": 4,
              "budget": 3000, "model": "m", "raters": False, "by_document": False, "primary": "accuracy",
              "method_options": {}, "commands": ["pagemind eval quality -m readagent-p -m full --budget 3000"]})
    for i, (ok_p, ok_f) in enumerate([(1, 1), (1, 0), (0, 0), (1, 0)]):
        rd.append("examples.jsonl", {"key": f"readagent-p|e{i}", "example_id": f"e{i}", "method": "readagent-p",
                                     "status": "ok", "scores": {"accuracy": float(ok_p)}, "usage": usage(1000, 20, 2),
                                     "wall_seconds": 2.0, "lookups": i % 3, "pages_read": [0] * (i % 3),
                                     "context_words": 900, "compression_rate": 80.0, "fallbacks": [], "details": {}})
        record = {"key": f"full|e{i}", "example_id": f"e{i}", "method": "full", "status": "ok",
                  "scores": {"accuracy": float(ok_f)}, "usage": usage(3000, 2), "wall_seconds": 4.0,
                  "context_words": 2500, "compression_rate": 0.0, "fallbacks": ["text truncated"], "details": {}}
        if i == 3:
            record = {"key": "full|e3", "example_id": "e3", "method": "full", "status": "error", "error": "X: boom"}
        rd.append("examples.jsonl", record)
    for d in range(2):  # one ReadAgent memory per document of 2 questions each: 4000 tokens each
        rd.append("builds.jsonl", {"key": f"readagent-p|d{d}", "method": "readagent-p", "document_id": f"d{d}",
                                   "status": "ok", "memory_key": f"k{d}", "reused": False, "llm_built": True,
                                   "usage": usage(3900, 100, 10)})
        rd.append("builds.jsonl", {"key": f"full|d{d}", "method": "full", "document_id": f"d{d}", "status": "ok",
                                   "memory_key": None, "reused": True, "llm_built": False, "usage": usage(0, 0, 0)})
    return path


def test_summary_numbers_by_hand(tmp_path):
    s = summarise(fake_run(tmp_path / "run"))
    p, f = s["methods"]
    assert (p["method"], p["n"], p["errors"], p["score"]) == ("readagent-p", 4, 0, 0.75)
    assert (p["ci_low"], p["ci_high"]) == pytest.approx(wilson(3, 4))
    assert p["tokens"] == 1020 and p["calls"] == 2 and p["lookups"] == pytest.approx((0 + 1 + 2 + 0) / 4)
    assert p["index_tokens"] == 2000 and p["all_in_tokens"] == 3020  # 8000 build tokens over 4 questions
    assert (f["n"], f["errors"], f["score"]) == (4, 1, 0.25)  # the failure counts as 0: 1 of 4
    assert f["tokens"] == 3002 and f["index_tokens"] == 0 and f["all_in_tokens"] == 3002
    assert f["fallback_rate"] == 1.0 and f["lookups"] is None


def test_a_memory_loaded_again_by_a_resumed_run_keeps_its_build_cost(tmp_path):
    rd = RunDir(fake_run(tmp_path / "run"))
    for d in range(2):  # a larger --limit: the same memories come back from the store, free
        rd.append("builds.jsonl", {"key": f"readagent-p|d{d}", "method": "readagent-p", "document_id": f"d{d}",
                                   "status": "started"})
        rd.append("builds.jsonl", {"key": f"readagent-p|d{d}", "method": "readagent-p", "document_id": f"d{d}",
                                   "status": "ok", "memory_key": f"k{d}", "reused": True, "llm_built": True,
                                   "usage": usage(0, 0, 0)})
    p, _ = summarise(rd.path)["methods"]
    assert p["index_tokens"] == 2000 and p["index_unknown"] == 0


def test_a_memory_shared_with_a_resumed_build_has_an_unknown_cost_for_every_method(tmp_path):
    rd = RunDir(fake_run(tmp_path / "run"))
    rd.append("builds.jsonl", {"key": "readagent-p|d2", "method": "readagent-p", "document_id": "d2",
                               "status": "ok", "memory_key": "k2", "reused": False, "llm_built": True,
                               "resumed": True, "usage": usage(500, 50, 3)})  # only what came after a kill
    rd.append("builds.jsonl", {"key": "readagent-s|d2", "method": "readagent-s", "document_id": "d2",
                               "status": "ok", "memory_key": "k2", "reused": True, "llm_built": True,
                               "usage": usage(0, 0, 0)})
    rd.append("examples.jsonl", {"key": "readagent-s|e9", "example_id": "e9", "method": "readagent-s",
                                 "status": "ok", "scores": {"accuracy": 1.0}, "usage": usage(10, 1)})
    methods = {m["method"]: m for m in summarise(rd.path)["methods"]}
    assert methods["readagent-p"]["index_tokens"] == 2000 and methods["readagent-p"]["index_unknown"] == 1
    assert methods["readagent-s"]["index_tokens"] == 0 and methods["readagent-s"]["index_unknown"] == 1


def test_scores_by_condition_count_failures_as_zero(tmp_path):
    rd = RunDir(tmp_path / "kv")
    rd.start({"dataset": "nested-kv", "methods": ["memgpt"], "params": {}, "seed": 0, "primary": "accuracy"})
    cases = [(1, "ok", 1.0), (1, "ok", 0.0), (2, "ok", 1.0), (2, "error", None), (3, "ok", 0.0)]
    for i, (level, status, score) in enumerate(cases):
        record = {"key": f"memgpt|e{i}", "example_id": f"e{i}", "method": "memgpt", "status": status,
                  "meta": {"levels": level}, "usage": usage(10, 1)}
        if score is not None:
            record["scores"] = {"accuracy": score}
        rd.append("examples.jsonl", record)
    s = summarise(tmp_path / "kv")
    assert s["breakdown"] == {"key": "levels", "groups": ["1", "2", "3"],
                              "scores": {"memgpt": {"1": [0.5, 2], "2": [0.5, 2], "3": [0.0, 1]}}}
    write_report(tmp_path / "kv")
    md = (tmp_path / "kv" / "summary.md").read_text()
    assert "| method | levels 1 | levels 2 | levels 3 |" in md
    assert "| memgpt | 0.500 (2) | 0.500 (2) | 0.000 (1) |" in md
    assert summarise(fake_run(tmp_path / "run"))["breakdown"] is None  # QuALITY has no condition


def test_report_files(tmp_path):
    files, warnings = write_report(fake_run(tmp_path / "run"))
    assert {f.name for f in files} == {"summary.md", "summary.csv", "summary.json", "plot.png"} and not warnings
    md = (tmp_path / "run" / "summary.md").read_text()
    assert "matched budget: 3000 context tokens per prompt for every method" in md
    assert "| readagent-p | 4 | 0 | 0.750 [0.301, 0.954] |" in md
    assert "look-ups/q 0.75" in md and "pagemind eval quality -m readagent-p -m full --budget 3000" in md
    rows = list(csv.DictReader(io.StringIO((tmp_path / "run" / "summary.csv").read_text())))
    assert [r["method"] for r in rows] == ["readagent-p", "full"] and rows[1]["errors"] == "1"
    assert float(rows[0]["tokens"]) == 1020 and rows[0]["accuracy"] == "0.75"
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["methods"][1]["score"] == 0.25
    assert (tmp_path / "run" / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_memory_from_an_earlier_run_is_flagged_not_counted(tmp_path):
    rd = RunDir(tmp_path)
    rd.start({"dataset": "quality", "methods": ["memwalker"], "primary": "accuracy"})
    rd.append("examples.jsonl", {"key": "memwalker|e", "example_id": "e", "method": "memwalker", "status": "ok",
                                 "scores": {"accuracy": 1.0}, "usage": usage(10, 1), "details": {}})
    rd.append("builds.jsonl", {"key": "memwalker|d", "method": "memwalker", "document_id": "d", "status": "ok",
                               "memory_key": "k", "reused": True, "llm_built": True, "usage": usage(0, 0, 0)})
    [m] = summarise(tmp_path)["methods"]
    assert m["index_unknown"] == 1 and m["index_tokens"] == 0
    write_report(tmp_path)
    assert "built by an earlier run" in (tmp_path / "summary.md").read_text()


def test_a_folder_without_config_is_not_a_run(tmp_path):
    with pytest.raises(ConfigError, match="not a run directory"):
        summarise(tmp_path)


# --- the CLI -----------------------------------------------------------------------------------------
def invoke(args, fake=None):
    fake = fake or ScriptedLLM(by_role={"answer": "Answer: (A)"})
    return CliRunner().invoke(cli, args, obj={"backend": fake}), fake


def test_eval_dataset_runs_the_default_command_and_report_regenerates(tmp_path):
    quality_slice(tmp_path, n=3)
    run_dir = tmp_path / "run"
    result, _ = invoke(["eval", "quality", "-m", "full", "-m", "rag", "--data", str(tmp_path), "--limit", "2",
                        "--run-dir", str(run_dir), "--store", str(tmp_path / "s.db"), "--no-progress",
                           "-O", "rag:top_k=2"])
    assert result.exit_code == 0, result.output
    assert "| full | 2 | 0 |" in result.stdout and "| rag | 2 | 0 |" in result.stdout
    assert "4 answered now (0 failed), 0 done before" in result.stderr
    config = json.loads((run_dir / "config.json").read_text())
    assert config["method_options"]["rag"]["top_k"] == 2 and config["limit"] == 2
    assert config["commands"][0].startswith("pagemind eval quality -m full -m rag --data")
    assert len(RunDir(run_dir).read()) == 4
    (run_dir / "summary.md").unlink()
    (run_dir / "plot.png").unlink()
    again, _ = invoke(["eval", "report", str(run_dir)])
    assert again.exit_code == 0, again.output
    assert (run_dir / "summary.md").exists() and (run_dir / "plot.png").exists() and "| full | 2 |" in again.stdout


def test_options_may_come_before_the_dataset(tmp_path):
    quality_slice(tmp_path, n=1)
    result, _ = invoke(["eval", "-m", "full", "quality", "--data", str(tmp_path), "--run-dir", str(tmp_path / "r"),
                        "--store", str(tmp_path / "s.db"), "--no-progress"])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("args, message", [
    (["eval", "qualty", "-m", "full"], "error: unknown dataset 'qualty'"),
    (["eval", "quality", "-m", "full", "--data", "/no/such/place"], "error: /no/such/place: no such file or folder"),
    (["eval", "quality", "-m", "fulltext"], "error: unknown method 'fulltext'"),
    (["eval", "quality", "-m", "full", "-p", "hard_only=maybe"], "error: parameter hard_only: 'maybe'"),
    (["eval", "report", "/no/such/run"], "error: /no/such/run: no such run directory"),
])
def test_bad_input_is_one_clear_line(tmp_path, args, message):
    quality_slice(tmp_path)
    if "--data" not in args and args[1] != "report":
        args = args + ["--data", str(tmp_path)]
    result, _ = invoke(args + (["--store", str(tmp_path / "s.db")] if args[1] != "report" else []))
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines()[-1].startswith(message) and "Traceback" not in result.output


def test_malformed_rows_and_bad_option_syntax(tmp_path):
    write(tmp_path / "quality" / "quality_dev_slice.json", [{"article": "x", "question": "q", "options": ["a"]}])
    result, _ = invoke(["eval", "quality", "-m", "full", "--data", str(tmp_path), "--store", str(tmp_path / "s.db")])
    assert result.exit_code == 1 and "missing field 'gold_label'" in result.stderr
    bad, _ = invoke(["eval", "quality", "-m", "full", "-O", "max_pages=3", "--data", str(tmp_path)])
    assert bad.exit_code == 2 and "METHOD:KEY=VALUE" in bad.output


def test_datasets_listing(tmp_path):
    quality_slice(tmp_path)
    result, _ = invoke(["eval", "datasets", "--data", str(tmp_path)])
    assert result.exit_code == 0
    lines = {line.split()[0]: line for line in result.stdout.splitlines()[1:]}
    assert "found" in lines["quality"] and "missing" in lines["qmsum"] and "levels=1,2,3,4" in lines["nested-kv"]


def test_a_method_whose_every_example_failed_is_reported_as_zero(tmp_path):
    rd = RunDir(tmp_path)
    rd.start({"dataset": "qmsum", "methods": ["memwalker"], "primary": "rougeL"})
    for i in range(3):
        rd.append("examples.jsonl", {"key": f"memwalker|e{i}", "example_id": f"e{i}", "method": "memwalker",
                                     "status": "error", "error": "ContextWindowExceeded: too long"})
    _, warnings = write_report(tmp_path)
    [m] = summarise(tmp_path)["methods"]
    assert (m["n"], m["errors"], m["score"], m["tokens"]) == (3, 3, 0.0, None)
    assert "| memwalker | 3 | 3 | 0.000 [0.000, 0.000] |" in (tmp_path / "summary.md").read_text()
    assert (tmp_path / "plot.png").exists() and not warnings
