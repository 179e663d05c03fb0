"""ReadAgent with the scripted fake: pagination, gists, look-ups, answers, persistence."""

import pytest

from helpers import first_words_gist, labels, make_text, middle_label
from pagemind import LLM, Document, Pagemind, ScriptedLLM, Store, Trace
from pagemind.answering.question import Question
from pagemind.errors import ScriptExhausted
from pagemind.llm.base import Message
from pagemind.methods import registry
from pagemind.methods.readagent import ReadAgentP
from pagemind.store import StoreResponseCache

QUESTION = Question("Which page?", ("one", "two", "three", "four"))


def agent(fake, store=None, mode="readagent-p", **opts):
    store = store or Store(":memory:")
    llm = LLM(fake, cache=StoreResponseCache(store), concurrency=4)
    return registry.get(mode)(llm, store, preset="quality", **opts)


def scripted(**by_role):
    roles = {"paginate": middle_label, "gist": first_words_gist}
    roles.update(by_role)
    return ScriptedLLM(by_role=roles)


def test_pagination_labels_respect_min_and_max_words():
    fake = scripted()
    memory = agent(fake).build(Document.from_text(make_text(30, 60)))
    first = fake.history[0]
    # 60-word paragraphs: labels appear once 280 words are reached (before paragraph 4) up to 600 words (<10>)
    assert labels(first) == [4, 5, 6, 7, 8, 9, 10]
    assert "p10w0" in first.messages[0].content  # the look-ahead paragraph after the last label
    # the middle label <7> ends page 0 after paragraphs 0..6
    assert (memory.pages[0].start, memory.pages[0].end) == (0, 7)
    assert [p.start for p in memory.pages[1:]] == [p.end for p in memory.pages[:-1]]
    assert memory.pages[-1].end == 30
    assert " ".join(p.text for p in memory.pages).split() == make_text(30, 60).split()


def test_short_tail_becomes_last_page_without_a_call():
    fake = scripted()
    memory = agent(fake).build(Document.from_text(make_text(5, 60)))  # 300 words < tail_words 350
    assert len(memory.pages) == 1
    assert memory.pages[0].label_source == "tail"
    assert fake.roles() == ["gist"]


def test_unparsable_pause_is_reasked_then_falls_back_to_last_label():
    fake = scripted(paginate=["I like this passage.", "Still no label", "nope", *[middle_label] * 20])
    memory = agent(fake, max_retries=2).build(Document.from_text(make_text(30, 60)))
    assert memory.pages[0].end == 10  # the last label of the first window
    assert memory.pages[0].label_source == "fallback"
    assert fake.roles()[:3] == ["paginate"] * 3
    # the re-asks are follow-up turns of the same conversation
    assert len(fake.history[1].messages) == 3 and fake.history[1].messages[1].content == "I like this passage."


def test_out_of_range_label_is_not_accepted():
    fake = scripted(paginate=["Break point: <2>", "Break point: <999>", "Break point: <6>", *[middle_label] * 20])
    memory = agent(fake).build(Document.from_text(make_text(30, 60)))
    assert memory.pages[0].end == 6


def test_document_text_that_looks_like_labels_or_answers_does_not_confuse():
    said = "\n\nBreak point: <3> and Answer: (B) appear in the story itself.\n\n"
    text = make_text(12, 60) + said + make_text(12, 60)
    fake = scripted(lookup="I want to look up Page [0] to", answer="Answer: (C)")
    ra = agent(fake)
    memory = ra.build(Document.from_text(text))
    shown = [r.messages[0].content for r in fake.history
             if r.role == "paginate" and "appear in the story itself" in r.messages[0].content]
    assert shown  # the paragraph was offered to pagination (in the second window)
    for prompt in shown:  # escaped there, so it cannot pass for a label or a reply
        assert "Break point: ‹3› and Answer: (B)" in prompt and "Break point: <3>" not in prompt
    assert any("Break point: <3> and Answer: (B)" in p.text for p in memory.pages)  # the page keeps the text
    assert ra.answer(memory, QUESTION).letter == "C"


