"""``pagemind chat`` and ``pagemind agent ...`` with the scripted fake injected through click's context object."""

import json

import click
from click.testing import CliRunner

from helpers import make_text
from pagemind import ScriptedLLM
from pagemind.cli.agent import agent, chat

group = click.Group(commands={"agent": agent, "chat": chat})


def call(function, thoughts="thinking", **arguments):
    return json.dumps({"thoughts": thoughts, "function": function, "arguments": arguments})


def run(args, fake=None, store=None, **kw):
    fake = fake or ScriptedLLM(by_role={"agent-step": call("send_message", message="hello there")})
    return CliRunner().invoke(group, [*args, "--store", str(store), "--embedder", "none"]
                              if args[:2] == ["agent", "create"] else [*args, "--store", str(store)],
                              obj={"backend": fake}, **kw), fake


def test_create_list_show_say_delete(tmp_path):
    db = tmp_path / "pm.db"
    created, _ = run(["agent", "create", "sam", "--human", "Name: Ann", "--max-steps", "4"], store=db)
    assert created.exit_code == 0, created.output
    again, _ = run(["agent", "create", "sam"], store=db)
    assert again.exit_code == 1 and "already exists" in again.stderr
    listed, _ = run(["agent", "list"], store=db)
    assert listed.stdout.startswith("sam  recall 3  archival 0")
    fake = ScriptedLLM(by_role={"agent-step": [
        call("core_memory_append", thoughts="she likes tea", label="human", content="Likes tea",
             request_heartbeat=True),
        call("send_message", message="Tea it is!")]})
    said, _ = run(["agent", "say", "sam", "I love tea", "--trace"], fake=fake, store=db)
    assert said.exit_code == 0, said.output
    assert said.stdout == "Tea it is!\n"
    assert "thinks: she likes tea" in said.stderr and 'calls:  core_memory_append(label="human"' in said.stderr
    assert "result (OK): Core memory human updated" in said.stderr and "heartbeat: requested" in said.stderr
    assert "2/2 valid actions" in said.stderr
    shown, _ = run(["agent", "show", "sam"], store=db)
    assert "Name: Ann\nLikes tea" in shown.stdout and "actions: 2 valid, 0 invalid" in shown.stdout
    assert '"max_steps": 4' in shown.stdout and "user: I love tea" in shown.stdout
    as_json, _ = run(["agent", "show", "sam", "--json"], store=db)
    assert json.loads(as_json.stdout)["counts"]["recall"] == 3 + 6  # user, 2 calls, 2 results, 1 heartbeat
    deleted, _ = run(["agent", "delete", "sam"], store=db)
    assert deleted.exit_code == 0
    missing, _ = run(["agent", "show", "sam"], store=db)
    assert missing.exit_code == 1 and "no agent named 'sam'" in missing.stderr


def test_say_json_and_load_a_document(tmp_path):
    db = tmp_path / "pm.db"
    book = tmp_path / "book.txt"
    book.write_text(make_text(20, 60))
    run(["agent", "create", "reader", "--no-recall-answer"], store=db)  # the scripted steps are its own
    loaded, _ = run(["agent", "load", "reader", str(book)], store=db)
    assert loaded.exit_code == 0, loaded.output
    assert "1200 words in 4 passages" in loaded.stdout
    fake = ScriptedLLM(by_role={"agent-step": [call("archival_memory_search", query="p9w5", page=0,
                                                    request_heartbeat=True), call("send_message", message="p9w6")]})
    said, _ = run(["agent", "say", "reader", "what follows p9w5?", "--json"], fake=fake, store=db)
    data = json.loads(said.stdout)
    assert data["messages"] == ["p9w6"] and data["valid_actions"] == 2
    assert "Showing 1 of 1 results" in data["steps"][0]["result"]


def test_chat_repl_with_memory_search_and_exit(tmp_path):
    db = tmp_path / "pm.db"
    fake = ScriptedLLM(by_role={"agent-step": [call("send_message", message="Nice to meet you, Ann")]})
    result, _ = run(["chat", "--agent", "pal"], fake=fake, store=db,
                    input="My name is Ann\n/memory\n/search ann\n/exit\n")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "Nice to meet you, Ann" in out
    assert '<persona characters="' in out and "recall: 6 messages" in out
    assert "recall (past messages): 2 results" in out  # the user's message and the agent's reply
    assert "[recall] [" in out and "user: My name is Ann" in out
    assert "archival (saved facts and loaded documents): nothing found" in out
    assert "created agent pal" in result.stderr
    assert [r.role for r in fake.history] == ["agent-step"]  # /memory and /search never reach the model


