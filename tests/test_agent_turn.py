"""One agent turn (pagemind.agent.turn.Turn) with the scripted fake: one main context per step, eviction in one
place, the pressure warning from token counts, a server's tool refusal recognised by its type."""

import json
from dataclasses import replace

import pytest

from pagemind import LLM, ScriptedLLM, Store
from pagemind.agent import Agent, AgentOptions
from pagemind.agent import turn as turn_module
from pagemind.errors import BadRequest, ContextWindowExceeded, ToolsRefused


def call(function, thoughts="thinking", **arguments):
    return json.dumps({"thoughts": thoughts, "function": function, "arguments": arguments})


def make(steps, name="sam", summarise="we talked", **options):
    """An agent on the scripted fake; recall before reply off unless asked (it measures the window once more before
    the steps: the first test counts it)."""
    fake = ScriptedLLM(by_role={"agent-step": list(steps), "summarise": summarise})
    options = {"embedder": "none", "recall_first": False, "recall_answer": False, **options}
    agent = Agent.create(LLM(fake), Store(":memory:"), name, options=AgentOptions(**options))
    return agent, fake


@pytest.fixture
def contexts(monkeypatch):
    """Every MainContext a turn makes, with how often each built a prompt."""
    made = []

    class Counted(turn_module.MainContext):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.builds = 0
            made.append(self)

        def build(self, last_step=False):
            self.builds += 1
            return super().build(last_step)

    monkeypatch.setattr(turn_module, "MainContext", Counted)
    return made


def test_one_main_context_and_one_prompt_per_step(contexts):
    agent, fake = make([call("conversation_search", query="tea", page=0, request_heartbeat=True),
                        call("core_memory_append", label="human", content="Likes tea.", request_heartbeat=True),
                        call("send_message", message="Noted.")], recall_first=True)
    turn = agent.say("I like tea.")
    assert [s.function for s in turn.steps] == ["conversation_search", "core_memory_append", "send_message"]
    # recall before reply measures the window's room once, before the steps
    assert len(contexts) == 4 and [c.builds for c in contexts] == [1, 1, 1, 1]
    assert [s.prompt_tokens for s in turn.steps] == [agent.llm.prompt_tokens(r) for r in fake.history]


def test_the_backend_counting_more_evicts_once_more_in_the_same_context(contexts):
    agent, fake = make([ContextWindowExceeded("the server counted more"), call("send_message", message="ok")],
                       keep_last=2)
    agent.import_messages([("user", f"old message {i}", "2024-01-01 10:00:00") for i in range(6)], in_context=True)
    turn = agent.say("hello")
    assert turn.messages == ["ok"] and turn.evictions == 1 and len(contexts) == 1
    assert fake.roles() == ["agent-step", "summarise", "agent-step"]
    queue = agent.store.queue(agent.id)
    assert queue[0].kind == "summary" and queue[0].payload["summary"] == "we talked"
    state = agent.store.get_agent("sam").state
    assert state.evictions == 1 and state.evicted_messages == queue[0].payload["hidden"] > 0
    assert "old message 0" in agent.search("old message 0")  # evicted from the queue, still in recall


def test_nothing_left_to_evict_is_a_clear_error():
    agent, _ = make([ContextWindowExceeded("the server counted more")], keep_last=10)
    with pytest.raises(ContextWindowExceeded, match="the last 10 messages do not fit its window"):
        agent.say("hello")


def first_prompt_tokens(reply):
    agent, _ = make([reply], context_window=4000, max_tokens=200)
    return agent.say("How are you?").steps[0].prompt_tokens


@pytest.mark.parametrize("words, warned", [(40, True), (1, False)])
def test_the_pressure_warning_is_decided_from_the_calls_token_counts(contexts, words, warned):
    reply = call("send_message", thoughts=" ".join(["hmm"] * words), message="Fine.")
    prompt = first_prompt_tokens(reply)
    contexts.clear()
    # the threshold 20 tokens above this prompt: only a long reply passes it
    agent, fake = make([reply, call("core_memory_append", label="human", content="Asked how I am.",
                                    request_heartbeat=False)],
                       context_window=4000, max_tokens=200, warning_fraction=(prompt + 20) / 4000)
    turn = agent.say("How are you?")
    threshold = agent.main_context().warning_tokens
    assert turn.steps[0].prompt_tokens == prompt <= threshold
    assert (prompt + fake.count_tokens(reply) > threshold) is warned
    assert turn.warnings == int(warned)
    assert [s.heartbeat for s in turn.steps] == (["warning", None] if warned else [None])
    assert [c.builds for c in contexts] == [1] * len(turn.steps)  # the next prompt is never built to decide
    if warned:
        assert "Warning: the conversation history will soon reach its maximum length" in \
            fake.history[1].messages[-1].content
        assert agent.store.get_agent("sam").state.warned


def tool_backend(*replies):
    fake = ScriptedLLM(by_role={"agent-step": list(replies)})
    fake.capabilities.supports_tools = True
    return fake