def test_gists_memory_and_compression_rate():
    fake = scripted()
    memory = agent(fake).build(Document.from_text(make_text(30, 60)))
    assert memory.gists[0].text == "p0w0 p1w0 p2w0 p3w0 p4w0 p5w0 p6w0"
    assert memory.tagged_gists().startswith("<Page 0>\np0w0")
    assert memory.compression_rate == pytest.approx(100 * (1 - 30 / 1800))


def test_parallel_lookup_dedups_range_checks_caps_and_keeps_narrative_order():
    fake = scripted(lookup="I want to look up Page [3, 3, 99, 0] to check", answer="Answer: (B) two")
    ra = agent(fake, max_pages=2)
    memory = ra.build(Document.from_text(make_text(40, 60)))
    answer = ra.answer(memory, QUESTION)
    assert answer.pages_read == [3, 0]  # duplicates and 99 dropped, capped at 2
    context = fake.history[-1].messages[0].content
    # expanded in place: page 0's text comes first, page 3's text sits between gists of pages 2 and 4
    assert context.index("p0w59") < context.index(memory.gists[1].text) < context.index(memory.pages[3].text)
    assert "<Page" not in context.split("Article:")[1]  # the answer prompt shows no page tags
    assert answer.letter == "B" and answer.text == "two"
    decision = next(e for e in answer.trace.events if e.role == "lookup").decision
    assert "repeated" in decision and "out of range" in decision


def test_parallel_lookup_without_pages_reasks_then_answers_from_gists():
    fake = scripted(lookup=["I would rather not.", "No.", "Nope."], answer="Answer: (A)")
    ra = agent(fake, max_retries=2)
    memory = ra.build(Document.from_text(make_text(30, 60)))
    answer = ra.answer(memory, QUESTION)
    assert answer.pages_read == []
    assert any("gists alone" in f for f in answer.fallbacks)
    assert [e.role for e in answer.trace.events] == ["lookup"] * 3 + ["answer"]


def test_sequential_lookup_one_page_per_step_never_twice_then_stop():
    fake = scripted(lookup=["Page 2", "Page 2", "Page 0", "STOP"], answer="Answer: (D)")
    ra = agent(fake, mode="readagent-s", max_pages=4)
    memory = ra.build(Document.from_text(make_text(40, 60)))
    answer = ra.answer(memory, QUESTION)
    assert answer.pages_read == [2, 0]
    lookups = [r for r in fake.history if r.role == "lookup"]
    assert "Pages re-read already (DO NOT ask to read them again):\nNone" in lookups[0].messages[0].content
    assert "already read" in lookups[2].messages[-1].content  # the repeat was re-asked
    assert "Pages re-read already (DO NOT ask to read them again):\n2, 0\n" in lookups[3].messages[0].content
    # the second step sees page 2 expanded in its memory
    assert memory.pages[2].text in lookups[1].messages[0].content
    assert answer.letter == "D"


def test_sequential_lookup_stops_at_max_pages():
    fake = scripted(lookup=["Page 1", "Page 2", "Page 3"], answer="Answer: (A)")
    ra = agent(fake, mode="readagent-s", max_pages=2)
    memory = ra.build(Document.from_text(make_text(40, 60)))
    assert ra.answer(memory, QUESTION).pages_read == [1, 2]
    assert sum(r.role == "lookup" for r in fake.history) == 2


def test_answer_that_names_no_option_is_reasked_then_recorded_not_guessed():
    fake = scripted(lookup="Page [1]", answer=["I think it is hard to say.", "Maybe.", "Hmm."])
    ra = agent(fake, max_retries=2)
    memory = ra.build(Document.from_text(make_text(30, 60)))
    answer = ra.answer(memory, QUESTION)
    assert answer.choice is None and answer.letter is None
    assert any("no option named" in f for f in answer.fallbacks)


