"""Recorded runs (every index, ask and agent turn), users and their keys, per-user documents, export and erase."""

from __future__ import annotations

import json
import threading

import pytest
from click.testing import CliRunner

from helpers import first_words_gist, make_text, middle_label
from pagemind import ScriptedLLM
from pagemind.api import Pagemind
from pagemind.cli.main import cli
from pagemind.errors import ConfigError, InputError, InputTooLarge, NotFound, ScriptExhausted, UnsupportedInput
from pagemind.runs import RunCancelled, summarize
from pagemind.users import authenticate, create_user, erase_user, export_user

TEXT = "The lighthouse keeper was Ann. She kept the light for forty years.\n\n" + make_text(8, 40)


def step_reply(message: str) -> str:
    return json.dumps({"thoughts": "reply", "function": "send_message", "arguments": {"message": message}})


@pytest.fixture
def pm(tmp_path):
    fake = ScriptedLLM(by_role={"paginate": middle_label, "gist": first_words_gist, "lookup": "[]"},
                       default="Answer: (B)")
    with Pagemind(fake, store=tmp_path / "s.db", native_tools=False) as session:
        yield session


def test_an_answer_is_a_run_with_its_llm_calls_decisions_and_result(pm):
    answer = pm.ask(pm.document(_write(pm, TEXT)), "Who kept the light?", options=["Bob", "Ann"], method="full")
    run = pm.runs.get(answer.run_id)
    assert run is not None and run.status == "done" and run.kind == "ask" and run.method == "full"
    assert run.request["question"] == "Who kept the light?" and run.request["options"] == ["Bob", "Ann"]
    steps = pm.runs.steps(run.id)
    kinds = [s.kind for s in steps]
    assert kinds[-1] == "result" and "llm" in kinds and "decision" in kinds
    call = next(s for s in steps if s.kind == "llm")
    decision = next(s for s in steps if s.kind == "decision")
    assert decision.data["call"] == call.seq and decision.data["decision"] == "choice B"
    assert call.data["prompt_tokens"] == answer.usage.prompt_tokens
    assert run.result["letter"] == "B" and run.result["run_id"] == run.id
    assert [s.seq for s in steps] == list(range(len(steps)))
    assert pm.runs.steps(run.id, after=steps[-2].seq) == [steps[-1]]


def test_a_readagent_ask_records_the_build_and_the_pages_looked_up(pm):
    long_text = TEXT + "\n\n" + make_text(30, 60)  # several pages: pagination calls
    answer = pm.ask(pm.document(_write(pm, long_text)), "Who?", options=["Bob", "Ann"], method="readagent-p")
    steps = pm.runs.steps(answer.run_id)
    roles = {s.data["role"] for s in steps if s.kind == "llm"}
    assert {"paginate", "gist", "answer"} <= roles
    assert any(s.kind == "phase" for s in steps)
    result = pm.runs.get(answer.run_id).result
    assert result["memory"] and result["pages_read"] == answer.pages_read
    assert pm.store.get_memory(result["memory"]).status == "complete"
    # its totals are kept on the run when it ends (issue 49): reading the run sums no step
    kept = pm.runs.get(answer.run_id).usage
    assert kept == summarize(steps) and kept["calls"] == sum(s.kind == "llm" for s in steps) > 0


def test_index_is_a_run_and_a_failure_is_recorded_with_its_error(pm, tmp_path):
    pm.index(pm.document(_write(pm, TEXT)), method="rag")
    [run] = pm.runs.list()
    assert run.kind == "index" and run.status == "done" and run.result["memory"]
    broken = Pagemind(ScriptedLLM([]), store=pm.store)  # no replies: the first call fails
    message = "scripted LLM has no reply for a 'answer' request"
    with pytest.raises(ScriptExhausted) as info:
        broken.ask(pm.document(_write(pm, TEXT)), "Who?", method="full")
    assert str(info.value) == message
    failed = pm.runs.list(status="failed")
    assert len(failed) == 1 and failed[0].kind == "ask" and failed[0].method == "full"
    assert failed[0].error == f"ScriptExhausted: {message}" and failed[0].usage is not None  # a failed run too
    last = pm.runs.steps(failed[0].id)[-1]
    assert last.kind == "error" and last.data == {"error": f"ScriptExhausted: {message}", "type": "ScriptExhausted"}


