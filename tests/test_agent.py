"""MemGPT agent with the scripted fake: step chains, heartbeats, every error path, pressure, eviction, paging."""

import json

import pytest

from pagemind import LLM, ScriptedLLM, Store
from pagemind.agent import Agent, AgentOptions, AgentStore, SearchPage
from pagemind.errors import InputError


def call(function, thoughts="thinking", **arguments):
    return json.dumps({"thoughts": thoughts, "function": function, "arguments": arguments})


def make(steps=(), summarise="I talked with the user.", store=None, name="sam", **options):
    fake = ScriptedLLM(by_role={"agent-step": list(steps), "summarise": summarise})
    # the scripted steps are the agent's own: no reply from recall before them unless a test asks
    opts = AgentOptions(**{"embedder": "none", "recall_answer": False, **options})
    agent = Agent.create(LLM(fake), store or Store(":memory:"), name, options=opts)
    return agent, fake


def last_prompt(fake):
    return fake.history[-1].messages[-1].content


def test_a_chain_of_calls_with_heartbeats_ends_with_send_message():
    agent, fake = make([
        call("conversation_search", query="Ann", page=0, request_heartbeat=True),
        call("core_memory_append", label="human", content="Name: Ann", request_heartbeat=True),
        call("send_message", thoughts="greet her", message="Nice to meet you, Ann!"),
    ])
    turn = agent.say("Hi, I'm Ann.")
    assert turn.messages == ["Nice to meet you, Ann!"]
    assert [s.function for s in turn.steps] == ["conversation_search", "core_memory_append", "send_message"]
    assert [s.heartbeat for s in turn.steps] == ["requested", "requested", None]
    assert turn.stop_reason == "yield" and turn.valid_action_rate == 1.0 and turn.usage.calls == 3
    assert turn.steps[0].result == "No results found."  # never the turn's own message (issue 50)
    assert agent.blocks()[1].value == "Name: Ann"
    # each step sees the previous result and the heartbeat; the thoughts stay out of the messages
    second = fake.history[1].messages[-1].content
    assert '"type": "function_result"' in second and "request_heartbeat=true" in second
    assert "[memory: " in second and "messages in recall memory" in second
    assert "Name: Ann" in fake.history[2].messages[0].content  # core memory is in the system message
    assert "greet her" not in " ".join(turn.messages)


@pytest.mark.parametrize("reply, expected", [
    ("I would like to say hello!", "not a JSON object"),
    (call("launch_rockets", target="moon"), "No function named 'launch_rockets'"),
    (call("core_memory_append", label="human", request_heartbeat=False), "missing content"),
    (call("send_message", message="hi", mood="happy"), "unexpected mood"),
    (call("conversation_search", query="x", page="two", request_heartbeat=False), "page must be an integer"),
    (call("archival_memory_search", query="x", page=500, request_heartbeat=False), "between 0 and 99"),
])
def test_invalid_actions_return_the_error_and_force_a_heartbeat(reply, expected):
    agent, fake = make([reply, call("send_message", message="sorry")])
    turn = agent.say("hello")
    first, second = turn.steps
    assert not first.valid and first.status == "Failed" and expected in first.result
    assert first.heartbeat == "failed" and second.valid and turn.messages == ["sorry"]
    assert turn.invalid_actions == 1 and turn.valid_action_rate == 0.5
    prompt = last_prompt(fake)
    assert expected.split("'")[0] in prompt and "Function call failed, returning control" in prompt
    assert agent.store.get_agent("sam").state.invalid_actions == 1