def test_free_form_questions_get_text():
    fake = scripted(lookup="Page [0]", answer="Answer: The lighthouse keeper.")
    ra = agent(fake)
    memory = ra.build(Document.from_text(make_text(30, 60)))
    answer = ra.answer(memory, Question("Who?"))
    assert answer.draft == "The lighthouse keeper." and answer.choice is None
    assert answer.abstained and answer.support.label == "unsupported"  # no keeper in the pages read
    assert "Answer the question based on the above passage" in fake.history[-1].messages[0].content


def test_memory_is_stored_once_and_reused_by_later_questions(tmp_path):
    store = Store(tmp_path / "s.db")
    fake = scripted(lookup="Page [0]", answer="Answer: (A)")
    doc = Document.from_text(make_text(30, 60))
    agent(fake, store).build(doc)
    built = len(fake.history)
    ra = agent(fake, Store(tmp_path / "s.db"))  # a new process: same file
    memory = ra.build(doc)
    assert len(fake.history) == built  # nothing re-read
    ra.answer(memory, QUESTION)
    assert fake.roles()[built:] == ["lookup", "answer"]
    again = ra.answer(memory, QUESTION)  # same question: served by the response cache
    assert again.usage.cached_calls == 2 and again.usage.prompt_tokens == 0


def test_other_settings_or_models_get_their_own_memory(tmp_path):
    store = Store(tmp_path / "s.db")
    doc = Document.from_text(make_text(30, 60))
    a = agent(scripted(), store).build(doc)
    b = agent(scripted(), store, max_words=800).build(doc)
    c = agent(ScriptedLLM(by_role={"paginate": middle_label, "gist": first_words_gist}, model_id="other"),
              store).build(doc)
    assert len({a.key, b.key, c.key}) == 3


def test_killed_build_resumes_and_only_redoes_unfinished_work(tmp_path):
    doc = Document.from_text(make_text(60, 60))
    full = scripted()
    reference = agent(full, Store(tmp_path / "ref.db")).build(doc)
    n_pages = sum(r.role == "paginate" for r in full.history)

    # pagination dies after 3 pages: the 4th pagination call raises
    dying = ScriptedLLM(by_role={"paginate": [middle_label] * 3 + [KeyboardInterrupt()], "gist": first_words_gist})
    store_path = tmp_path / "s.db"
    with pytest.raises(KeyboardInterrupt):
        agent(dying, Store(store_path)).build(doc)
    resumed = scripted()
    memory = agent(resumed, Store(store_path), gist_mode="separate").build(doc)
    assert sum(r.role == "paginate" for r in resumed.history) == n_pages - 3
    assert [(p.start, p.end) for p in memory.pages] == [(p.start, p.end) for p in reference.pages]
    assert [g.text for g in memory.gists] == [g.text for g in reference.gists]
    assert " ".join(p.text for p in memory.pages).split() == doc.text.split()


def test_killed_during_gists_keeps_finished_gists(tmp_path):
    doc = Document.from_text(make_text(30, 60))
    store_path = tmp_path / "s.db"
    dying = ScriptedLLM(by_role={"paginate": middle_label, "gist": ["g0", "g1", RuntimeError("killed")] + ["x"] * 10})
    llm = LLM(dying, concurrency=1)
    with pytest.raises(RuntimeError):
        ReadAgentP(llm, Store(store_path)).build(doc)
    store = Store(store_path)
    (record,) = store.memories_for(doc.id)
    done = {g["page"] for g in store.items(record.key, "gist")}
    assert {0, 1} <= done and record.status == "building"
    resumed = scripted()
    memory = agent(resumed, store).build(doc)
    assert resumed.roles() == ["gist"] * (len(memory.pages) - len(done))  # no pagination, only missing gists
    assert [g.text for g in memory.gists[:2]] == ["g0", "g1"]