def test_options_given_to_chat_for_an_existing_agent_update_it_and_say_so(tmp_path):
    db = tmp_path / "pm.db"
    created, _ = run(["agent", "create", "kim", "--max-steps", "4"], store=db)
    assert created.exit_code == 0, created.output
    again, _ = run(["chat", "--agent", "kim", "--max-steps", "2", "--page-size", "5"], store=db, input="/exit\n")
    assert again.exit_code == 0, again.output
    assert "agent kim: options updated (max_steps=2)" in again.stderr  # page_size 5 is what it had: no change
    shown, _ = run(["agent", "show", "kim", "--json"], store=db)
    assert json.loads(shown.stdout)["options"]["max_steps"] == 2
    quiet, _ = run(["chat", "--agent", "kim", "--max-steps", "2"], store=db, input="/exit\n")
    assert "options updated" not in quiet.stderr


def test_an_agent_loads_a_library_and_cites_the_document_a_passage_came_from(tmp_path):
    db = tmp_path / "pm.db"
    shelf = tmp_path / "shelf"
    shelf.mkdir()
    (shelf / "a.txt").write_text(make_text(8, 60))
    (shelf / "b.txt").write_text("The keeper's ledger lies in the harbour office.\n\n" + make_text(4, 60))
    from pagemind import Pagemind

    with Pagemind(ScriptedLLM(), store=db) as pm:
        pm.add("my-shelf", [shelf])
    run(["agent", "create", "reader", "--no-recall-answer"], store=db)
    loaded, _ = run(["agent", "load", "reader", "my-shelf"], store=db)  # a library, by name
    assert loaded.exit_code == 0, loaded.output
    assert loaded.stdout.splitlines() == ["loaded a.txt: 480 words in 2 passages",
                                          "loaded b.txt: 248 words in 1 passages"]
    fake = ScriptedLLM(by_role={"agent-step": [call("archival_memory_search", query="ledger", page=0,
                                                    request_heartbeat=True),
                                               call("send_message", message="The ledger lies in the harbour office.")]})
    said, _ = run(["agent", "say", "reader", "where is the ledger?", "--json"], fake=fake, store=db)
    data = json.loads(said.stdout)
    cited = data["citations"][0]
    assert cited["document_name"] == "b.txt" and cited["quote"] == "The keeper's ledger lies in the harbour office."


def test_memory_consolidate_from_the_command_line(tmp_path):
    """Issue 39 item 5: ``pagemind agent memory consolidate NAME`` runs one pass and says what it wrote and how to
    undo the core-memory version; a second pass has nothing new to read."""
    db = tmp_path / "pm.db"
    run(["agent", "create", "sam"], store=db)
    run(["agent", "say", "sam", "I'm Sam and I keep bees in Whitby."], store=db)
    fake = ScriptedLLM(by_role={"consolidate": json.dumps({"summary": "Sam keeps bees.", "human": ["Name: Sam"],
                                                           "facts": ["The user, Sam, keeps bees in Whitby."]})})
    done, _ = run(["agent", "memory", "consolidate", "sam"], fake=fake, store=db)
    assert done.exit_code == 0, done.output
    assert done.stdout.startswith("read 2 messages in 1 windows: stored 2 passages (0 already known")
    assert "human: version 2 (undo: pagemind agent memory revert sam human 1)" in done.stdout
    again, _ = run(["agent", "memory", "consolidate", "sam", "--json"], fake=fake, store=db)
    assert json.loads(again.stdout)["messages"] == 0 and len(fake.history) == 1


def test_memory_forget_restore_and_the_audits_drop_junk(tmp_path):
    """Issue 50: ``agent memory forget NAME ID --why`` takes a passage out and says how to undo it, ``forgotten``
    lists it with why, ``restore`` gives it back; ``audit --drop-junk`` forgets the junk the audit found."""
    from pagemind import Pagemind

    db = tmp_path / "pm.db"
    run(["agent", "create", "sam"], store=db)
    with Pagemind(ScriptedLLM(), store=db) as pm:
        pm.agent("sam", llm=False).archive.insert(["The user lives in York.", "Inserted into archival memory.",
                                                   "Ada is a pilot."], "2024-01-01 10:00:00")
    shown, _ = run(["agent", "memory", "passages", "sam", "-q", "York"], store=db)
    assert shown.exit_code == 0 and "1\t2024-01-01 10:00:00\tThe user lives in York." in shown.stdout
    forgot, _ = run(["agent", "memory", "forget", "sam", "1", "--why", "wrong city"], store=db)
    assert forgot.exit_code == 0, forgot.output
    assert forgot.stdout.startswith("forgot passage 1: 'The user lives in York.' (undo: pagemind agent memory "
                                    "restore sam 1)")
    listed, _ = run(["agent", "memory", "forgotten", "sam", "--json"], store=db)
    assert [(r["id"], r["cause"]) for r in json.loads(listed.stdout)] == [(1, "wrong city")]
    missing, _ = run(["agent", "memory", "forget", "sam", "1"], store=db)
    assert missing.exit_code != 0 and "no archival passage 1" in missing.output
    restored, _ = run(["agent", "memory", "restore", "sam", "1"], store=db)
    assert restored.exit_code == 0 and "restored passage 1" in restored.stdout
    audited, _ = run(["agent", "memory", "audit", "sam", "--drop-junk"], store=db)
    assert audited.exit_code == 0, audited.output
    assert "junk 2: boilerplate of the agent's functions" in audited.stdout and "forgot 1 junk passages" in \
        audited.stdout
    after, _ = run(["agent", "memory", "audit", "sam", "--json"], store=db)
    assert json.loads(after.stdout)["total"] == 2 and json.loads(after.stdout)["junk"] == []