def test_a_cancelled_run_stops_at_its_next_step_and_says_so(pm):
    run = pm.runs.create("ask", "doc", method="full", request={"question": "?"})
    assert pm.runs.cancel(run.id)
    with pytest.raises(RunCancelled):
        pm.ask(pm.document(_write(pm, TEXT)), "Who?", method="full", run=run)
    ended = pm.runs.get(run.id)
    assert ended.status == "cancelled" and not pm.runs.cancel(run.id)


def test_record_runs_off_records_nothing(tmp_path):
    with Pagemind(ScriptedLLM(default="Ann"), store=tmp_path / "s.db", record_runs=False) as session:
        answer = session.ask(session.document(_write(session, TEXT)), "Who?", method="full")
        assert answer.run_id is None and session.runs.list() == []


def test_an_agent_turn_is_a_run_with_its_steps(pm):
    user = _user(pm)
    pm.create_agent("u1.helper", user_id=user, display_name="helper")
    pm._llm = None
    pm._backend = ScriptedLLM(by_role={"agent-step": [step_reply("hello")]})
    turn = pm.send("u1.helper", "hi", user_id=user)
    run = pm.runs.get(turn.run_id, user)
    assert run.kind == "turn" and run.status == "done" and run.result["messages"] == ["hello"]
    agent_steps = [s for s in pm.runs.steps(run.id) if s.kind == "step"]
    assert [s.data["function"] for s in agent_steps] == ["send_message"]
    assert "My name is helper" in pm.store.agent_blocks(pm.store.user_agents(user)[0].id)[0].value
    assert pm.runs.get(turn.run_id, None) is None  # another user (the local one) does not see it


