"""Every CLI build and agent turn is a recorded run (``pagemind index``, ``agent say``, ``chat``), listed by
``pagemind logs`` with its steps; none is recorded with ``PAGEMIND_RECORD_RUNS=false``."""

import json

import pytest
from click.testing import CliRunner

from helpers import first_words_gist, make_text, middle_label
from pagemind import ScriptedLLM
from pagemind.api import Pagemind
from pagemind.cli.main import cli


def call(function, thoughts="thinking", **arguments):
    return json.dumps({"thoughts": thoughts, "function": function, "arguments": arguments})


def invoke(args, store, fake=None, **kw):
    result = CliRunner().invoke(cli, [*args, "--store", str(store)], obj={"backend": fake or ScriptedLLM()}, **kw)
    assert result.exit_code == 0, result.output
    return result


def logged(store, *args):
    """``pagemind logs --json`` (or ``logs show ... --json``) as data."""
    result = CliRunner().invoke(cli, ["logs", "--store", str(store), *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def agent_fake():
    return ScriptedLLM(by_role={"agent-step": [
        call("core_memory_append", thoughts="she likes tea", label="human", content="Likes tea",
             request_heartbeat=True),
        call("send_message", message="Tea it is!")]})


@pytest.fixture
def book(tmp_path):
    path = tmp_path / "book.txt"
    path.write_text(make_text(30, 60))  # several pages: pagination and gist calls
    return path


def test_index_is_a_run_with_its_llm_calls(tmp_path, book):
    db = tmp_path / "pm.db"
    fake = ScriptedLLM(by_role={"paginate": middle_label, "gist": first_words_gist})
    built = invoke(["index", str(book), "-m", "readagent-p"], db, fake)
    described = json.loads(built.stdout)  # what it printed before: the memory's description, alone on stdout
    runs = logged(db)
    assert [(r["kind"], r["method"], r["status"], r["user_id"]) for r in runs] == [
        ("index", "readagent-p", "done", None)]  # the local user's, as pagemind ask's runs are
    assert runs[0]["request"]["document"] == "book.txt"
    listed = CliRunner().invoke(cli, ["logs", "--store", str(db)])
    assert runs[0]["id"] in listed.stdout and "index" in listed.stdout and "book.txt" in listed.stdout
    steps = logged(db, "show", "--last")["steps"]
    assert {s["data"]["role"] for s in steps if s["kind"] == "llm"} >= {"paginate", "gist"}
    assert any(s["kind"] == "phase" for s in steps)
    assert steps[-1]["kind"] == "result" and steps[-1]["data"]["describe"] == described
    shown = CliRunner().invoke(cli, ["logs", "--store", str(db), "show", "--last"])
    assert "llm paginate" in shown.stdout and "llm gist" in shown.stdout
    again = invoke(["index", str(book), "-m", "readagent-p"], db, ScriptedLLM())  # resumed: reuses the memory
    assert json.loads(again.stdout) == described and len(logged(db)) == 2


def test_agent_say_is_a_turn_run_with_the_agents_calls(tmp_path):
    db = tmp_path / "pm.db"
    invoke(["agent", "create", "sam", "--embedder", "none"], db)
    said = invoke(["agent", "say", "sam", "I love tea", "--trace"], db, agent_fake())
    assert said.stdout == "Tea it is!\n" and "thinks: she likes tea" in said.stderr  # printed as before
    assert "2/2 valid actions" in said.stderr
    runs = logged(db, "--kind", "turn")
    assert [(r["kind"], r["method"], r["status"], r["user_id"]) for r in runs] == [("turn", "memgpt", "done", None)]
    assert runs[0]["request"] == {"agent": "sam", "message": "I love tea"}
    steps = logged(db, "show", runs[0]["id"])["steps"]
    assert [s["data"]["function"] for s in steps if s["kind"] == "step"] == ["core_memory_append", "send_message"]
    assert sum(s["kind"] == "llm" for s in steps) == 2 and steps[-1]["kind"] == "result"
    as_json = invoke(["agent", "say", "sam", "and coffee?", "--json"], db,
                     ScriptedLLM(by_role={"agent-step": call("send_message", message="Coffee too.")}))
    turn = json.loads(as_json.stdout)
    assert turn["messages"] == ["Coffee too."] and turn["run_id"] == logged(db)[0]["id"]


def test_a_chat_with_an_agent_records_each_turn(tmp_path):
    db = tmp_path / "pm.db"
    chatted = invoke(["chat", "--agent", "pal", "--embedder", "none"], db, agent_fake(),
                     input="I love tea\n/memory\n/exit\n")
    assert "Tea it is!" in chatted.stdout and "Likes tea" in chatted.stdout
    runs = logged(db)
    assert [(r["kind"], r["status"], r["request"]["agent"]) for r in runs] == [("turn", "done", "pal")]
    steps = logged(db, "show", "--last")["steps"]
    assert [s["data"]["function"] for s in steps if s["kind"] == "step"] == ["core_memory_append", "send_message"]


def test_a_chat_with_a_document_records_its_build_and_each_question(tmp_path, book):
    db = tmp_path / "pm.db"
    fake = ScriptedLLM(by_role={"paginate": middle_label, "gist": first_words_gist, "lookup": "[]"},
                       default="Answer: (B)")
    invoke(["chat", str(book), "-m", "readagent-p"], db, fake, input="Who? (A) Bob (B) Ann\n/exit\n")
    assert [r["kind"] for r in logged(db)] == ["ask", "index"]


def test_record_runs_off_records_no_cli_run(tmp_path, book, monkeypatch):
    monkeypatch.setenv("PAGEMIND_RECORD_RUNS", "false")
    db = tmp_path / "pm.db"
    fake = ScriptedLLM(by_role={"paginate": middle_label, "gist": first_words_gist})
    built = invoke(["index", str(book), "-m", "readagent-p"], db, fake)
    assert json.loads(built.stdout)["pages"]
    invoke(["agent", "create", "sam", "--embedder", "none"], db)
    said = invoke(["agent", "say", "sam", "I love tea", "--json"], db, agent_fake())
    assert json.loads(said.stdout)["messages"] == ["Tea it is!"] and "run_id" not in json.loads(said.stdout)
    chatted = invoke(["chat", "--agent", "sam"], db, agent_fake(), input="hello\n/exit\n")
    assert "Tea it is!" in chatted.stdout
    assert logged(db) == []
    empty = CliRunner().invoke(cli, ["logs", "--store", str(db)])
    assert "no recorded runs yet" in empty.stdout
    with Pagemind(ScriptedLLM(), store=db) as pm:
        assert pm.store.list_runs(None, all_users=True) == []