def test_a_conversation_is_imported_with_each_speaker_kept_and_consolidated_as_it_goes(tmp_path):
    """Issue 50 item 4: ``agent import-conversation`` reads a message list (and Letta's, and a LoCoMo file); each
    speaker's messages stay theirs, told to the agent, never its own replies; --consolidate writes the history's
    dated facts with no turn per message, recorded as a run; bad files are refused naming the message."""
    from pagemind import Pagemind

    db = tmp_path / "pm.db"
    talk = tmp_path / "talk.jsonl"
    talk.write_text("\n".join(json.dumps(m) for m in [
        {"role": "system", "content": "be nice"},
        {"role": "user", "speaker": "Ana", "content": "Ana: I moved to Leeds in May.", "time": "2024-05-01T09:00:00Z",
         "where": "session 1, turn 1"},
        {"role": "assistant", "speaker": "Ben", "content": "Ben: My sister Eve keeps bees in Whitby.",
         "time": "2024-05-01T09:01:00Z"}]))
    fake = ScriptedLLM(by_role={"consolidate": json.dumps({
        "summary": "Ana moved to Leeds; Ben's sister keeps bees.", "human": [],
        "facts": ["Ana moved to Leeds in May.", "Ben's sister Eve keeps bees in Whitby."]})})
    done, _ = run(["agent", "import-conversation", "nora", str(talk), "--consolidate"], fake=fake, store=db)
    assert done.exit_code == 0, done.output
    assert done.stdout.startswith("nora: 2 messages imported (2 events in recall; speakers Ana, Ben)")
    assert "read 2 messages in 1 windows: stored 3 passages" in done.stdout
    window = fake.history[0].messages[-1].content
    assert "[2024-05-01 09:00] Ana: I moved to Leeds in May." in window and "facts Ana and Ben told" in window
    with Pagemind(ScriptedLLM(), store=db) as pm:
        agent = pm.agent("nora", llm=False)
        _, events = agent.history(0, 100)
        told = [e for e in events if e.kind == "user_message"]
        assert [e.payload.get("speaker") for e in told] == ["Ana", "Ben"]  # Ben's turn is not the agent's reply
        assert not any(e.kind == "step" and e.payload.get("function") == "send_message" and "Whitby" in str(e.payload)
                       for e in events)
        facts = {p.text: p for p in agent.passages()[1]}
        assert facts["Ben's sister Eve keeps bees in Whitby."].time.startswith("2024-05-01 09:01")  # dated by the talk
        assert [r.kind for r in pm.runs.list(None)] == ["consolidate"]

    letta = tmp_path / "letta.json"
    letta.write_text(json.dumps([
        {"message_type": "user_message", "content": "I am Sam.", "date": "2024-06-01T10:00:00"},
        {"message_type": "assistant_message", "content": "Hi Sam!"}]))
    imported, _ = run(["agent", "import-conversation", "sam", str(letta)], store=db)
    assert imported.exit_code == 0 and imported.stdout.startswith("sam: 2 messages imported (3 events")  # reply+result
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"role": "user", "content": "hi"}, {"role": "robot", "content": "beep"}]))
    refused, _ = run(["agent", "import-conversation", "sam", str(bad)], store=db)
    assert refused.exit_code != 0 and "message 2: role 'robot' is not user or assistant" in refused.stderr

    locomo = tmp_path / "locomo10.json"
    locomo.write_text(json.dumps([{"sample_id": "c1", "conversation": {
        "speaker_a": "Ann", "speaker_b": "Bo", "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat."},
                      {"speaker": "Bo", "dia_id": "D1:2", "text": "Nice!"}]}, "qa": []}]))
    read, _ = run(["agent", "import-conversation", "obs", str(locomo)], store=db)
    assert read.exit_code == 0 and "speakers Ann, Bo" in read.stdout, read.output
    with Pagemind(ScriptedLLM(), store=db) as pm:
        _, events = pm.agent("obs", llm=False).history(0, 100)
        bo = [e for e in events if e.payload.get("speaker") == "Bo"]
        assert bo and bo[0].kind == "user_message" and bo[0].payload["where"] == "session 1, turn 2 (D1:2)"
    too_far, _ = run(["agent", "import-conversation", "obs", str(locomo), "--conversation", "2"], store=db)
    assert too_far.exit_code != 0 and "holds 1 conversation(s), not 2" in too_far.stderr