def test_a_refusal_of_tools_is_recognised_by_its_type():
    reply = call("send_message", message="hello")
    fake = tool_backend(ToolsRefused("400: this model cannot do that"), reply)  # the text names no tools
    store = Store(":memory:")
    agent = Agent.create(LLM(fake), store, "ana", options=AgentOptions(embedder="none"))
    turn = agent.say("hi")
    assert turn.messages == ["hello"]
    assert fake.history[0].tools and not fake.history[1].tools  # asked again with JSON replies
    assert any("native tool calls refused" in n for n in turn.trace.notes)
    assert Agent.load(LLM(fake), store, "ana").state.extra["tools_refused"] == "400: this model cannot do that"
    # a bad request that is not a refusal stands, whatever its text says
    other = tool_backend(BadRequest("400: tools are not the problem here"))
    agent = Agent.create(LLM(other), Store(":memory:"), "bo", options=AgentOptions(embedder="none"))
    with pytest.raises(BadRequest, match="not the problem"):
        agent.say("hi")
    # tool_calling=native lets a refusal stand
    strict = tool_backend(ToolsRefused("400: no tools"))
    agent = Agent.create(LLM(strict), Store(":memory:"), "cy",
                         options=AgentOptions(embedder="none", tool_calling="native"))
    with pytest.raises(ToolsRefused):
        agent.say("hi")


def test_the_openai_backend_types_a_refusal_only_for_a_request_with_tools():
    from pagemind.llm.base import LLMRequest, Tool
    from pagemind.llm.mockserver import MockServer
    from pagemind.llm.openai import OpenAICompatible

    tools = (Tool("send_message", "say", {"type": "object"}),)
    script = [{"status": 400, "message": "tools are not supported by this model"},
              {"status": 400, "message": "tools are not supported by this model"},
              {"status": 400, "message": "bad temperature"}]
    with MockServer(script=script) as server:
        backend = OpenAICompatible("m", base_url=server.url, context_window=8192)
        with pytest.raises(ToolsRefused):
            backend.execute(LLMRequest.user("x", tools=tools))
        with pytest.raises(BadRequest) as plain:
            backend.execute(LLMRequest.user("x"))
        assert type(plain.value) is BadRequest
        with pytest.raises(BadRequest) as other:
            backend.execute(LLMRequest.user("x", tools=tools))
        assert type(other.value) is BadRequest
        backend.close()


# --- recall before reply (issue 50) -----------------------------------------------------------------------------
class Clock:
    """The agent clock, set by the test (``clock.at = "2024-03-01 09:00:00"``)."""

    def __init__(self, at):
        self.at = at

    def __call__(self):
        from datetime import datetime

        return datetime.fromisoformat(self.at)


def york_then_leeds(fake, **options):
    """An agent told "I live in York", then "I moved to Leeds last month", on ``fake``; (the agent, its clock)."""
    clock = Clock("2024-03-01 09:00:00")
    agent = Agent.create(LLM(fake), Store(":memory:"), "sam", options=AgentOptions(embedder="none", **options),
                         clock=clock)
    agent.say("I live in York, in a small flat by the river.")
    clock.at = "2024-04-02 18:30:00"
    agent.say("I moved to Leeds last month, the city suits me.")
    clock.at = "2024-05-08 13:56:00"
    return agent, clock


def test_recall_before_reply_places_the_matching_memories_dated_the_latest_first_and_cites_them():
    """Told "I live in York", then "I moved to Leeds last month", the agent asked "Which city do I live in now?"
    sees both messages in a marked, dated alert after the question (Leeds first), before its first step; its reply
    cites the Leeds message. The question itself is never recalled; with recall_first off nothing is placed."""
    steps = [call("send_message", message="Noted."), call("send_message", message="Noted."),
             call("send_message", message="You live in Leeds now, since you moved there last month.")]
    fake = ScriptedLLM(by_role={"agent-step": list(steps), "summarise": "we talked"})
    agent, _ = york_then_leeds(fake, recall_answer=False)  # the alert the agent's own steps read
    turn = agent.say("Which city do I live in now?")
    prompt = fake.history[-1].prompt_text()
    recalled = prompt[prompt.index("Recalled from your memory"):]
    assert recalled.index("Leeds") < recalled.index("York")  # the later fact first (recall_order=recent, the default)
    assert recalled.startswith("Recalled from your memory for the user's message, the most recent first (")
    assert "[2024-04-02 18:30] user: I moved to Leeds" in recalled and "[2024-03-01 09:00] user: I live in York" \
        in recalled
    assert "Which city do I live in now?" not in recalled  # never the message being answered
    assert prompt.index("Which city do I live in now?") < prompt.index("Recalled from your memory")
    assert turn.citations and turn.citations[0].unit == "message" and "Leeds" in turn.citations[0].quote
    assert any("recall before reply: 2 message(s)" in note for note in turn.trace.notes)
    # what was placed is the turn's own record: the run, the viewer and Letta's reply show it, latest first
    assert [c.unit for c in turn.recalled] == ["message", "message"] and "Leeds" in turn.recalled[0].quote
    assert "York" in turn.recalled[1].quote and turn.as_dict()["recalled"][0]["quote"] == turn.recalled[0].quote

    quiet = ScriptedLLM(by_role={"agent-step": [call("send_message", message="Noted.")] * 2})
    paper = Agent.create(LLM(quiet), Store(":memory:"), "pat", options=AgentOptions(embedder="none",
                                                                                    recall_first=False))
    paper.say("I live in York.")
    assert paper.say("Which city do I live in?").recalled == []
    assert "Recalled from your memory" not in quiet.history[-1].prompt_text()


