"""Clean archival writes with the scripted fake and the embedded MiniLM: a repeat (exact, or near by the encoder and
the word rule) is not stored again and the agent hears that it knows it; a fact that changed supersedes the earlier
one, which search returns after it, named; an audit finds repeats and junk and folds the repeats, keeping every
time and source."""

import json

import pytest

from pagemind import LLM, ScriptedLLM, Store
from pagemind.agent import Agent, AgentOptions
from pagemind.agent.archive import adds_nothing, junk_reason

pytest.importorskip("onnxruntime")


def call(function, thoughts="thinking", **arguments):
    return json.dumps({"thoughts": thoughts, "function": function, "arguments": arguments})


def make(steps=()):
    fake = ScriptedLLM(by_role={"agent-step": list(steps), "summarise": "talked"})
    return Agent.create(LLM(fake), Store(":memory:"), "sam", options=AgentOptions(embedder="minilm"))


def test_a_repeat_is_not_stored_again_and_the_agent_hears_it():
    agent = make([call("archival_memory_insert", content="The user's sister is Ada, a pilot.", request_heartbeat=True),
                  call("archival_memory_insert", content="The user's sister is Ada, a pilot.", request_heartbeat=True),
                  call("archival_memory_insert", content="User's sister Ada is a pilot.", request_heartbeat=True),
                  call("archival_memory_insert", content="Ada is 30 years old.", request_heartbeat=True),
                  call("archival_memory_insert", content="Ada is 31 years old.", request_heartbeat=True),
                  call("send_message", message="noted")])
    turn = agent.say("My sister Ada is a pilot, she is 30. Sorry, 31.")
    results = [s.result for s in turn.steps[:5]]
    assert results[0] == "Inserted into archival memory."
    assert results[1].startswith("Already in archival memory (saved ") and results[1].endswith("not stored again.")
    assert results[2].startswith("Already in archival memory")  # the same fact in other words
    assert results[3] == results[4] == "Inserted into archival memory."  # 31 is not 30: a new fact
    assert agent.counts()["archival"] == 3
    (first,) = agent.passages_by_id([1])
    assert len(first.repeats) == 2 and all(when.startswith("20") for when, _ in first.repeats)


def test_the_word_rule_keeps_numbers_names_and_negations_apart():
    assert adds_nothing("User's sister Ada is a pilot.", "The user's sister is Ada, a pilot.")
    assert not adds_nothing("Ada is 31.", "Ada is 30.")
    assert not adds_nothing("The meeting is on Friday.", "The meeting is on Tuesday.")
    assert not adds_nothing("Ada isn't a pilot.", "Ada is a pilot.")
    assert junk_reason("") and junk_reason("the of and") and junk_reason("spam " * 20_000) == "one word repeated"
    assert junk_reason("Inserted into archival memory.") == "boilerplate of the agent's functions"
    assert junk_reason("Ada is a pilot.") is None


def test_a_changed_fact_supersedes_the_earlier_one_and_search_says_so():
    agent = make([call("archival_memory_insert", content="The user lives in York.", request_heartbeat=True),
                  call("archival_memory_replace", old_content="lives in York",
                       new_content="The user lives in Leeds now.", request_heartbeat=True),
                  call("archival_memory_replace", old_content="lives in Paris", new_content="The user lives in Rome.",
                       request_heartbeat=True),
                  call("send_message", message="noted")])
    turn = agent.say("I moved from York to Leeds.")
    assert 'it replaces the earlier "The user lives in York."' in turn.steps[1].result
    assert turn.steps[2].status == "Failed" and "No archival passage matches old_content" in turn.steps[2].result
    york, leeds = agent.passages_by_id([1, 2])
    assert york.superseded_by == 2 and york.superseded is not None and leeds.superseded_by is None
    page = agent.archive.search("Where does the user live, York?", 0)
    assert page.items[0].startswith("[") and "The user lives in Leeds now." in page.items[0]
    assert '(replaces passage 1 of ' in page.items[0] and "The user lives in York." in page.items[0]
    assert "(superseded " in page.items[1] and "by passage 2)" in page.items[1]  # kept, after what holds now
    assert agent.counts()["archival"] == 2  # nothing deleted
    added = agent.remember("The user lives in Leeds now.", source="api")
    assert not added.stored and added.passage.id == 2


def test_an_audit_finds_repeats_and_junk_and_folds_keeping_every_time_and_source():
    agent = make()
    texts = ["The lighthouse keeper is Wren.", "The lighthouse keeper is Wren.", "Wren is the lighthouse keeper.",
             "Abel sails the ferry.", "", "word " * 20_000, "Inserted into archival memory.", "Ada is 30.",
             "Ada is 31."]
    agent.archive.insert(texts, [f"2024-01-0{i + 1} 10:00:00" for i in range(len(texts))],
                         source=[f"s{i}" for i in range(len(texts))])  # a bulk load is not checked at insert
    found, folded = agent.audit_memory()
    report = found.as_dict()
    assert report["total"] == 9 and folded == 0
    assert report["exact"] == [[1, 2]] and report["near"] == [[1, 3]]
    assert {j["id"]: j["why"] for j in report["junk"]} == {5: "empty: no word that tells anything",
                                                           6: "one word repeated",
                                                           7: "boilerplate of the agent's functions"}
    assert report["repeats"] == 2 and report["repeat_share"] == pytest.approx(2 / 9)
    _, folded = agent.audit_memory(fold=True)
    assert folded == 2 and agent.counts()["archival"] == 7
    (kept,) = agent.passages_by_id([1])
    assert kept.time.startswith("2024-01-01") and sorted(kept.repeats) == [("2024-01-02 10:00:00", "s1"),
                                                                            ("2024-01-03 10:00:00", "s2")]
    again, _ = agent.audit_memory()
    assert again.as_dict()["repeats"] == 0 and [p.id for p in agent.archive.search_passages("Ada", 0)[1]][:2] \
        in ([8, 9], [9, 8])