def test_steps_written_from_many_threads_keep_one_gapless_order(pm):
    run = pm.runs.create("ask", "doc")
    recorder = pm.runs.recorder(run)
    threads = [threading.Thread(target=lambda i=i: [recorder.step("note", text=f"{i}.{j}") for j in range(25)])
               for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    steps = pm.runs.steps(run.id)
    assert [s.seq for s in steps] == list(range(200))
    assert sorted(s.data["text"] for s in steps) == sorted(f"{i}.{j}" for i in range(8) for j in range(25))


# --- users, keys, documents ------------------------------------------------------------------------------
def test_keys_are_stored_hashed_and_authenticate_only_their_user(pm):
    ann, key = create_user(pm.store, "ann")
    bob, other = create_user(pm.store, "bob")
    assert authenticate(pm.store, key) == ann and authenticate(pm.store, other) == bob
    assert authenticate(pm.store, key + "x") is None and authenticate(pm.store, None) is None
    dump = pm.store.path.read_bytes()
    assert key.encode() not in dump and other.encode() not in dump
    with pytest.raises(ConfigError, match="already exists"):
        create_user(pm.store, "ann")
    with pytest.raises(ConfigError, match="user name"):
        create_user(pm.store, "a b/c")


def test_uploads_are_checked_and_a_refused_one_stores_nothing(pm):
    user = _user(pm)
    pm.settings = pm.settings.__class__(**{**pm.settings.__dict__, "max_bytes": 2000})
    cases = [(b"\x00\x01\x02" * 50, UnsupportedInput), (b"", InputError), (b"word " * 1000, InputTooLarge),
             (b"\x89PNG\r\n\x1a\n" + b"\x00" * 40, UnsupportedInput), (b"caf\xe9 au lait \xff\xfe", InputError)]
    for data, error in cases:
        with pytest.raises(error):
            pm.add_document(data, "upload.txt", user_id=user)
    assert pm.store.user_documents(user) == []
    row = pm.add_document(b"A short text.", "notes.txt", user_id=user)
    assert row.name == "notes.txt" and row.words == 3


def test_another_users_document_is_not_found(pm):
    ann, bob = _user(pm, "ann"), _user(pm, "bob")
    row = pm.add_document(TEXT, "keeper.txt", user_id=ann)
    assert pm.open_document(row.id, user_id=ann).text.startswith("The lighthouse keeper")
    with pytest.raises(NotFound):
        pm.open_document(row.id, user_id=bob)
    assert pm.store.user_document(bob, row.id) is None


def test_export_and_erase_touch_one_user_and_nothing_else(pm):
    ann, bob = _user(pm, "ann"), _user(pm, "bob")
    shared = pm.add_document(TEXT, "shared.txt", user_id=ann)
    pm.add_document(TEXT, "mine-too.txt", user_id=bob)
    alone = pm.add_document("Only Ann has this text about the tides.", "tides.txt", user_id=ann)
    pm.ask(pm.open_document(alone.id, user_id=ann), "?", method="rag", user_id=ann)
    pm.ask(pm.open_document(shared.id, user_id=bob), "?", method="rag", user_id=bob)
    pm.create_agent("u1.a", user_id=ann)
    archive = export_user(pm.store, ann)
    assert {d["name"] for d in archive["documents"]} == {"shared.txt", "tides.txt"}
    assert all(d["text"] for d in archive["documents"]) and len(archive["agents"]) == 1
    assert len(archive["runs"]) == 1 and archive["runs"][0]["steps"]
    json.dumps(archive)  # one JSON archive
    counts = erase_user(pm.store, ann)
    assert counts["documents"] == 2 and counts["agents"] == 1 and counts["runs"] == 1
    assert pm.store.user_documents(ann) == [] and pm.store.user_agents(ann) == [] and pm.store.list_runs(ann) == []
    assert pm.store.document_text(alone.id) is None and pm.store.memories_for(alone.id) == []
    # bob keeps his copy of the shared text, its memory and his run
    assert pm.store.document_text(shared.id) == TEXT and pm.store.memories_for(shared.id)
    assert len(pm.store.list_runs(bob)) == 1 and pm.store.get_user("ann") is not None


# --- the CLI ---------------------------------------------------------------------------------------------
def test_logs_list_and_show_a_run(pm, tmp_path):
    answer = pm.ask(pm.document(_write(pm, TEXT)), "Who kept the light?", options=["Bob", "Ann"], method="full")
    store = str(pm.store.path)
    listed = CliRunner().invoke(cli, ["logs", "--store", store])
    assert listed.exit_code == 0, listed.output
    assert answer.run_id in listed.output and "Who kept the light?" in listed.output and "done" in listed.output
    shown = CliRunner().invoke(cli, ["logs", "--store", store, "show", answer.run_id[:10]])
    assert shown.exit_code == 0, shown.output
    assert "llm answer:" in shown.output and "-> choice B" in shown.output and "cost: 1 calls" in shown.output
    as_json = json.loads(CliRunner().invoke(cli, ["logs", "--store", store, "show", "--last", "--json"]).output)
    assert as_json["id"] == answer.run_id and as_json["steps"][-1]["kind"] == "result"
    missing = CliRunner().invoke(cli, ["logs", "--store", store, "show", "run_nope"])
    assert missing.exit_code != 0 and "no run" in missing.output
    pm.ask(pm.document(_write(pm, TEXT)), "Who kept the light?", options=["Bob", "Ann"], method="full")
    several = CliRunner().invoke(cli, ["logs", "--store", store, "show", "run_"])
    assert several.exit_code != 0 and "begins the ids of several runs" in several.output


def test_users_cli_prints_a_key_once_that_authenticates(tmp_path):
    store = str(tmp_path / "s.db")
    made = CliRunner().invoke(cli, ["users", "--store", store, "create", "ann"])
    assert made.exit_code == 0, made.output
    key = made.stdout.strip().splitlines()[-1]
    with Pagemind(ScriptedLLM(), store=store) as session:
        assert authenticate(session.store, key).name == "ann"
    again = CliRunner().invoke(cli, ["users", "--store", store, "create", "ann"])
    assert again.exit_code != 0 and "already exists" in again.output
    with Pagemind(ScriptedLLM(default="Ann"), store=store) as session:
        ann = session.store.get_user("ann").id
        row = session.add_document(TEXT, "t.txt", user_id=ann)
        session.ask(session.open_document(row.id, user_id=ann), "Who?", method="full", user_id=ann)
    listed = CliRunner().invoke(cli, ["users", "--store", store, "list"])
    assert "ann" in listed.output and key not in listed.output
    assert "1 documents, 0 agents, 1 runs" in listed.output
    refused = CliRunner().invoke(cli, ["users", "--store", store, "erase", "ann"])
    assert refused.exit_code != 0 and "--yes" in refused.output and "1 documents, 0 agents and 1 runs" in refused.output
    done = CliRunner().invoke(cli, ["users", "--store", store, "erase", "ann", "--yes"])
    assert done.exit_code == 0 and "deleted 1 documents" in done.output


def _user(pm: Pagemind, name: str = "ann") -> int:
    found = pm.store.get_user(name)
    return found.id if found else create_user(pm.store, name)[0].id


def _write(pm: Pagemind, text: str) -> str:
    path = pm.store.path.parent / "keeper.txt"
    path.write_text(text, encoding="utf-8")
    return str(path)