def test_recall_before_reply_can_place_the_best_match_first():
    """Issue 50: on LoCoMo the 1.5B agent answered from the first recalled line; the most recent first put the line
    recall ranked best ("Researching adoption agencies" for "What did Caroline research?") fourth, and the agent
    copied a poetry reading. With recall_order=rank the lines go in recall's own ranking, each dated."""
    steps = [call("send_message", message="Noted.")] * 3 + [call("send_message", message="Adoption agencies.")]
    fake = ScriptedLLM(by_role={"agent-step": list(steps), "summarise": "we talked"})
    clock = Clock("2023-05-25 13:17:00")
    options = AgentOptions(embedder="none", recall_order="rank", recall_answer=False)
    agent = Agent.create(LLM(fake), Store(":memory:"), "sam", options=options, clock=clock)
    agent.say("Researching adoption agencies has been my dream for a family.")
    clock.at = "2023-07-20 21:03:00"
    agent.say("Caroline here: I painted a lake at sunrise.")
    clock.at = "2023-10-13 10:40:00"
    agent.say("Caroline again: the poetry reading was powerful, people shared their stories.")
    ranked = agent.tools.rank_recall("What did Caroline research?")  # as recall will rank them (before it is asked)
    turn = agent.say("What did Caroline research?")
    assert [c.index for c in turn.recalled] == ranked[:len(turn.recalled)] and len(turn.recalled) >= 2
    assert "adoption agencies" in turn.recalled[0].quote  # the best match first, though the oldest
    prompt = fake.history[-1].prompt_text()
    assert "Recalled from your memory for the user's message, the best match first (" in prompt


def test_the_reply_from_recall_answers_a_question_in_one_plain_call_and_cites_what_was_recalled():
    """recall_answer: the question is answered by one call that reads the recalled lines (dated, the latest first),
    the user's block and the conversation's last messages — no step format, no search — and sent as the turn's
    send_message step (stored, so the next turn's context shows it), cited at the Leeds message."""
    fake = ScriptedLLM(by_role={"agent-step": [call("send_message", message="Noted.")] * 2,
                                "recall-answer": ["Leeds (you moved there last month)."]})
    agent, _ = york_then_leeds(fake, recall_answer=True)
    human = next(b for b in agent.store.blocks(agent.id) if b.label == "human")
    agent.store.put_block(agent.id, replace(human, value="Name: Sam."), "test")
    turn = agent.say("Which city do I live in now?")
    asked = fake.history[-1]
    assert asked.role == "recall-answer" and not asked.tools and asked.constraint is None
    text = asked.prompt_text()
    assert "What you know about the user:\nName: Sam." in text
    recalled = text[text.index("Recalled from your memory, the most recent first"):]
    assert recalled.index("I moved to Leeds") < recalled.index("I live in York")  # dated lines, the latest first
    assert "[2024-04-02 18:30] user: I moved to Leeds" in recalled
    conversation = text[text.index("The conversation so far:"):text.index("Recalled from")]
    assert "assistant: Noted." in conversation and "Bootup" not in conversation  # not the boot message
    assert text.rstrip().endswith("If they do not tell, say that you do not know.")
    assert turn.messages == ["Leeds (you moved there last month)."] and turn.stop_reason == "yield"
    assert [s.function for s in turn.steps] == ["send_message"] and turn.steps[0].valid
    assert turn.as_dict()["probability"]["basis"] == "none"  # the fake gives no log-probabilities: it says so
    (answered,) = [e for e in turn.trace.events if e.role == "recall-answer"]  # the turn's one call
    assert turn.steps[0].prompt_tokens == answered.prompt_tokens > 0 and turn.usage.calls == 1
    assert turn.citations and "Leeds" in turn.citations[0].quote and turn.citations[0].unit == "message"
    assert turn.support is not None and turn.support.label != "unsupported"
    # stored as the agent's step: the next turn's context holds the reply as the agent's own
    assert any(e.kind == "step" and e.payload["arguments"] == {"message": "Leeds (you moved there last month)."}
               for e in agent.store.queue(agent.id))


def told(fake, *said, now):
    """An agent on ``fake`` told each ``(time, message)`` of ``said`` at its time, its clock then set to ``now``."""
    clock = Clock(said[0][0])
    agent = Agent.create(LLM(fake), Store(":memory:"), "sam", options=AgentOptions(embedder="none"), clock=clock)
    for at, message in said:
        clock.at = at
        agent.say(message)
    clock.at = now
    return agent


