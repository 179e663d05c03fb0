"""``pagemind chat``: slash commands never reach the model, /search covers recall and archival, the default
persona takes the agent's name, and ``chat FILE`` talks to a document through a reader built once."""

import json

import click
from click.testing import CliRunner

from helpers import first_words_gist, make_text, middle_label
from pagemind import ScriptedLLM
from pagemind.agent import Agent
from pagemind.cli.agent import agent, chat
from pagemind.store import Store

group = click.Group(commands={"agent": agent, "chat": chat})


def call(function, thoughts="thinking", **arguments):
    return json.dumps({"thoughts": thoughts, "function": function, "arguments": arguments})


def agent_fake(*messages):
    return ScriptedLLM(by_role={"agent-step": [call("send_message", message=m) for m in messages]})


def reader_fake():
    return ScriptedLLM(by_role={"paginate": middle_label, "gist": first_words_gist,
                                "lookup": "I want to look up Page [1] to", "answer": "Answer: (B) two"})


def run(args, fake, store, **kw):
    return CliRunner().invoke(group, [*args, "--store", str(store)], obj={"backend": fake}, **kw)


def test_help_is_answered_by_the_cli_and_never_sent_to_the_model(tmp_path):
    fake = agent_fake("hi")
    result = run(["chat", "--agent", "pal", "--embedder", "none"], fake, tmp_path / "pm.db",
                 input="/help\n/exit\n")
    assert result.exit_code == 0, result.output
    assert fake.history == []
    for command in ("/help", "/memory", "/search TEXT", "/trace", "/exit"):
        assert f"\n  {command} " in "\n" + result.stdout, command
    listed = [line for line in result.stdout.splitlines() if line.startswith("  /")]
    assert len(listed) == 6  # one line each, and //TEXT


def test_unknown_command_says_so_lists_the_commands_and_the_chat_goes_on(tmp_path):
    fake = agent_fake("still here")
    result = run(["chat", "--agent", "pal", "--embedder", "none"], fake, tmp_path / "pm.db",
                 input="/frobnicate now\nhello\n/exit\n")
    assert result.exit_code == 0, result.output
    assert "unknown command /frobnicate" in result.stderr and "/search TEXT" in result.stderr
    assert "still here" in result.stdout
    sent = [r.messages for r in fake.history]
    assert len(sent) == 1 and "frobnicate" not in json.dumps([m.content for m in sent[0]])


def test_double_slash_sends_a_message_that_begins_with_a_slash(tmp_path):
    fake = agent_fake("that is a path")
    result = run(["chat", "--agent", "pal", "--embedder", "none"], fake, tmp_path / "pm.db",
                 input="//etc/hosts is a file?\n/exit\n")
    assert result.exit_code == 0, result.output
    assert '"message": "/etc/hosts is a file?"' in fake.history[0].messages[-1].content


def test_search_finds_an_archival_only_word_and_labels_it_archival(tmp_path):
    db = tmp_path / "pm.db"
    book = tmp_path / "book.txt"
    book.write_text(make_text(8, 60))  # 480 words, 2 passages; p3w7 occurs once
    assert run(["agent", "create", "lib", "--embedder", "none"], None, db).exit_code == 0
    assert run(["agent", "load", "lib", str(book)], None, db).exit_code == 0
    fake = agent_fake("unused")
    result = run(["chat", "--agent", "lib"], fake, db, input="/search p3w7\n/search zqxv\n/search\n/exit\n")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "recall (past messages): nothing found" in out
    assert "archival (saved facts and loaded documents): 1 result\n  [archival] " in out
    found = next(line for line in out.splitlines() if line.startswith("  [archival]"))
    assert "p3w7" in found and len(found) < 300  # a snippet around the match, not the whole passage
    assert "nothing found in recall or archival for 'zqxv'" in out
    assert "usage: /search TEXT" in result.stderr
    assert fake.history == []


def test_search_labels_recall_results_apart_from_archival_ones(tmp_path):
    db = tmp_path / "pm.db"
    fake = ScriptedLLM(by_role={"agent-step": [
        call("archival_memory_insert", content="Ann's cat is called Miso", request_heartbeat=True),
        call("send_message", message="Noted: Miso")]})
    result = run(["chat", "--agent", "pal", "--embedder", "none"], fake, db,
                 input="My cat is called Miso\n/search Miso\n/exit\n")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    recall = lines.index(next(x for x in lines if x.startswith("recall (past messages): ")))
    archival = lines.index(next(x for x in lines if x.startswith("archival (saved facts")))
    assert all(x.startswith("  [recall] ") for x in lines[recall + 1:archival])
    assert any("user: My cat is called Miso" in x for x in lines[recall + 1:archival])
    assert lines[archival] == "archival (saved facts and loaded documents): 1 result"
    assert "Ann's cat is called Miso" in lines[archival + 1] and lines[archival + 1].startswith("  [archival] ")


def test_the_default_persona_names_the_agent(tmp_path):
    db = tmp_path / "pm.db"
    fake = agent_fake("Hello, I am ada")
    result = run(["chat", "--agent", "ada", "--embedder", "none"], fake, db, input="who are you?\n/memory\n/exit\n")
    assert result.exit_code == 0, result.output
    assert "My name is ada." in result.stdout and "Sam" not in result.stdout
    assert "My name is ada." in fake.history[0].messages[0].content  # the core memory the model reads
    other = Agent.create(None, Store(tmp_path / "other.db"), "Quill")
    persona = next(b.value for b in other.blocks() if b.label == "persona")
    assert persona.startswith("My name is Quill.")
    given = Agent.create(None, Store(tmp_path / "given.db"), "Quill", persona="I am a pirate.")
    assert next(b.value for b in given.blocks() if b.label == "persona") == "I am a pirate."