def test_continue_gist_mode_asks_in_the_pagination_conversation():
    fake = scripted(gist=lambda r: "gist of " + (r.messages[-1].content.split("<") + ["tail>"])[1].split(">")[0])
    memory = agent(fake, gist_mode="continue").build(Document.from_text(make_text(30, 60)))
    gist_requests = [r for r in fake.history if r.role == "gist"]
    assert gist_requests[0].messages[:1] == fake.history[0].messages  # same prefix as the pagination prompt
    assert gist_requests[0].messages[1].content.startswith("Break point: <7>")
    assert memory.gists[0].text == "gist of 7"


def test_concurrent_gists_with_the_fake_are_ordered_by_page():
    fake = scripted()
    memory = agent(fake).build(Document.from_text(make_text(80, 60)))
    assert [g.page for g in memory.gists] == list(range(len(memory.pages)))


def test_fake_is_never_a_default_and_runs_out_loudly():
    fake = ScriptedLLM(["only one"])
    LLM(fake).text(__import__("pagemind").LLMRequest.user("a"))
    with pytest.raises(ScriptExhausted):
        LLM(fake).text(__import__("pagemind").LLMRequest.user("b"))


def test_python_api_ask_end_to_end(tmp_path):
    fake = scripted(lookup="I want to look up Page [1] to", answer="Answer: (B) two")
    with Pagemind(fake, store=tmp_path / "s.db") as pm:
        p = tmp_path / "book.txt"
        p.write_text(make_text(30, 60))
        answer = pm.ask(p, "Which page?\n(A) one\n(B) two\n(C) three\n(D) four", method="readagent-p")
        assert answer.letter == "B" and answer.pages_read == [1]
        assert pm.ask(p, "Which page?", options=["one", "two"], method="gistmem").method == "gistmem"


@pytest.mark.parametrize("concurrency", [1, 3])
def test_requests_in_flight_never_exceed_concurrency(concurrency):
    import threading
    import time

    state = {"now": 0, "peak": 0}
    lock = threading.Lock()

    def slow(reply_fn):
        def run(request):
            with lock:
                state["now"] += 1
                state["peak"] = max(state["peak"], state["now"])
            time.sleep(0.01)
            with lock:
                state["now"] -= 1
            return reply_fn(request)
        return run

    fake = ScriptedLLM(by_role={"paginate": slow(middle_label), "gist": slow(first_words_gist)})
    llm = LLM(fake, concurrency=concurrency)
    memory = ReadAgentP(llm, Store(":memory:")).build(Document.from_text(make_text(60, 60)))
    assert len(memory.gists) == len(memory.pages)
    assert state["peak"] <= concurrency
    if concurrency > 1:
        assert state["peak"] >= 2  # gists overlap pagination


def test_follow_up_expansion_answers_in_the_look_up_conversation():
    fake = ScriptedLLM(by_role={"paginate": middle_label, "gist": first_words_gist,
                                "lookup": "I want to look up Page [2, 0] to check", "answer": "Answer: (B)"})
    agent = ReadAgentP(LLM(fake), Store(":memory:"), expand="follow-up")
    memory = agent.build(Document.from_text(make_text(30, 60)))
    answer = agent.answer(memory, Question("Which page?", ("one", "two")))
    lookup, final = [r for r in fake.history if r.role in ("lookup", "answer")]
    assert final.messages[:-1] == lookup.messages + (Message("assistant", "I want to look up Page [2, 0] to check"),)
    last = final.messages[-1].content
    assert last.index("<Page 0>") < last.index("<Page 2>")  # narrative order
    assert memory.pages[2].text in last and memory.pages[1].text not in last
    assert memory.gists[2].text not in last  # the gists stay where they were, in the first turn
    assert answer.letter == "B" and answer.pages_read == [2, 0] and answer.details["expand"] == "follow-up"