def test_a_question_about_time_gone_by_gets_each_recalled_line_counted_back_from_now():
    """Issue 50: "How many weeks ago did I adopt my cat?" was answered 1 week for 4 — the 1.5B model subtracts
    dates badly. Asked about time gone by, each recalled line says how long before now it was, and the reply from
    recall is told the date now; another question's lines are only dated."""
    fake = ScriptedLLM(by_role={"agent-step": [call("send_message", message="Noted.")] * 2,
                                "recall-answer": ["4 weeks ago.", "In May."]})
    agent = told(fake, ("2023-05-20 11:00:00", "I adopted a cat today and named her Miso."), now="2023-06-17 10:00:00")
    assert agent.say("How many weeks ago did I adopt my cat Miso?").messages == ["4 weeks ago."]
    text = fake.history[-1].prompt_text()
    assert "[2023-05-20 11:00, 28 days (4 weeks) before now] user: I adopted a cat today" in text
    assert "\n\nNow: 2023-06-17 10:00\n\nMessage:" in text
    agent.say("When did I adopt my cat Miso?")
    text = fake.history[-1].prompt_text()
    assert "[2023-05-20 11:00] user: I adopted a cat today" in text and "before now" not in text
    assert "Now:" not in text


def test_a_question_of_which_came_first_gets_the_recalled_lines_in_the_order_they_were_said():
    """Issue 50: asked "Which did I start first, pottery classes or the Spanish course?" with the lines the most
    recent first, the default model named the first line shown (the later one). A question of which came first sees
    the recalled lines the oldest first, and is told so; another question keeps the most recent first."""
    fake = ScriptedLLM(by_role={"agent-step": [call("send_message", message="Noted.")] * 3,
                                "recall-answer": ["Pottery classes.", "Spanish."]})
    agent = told(fake, ("2023-05-08 18:00:00", "I started pottery classes tonight, my bowl was lopsided."),
                 ("2023-09-12 19:00:00", "First lesson of my Spanish course today, hola!"), now="2023-11-20 10:00:00")
    agent.say("Which did I start first, pottery classes or the Spanish course?")
    text = fake.history[-1].prompt_text()
    recalled = text[text.index("Recalled from your memory, the oldest first"):]
    assert recalled.index("pottery classes tonight") < recalled.index("Spanish course today")
    agent.say("What is my Spanish course like?")
    text = fake.history[-1].prompt_text()
    recalled = text[text.index("Recalled from your memory, the most recent first"):]
    assert recalled.index("[2023-11-20") < recalled.index("[2023-09-12 19:00] user: First lesson of my Spanish")


def test_a_reply_from_recall_that_says_nothing_was_recalled_lets_the_agent_search():
    """When the reply from recall says the memories do not tell ("I do not know"), nothing is sent: the agent's own
    steps follow and the trace says why; a message that asks nothing is never answered from recall."""
    steps = [call("send_message", message="Noted.")] * 2 + [
        call("conversation_search", query="Leeds", page=0, request_heartbeat=True),
        call("send_message", message="You live in Leeds."), call("send_message", message="Good to know.")]
    fake = ScriptedLLM(by_role={"agent-step": steps, "recall-answer": ["I do not know where you live now."]})
    agent, _ = york_then_leeds(fake, recall_answer=True)
    turn = agent.say("Which city do I live in now?")
    assert [s.function for s in turn.steps] == ["conversation_search", "send_message"]
    assert turn.messages == ["You live in Leeds."]
    assert any("reply from recall: the recalled memories do not answer" in n for n in turn.trace.notes)
    asked = sum(r.role == "recall-answer" for r in fake.history)
    agent.say("I also like the river walks there.")  # not a question: the agent's own step answers
    assert sum(r.role == "recall-answer" for r in fake.history) == asked == 1


def test_a_reply_from_recall_that_sends_the_question_back_is_held_and_the_agent_steps_on():
    steps = [call("send_message", message="Noted.")] * 2 + [call("send_message", message="You live in Leeds.")]
    fake = ScriptedLLM(by_role={"agent-step": steps, "recall-answer": ["Which city do I live in now?"]})
    agent, _ = york_then_leeds(fake, recall_answer=True)
    turn = agent.say("Which city do I live in now?")
    assert turn.messages == ["You live in Leeds."]
    assert [(s.function, s.status) for s in turn.steps] == [("send_message", "Failed"), ("send_message", "OK")]
    assert "repeats the user's message" in turn.steps[0].result
    assert "Not sent: your reply repeats" in fake.history[-1].prompt_text()  # the agent is told why


@pytest.mark.parametrize("reply", ["send_message: Leeds", 'send_message("Leeds")', "send_message(message='Leeds')",
                                   'send_message(message="Leeds", request_heartbeat=false)',
                                   '{"thoughts": "t", "function": "send_message", "arguments": {"message": "Leeds"}}',
                                   "Leeds"])
def test_a_reply_from_recall_written_as_a_call_is_read_as_its_message(reply):
    """The evaluated agent's message names send_message; the default model once answered "send_message: Senior
    editor" (scored 0 by LongMemEval's judge)."""
    fake = ScriptedLLM(by_role={"agent-step": [call("send_message", message="Noted.")] * 2, "recall-answer": [reply]})
    agent, _ = york_then_leeds(fake, recall_answer=True)
    assert agent.say("Which city do I live in now?").messages == ["Leeds"]