def test_document_chat_builds_the_memory_once_and_answers_every_question(tmp_path):
    db = tmp_path / "pm.db"
    book = tmp_path / "book.txt"
    book.write_text(make_text(30, 60))
    fake = reader_fake()
    result = run(["chat", str(book), "-m", "readagent-p"], fake, db,
                 input="Which page?\n/trace\nAnd now? (A) one (B) two\n/exit\n")
    assert result.exit_code == 0, result.output
    roles = [r.role for r in fake.history]
    built = roles.count("paginate") + roles.count("gist")
    gists = roles.count("gist")
    assert gists >= 3 and built == len(roles) - 4  # every build call came before the first question
    assert roles[built:] == ["lookup", "answer", "lookup", "answer"]
    # the first line is a free-form question; the second, typed on one line, is multiple choice
    assert result.stdout.count("Answer: (B) two") == 1 and "\nAnswer: (B) two\n" in result.stdout
    assert result.stderr.count("[readagent-p] pages read: 1") == 2
    assert "trace on" in result.stderr and "lookup" in result.stderr.split("trace on", 1)[1]
    assert f"memory of book.txt with readagent-p: built ({gists + roles.count('paginate')} LLM calls" in result.stderr
    again = reader_fake()
    second = run(["chat", str(book), "-m", "readagent-p"], again, db, input="Who is on page 2?\n/exit\n")
    assert second.exit_code == 0, second.output
    assert [r.role for r in again.history] == ["lookup", "answer"]  # the stored memory, not a rebuild
    assert "memory of book.txt with readagent-p: ready" in second.stderr


def test_document_chat_commands_and_method_options(tmp_path):
    db = tmp_path / "pm.db"
    book = tmp_path / "book.txt"
    book.write_text(make_text(30, 60))
    fake = reader_fake()
    result = run(["chat", str(book), "-m", "readagent-p", "--max-pages", "2"], fake, db,
                 input="/help\n/method\n/memory\n/exit\n")
    assert result.exit_code == 0, result.output
    assert "/method" in result.stdout and "/trace" in result.stdout and "/search" not in result.stdout
    assert "method: readagent-p" in result.stdout and '"max_pages": 2' in result.stdout
    assert '"pages": ' in result.stdout  # the memory's description
    assert "unknown command /memory" in result.stderr
    assert {r.role for r in fake.history} <= {"paginate", "gist"}  # only the build reached the model


def test_document_chat_auto_reads_a_short_text_whole(tmp_path):
    book = tmp_path / "short.txt"
    book.write_text(make_text(3, 20))
    fake = ScriptedLLM(by_role={"answer": "p1w3 it is"})
    result = run(["chat", str(book)], fake, tmp_path / "pm.db", input="What follows p1w2?\n/method\n")
    assert result.exit_code == 0, result.output
    assert "auto: reading the whole text" in result.stderr
    assert "p1w3 it is" in result.stdout and "method: auto" in result.stdout
    assert [r.role for r in fake.history] == ["answer"]
    store = Store(tmp_path / "pm.db")  # the build and the question are recorded runs
    runs = store.list_runs(None)
    store.close()
    assert [(r.kind, r.status) for r in reversed(runs)] == [("index", "done"), ("ask", "done")]
    assert runs[0].request["question"] == "What follows p1w2?"


def test_chat_refuses_flags_for_the_other_side(tmp_path):
    db = tmp_path / "pm.db"
    book = tmp_path / "book.txt"
    book.write_text(make_text(5, 20))
    both = run(["chat", str(book), "--agent", "ada"], None, db, input="/exit\n")
    assert both.exit_code == 2 and "not both" in both.output and "pagemind agent load ada" in both.output
    agent_flag = run(["chat", str(book), "--page-size", "3"], None, db, input="/exit\n")
    assert agent_flag.exit_code == 2 and "--page-size" in agent_flag.output
    assert "not for a document" in agent_flag.output
    method = run(["chat", "-m", "memwalker"], None, db, input="/exit\n")
    assert method.exit_code == 2 and "--method applies to chat FILE" in method.output
    method_flag = run(["chat", "--max-pages", "3"], None, db, input="/exit\n")
    assert method_flag.exit_code == 2 and "--max-pages applies to chat FILE" in method_flag.output
    embedder = run(["chat", "--embedder", "bogus"], None, db, input="/exit\n")
    assert embedder.exit_code == 2 and "--embedder for an agent" in embedder.output


def test_shared_flags_reach_the_side_the_chat_talks_to(tmp_path):
    db = tmp_path / "pm.db"
    result = run(["chat", "--agent", "kim", "--max-steps", "3", "--unconstrained", "--embedder", "hashing"],
                 agent_fake(), db, input="/exit\n")
    assert result.exit_code == 0, result.output
    shown = run(["agent", "show", "kim", "--json"], None, db)
    options = json.loads(shown.stdout)["options"]
    assert (options["max_steps"], options["constrained"], options["embedder"]) == (3, False, "hashing")
    book = tmp_path / "book.txt"
    book.write_text(make_text(30, 60))
    walker = run(["chat", str(book), "-m", "readagent-p", "--max-steps", "3"], reader_fake(), db, input="/exit\n")
    assert walker.exit_code == 2 and "--max-steps applies to memwalker, not readagent-p" in walker.output
