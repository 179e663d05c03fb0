"""A run's steps as typed values (pagemind.steps): every kind the writers record parses back with its fields, an
unknown kind still reads, one line says each kind's essentials, and ``pagemind logs show`` prints those lines."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from helpers import make_text, middle_label
from pagemind import ScriptedLLM
from pagemind.api import Pagemind
from pagemind.cli.main import cli
from pagemind.steps import (
    AgentStep,
    Decision,
    Error,
    LLMCall,
    Note,
    Other,
    Phase,
    Result,
    as_json,
    data,
    from_row,
    line,
    parse,
)

TEXT = "The lighthouse keeper was Ann. She kept the light for forty years.\n\n" + make_text(30, 60)


from test_runs import pm  # noqa: E402,F401 - the same scripted session as the runs tests


def _write(pm: Pagemind, text: str = TEXT) -> str:
    path = pm.store.path.parent / "keeper.txt"
    path.write_text(text, encoding="utf-8")
    return str(path)


def _parsed(pm: Pagemind, run_id: str) -> list:
    rows = pm.runs.steps(run_id)
    parsed = [from_row(r) for r in rows]
    for row, step in zip(rows, parsed):  # every step reads back to what was stored
        assert (step.seq, step.kind, step.created, data(step)) == (row.seq, row.kind, row.created, row.data)
        assert not isinstance(step, Other)
        if not isinstance(step, Result):  # a result's shape depends on the run's kind: the rest is in extra
            assert not step.absent and not step.extra
        shown = as_json(step)
        assert shown == {"seq": row.seq, "kind": row.kind, "created": row.created, "data": row.data,
                         "text": line(step)}
        assert json.loads(json.dumps(shown)) == shown and "\n" not in shown["text"]
    return parsed


def test_an_ask_s_steps_parse_to_calls_decisions_phases_and_its_result(pm):
    answer = pm.ask(pm.document(_write(pm)), "Who kept the light?", options=["Bob", "Ann"], method="readagent-p")
    rows = pm.runs.steps(answer.run_id)
    steps = _parsed(pm, answer.run_id)
    calls = [s for s in steps if isinstance(s, LLMCall)]
    assert {"paginate", "gist", "answer"} <= {c.role for c in calls}
    for row, step in zip(rows, steps):
        if isinstance(step, LLMCall):
            assert step.prompt_tokens == row.data["prompt_tokens"] > 0 and step.reply == row.data["reply"]
            assert step.completion_tokens == row.data["completion_tokens"] and step.cached is row.data["cached"]
            assert line(step).startswith(f"llm {step.role}: {step.prompt_tokens:,}+{step.completion_tokens:,} tokens")
    decisions = [s for s in steps if isinstance(s, Decision)]
    chose = next(d for d in decisions if d.role == "answer")
    assert chose.decision == "choice B" and isinstance(steps[chose.call], LLMCall)
    assert line(chose) == f"decision answer (call {chose.call}) -> choice B"
    phases = [s for s in steps if isinstance(s, Phase)]
    assert phases and all(p.phase for p in phases)
    counted = next(p for p in phases if p.total)
    assert line(counted) == f"phase {counted.phase} {counted.done:,}/{counted.total:,} {counted.unit}"
    result = steps[-1]
    assert isinstance(result, Result) and result.answer == "Ann" and result.letter == "B"
    assert result.pages_read == answer.pages_read and result.memory and result.extra["usage"]
    assert line(result).startswith("result: (B) Ann")


def test_a_fallback_is_a_note_and_an_index_build_s_result_names_its_memory(pm):
    pm._backend = ScriptedLLM(by_role={"paginate": middle_label, "gist": ""})  # every gist rejected
    pm._llm = None
    pm.index(pm.document(_write(pm)), method="readagent-p")
    [run] = pm.runs.list()
    steps = _parsed(pm, run.id)
    notes = [s for s in steps if isinstance(s, Note)]
    assert any("fell back" in n.text for n in notes) and line(notes[0]) == f"note: {notes[0].text}"
    result = steps[-1]
    assert isinstance(result, Result) and result.memory == run.result["memory"] and result.answer is None
    assert line(result) == f"result: memory {result.memory}"


def test_an_agent_turn_s_steps_parse_to_agent_steps_and_its_messages(pm):
    pm.create_agent("helper")
    pm._llm = None
    reply = {"thoughts": "greet them", "function": "send_message", "arguments": {"message": "hello"}}
    pm._backend = ScriptedLLM(by_role={"agent-step": [json.dumps(reply)]})
    turn = pm.send("helper", "hi")
    rows = pm.runs.steps(turn.run_id)
    steps = _parsed(pm, turn.run_id)
    [row] = [r for r in rows if r.kind == "step"]
    [step] = [s for s in steps if isinstance(s, AgentStep)]
    assert (step.thoughts, step.function, step.arguments) == ("greet them", "send_message", {"message": "hello"})
    assert step.status == row.data["status"] == "OK" and step.valid is True
    assert step.prompt_tokens == row.data["prompt_tokens"] > 0 and step.heartbeat is None
    assert line(step).startswith("agent step send_message(message='hello') [OK]")
    assert "thoughts: greet them" in line(step)
    assert any(isinstance(s, LLMCall) and s.role == "agent-step" for s in steps)
    result = steps[-1]
    assert isinstance(result, Result) and result.messages == ["hello"] and result.stop_reason == "yield"
    assert line(result) == "result: hello"


def test_a_failed_and_a_cancelled_run_end_with_an_error_step(pm):
    broken = Pagemind(ScriptedLLM([]), store=pm.store)  # no replies: the first call fails
    with pytest.raises(Exception):
        broken.ask(pm.document(_write(pm)), "Who?", method="full")
    [failed] = pm.runs.list(status="failed")
    error = _parsed(pm, failed.id)[-1]
    assert isinstance(error, Error) and error.type and failed.error == error.error
    assert line(error) == f"error {error.type}: {error.error}"
    run = pm.runs.create("ask", "doc", method="full", request={"question": "?"})
    pm.runs.cancel(run.id)
    with pytest.raises(Exception):
        pm.ask(pm.document(_write(pm)), "Who?", method="full", run=run)
    cancelled = _parsed(pm, run.id)[-1]
    assert isinstance(cancelled, Error) and cancelled.type == "RunCancelled"
    assert line(cancelled).startswith("error RunCancelled: run ")


def test_unknown_kinds_and_fields_are_kept_and_missing_fields_default():
    other = parse(4, "handoff", {"to": "bob", "why": "busy"}, 12.5)
    assert isinstance(other, Other) and other.kind == "handoff" and other.extra == {"to": "bob", "why": "busy"}
    assert data(other) == {"to": "bob", "why": "busy"} and line(other) == 'handoff: {"to": "bob", "why": "busy"}'
    assert as_json(other)["kind"] == "handoff" and as_json(other)["seq"] == 4
    old = parse(1, "llm", {"role": "gist", "prompt_tokens": 7, "shard": 3}, 0.0)  # an older writer's step
    assert isinstance(old, LLMCall) and old.completion_tokens == 0 and old.reply == "" and not old.cached
    assert old.extra == {"shard": 3} and "seconds" in old.absent
    assert data(old) == {"role": "gist", "prompt_tokens": 7, "shard": 3}  # as stored: no invented fields
    assert line(old) == "llm gist: 7+0 tokens, 0.00 s"
    assert line(parse(2, "phase", {"phase": "gist"}, 0.0)) == "phase gist"
    assert line(parse(3, "error", {"error": "boom\nat line 2"}, 0.0)) == "error: boom at line 2"
    assert line(parse(5, "result", {}, 0.0)) == "result: done"


def test_line_says_each_kind_s_essentials():
    call = LLMCall(role="lookup", prompt_tokens=1200, completion_tokens=8, seconds=0.4567, cached=True,
                   reply="Look up: [3,\n 5]", decision="pages [3, 5]")
    assert line(call) == "llm lookup: 1,200+8 tokens, 0.46 s, cached -> pages [3, 5] | Look up: [3, 5]"
    step = AgentStep(thoughts="save it", function="core_memory_append",
                     arguments={"label": "human", "content": "likes tea"}, result="", status="Failed",
                     heartbeat="failed", valid=False)
    assert line(step) == ("agent step core_memory_append(label='human', content='likes tea') "
                          "[Failed, invalid, heartbeat failed] | thoughts: save it")
    assert line(Result(messages=[], stop_reason="max_steps")) == "result: no message sent (stopped: max_steps)"
    assert line(Phase(phase="embed", done=3, unit="fragment")) == "phase embed 3 fragment"
    assert line(Decision(decision="break at <4>", role="paginate")) == "decision paginate -> break at <4>"


def test_logs_show_prints_each_step_s_line(pm):
    answer = pm.ask(pm.document(_write(pm)), "Who kept the light?", options=["Bob", "Ann"], method="full")
    store = str(pm.store.path)
    shown = CliRunner().invoke(cli, ["logs", "--store", store, "show", answer.run_id])
    assert shown.exit_code == 0, shown.output
    for row in pm.runs.steps(answer.run_id):
        assert f"{row.seq:4}  {line(from_row(row))}\n" in shown.output
    assert "llm answer:" in shown.output and "-> choice B" in shown.output
    as_json_out = json.loads(CliRunner().invoke(cli, ["logs", "--store", store, "show", "--last", "--json"]).output)
    assert as_json_out["steps"] == [as_json(from_row(r)) for r in pm.runs.steps(answer.run_id)]


def test_a_consolidation_pass_result_reads_as_one():
    """A consolidation run's result counts messages (an int, not a turn's list of replies): it parses, keeps its
    data as stored and says what the pass read and wrote (it broke the run's event stream before)."""
    from pagemind.steps import Result, as_json, parse

    stored = {"messages": 2, "through": 7, "windows": 1, "stored": [4, 5], "known": 0, "junk": 0, "ungrounded": 0,
              "versions": [["human", 2]], "skipped": [], "problems": [], "usage": {}}
    step = parse(3, "result", stored, 1.0)
    assert isinstance(step, Result) and step.messages is None
    shown = as_json(step)
    assert shown["data"] == stored and shown["text"] == "result: read 2 messages in 1 windows, stored 2 passages"