@pytest.mark.parametrize("message, answered", [
    ("Which city do I live in now?", True),
    ("A question about our past conversations: When did I move?\nSearch your memory, then answer in a few words "
     "with send_message.", True),
    ("What record did John break, and what did Caroline note about it?", True),  # words of requests, not asked
    ("Please note that I prefer tea. What do I drink?", False),
    ("Remember my code is 4417. What is it?", False),
    ("Can you remember that my locker code is 4417?", False),
    ("Could you update my city to Leeds?", False),
    ("I moved to Leeds last month. Which bus goes to the centre?", False),
    ("My sister is called Ann. Do you know her?", False),
    ("Nice weather today.", False),
    ("I'm vegan, so what should I cook tonight?", False),
    ("Hey, I moved to Leeds, which bus goes to the centre?", False),
    ("Actually I live in Leeds now. Where do I live?", False),
    ("Do not forget that my code is 4417, ok?", False),
    ("Add to your memory that I am vegan, ok?", False),
    ("From now on call me Bob, okay?", False),
    ("(Current date: 2023/09/01 (Fri) 10:00) Which city do I live in now?", True),
    ("Which of these did I tell you about myself?\n(A) I maintain rental properties.\n(B) My mom was a librarian. "
     "I used to be a librarian.\nSearch your memory, then answer with the letter.", True),  # options tell nothing
])
def test_only_a_message_that_only_asks_is_answered_from_recall(message, answered):
    """A message asking the agent to keep or change a memory, or telling something of the user's own beside its
    question, is the agent's own steps to answer (they may save it): a reply from recall would say "Sure" and save
    nothing."""
    assert turn_module._only_asks(message) is answered


@pytest.mark.parametrize("reply", ["The memories do not tell.", "The memories above do not say.",
                                   "I have no record of that.", "You haven't told me that.",
                                   "Sorry, I don't have that information.", "It is not in my memory.",
                                   "Not mentioned in the memories."])
def test_a_reply_from_recall_saying_the_memories_do_not_tell_lets_the_agent_search(reply):
    steps = [call("send_message", message="Noted.")] * 2 + [call("send_message", message="You live in Leeds.")]
    fake = ScriptedLLM(by_role={"agent-step": steps, "recall-answer": [reply]})
    agent, _ = york_then_leeds(fake, recall_answer=True)
    assert agent.say("Which city do I live in now?").messages == ["You live in Leeds."]


def test_an_echo_held_from_recall_leaves_the_agent_its_own_hold_and_its_step_budget():
    """The echo's hold is not the turn's search_again: the agent's own unsupported reply after a search is still
    held once; the turn makes at most max_steps steps in all, the held reply from recall among them, with the
    failed step's heartbeat stored as the loop stores one."""
    steps = [call("send_message", message="Noted.")] * 2 + [
        call("conversation_search", query="city", page=0, request_heartbeat=True),
        call("send_message", message="You take the number 42 tram to Paris."),
        call("send_message", message="You live in Leeds.")]
    fake = ScriptedLLM(by_role={"agent-step": steps, "recall-answer": ["Which city do I live in now?"]})
    agent, _ = york_then_leeds(fake, recall_answer=True, max_steps=5)
    turn = agent.say("Which city do I live in now?")
    assert [(s.function, s.status) for s in turn.steps] == [
        ("send_message", "Failed"), ("conversation_search", "OK"), ("send_message", "Failed"), ("send_message", "OK")]
    assert turn.messages == ["You live in Leeds."]
    queue = agent.store.queue(agent.id)
    held = next(i for i, e in enumerate(queue) if e.kind == "step" and e.payload.get("held"))
    assert [e.kind for e in queue[held:held + 3]] == ["step", "function_result", "heartbeat"]
    # the budget counts the held reply: at most max_steps steps in all
    steps = [call("send_message", message="Noted.")] * 2 + [
        call("conversation_search", query="city", page=0, request_heartbeat=True)] * 9
    fake = ScriptedLLM(by_role={"agent-step": steps, "recall-answer": ["Which city do I live in now?"],
                                "summarise": "we talked"})
    agent, _ = york_then_leeds(fake, recall_answer=True, max_steps=3, final_reply=False)
    turn = agent.say("Which city do I live in now?")
    assert len(turn.steps) == 3 and turn.stop_reason == "max_steps"


def test_a_long_reply_from_recall_without_a_sentence_end_is_cut_within_the_bound():
    fake = ScriptedLLM(by_role={"agent-step": [call("send_message", message="Noted.")] * 2,
                                "recall-answer": ["x" * 10 + " word" * 300]})
    agent, _ = york_then_leeds(fake, recall_answer=True)
    (sent,) = agent.say("Which city do I live in now?").messages
    assert len(sent) == 600 and sent.endswith("...")