def test_a_passage_that_only_says_something_is_not_known_is_junk():
    """What a small model writes when asked for facts a conversation does not hold tells nothing; a fact that says
    no, or names something unknown beside what it tells, is kept."""
    from pagemind.agent.archive import junk_reason

    for text in ("The user's name is not mentioned in the conversation.", "Her job is not specified. Age not given.",
                 "No information about the user's family.", "Unknown."):
        assert junk_reason(text) == "says only that something is not known", text
    for text in ("I don't eat meat.", "The user likes punk music; their name is not mentioned.",
                 "I don't know where my keys are.", "The weather was not clear, so the hike was cancelled."):
        assert junk_reason(text) is None, text


def checked(steps, verdicts):
    fake = ScriptedLLM(by_role={"agent-step": list(steps), "supersede": list(verdicts), "summarise": "talked"})
    agent = Agent.create(LLM(fake), Store(":memory:"), "sam",
                         options=AgentOptions(embedder="minilm", supersede_check=True))
    return agent, fake


def test_the_supersession_check_asks_the_model_about_a_similar_fact_and_marks_a_replaced_one():
    """Issue 39, item 3's check: with ``supersede_check`` an insert similar to a stored fact (the same subject) asks
    the model yes/no; a yes supersedes the earlier passage (kept, named in search), a no stores both."""
    moved = [call("archival_memory_insert", content="The user lives in York.", request_heartbeat=True),
             call("archival_memory_insert", content="The user has a cat called Moss.", request_heartbeat=True),
             call("archival_memory_insert", content="The user lives in Leeds now.", request_heartbeat=True),
             call("send_message", message="noted")]
    agent, fake = checked(moved, ["yes"])
    turn = agent.say("I live in York and have a cat, Moss. Actually I moved to Leeds.")
    assert turn.steps[2].result.startswith("Inserted into archival memory; it replaces the passage saved ")
    assert "'The user lives in York.'" in turn.steps[2].result
    asked = [r for r in fake.history if r.role == "supersede"]
    assert len(asked) == 1 and "The user lives in York." in asked[0].messages[0].content  # the cat was not asked about
    york, cat, leeds = agent.passages_by_id([1, 2, 3])
    assert york.superseded_by == leeds.id and cat.superseded_by is None and leeds.superseded_by is None
    kept, fake = checked(moved, ["no"])
    kept.say("I live in York and have a cat, Moss. And in Leeds too.")
    assert all(p.superseded_by is None for p in kept.passages_by_id([1, 2, 3]))
    off = make(moved)  # supersede_check off (the default): no call, nothing marked
    off.say("I moved to Leeds.")
    assert all(p.superseded_by is None for p in off.passages_by_id([1, 2, 3]))


def test_a_wrong_fact_is_forgotten_restorable_and_an_audits_junk_dropped():
    """Issue 50: forgetting a passage takes it out of every search (the fact it had superseded holds again), keeps
    it apart with why and when, and a restore gives it back under its own id; --drop-junk forgets what the audit
    calls junk and nothing else."""
    from pagemind.errors import NotFound

    agent = make([call("archival_memory_insert", content="The user lives in York.", request_heartbeat=True),
                  call("archival_memory_replace", old_content="lives in York",
                       new_content="The user lives in Leeds now.", request_heartbeat=True),
                  call("send_message", message="noted")])
    agent.say("I moved from York to Leeds.")
    gone = agent.forget(2, "cli")
    assert gone.text == "The user lives in Leeds now." and agent.counts()["archival"] == 1
    page = agent.archive.search("Where does the user live?", 0)
    assert "Leeds" not in page.render() and "(superseded" not in page.items[0]  # York holds again
    ((pid, text, cause, when),) = agent.forgotten()
    assert (pid, text, cause) == (2, "The user lives in Leeds now.", "cli") and when > 0
    with pytest.raises(NotFound, match="no archival passage 2"):
        agent.forget(2)
    back = agent.restore(2)
    assert back.id == 2 and agent.passages_by_id([1])[0].superseded_by == 2 and agent.forgotten() == []
    with pytest.raises(NotFound, match="forgot no archival passage 9"):
        agent.restore(9)
    agent.archive.insert(["", "Inserted into archival memory.", "Ada is a pilot."], "2024-01-01 10:00:00")
    found, _ = agent.audit_memory()
    assert agent.drop_junk(found) == 2 and agent.counts()["archival"] == 3
    assert sorted(c for _, _, c, _ in agent.forgotten()) == ["audit: junk (boilerplate of the agent's functions)",
                                                             "audit: junk (empty: no word that tells anything)"]