def test_function_errors_and_exceptions_are_results_with_a_forced_heartbeat(monkeypatch):
    agent, fake = make([
        call("core_memory_replace", label="human", old_content="nothing", new_content="x", request_heartbeat=False),
        call("core_memory_append", label="pets", content="a cat", request_heartbeat=False),
        call("archival_memory_insert", content="boom", request_heartbeat=False),
        call("send_message", message="done"),
    ])

    def explode(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(agent.archive, "insert", explode)
    turn = agent.say("hello")
    results = [s.result for s in turn.steps]
    assert "old_content not found in human" in results[0]
    assert "No core memory block named 'pets'" in results[1]
    assert results[2] == "Error calling function archival_memory_insert: RuntimeError: disk on fire"
    assert [s.heartbeat for s in turn.steps] == ["failed", "failed", "failed", None]
    assert all(s.valid for s in turn.steps)  # syntactically valid calls that failed at run time
    assert "disk on fire" in fake.history[3].messages[-1].content


def test_fenced_and_aliased_replies_are_parsed_tolerantly():
    fenced = '```json\n{"inner_thoughts": "ok", "function": "send_message", "params": {"message": "hi"}}\n```'
    agent, _ = make([fenced])
    turn = agent.say("hello")
    assert turn.messages == ["hi"] and turn.steps[0].thoughts == "ok" and turn.valid_action_rate == 1.0


def test_a_forgotten_request_heartbeat_chains_but_an_explicit_false_yields():
    from pagemind.agent import parse_action

    assert parse_action(call("conversation_search", query="x", page=0)).heartbeat is True
    assert parse_action(call("conversation_search", query="x", page=0, request_heartbeat=False)).heartbeat is False
    assert parse_action(call("conversation_search", query="x", page=0, request_heartbeat="true")).heartbeat is True


def test_the_last_step_offers_only_send_message_so_a_long_turn_still_answers():
    searches = [call("archival_memory_search", query="x", page=0, request_heartbeat=True)] * 2
    fake = ScriptedLLM(by_role={"agent-step": [*searches, call("send_message", message="Best guess: 42.")]},
                       supports_grammar=True)
    agent = Agent.create(LLM(fake), Store(":memory:"), "sam", options=AgentOptions(embedder="none", max_steps=3))
    turn = agent.say("What is the answer?")
    assert turn.messages == ["Best guess: 42."] and turn.stop_reason == "last_step"
    free, last = fake.history[1].constraint, fake.history[2].constraint
    assert len(free.json_schema["oneOf"]) == 8 and "call-archival-memory-search" in free.gbnf
    assert last.json_schema["properties"]["function"] == {"const": "send_message"}
    assert "call-send-message" in last.gbnf and "archival" not in last.gbnf
    assert "last step" in fake.history[2].messages[-1].content
    assert "The user's message was: What is the answer?" in fake.history[2].messages[-1].content  # if evicted
    assert "last step" not in fake.history[1].messages[-1].content


def test_the_step_budget_ends_a_runaway_loop():
    agent, fake = make([call("conversation_search", query="x", page=0, request_heartbeat=True)] * 3, max_steps=3,
                       final_reply=False)
    turn = agent.say("hello")
    assert turn.stop_reason == "max_steps" and len(turn.steps) == 3 and turn.messages == []
    agent_fake_next = call("send_message", message="back")
    fake.role_queues["agent-step"].append(agent_fake_next)
    again = agent.say("still there?")
    assert "cut short after 3 steps" in fake.history[-1].messages[-1].content
    assert again.messages == ["back"]


def test_block_limits_fail_with_an_explanation():
    long = "x" * 130
    agent, _ = make([call("core_memory_append", label="human", content=long, request_heartbeat=False),
                     call("send_message", message="ok")], block_limit=120)
    turn = agent.say("hello")
    assert turn.steps[0].result.startswith("Edit failed: Exceeds 120 character limit (requested")
    assert "archival memory" in turn.steps[0].result
    assert agent.blocks()[1].value == ""
    with pytest.raises(InputError, match="3,000 characters exceed its limit of 2,000"):  # the one block rule
        Agent.create(None, Store(":memory:"), "big", persona="p" * 3000)


def test_replace_and_extra_blocks():
    agent, _ = make([call("core_memory_replace", label="human", old_content="horror", new_content="romantic comedy",
                          request_heartbeat=True), call("send_message", message="noted")])
    agent.store.put_block(agent.id, agent.blocks()[1].__class__("human", "Likes horror movies.", 2000), "test")
    agent.say("I actually prefer romantic comedies.")
    assert agent.blocks()[1].value == "Likes romantic comedy movies."
    other = Agent.create(None, agent.store, "tasker", blocks={"tasks": "buy milk"})
    assert [b.label for b in other.blocks()] == ["persona", "human", "tasks"]


def test_pagination_starts_page_p_at_p_times_page_size():
    agent, _ = make()
    agent.import_messages([("user", f"apple number {i}", "2024-01-01 10:00:00") for i in range(23)])
    first = agent.search("apple", 0)
    assert first.startswith("Showing 5 of 23 results (page 1/5)") and "apple number 0" in first
    third = agent.search("apple", 2)
    assert "Showing 5 of 23 results (page 3/5)" in third
    assert [f"apple number {i}\"" in third for i in range(9, 16)] == [False, True, True, True, True, True, False]
    last = agent.search("apple", 4)
    assert last.startswith("Showing 3 of 23 results (page 5/5)") and "More:" not in last
    assert "No results on page 6" in agent.search("APPLE", 5)  # case-insensitive
    assert SearchPage((), 0, 0, 5).render() == "No results found."


def test_recall_search_ranks_keyword_matches_after_exact_ones():
    agent, _ = make()
    agent.import_messages([("user", "I adopted a puppy named Rose", "2024-01-01 10:00:00"),
                           ("assistant", "Rose is a lovely name for a dog", "2024-01-01 10:01:00"),
                           ("user", "my puppy Rose chewed my puppy shoes", "2024-01-01 10:02:00"),
                           ("user", "the weather is grey", "2024-01-01 10:03:00")])
    result = agent.search("puppy named Rose")
    assert result.startswith("Showing 3 of 3 results")
    items = json.loads(result.split(": ", 1)[1].split(" More:")[0])
    assert [i.split(": ", 1)[1] for i in items] == [  # the reply beside the exact match, in its exchange, next
        "I adopted a puppy named Rose", "Rose is a lovely name for a dog", "my puppy Rose chewed my puppy shoes"]
    paper, _ = make(name="paper", recall_search="text", store=agent.store.store)
    paper.import_messages([("user", "I adopted a puppy named Rose", "2024-01-01 10:00:00")])
    assert paper.search("puppy named Rose").startswith("Showing 1 of 1")
    assert paper.search("my puppy Rose") == "No results found."


def test_date_search_and_bad_dates():
    agent, _ = make([call("conversation_search_date", start_date="2024-03-01", end_date="2024-03-02", page=0,
                          request_heartbeat=True),
                     call("conversation_search_date", start_date="2024-13-01", end_date="2024-03-02", page=0,
                          request_heartbeat=True),
                     call("send_message", message="ok")], search_again=0)
    agent.import_messages([("user", "in february", "2024-02-28 09:00:00"),
                           ("user", "first of march", "2024-03-01 09:00:00"),
                           ("assistant", "second of march", "2024-03-02 23:59:00"),
                           ("user", "in april", "2024-04-01 09:00:00")])
    turn = agent.say("what did we say early in March?")
    assert "Showing 2 of 2 results" in turn.steps[0].result
    assert "first of march" in turn.steps[0].result and "second of march" in turn.steps[0].result
    assert "not a date in YYYY-MM-DD format" in turn.steps[1].result


def test_pressure_warning_then_eviction_with_recursive_summary():
    summaries = []

    def summarise(request):
        text = request.messages[0].content
        summaries.append(text)
        return f"summary {len(summaries)}"

    fact = "My locker code is 4417."
    agent, fake = make([call("send_message", message=f"reply {i}") for i in range(40)], summarise=summarise,
                       context_window=900, warning_fraction=0.75, max_tokens=50)
    warned_at = evicted_at = None
    agent.say(fact)
    for i in range(40):
        turn = agent.say(f"message {i} " + "blah " * 15)
        if turn.warnings and warned_at is None:
            warned_at = i
        if turn.evictions and evicted_at is None:
            evicted_at = i
            break
    assert warned_at is not None and evicted_at is not None and warned_at <= evicted_at
    assert "Warning: the conversation history will soon reach its maximum length" in " ".join(
        m.content for r in fake.history for m in r.messages)
    queue = agent.store.queue(agent.id)
    assert queue[0].kind == "summary" and "summary 1" in queue[0].payload["message"]
    assert "have been hidden from view" in queue[0].payload["message"]
    assert queue[1].kind != "function_result"  # never a result without its call
    assert all(fact not in e.render() for e in queue)
    # evicted, but still in recall
    assert "4417" in agent.search("locker code")
    assert fake.history[-1].messages[1].content.startswith('{"type": "system_alert"')
    # a second eviction folds the previous summary in (recursive summary)
    for i in range(40, 80):
        if agent.say(f"message {i} " + "blah " * 15).evictions:
            break
    assert "summary 1" in summaries[-1]
    assert agent.store.queue(agent.id)[0].payload["message"].endswith(f"summary {len(summaries)}")
    assert agent.store.get_agent("sam").state.evictions >= 2



def test_a_summary_that_refuses_is_asked_again_then_never_kept_as_memory():
    """Issue 50: an eviction's summary call answered "I'm sorry, but I can't assist with that." and it was stored as
    the summary. A refusal (or nothing) is re-asked once; a second one leaves the messages' own beginnings in its
    place, said in the trace; a summary given on the re-ask is kept."""
    talk = [("user" if i % 2 == 0 else "assistant", f"chat {i} " + "about the harbour and the boats " * 6,
             "2024-05-01 10:00:00") for i in range(32)]
    agent, fake = make([call("send_message", message="ok")], summarise="I'm sorry, but I can't assist with that.",
                       context_window=1500, max_tokens=50, keep_last=2)
    agent.import_messages(talk, in_context=True)
    turn = agent.say("what is the weather like?")
    asked = fake.roles().count("summarise")
    assert turn.evictions == 1 and asked >= 2 and asked % 2 == 0  # each chunk of the evicted messages asked twice
    summary = agent.store.queue(agent.id)[0].payload["message"]
    assert "sorry" not in summary.lower() and "chat 1" in summary and "harbour" in summary
    assert any("no summary of" in note and "their beginnings kept" in note for note in turn.trace.notes)
    replies = iter(["", *["We talked about the harbour's boats."] * 8])
    again, fake = make([call("send_message", message="ok")], name="pat", context_window=1500, max_tokens=50,
                       keep_last=2, summarise=lambda request: next(replies))
    again.import_messages(talk, in_context=True)
    again.say("what is the weather like?")
    assert "We talked about the harbour's boats." in again.store.queue(again.id)[0].payload["message"]

def test_a_queue_far_over_the_window_is_evicted_once():
    """When the paper's share (half the queue) would not make room, one eviction frees what the prompt is over by:
    one summary note, written once (before: an eviction and a summary per halving); the newest messages stay."""
    agent, _ = make([call("send_message", message="ok")], context_window=1500, max_tokens=50, keep_last=2)
    talk = [("user" if i % 2 == 0 else "assistant", f"chat {i} " + "about the harbour and the boats " * 6,
             "2024-05-01 10:00:00") for i in range(32)]
    agent.import_messages(talk, in_context=True)
    assert agent.main_context().build().tokens > 1500 * 1.5
    turn = agent.say("what is the weather like?")
    assert turn.evictions == 1 and agent.store.get_agent("sam").state.evictions == 1
    queue = agent.store.queue(agent.id)
    assert queue[0].kind == "summary" and queue[0].payload["hidden"] > 35 // 2  # more than half of 35 (boot + talk)
    assert any("chat 31" in e.render() for e in queue) and any("what is the weather" in e.render() for e in queue)
    assert agent.main_context().build().tokens + 50 <= 1500
    paper, _ = make([call("send_message", message="ok")], name="pat", context_window=1500, max_tokens=50)
    paper.import_messages(talk[:8], in_context=True)  # under the window: no eviction at all
    assert paper.say("hi").evictions == 0


def test_context_window_too_small_is_a_clear_error():
    from pagemind.errors import ContextWindowExceeded, InputError

    with pytest.raises(InputError, match="cannot run: .* more than its window of 200"):  # said when it is made
        make([call("send_message", message="hi")], context_window=200)
    agent, _ = make([call("send_message", message="hi")])  # a window shrunk after: said at the turn
    agent.update_options({"context_window": 200})
    # the boot messages' call and result go out together (evicting it alone would split them); what is left does
    # not leave room for the summary
    with pytest.raises(ContextWindowExceeded, match="window of 200 tokens is too small to summarise"):
        agent.say("hello")


def test_constraint_is_sent_where_the_backend_enforces_it():
    fake = ScriptedLLM(by_role={"agent-step": call("send_message", message="hi")}, supports_grammar=True)
    agent = Agent.create(LLM(fake), Store(":memory:"), "g", options=AgentOptions(embedder="none"),
                         blocks={"notes": ""})
    agent.say("hello")
    constraint = fake.history[0].constraint
    assert constraint is not None and '"\\"notes\\""' in constraint.gbnf
    assert len(constraint.json_schema["oneOf"]) == 8
    plain = ScriptedLLM(by_role={"agent-step": call("send_message", message="hi")})
    unconstrained = Agent.create(LLM(plain), Store(":memory:"), "p", options=AgentOptions(embedder="none"))
    unconstrained.say("hello")
    assert plain.history[0].constraint is None


def test_schema_accepts_what_the_grammar_produces():
    jsonschema = pytest.importorskip("jsonschema")
    from pagemind.agent import parse_action, step_schema

    reply = call("core_memory_append", label="human", content="likes tea", request_heartbeat=True)
    jsonschema.validate(json.loads(reply), step_schema(["persona", "human"]))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(json.loads(call("core_memory_append", label="x", content="c", request_heartbeat=True)),
                            step_schema(["persona", "human"]))
    assert parse_action(reply).heartbeat is True


def test_archival_insert_and_search_modes():
    from pagemind.agent import Archive

    agent, _ = make([call("archival_memory_insert", content="The boat is called Margery Dell.", request_heartbeat=True),
                     call("archival_memory_search", query="boat name", page=0, request_heartbeat=True),
                     call("send_message", message="ok")])
    turn = agent.say("remember the boat")
    assert "Margery Dell" in turn.steps[1].result  # keyword ranking without an embedder
    store = agent.store
    for mode in ("text", "hybrid", "semantic"):
        archive = Archive(store, agent.id, AgentOptions(archival_search=mode, embedder="hashing"), embedder="auto")
        archive.insert(["key = 1f3a-77, value = 9bc2-01", "an unrelated passage about sailing boats"], "2024-01-01")
        assert "9bc2-01" in archive.search("1f3a-77", 0).render()
    assert "keyword" in Archive(store, agent.id, AgentOptions(embedder="none")).describe()


def test_every_function_is_described_to_the_processor():
    import inspect

    from pagemind.agent import FUNCTIONS
    from pagemind.agent.actions import step_tools
    from pagemind.agent.functions import Toolbox
    from pagemind.prompts import get_prompt, load_prompts

    # declared once: the Toolbox method's signature gives the arguments, its prompt function.<name> the text
    described = [name.removeprefix("function.") for name in load_prompts("memgpt") if name.startswith("function.")]
    assert [f.name for f in FUNCTIONS] == list(described) == [
        "send_message", "core_memory_append", "core_memory_replace", "conversation_search",
        "conversation_search_date", "archival_memory_insert", "archival_memory_replace",
        "archival_memory_search"]
    agent, fake = make([call("send_message", message="hi")])
    agent.say("hello")
    system = fake.history[0].messages[0].content
    tools = {t.name: t for t in step_tools(["persona", "human"])}
    for spec in FUNCTIONS:
        method = inspect.signature(getattr(Toolbox, spec.name))
        assert [p.name for p in spec.params] == list(method.parameters)[1:]
        description = get_prompt("memgpt", f"function.{spec.name}").render()
        line = f"- {spec.name}({', '.join(p.name for p in spec.all_params)}): {description}"
        assert line in system.splitlines()
        assert tools[spec.name].description == description
    assert get_prompt("memgpt", "warning").verbatim


def test_a_function_argument_without_a_bound_is_refused_when_declared():
    from pagemind.agent.functions import function, spec_of

    @function
    def shout(self, words: str) -> str:
        return words

    with pytest.raises(TypeError, match="annotate a string with its bound"):
        spec_of(shout)


def test_store_is_scoped_per_agent():
    store = Store(":memory:")
    a, _ = make([call("send_message", message="hi")], store=store, name="alice_agent")
    assert AgentStore(store).get_agent("alice_agent").id == a.id


@pytest.mark.parametrize("max_chars", [300, 1000])
def test_the_longest_constrained_reply_fits_the_reply_budget(max_chars):
    from pagemind.agent import FUNCTIONS
    from pagemind.agent.actions import bounds

    labels = ["persona", "human", "long_label_name"]
    for spec in FUNCTIONS:
        limits = bounds(spec, labels, max_chars)
        values = {"string": lambda p, limits=limits: "a" * limits[p.name], "integer": lambda p: 99,
                  "boolean": lambda p: False, "date": lambda p: "2024-01-01", "label": lambda p: "long_label_name"}
        args = {p.name: values[p.kind](p) for p in spec.all_params}
        longest = json.dumps({"thoughts": "a" * limits["thoughts"], "function": spec.name, "arguments": args})
        assert len(longest) <= max_chars, spec.name


def test_appending_what_a_block_already_holds_is_refused_with_advice():
    agent, _ = make([
        call("core_memory_append", label="human", content="Name: Ann", request_heartbeat=True),
        call("core_memory_append", label="human", content="Name: Ann", request_heartbeat=True),
        call("send_message", message="Got it, Ann."),
    ])
    turn = agent.say("I'm Ann")
    assert [s.status for s in turn.steps] == ["OK", "Failed", "OK"]
    assert "Already in core memory (human)" in turn.steps[1].result
    assert agent.blocks()[1].value == "Name: Ann"  # once


def test_a_turn_cites_the_archival_passage_its_answer_used():
    from pagemind.citations import Citation

    agent, _ = make([call("archival_memory_search", query="boat name", page=0, request_heartbeat=True),
                     call("send_message", message="Your boat is called the Margery Dell.")])
    [pid] = agent.archive.insert(["We sailed at dawn. The boat is called Margery Dell. It leaks a little.",
                                  ], "2024-01-01", source="logbook.txt")
    agent.archive.insert(["An unrelated passage about the boat shed roof."], "2024-01-01")
    turn = agent.say("what is my boat called?")
    [cited] = turn.citations  # the shed passage was returned too, but the reply does not use it
    assert isinstance(cited, Citation)
    assert (cited.document, cited.unit, cited.index, cited.found_by) == ("logbook.txt", "passage", pid, "passage")
    [passage] = agent.store.passages(agent.id, [pid])
    assert cited.quote == passage.text[cited.start:cited.end] == "The boat is called Margery Dell."
    assert turn.as_dict()["citations"][0]["location"] == f"passage {pid}"


def test_a_turn_cites_recalled_messages_and_a_saved_fact_cites_its_message():
    agent, _ = make([call("send_message", message="Noted."),
                     call("conversation_search", query="sister", page=0, request_heartbeat=True),
                     call("core_memory_append", label="human", content="sister Maud lives in Oslo",
                          request_heartbeat=True),
                     call("send_message", message="Your sister Maud lives in Oslo.")])
    agent.say("By the way, my sister Maud lives in Oslo. She paints.")
    turn = agent.say("Where does my sister live?")
    said = next(e for e in agent.store.queue(agent.id) if e.kind == "user_message" and "Maud" in e.payload["message"])
    message = [c for c in turn.citations if c.unit == "message"]
    assert message and all(c.found_by == "message" for c in message)
    assert any(c.index == said.seq and c.quote == "By the way, my sister Maud lives in Oslo." for c in message)
    edit = turn.steps[1]
    assert edit.function == "core_memory_append" and edit.source == said.seq
    [source] = edit.citations
    assert source.quote == said.payload["message"][source.start:source.end] == "sister Maud lives in Oslo"
    from pagemind.agent.core import step_record

    assert step_record(edit)["source"] == said.seq and step_record(edit)["citations"][0]["index"] == said.seq


def test_a_reply_that_uses_nothing_it_found_cites_nothing():
    agent, _ = make([call("archival_memory_search", query="boat", page=0, request_heartbeat=True),
                     call("send_message", message="Hello there!")])
    agent.archive.insert(["The boat is called Margery Dell."], "2024-01-01")
    assert agent.say("hi").citations == []


def test_the_question_being_answered_and_the_agents_own_thoughts_are_never_its_evidence():
    agent, _ = make([call("conversation_search", query="Oslo", page=0, request_heartbeat=True,
                          inner_thoughts="Searching for Oslo in what we said"),
                     call("send_message", message="You asked where Maud lives in Oslo; I know nothing about Oslo.")],
                    search_again=0)
    turn = agent.say("Does Maud live in Oslo?")  # recall finds this very message, and the step's thoughts
    assert [c for c in turn.citations if c.unit == "message"] == []


def test_recall_ranks_a_rare_word_above_common_ones_as_bm25_does():
    """Issue 39 (recall that finds what it was told): the keyword matches are ranked by BM25 over stemmed content
    words, the scorer RAG and OP-RAG use, so the one message naming Lisbon outranks messages sharing two common
    words; stems match ("travelled" finds "travelling")."""
    agent, _ = make()
    common = [("user", f"my sister and I planned a trip, day {i}", f"2024-01-0{i} 10:00:00") for i in range(1, 7)]
    agent.import_messages([*common, ("user", "Lisbon was lovely in May", "2024-01-08 10:00:00"),
                           ("user", "we are travelling north next week", "2024-01-09 10:00:00")])
    items = json.loads(agent.search("trip to Lisbon with my sister").split(": ", 1)[1].split(" More:")[0])
    assert items[0].split(": ", 1)[1] == "Lisbon was lovely in May"
    assert "we are travelling north next week" in agent.search("when I travelled")


def test_an_imported_conversation_s_messages_are_cited_by_session_and_turn():
    """Issue 39: messages imported with their place in the conversation (LoCoMo's ``D1:3``, a LongMemEval session)
    are cited by it, so a reader finds the turn in the conversation, not in the agent's recall."""
    agent, _ = make()
    agent.import_messages([("user", "I moved to Lisbon in May.", "2024-01-01 10:00:00", "session 1, turn 3 (D1:3)"),
                           ("user", "The weather is grey.", "2024-01-01 10:01:00")])
    agent.tools.conversation_search("Lisbon", 0)
    (found,) = agent.tools.found
    assert found.location == f"message {found.index} (session 1, turn 3 (D1:3))"
    assert found.quote == "I moved to Lisbon in May."
    agent.tools.conversation_search("weather", 0)
    assert agent.tools.found[0].location == f"message {found.index + 1}"  # imported without a place: none named


def test_recall_ranks_by_words_and_meaning_together():
    """Issue 39 item 4: the rest of recall (past the exact matches) is ranked as OP-RAG ranks fragments — BM25 and
    MiniLM together (min-max normalised and summed) — so a paraphrase sharing no word with the query is found, and
    unrelated chat is not."""
    from pagemind.agent.functions import RECALL_NEAR, rank_messages

    texts = ["My cat knocked over a vase today", "We pitched a tent by the lake and slept under the stars",
             "The weather was rainy all week", "A camping stove is on sale"]
    # similarities as MiniLM gives them for "camping trip" (measured: 0.07, 0.47, -0.07, 0.6)
    similar = [0.07, 0.47, -0.07, 0.6]
    assert rank_messages("camping trip", texts) == [3]  # words alone: only the message sharing "camping"
    assert rank_messages("camping trip", texts, similar) == [3, 1]  # with meaning: the tent too, unrelated chat not
    assert similar[1] >= RECALL_NEAR > similar[0]
    # words and meaning each move the order: the rare word's message first when meaning is level
    assert rank_messages("camping stove", ["camping stove for sale", "the stove is hot"], [0.5, 0.5])[0] == 0


def test_recall_reads_a_message_beside_its_neighbours_in_the_exchange():
    """Issue 50: the answer is often the reply beside the message the question's words find ("I play shooting guard"
    after "I signed with the Wolves"); a match said within the hour of its neighbour, next in order, adds half that
    neighbour's score — not the next day's message, and an exact match lends its neighbours its score too; a message
    with nothing of the query still does not match; an agent's recall search ranks so."""
    from pagemind.agent.functions import NEIGHBOUR_SHARE, in_exchange, rank_messages

    texts = ["I signed with the Wolves today!", "I play shooting guard, from next week.", "I play chess on Sundays.",
             "Lunch was good."]
    question = "What does John play for the Wolves?"
    assert rank_messages(question, texts) == [0, 2, 1]  # "play" alone: the shorter message first
    assert rank_messages(question, texts, together=[False, True, False, True]) == [0, 1, 2]
    assert rank_messages(question, texts, together=[False, False, False, True]) == [0, 2, 1]
    assert 0 < NEIGHBOUR_SHARE < 1
    assert in_exchange(["2024-01-01 23:50:00", "2024-01-02 00:10:00", "2024-01-03 00:10:00", "soon", "later"]) == \
        [False, True, False, False, False]  # across midnight yes, the next day no, an unreadable time never

    def recalled(query: str, then: str) -> list[str]:
        agent, _ = make()
        agent.import_messages([("user", "I play with the Wolves today!", "2024-01-01 10:00:00"),
                               ("user", "I play chess with my old friends on Sundays at the club.", then),
                               ("user", "Lunch was good.", "2024-01-05 12:00:00"),
                               ("user", "I play shooting guard.", "2024-01-06 10:00:00")])
        return [e.describe().split("user: ")[1][:12] for e in agent.tools.recall_events(query, 0)[1]]

    apart, close = "2024-01-02 09:00:00", "2024-01-01 10:02:00"
    assert recalled("Who does John play for, the Wolves?", apart) == ["I play with ", "I play shoot", "I play chess"]
    assert recalled("Who does John play for, the Wolves?", close) == ["I play with ", "I play chess", "I play shoot"]
    exact = "play with the Wolves today"  # said verbatim: first, and it lends its neighbour its score all the same
    assert recalled(exact, apart) == ["I play with ", "I play shoot", "I play chess"]
    assert recalled(exact, close) == ["I play with ", "I play chess", "I play shoot"]


def test_an_agent_with_the_encoder_finds_a_paraphrase_in_recall():
    agent, _ = make(embedder="minilm")
    agent.import_messages([("user", "My cat knocked over a vase today", "2024-01-01 10:00:00"),
                           ("user", "We pitched a tent by the lake and slept under the stars", "2024-01-02 10:00:00"),
                           ("user", "The weather was rainy all week", "2024-01-03 10:00:00")])
    found = agent.search("camping trip")
    assert "pitched a tent" in found and "vase" not in found and "rainy" not in found
    words_only, _ = make(name="tom")
    words_only.import_messages([("user", "We pitched a tent by the lake and slept under the stars",
                                 "2024-01-02 10:00:00")])
    assert "pitched a tent" not in words_only.search("camping trip")


def test_a_reply_the_searches_do_not_support_is_held_and_the_agent_searches_again():
    """Issue 39 item 4: "always one search, then an answer" — a reply to a question that what the turn's searches
    returned does not support (here: it says nothing was found) is not sent; the agent is told to search on (the
    next page, other words), finds the answer and replies. Held replies are never the user's messages."""
    agent, fake = make([call("conversation_search", query="town market", page=0, request_heartbeat=True),
                        call("send_message", message="I could not find where Maud lives."),
                        call("conversation_search", query="Maud moved", page=0, request_heartbeat=True),
                        call("send_message", message="Maud moved to Bergen.")],
                       recall_first=False)  # (recall before reply would have placed the hold's first page already)
    agent.import_messages([("user", "Maud moved to Bergen last spring", "2024-01-02 10:00:00"),
                           ("user", "my town has a market", "2024-01-03 10:00:00")])
    turn = agent.say("Where does Maud live?")
    assert turn.messages == ["Maud moved to Bergen."]
    held = turn.steps[1]
    assert held.function == "send_message" and held.status == "Failed" and "Not sent" in held.result
    assert "your reply says nothing was found" in held.result and "page=1" in held.result
    # the hold brings one more page of recall for the question in its own words
    assert 'Recall searched for the question ("Where does Maud live?")' in held.result
    assert "Maud moved to Bergen last spring" in held.result
    assert "Not sent" in fake.history[2].messages[-1].content  # the agent read why before its next step
    assert [s.function for s in turn.steps] == ["conversation_search", "send_message", "conversation_search",
                                                "send_message"]
    history = agent.history(0, 100)[1]
    steps = [e for e in history if e.kind == "step" and e.payload.get("function") == "send_message"]
    assert steps[-2].payload["held"].startswith("Not sent") and "held" not in steps[-1].payload
    from pagemind.server.letta import event_messages
    shown = [m for e in history[-8:] for m in event_messages(e)]
    assert [m["content"] for m in shown if m["message_type"] == "assistant_message"] == ["Maud moved to Bergen."]
    assert any(m["message_type"] == "tool_return_message" and m["status"] == "error" for m in shown)
    assert [c.quote for c in turn.citations if c.unit == "message"][:1] == ["Maud moved to Bergen last spring"]


def test_the_holds_search_shows_the_first_page_with_something_not_yet_shown():
    """A review: the hold's search skipped a page when the agent had searched the question's page 0 itself, and
    showed page 1 when recall before reply had placed only part of page 0 (its token budget). The hold now shows the
    first page of recall for the question with a message neither showed."""
    lines = [("user", f"Maud mentioned place number {i} where she might live", f"2024-01-0{i + 1} 10:00:00")
             for i in range(3)]
    searched, _ = make([call("conversation_search", query="Where does Maud live?", page=0, request_heartbeat=True),
                        call("send_message", message="I could not find where Maud lives."),
                        call("send_message", message="Somewhere.")], recall_first=False, page_size=1)
    searched.import_messages(lines)
    turn = searched.say("Where does Maud live?")
    first, held = turn.steps[0].result, turn.steps[1].result
    assert held.startswith("Not sent") and "(page 2/3)" in held, held  # the next page, not page 0 again nor page 3
    own = [line for _, line, _ in lines if line in first]
    shown = [line for _, line, _ in lines if line in held.split("Recall searched for the question")[1]]
    assert len(own) == 1 and len(shown) == 1 and own != shown
    budget, _ = make([call("conversation_search", query="zebra", page=0, request_heartbeat=True),
                      call("send_message", message="I could not find where Maud lives."),
                      call("send_message", message="Somewhere.")], page_size=3, recall_tokens=20)
    budget.import_messages(lines)
    turn = budget.say("Where does Maud live?")
    recalled = {c.quote for c in turn.recalled}
    assert 0 < len(recalled) < 3 and turn.steps[1].status == "Failed"  # the budget placed part of page 0
    held = turn.steps[1].result.split("Recall searched for the question")[1]
    shown = {line for _, line, _ in lines if line in held}
    assert shown - recalled and "(page 1/1)" in held  # page 0 again: it holds what recall left out


def test_the_holds_search_counts_every_message_a_search_showed_and_goes_past_five_shown_pages():
    """The second review: an agent's own message a search had shown was not counted as shown (a search's evidence
    holds users' messages only), so the hold showed the same page again; and with pages 0-4 all shown it showed page
    4 again, not page 5."""
    ask = "Where does Maud live?"
    mine, _ = make([call("conversation_search", query=ask, page=0, request_heartbeat=True),
                    call("send_message", message="I could not find where Maud lives."),
                    call("send_message", message="Somewhere.")], recall_first=False, page_size=1)
    mine.import_messages([("assistant", "Where does Maud live? Maud said she might live in Bergen", "2024-01-01 10:00"),
                          ("user", "Maud lives in a house with a garden", "2024-01-02 10:00"),
                          ("user", "Maud likes where she lives", "2024-01-03 10:00")])
    turn = mine.say(ask)
    assert "assistant: Where does Maud live?" in turn.steps[0].result
    held = turn.steps[1].result.split("Recall searched for the question")[1]
    assert "(page 2/3)" in held and "assistant:" not in held
    lines = [("user", f"Maud said she might live in place {i}", f"2024-01-0{i + 1} 10:00") for i in range(7)]
    paged, _ = make([call("conversation_search", query=ask, page=p, request_heartbeat=True) for p in range(5)]
                    + [call("send_message", message="I could not find where Maud lives."),
                       call("send_message", message="Somewhere.")], recall_first=False, page_size=1, max_steps=8)
    paged.import_messages(lines)
    turn = paged.say(ask)
    assert turn.steps[5].status == "Failed" and "(page 6/7)" in turn.steps[5].result


def test_the_question_a_message_asks_is_its_search_query():
    from pagemind.agent.turn import _question

    wrapped = "A question about our past conversations: When did Gina launch an ad campaign?\nSearch your memory."
    assert _question(wrapped) == "When did Gina launch an ad campaign?"
    assert _question("Tell me about Maud") == "Tell me about Maud" and len(_question("x " * 200)) == 100


def test_a_reply_is_held_at_most_search_again_times_and_never_without_a_question_or_a_search():
    replies = [call("conversation_search", query="Maud", page=0, request_heartbeat=True),
               call("send_message", message="I don't know."),
               call("conversation_search", query="Maud", page=1, request_heartbeat=True),
               call("send_message", message="I still don't know.")]
    agent, _ = make(replies)
    assert agent.say("Where does Maud live?").messages == ["I still don't know."]  # held once (the default), no more
    off, _ = make(replies[:2], name="off", search_again=0)
    assert off.say("Where does Maud live?").messages == ["I don't know."]  # 0: the paper's agent, every reply sent
    chat, _ = make(replies[:2], name="chat")
    assert chat.say("Maud is lovely, I saw her today.").messages == ["I don't know."]  # not a question: never held
    unsearched, _ = make([call("send_message", message="No idea.")], name="fresh")
    assert unsearched.say("Where does Maud live?").messages == ["No idea."]  # nothing searched: nothing to hold on
    short, _ = make(replies[:2], name="short", max_steps=3)
    assert short.say("Where does Maud live?").messages == ["I don't know."]  # one step left: no room to search



def test_an_agent_whose_instructions_cannot_fit_its_window_is_refused_when_made_or_imported(tmp_path):
    """Issue 49: a system prompt that could not fit the window was stored, then every turn answered 422. Creation and
    import check the fixed part (instructions, core memory, a short message and the reply's room) and refuse,
    storing nothing."""
    from pagemind import Pagemind, ScriptedLLM
    from pagemind.errors import InputError

    with Pagemind(ScriptedLLM(default="x", context_window=4096), store=tmp_path / "s.db") as pm:
        long = "Always answer in the voice of a lighthouse keeper. " * 400  # ~3,600 words
        with pytest.raises(InputError, match="this agent cannot run: its instructions and core memory need"):
            pm.create_agent("keeper", options={"system": long, "max_tokens": 500})
        assert pm.store.list_agents() == []
        pm.create_agent("sam", options={"max_tokens": 500})
        exported = pm.export_agent("sam")
        exported["pagemind"]["agents"][exported["agents"][0]["id"]]["options"]["system"] = long
        with pytest.raises(InputError, match="cannot run"):
            pm.import_agent(exported, name="sam2")
        assert [a.name for a in pm.store.list_agents()] == ["sam"]


def test_the_evaluated_agent_s_recall_options_are_the_agent_s_own_declaration_passed_on():
    """The evaluated MemGPT declares recall_first and recall_order once, as the agent does (help, choices), with the
    paper's agent (recall_first off) as the evaluation's default, and hands them to the agent it builds."""
    from pagemind.eval.datasets import Example
    from pagemind.eval.memgpt import MemGPTEval, MemGPTEvalOptions

    ours, theirs = MemGPTEvalOptions.spec("recall_order"), AgentOptions.spec("recall_order")
    assert (ours.choices, ours.help, ours.default) == (theirs.choices, theirs.help, theirs.default)
    assert MemGPTEvalOptions.spec("recall_first").default is False and AgentOptions.spec("recall_first").default
    assert MemGPTEvalOptions.spec("recall_first").help.startswith(AgentOptions.spec("recall_first").help)
    evaluated = MemGPTEval(LLM(ScriptedLLM([]), concurrency=1), Store(":memory:"), recall_first=True,
                           recall_order="rank")
    example = Example(id="x", dataset="locomo", task="qa", question="q?", document_id="d", document="text")
    opts = evaluated.agent_options(example)
    assert (opts.recall_first, opts.recall_order) == (True, "rank")
    budgeted = MemGPTEval(LLM(ScriptedLLM([]), concurrency=1), Store(":memory:"), recall_first=True, budget=1500)
    assert budgeted.agent_options(example).recall_tokens == AgentOptions().recall_tokens  # the agent's own default
    assert MemGPTEval(LLM(ScriptedLLM([]), concurrency=1), Store(":memory:"), budget=1500,
                      recall_tokens=1500).agent_options(example).recall_tokens == 1500  # passed on
    assert MemGPTEval(LLM(ScriptedLLM([]), concurrency=1), Store(":memory:"),
                      budget=128_000).agent_options(example).context_window > 128_000
    assert MemGPTEval(LLM(ScriptedLLM([]), concurrency=1), Store(":memory:")).agent_options(example).recall_first \
        is False
    from pagemind.errors import ConfigError

    with pytest.raises(ConfigError, match="recall_order"):
        MemGPTEvalOptions.create(recall_order="best")


def test_the_evaluated_agent_recalls_its_budget_without_evicting_or_warning():
    """At a matched budget the agent's window is its empty prompt, the budget and a reply: recall before reply asked
    to fill the budget fills what fits below the warning, so the question's step needs no eviction (no summary
    call) and sends no warning."""
    from pagemind.eval.datasets import Example, Turn
    from pagemind.eval.memgpt import MemGPTEval

    said = "On day {} we walked by the \"river\" and talked about boats, maps and the weather, number {}. " + \
        "It was a long and quiet day. " * 8
    talk = tuple(Turn("Ann" if i % 2 else "Bo", said.format(i, i), time=f"2024-01-{1 + i % 28:02d} 10:00:00")
                 for i in range(300))
    example = Example(id="x", dataset="locomo", task="qa", question="What did Ann and Bo talk about by the river?",
                      document_id="d", document="", conversation=talk, meta={"speakers": ["Ann", "Bo"]})
    fake = ScriptedLLM(by_role={"agent-step": [call("send_message", message="Boats and maps.")],
                                "summarise": "they talked"})
    answer = MemGPTEval(LLM(fake, concurrency=1), Store(":memory:"), recall_first=True, budget=1500,
                        recall_tokens=1500, embedder="none", recall_answer=False).answer_example(example)
    assert answer.text == "Boats and maps." and fake.roles() == ["agent-step"]
    prompt = fake.history[0]
    assert "On day" in prompt.messages[-1].content and not answer.details["evictions"]


def test_recall_before_reply_chooses_the_best_matches_within_its_tokens_and_shows_them_most_recent_first():
    """Recall before reply takes the best matches first (not the most recent of a few), as many as its tokens and
    the window's room below the pressure warning hold, and shows them dated, most recent first."""
    lines = [("user", "Lisbon was lovely in May", "2024-01-01 10:00:00"),
             ("user", "Maud moved to Lisbon in June", "2024-01-02 10:00:00")]
    lines += [("user", f"we talked about the weather in May, day {i}", f"2024-02-{i:02d} 10:00:00")
              for i in range(1, 21)]
    agent, fake = make([call("send_message", message="Lisbon.")], recall_tokens=60)
    agent.import_messages(lines)
    turn = agent.say("Which city was lovely in May, Lisbon or Porto?")
    recalled = [c.quote for c in turn.recalled]
    assert recalled[-2:] == ["Maud moved to Lisbon in June", "Lisbon was lovely in May"]  # chosen, shown oldest last
    assert 2 < len(recalled) < 8  # 60 tokens: a few of the weather lines too, not all twenty
    shown = fake.history[0].messages[-1].content
    assert shown.index("day ") < shown.index("Maud moved") < shown.index("Lisbon was lovely")
    # a window with little room below its warning: recall fills the room, never past it, and sends no warning
    probe, _ = make(recall_first=False)
    base = probe.main_context().build().tokens + 30  # the prompt before recall, the question and alert with it
    window = int((base + 100) / AgentOptions().warning_fraction)  # about 100 tokens of room below the warning
    small, fake = make([call("send_message", message="Lisbon.")], recall_tokens=10_000, context_window=window,
                       max_tokens=100)
    small.import_messages(lines)
    turn = small.say("Which city was lovely in May, Lisbon or Porto?")
    assert 0 < len(turn.recalled) < 22 and turn.warnings == 0
    assert turn.steps[0].prompt_tokens <= small.main_context().warning_tokens


def test_the_evaluated_agent_says_its_replies_keep_the_support_rule_under_an_abstention_precision():
    """The agent's replies carry no fitted confidence: asked for an abstention precision, the evaluation counts them
    withheld by the support rule (would_abstain), and records that it did."""
    from pagemind.eval.datasets import Example, Turn
    from pagemind.eval.memgpt import MemGPTEval

    talk = tuple(Turn("Ann" if i % 2 else "Bo", f"On day {i} we walked by the river and talked about boats.",
                      time=f"2024-01-{1 + i:02d} 10:00:00") for i in range(6))
    example = Example(id="x", dataset="locomo", task="qa", question="What did Ann and Bo talk about by the river?",
                      document_id="d", document="", conversation=talk, meta={"speakers": ["Ann", "Bo"]})
    for precision in (None, 0.9):
        # the product's agent: its reply from recall is the one judged
        fake = ScriptedLLM(by_role={"recall-answer": ["Zebras from Mars."]})
        answer = MemGPTEval(LLM(fake, concurrency=1), Store(":memory:"), recall_first=True, embedder="none",
                            abstain_precision=precision).answer_example(example)
        assert answer.text == "Zebras from Mars." and fake.roles() == ["recall-answer"]
        assert answer.support is not None and answer.support.label == "unsupported" and answer.would_abstain
        said = [f for f in answer.fallbacks if f.startswith("abstain_precision:")]
        assert said == ([] if precision is None else [said[0]]) and answer.calibrated is None