def test_an_agent_stored_before_the_reply_from_recall_keeps_replying_with_its_own_steps():
    """Options are stored whole: an agent stored without recall_answer (made before it existed) reads back with it
    off — it behaves after the upgrade as before — while a new agent has it on; the same for a pagemind Agent File."""
    store = Store(":memory:")
    made = Agent.create(LLM(ScriptedLLM([])), store, "old", options=AgentOptions(embedder="none"))
    assert made.options.recall_answer
    older = {k: v for k, v in made.options.as_dict().items() if k != "recall_answer"}
    store.set_agent_settings(made.id, older)
    assert Agent.load(LLM(ScriptedLLM([])), store, "old").options.recall_answer is False
    assert AgentOptions.stored(older).recall_answer is False and AgentOptions.stored({}).recall_answer


def test_a_long_reply_from_recall_is_cut_to_what_send_message_takes():
    long = "You live in Leeds. " + "It is a fine city with many parks and a river. " * 20
    fake = ScriptedLLM(by_role={"agent-step": [call("send_message", message="Noted.")] * 2,
                                "recall-answer": [long]})
    agent, _ = york_then_leeds(fake, recall_answer=True)
    turn = agent.say("Which city do I live in now?")
    (sent,) = turn.messages
    assert sent.startswith("You live in Leeds.") and sent.endswith(".") and 300 < len(sent) <= 600


def told_then_searched(said: str, at: str, query: str, question: str, **options):
    """An agent told ``said`` at ``at`` and asked ``question`` months later, its first step a recall search for
    ``query``: (the agent, the later turn)."""
    steps = [call("send_message", message="ok"),
             call("conversation_search", query=query, page=0, request_heartbeat=True),
             call("send_message", message="Found it.")]
    clock = Clock(at)
    agent = Agent.create(LLM(ScriptedLLM(by_role={"agent-step": steps})), Store(":memory:"), "sam",
                         options=AgentOptions(embedder="none", search_again=0, **{"recall_answer": False, **options}),
                         clock=clock)
    agent.say(said)
    clock.at = "2024-01-10 10:00:00"
    return agent, agent.say(question)


def test_a_recall_search_finds_messages_by_their_date_and_never_the_turns_own():
    """Dates are searchable: "May 2023" finds what was said on 8 May 2023 (the agent clock's date, spoken); the
    turn's own question and thought are not results."""
    _, turn = told_then_searched("We adopted a dog today.", "2023-05-08 13:56:00", "May 2023",
                                 "What did we do in May 2023?", recall_first=False)
    result = turn.steps[0].result
    assert "We adopted a dog today (8 May 2023)." in result and "What did we do" not in result


def test_a_relative_date_is_read_back_with_the_date_it_stood_for_and_found_by_it():
    """Issue 50: "I lost my job yesterday", said on 20 January 2023 and read back in January 2024, is found by a
    search for "19 January 2023" and shows that date — in the search's results and in what is recalled before a
    reply (the agent answered "yesterday" on LoCoMo, and no date scores nothing)."""
    agent, turn = told_then_searched("I lost my job as a banker yesterday.", "2023-01-20 16:04:00",
                                     "19 January 2023", "When did I lose my job as a banker?")
    assert "banker yesterday (19 January 2023)." in turn.steps[0].result
    recalled = next(e.payload["message"] for e in agent.store.queue(agent.id) if "Recalled from your memory" in
                    str(e.payload.get("message", "")))
    assert "banker yesterday (19 January 2023)." in recalled


def test_the_same_call_a_third_time_in_one_turn_is_not_run():
    """Issue 50: the default model looped seven identical core_memory_append calls (464 s) before its forced last
    step. The third identical call of a turn is not run: its result says why, and the agent replies."""
    same = call("core_memory_append", label="human", content="Lives in York.", request_heartbeat=True)
    agent, _ = make([same, same, same, call("send_message", message="Noted: York.")], recall_first=False)
    turn = agent.say("I live in York.")
    assert [s.status for s in turn.steps] == ["OK", "Failed", "Failed", "OK"] and turn.messages == ["Noted: York."]
    assert turn.steps[1].result.startswith("Already in core memory")  # the second runs (and adds nothing)
    assert turn.steps[2].result.startswith("Not run: you made this same core_memory_append call twice")
    human = next(b for b in agent.store.blocks(agent.id) if b.label == "human")
    assert human.value.count("Lives in York.") == 1
    assert any("the same call a third time" in note for note in turn.trace.notes)


def test_a_fact_the_user_told_about_themselves_is_not_written_into_the_persona():
    """Issue 50: told "I live in York", the default model wrote "I live in York." into its own persona. A persona
    append that copies the user's first-person words goes to the human block instead ("The user said: ..."), and
    its result says so; a replace of that kind is refused. The agent's own first-person persona lines still go in."""
    agent, _ = make([call("core_memory_append", label="persona", content="I live in York.", request_heartbeat=True),
                     call("core_memory_replace", label="persona", old_content="My name is sam.",
                          new_content="I live in York.", request_heartbeat=True),
                     call("core_memory_append", label="persona", content="I like to keep my answers short.",
                          request_heartbeat=True),
                     call("send_message", message="Noted.")], recall_first=False)
    persona = next(b for b in agent.store.blocks(agent.id) if b.label == "persona")
    agent.store.put_block(agent.id, replace(persona, value="My name is sam."), "test")
    turn = agent.say("I live in York.")
    assert [s.status for s in turn.steps] == ["OK", "Failed", "OK", "OK"]
    assert "Saved in the human block, not persona" in turn.steps[0].result
    assert "persona is who you are" in turn.steps[1].result
    blocks = {b.label: b.value for b in agent.store.blocks(agent.id)}
    assert "York" not in blocks["persona"] and "The user said: I live in York." in blocks["human"]
    assert "I like to keep my answers short." in blocks["persona"]