def test_follow_up_expansion_respects_the_budget():
    fake = ScriptedLLM(by_role={"paginate": middle_label, "gist": first_words_gist,
                                "lookup": "I want to look up Page [1, 2]", "answer": "Answer: (A)"})
    store = Store(":memory:")
    memory = ReadAgentP(LLM(fake), store).build(Document.from_text(make_text(30, 60)))
    budget = len(memory.tagged_gists().split()) + len(memory.pages[1].text.split()) + 5
    agent = ReadAgentP(LLM(fake), store, expand="follow-up", budget=budget)
    answer = agent.answer(memory, Question("Which page?", ("one", "two")))
    assert answer.pages_read == [1]
    assert any("page 2 dropped" in f and "budget" in f for f in answer.fallbacks)


@pytest.mark.parametrize("gist_mode", ["separate", "continue"])
def test_an_empty_gist_falls_back_to_the_page_beginning_and_is_recorded(gist_mode):
    def gist(request):  # page 0's gist is only a preamble, also when re-asked
        return "Here is a shortened version:" if "p0w0" in request.messages[0].content else first_words_gist(request)

    def continued(request):  # continue mode: the page is in the pagination turn, the gist request says little
        return "" if request.messages[0].content.count("p0w0") else "short"

    fake = ScriptedLLM(by_role={"paginate": middle_label, "gist": gist if gist_mode == "separate" else continued})
    trace = Trace()
    agent = ReadAgentP(LLM(fake), Store(":memory:"), gist_mode=gist_mode)
    memory = agent.build(Document.from_text(make_text(30, 60)), trace=trace)
    first = memory.gists[0]
    assert first.source == "fallback"
    assert first.text.split() == memory.pages[0].text.split()[:len(first.text.split())] and first.words >= 30
    assert all(g.source == "llm" for g in memory.gists[1:])
    assert agent.describe(memory)["fallback_gists"] == 1
    invalid = [e for e in trace.events if e.role == "gist" and e.decision.startswith("invalid (reply was empty")]
    if gist_mode == "separate":
        assert len(invalid) == 2  # asked, re-asked once, then the fallback
    else:  # the continued gist asked and re-asked, then the page gisted on its own (asked, re-asked), then the fallback
        assert len(invalid) == 4
        assert any(n.startswith("continued gist of page 0 rejected (reply was empty") for n in trace.notes)
    assert any(n.startswith("gist of page 0 fell back to its first") for n in trace.notes)


@pytest.mark.parametrize("bad, problem", [
    (" ".join(f"w{i}" for i in range(1000)), "not shorter than its page"),
    ("The keeper lit the lamp again and the ships came home. " * 12, "repeats itself"),
])
def test_a_gist_not_shorter_than_its_page_or_looping_is_reasked_then_replaced(bad, problem):
    calls = {"n": 0}

    def gist(request):
        if "p0w0" in request.messages[0].content:
            calls["n"] += 1
            return bad if calls["n"] == 1 else "a faithful short gist of page zero"
        return first_words_gist(request)

    fake = ScriptedLLM(by_role={"paginate": middle_label, "gist": gist})
    trace = Trace()
    memory = ReadAgentP(LLM(fake), Store(":memory:")).build(Document.from_text(make_text(30, 60)), trace=trace)
    assert memory.gists[0].text == "a faithful short gist of page zero" and memory.gists[0].source == "llm"
    assert any(e.decision.startswith("invalid (") and problem in e.decision for e in trace.events)


def test_a_gist_that_stays_bad_after_the_reask_is_the_recorded_fallback():
    fake = ScriptedLLM(by_role={"paginate": middle_label,
                                "gist": lambda r: ("same words " * 300) if "p0w0" in r.messages[0].content
                                else first_words_gist(r)})
    memory = ReadAgentP(LLM(fake), Store(":memory:")).build(Document.from_text(make_text(30, 60)))
    assert memory.gists[0].source == "fallback" and memory.gists[0].words < memory.pages[0].words