def test_a_users_fact_opening_with_my_goes_to_the_human_block_too():
    """With the default model: asked "Please save this in your core memory about me: My locker code is 4417.", the
    agent appended "My locker code is 4417." to its persona — "My" opening the sentence was not read as the first
    person."""
    agent, _ = make([call("core_memory_append", label="persona", content="My locker code is 4417.",
                          request_heartbeat=True),
                     call("send_message", message="Saved.")], recall_first=False)
    turn = agent.say("Please save this in your core memory about me: My locker code is 4417.")
    assert "Saved in the human block, not persona" in turn.steps[0].result
    blocks = {b.label: b.value for b in agent.store.blocks(agent.id)}
    assert "4417" not in blocks["persona"] and "The user said: My locker code is 4417." in blocks["human"]


def test_the_agents_own_name_given_by_the_user_stays_in_its_persona():
    """Told "From now on your name is Max.", the agent's "My name is Max." is its own: the user said nothing of
    themselves (the words are the user's, the first person is not)."""
    agent, _ = make([call("core_memory_replace", label="persona", old_content="My name is sam.",
                          new_content="My name is Max.", request_heartbeat=True),
                     call("send_message", message="I am Max now.")], recall_first=False)
    persona = next(b for b in agent.store.blocks(agent.id) if b.label == "persona")
    agent.store.put_block(agent.id, replace(persona, value="My name is sam."), "test")
    turn = agent.say("From now on your name is Max.")
    assert turn.steps[0].status == "OK"
    blocks = {b.label: b.value for b in agent.store.blocks(agent.id)}
    assert blocks["persona"] == "My name is Max." and "Max" not in blocks["human"]


def test_a_short_reply_naming_a_place_cites_the_message_that_names_it():
    """With the default model the agent answered "You live in Leeds now." — one content word shared with "I moved to
    Leeds last month" and so no citation. A shared name (capitalised in the reply) counts twice."""
    from pagemind.agent.evidence import support
    from pagemind.citations import Citation

    said = "I moved to Leeds last month, the city suits me."
    message = Citation("recall", "message", 7, 0, len(said), said, "message")
    [cited] = support([message], "You live in Leeds now.")
    assert cited.index == 7 and "Leeds" in cited.quote
    assert support([message], "You live there now.") == []  # one ordinary shared word is still chance


def spoken(texts: dict[int, str], speaker: str, at: str):
    """Messages ``texts`` (by seq) an imported conversation's ``speaker`` said at ``at``: (the events by seq, each
    one's citation as recall gives it)."""
    from pagemind.agent.evidence import message_citation
    from pagemind.agent.memory import Event

    said = {k: Event("user_message", {"message": t, "speaker": speaker}, at, k) for k, t in texts.items()}
    return said, [message_citation(e) for e in said.values()]


def test_a_reply_cites_the_sentence_holding_its_own_words_and_a_speakers_sentences_are_theirs():
    """LoCoMo, the default model: "John has done kickboxing." for "What martial arts has John done?" cited "John:
    I've done weight training so far too." — only words the reply restates from the question — and not "I'm doing
    kickboxing", one shared word. A sentence must share one of the reply's own words; each sentence of a message an
    imported conversation's speaker said has the speaker's name among its words (kept runs' replies: evidence
    recall 0.446 -> 0.456, precision 0.232 -> 0.325)."""
    from pagemind.agent.evidence import support

    texts = {3: "John: Woah, Maria, that sounds cool! I'm doing kickboxing and it's giving me so much energy.",
             7: "John: I've done weight training so far too."}
    said, cites = spoken(texts, "John", "2023-03-01 10:00:00")
    asked = "What martial arts has John done?"
    [cited] = support(cites, "John has done kickboxing.", messages=said, question=asked)
    assert cited.index == 3 and cited.quote == "I'm doing kickboxing and it's giving me so much energy."
    # without the question and the speakers, the restated words decide, as before
    assert [c.index for c in support(cites, "John has done kickboxing.")] == [7]


def test_a_speakers_name_alone_does_not_cite_everything_the_speaker_said():
    """"That was Melanie." for "Who painted a lake sunrise?": the sentence about the sunrise Melanie said is cited,
    not every message of hers (her name is a word of each, counted once and only where the question's words are)."""
    from pagemind.agent.evidence import support

    texts = {2: "I painted that lake sunrise last year!", 5: "My kids love the beach.", 8: "Work was busy today."}
    said, cites = spoken(texts, "Melanie", "2023-05-08 10:00:00")
    cited = support(cites, "That was Melanie.", messages=said, question="Who painted a lake sunrise?")
    assert [c.index for c in cited] == [2]


def test_a_date_the_reply_from_recall_worked_out_cites_the_message_it_came_from():
    """The turn reads the cited messages' times: "20 May 2023." for "When did I run a charity race?" cites "I ran a
    charity race for mental health last Saturday", said on Thursday 25 May 2023."""
    fake = ScriptedLLM(by_role={"agent-step": [call("send_message", message="Noted.")] * 2,
                                "recall-answer": ["20 May 2023."]})
    agent = told(fake, ("2023-05-25 11:00:00", "I ran a charity race for mental health last Saturday."),
                 ("2023-05-26 09:00:00", "The weather is lovely this week."), now="2023-06-17 10:00:00")
    turn = agent.say("When did I run a charity race?")
    assert turn.messages == ["20 May 2023."]
    assert [c.quote for c in turn.citations] == ["I ran a charity race for mental health last Saturday."]


def test_a_number_cites_the_message_that_spells_it():
    """LongMemEval-format sample, the default model: "3" for "How many bikes do I own now?" cited nothing — the
    message says "three bikes". A number however written is one word of the alignment."""
    fake = ScriptedLLM(by_role={"agent-step": [call("send_message", message="Noted.")] * 2, "recall-answer": ["3"]})
    agent = told(fake, ("2023-03-01 09:00:00", "I own two bikes, a road bike and a mountain bike."),
                 ("2023-08-01 09:00:00", "I bought a gravel bike, so now I have three bikes."),
                 now="2023-10-10 08:00:00")
    turn = agent.say("How many bikes do I own now?")
    assert turn.messages == ["3"] and [c.quote for c in turn.citations] == [
        "I bought a gravel bike, so now I have three bikes."]


def test_a_persona_append_that_joins_several_of_the_users_messages_goes_to_the_human_block_too():
    """With the default model: told "I live in York…" then "I moved to Leeds…", the agent appended both sentences
    to its persona in one call. The user's words still in context count, not only the running turn's."""
    joined = "I live in York, in a flat by the river. I moved to Leeds last month, the city suits me."
    agent, _ = make([call("send_message", message="Noted."),
                     call("core_memory_append", label="persona", content=joined, request_heartbeat=True),
                     call("send_message", message="Noted.")], recall_first=False)
    agent.say("I live in York, in a flat by the river.")
    turn = agent.say("I moved to Leeds last month, the city suits me.")
    assert "Saved in the human block, not persona" in turn.steps[0].result
    blocks = {b.label: b.value for b in agent.store.blocks(agent.id)}
    assert "Leeds" not in blocks["persona"] and f"The user said: {joined}" in blocks["human"]


def test_a_reply_that_repeats_the_users_question_is_held_once_and_the_next_is_sent():
    asked = "A question about our past conversations: What did Caroline research?\nSearch your memory, then answer."
    echo = "A question about our past conversations: What did Caroline research? Search your memory, then answer."
    agent, _ = make([call("send_message", message=echo), call("send_message", message="Adoption agencies.")])
    turn = agent.say(asked)
    assert turn.messages == ["Adoption agencies."] and turn.steps[0].status == "Failed"
    assert turn.steps[0].result.startswith("Not sent: your reply repeats the user's message")
    from pagemind.agent.turn import _echoes

    assert _echoes("What did Caroline research?", asked)  # a run of the message's words
    assert not _echoes("What did Caroline research? She researched adoption agencies.", asked)  # it answers
    assert not _echoes("Caroline researched adoption agencies.", asked) and not _echoes("Yes.", "Is it?")
    # a yes or no restating the question answers it (LoCoMo: "Would Caroline likely have Dr. Seuss books …?")
    polar = "Would Caroline likely have Dr. Seuss books on her bookshelf?"
    assert not _echoes("Yes, Caroline likely would have Dr. Seuss books on her bookshelf.", polar)
    assert _echoes("Would Caroline likely have Dr. Seuss books on her bookshelf?", polar)


def test_a_call_and_its_results_at_the_queues_tail_are_evicted_together_rather_than_failing_the_turn():
    """The tiny model's failed reply, its result and heartbeat, then the pressure warning: keeping the last 2 would
    split the call from its results, so the call goes out with them (the warning stays); a clean tail keeps 2."""
    from pagemind.agent.memory import Event

    agent, _ = make([], keep_last=2)
    turn = turn_module.Turn(agent, "What is my locker code?")
    when = "2026-05-04 10:04:00"
    tail = [Event("step", {}, when), Event("function_result", {}, when), Event("heartbeat", {}, when),
            Event("system_alert", {}, when)]
    assert turn._cut_point(tail) == 3
    clean = [Event("user_message", {}, when), Event("step", {}, when), Event("function_result", {}, when),
             Event("user_message", {}, when), Event("step", {}, when), Event("function_result", {}, when)]
    cut = turn._cut_point(clean)
    assert 0 < cut <= len(clean) - 2 and clean[cut].kind not in ("function_result", "heartbeat")
    assert turn._cut_point(tail[:2]) == 0  # nothing beyond the last 2: still the clear error
