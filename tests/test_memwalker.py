"""MemWalker with the scripted fake: tree construction, navigation, parsing, persistence, CLI."""

import json
import os
import re
import threading

import pytest
from click.testing import CliRunner

from helpers import make_text
from pagemind import LLM, Document, Pagemind, ScriptedLLM, Store
from pagemind.answering.question import Question
from pagemind.cli.main import cli
from pagemind.errors import ConfigError
from pagemind.methods.memwalker import MemWalker, MemWalkerOptions, format_walk
from pagemind.methods.memwalker.build import plan_tree
from pagemind.methods.memwalker.navigate import fit_memory
from pagemind.methods.memwalker.parsing import parse_leaf, parse_triage
from pagemind.methods.memwalker.segment import segment_text
from pagemind.prompts import get_prompt
from pagemind.store import StoreResponseCache

QUESTION = Question("Which?", ("one", "two", "three", "four"))
LEAF_TAIL = ". Summarize the above text comprehensively into a fluent passage."
NONLEAF_TAIL = ". Compress each summary into a much shorter summary."


def echo(request):
    """The summariser that returns its input: node texts become exactly assertable."""
    content = request.messages[0].content
    for tail in (LEAF_TAIL, NONLEAF_TAIL):
        if content.endswith(tail):
            return content[: -len(tail)]
    raise AssertionError(f"not a construction prompt: {content[:80]}")


def walker(fake, store=None, concurrency=4, **opts):
    store = store or Store(":memory:")
    llm = LLM(fake, cache=StoreResponseCache(store), concurrency=concurrency)
    opts = {"segment_tokens": 25, "max_children": 2, **opts}
    return MemWalker(llm, store, MemWalkerOptions.create("quality", **opts))


def scripted(navigate=(), summarise=echo, **kw):
    return ScriptedLLM(by_role={"summarise": summarise, "navigate": list(navigate)}, **kw)


def paragraphs(n, words=10):
    return make_text(n, words).split("\n\n")


def navigations(fake):
    return [r for r in fake.history if r.role == "navigate"]


# --- construction ----------------------------------------------------------------------------------
def test_tree_shape_and_exact_node_texts_with_an_echo_summariser():
    fake = scripted()
    mw = walker(fake)
    tree = mw.build(Document.from_text(make_text(8, 10)))
    p = paragraphs(8)
    assert [(n.index, n.id, n.level, n.children) for n in tree.nodes] == [
        (0, "0.0", 0, ()), (1, "0.1", 0, ()), (2, "1.0", 0, ()), (3, "1.1", 0, ()),
        (4, "0", 1, ("0.0", "0.1")), (5, "1", 1, ("1.0", "1.1")), (6, "root", 2, ("0", "1"))]
    # leaves: whole paragraphs packed up to 25 tokens (two 10-word paragraphs each)
    assert [n.text for n in tree.leaves] == [f"{p[0]}\n\n{p[1]}", f"{p[2]}\n\n{p[3]}", f"{p[4]}\n\n{p[5]}",
                                             f"{p[6]}\n\n{p[7]}"]
    assert all(n.summary == n.text for n in tree.nodes)  # echo, and no parent exceeded the node limit
    assert tree.node("0").text == tree.node("0.0").summary + "\n\n" + tree.node("0.1").summary
    assert tree.root.text == make_text(8, 10)
    assert tree.depth == 2 and tree.document_tokens == 80
    assert not any(n.compressed for n in tree.nodes)
    # construction prompts put the text first, then the paper's instruction; no non-leaf call was needed
    summaries = [r.messages[0].content for r in fake.history]
    assert sorted(summaries) == sorted(n.text + LEAF_TAIL for n in tree.leaves)


def test_parents_over_the_node_limit_are_compressed_with_the_non_leaf_prompt():
    def summarise(request):
        content = request.messages[0].content
        return "short " + content.split()[0] if content.endswith(NONLEAF_TAIL) else echo(request)

    fake = scripted(summarise=summarise)
    tree = walker(fake, node_tokens=30).build(Document.from_text(make_text(8, 10)))
    assert tree.settings["node_limit"] == 30
    node = tree.node("0")
    assert node.compressed and node.summary == "short p0w0" and node.tokens == 40
    assert node.text + NONLEAF_TAIL in [r.messages[0].content for r in fake.history]
    assert tree.root.text == "short p0w0\n\nshort p4w0" and not tree.root.compressed  # 4 tokens: under the limit
    compress = [r for r in fake.history if r.messages[0].content.endswith(NONLEAF_TAIL)]
    assert len(compress) == 2 and all(r.max_tokens == 30 for r in compress)


def test_plan_balances_groups_and_lifts_single_nodes():
    five = plan_tree(5, 2)  # groups 2+2+1, then 2+1, then the root
    assert [s.id for s in five[:5]] == ["0.0.0", "0.0.1", "0.1.0", "0.1.1", "1"]
    nine = plan_tree(9, 8)  # 5 + 4, not 8 + 1
    root = nine[-1]
    assert root.id == "root" and [len(c.children) for c in root.children] == [5, 4]
    assert plan_tree(1, 8)[0].id == "root"


def test_segments_pack_whole_paragraphs_and_split_only_an_oversized_one():
    words = lambda s: len(s.split())
    text = make_text(3, 10) + "\n\n" + " ".join(f"Long{i} sentence number {i} here." for i in range(12))
    segments = segment_text(text, 25, words)
    assert segments[0] == "\n\n".join(paragraphs(3)[:2])
    assert segments[1] == paragraphs(3)[2]  # adding the long paragraph's pieces would overflow
    assert all(words(s) <= 25 for s in segments)
    assert " ".join(segments).split() == text.split()


def test_summaries_of_one_level_run_concurrently():
    barrier = threading.Barrier(2, timeout=10)

    def summarise(request):
        barrier.wait()  # deadlocks (BrokenBarrierError) unless two leaf summaries are in flight together
        return echo(request)

    tree = walker(scripted(summarise=summarise)).build(Document.from_text(make_text(8, 10)))
    assert len(tree.leaves) == 4


def test_killed_build_resumes_and_only_redoes_unfinished_nodes(tmp_path):
    doc = Document.from_text(make_text(16, 10))
    dying = scripted(summarise=[echo, echo, echo, KeyboardInterrupt()] + [echo] * 20)
    with pytest.raises(KeyboardInterrupt):
        walker(dying, Store(tmp_path / "s.db"), concurrency=1).build(doc)
    store = Store(tmp_path / "s.db")
    (record,) = store.memories_for(doc.id)
    assert record.status == "building" and len(store.items(record.key, "node")) == 3
    resumed = scripted()
    tree = walker(resumed, store).build(doc)
    assert len(resumed.history) == 8 - 3  # the other leaves only; no parent needed compressing
    assert tree.root.text == make_text(16, 10)


def test_tree_is_stored_once_and_reused_by_later_questions(tmp_path):
    doc = Document.from_text(make_text(8, 10))
    walker(scripted(), Store(tmp_path / "s.db")).build(doc)
    fake = scripted(navigate=["Reasoning: a\nAction: 0", "Reasoning: b\nAction: 1",
                              "Reasoning: c\nAction: -2\nAnswer: (B) two"])
    mw = walker(fake, Store(tmp_path / "s.db"))  # a new process: the same file
    tree = mw.build(doc)
    assert fake.history == []  # nothing re-read
    first = mw.answer(tree, QUESTION)
    again = mw.answer(mw.load(doc), QUESTION)  # same question: every navigation reply from the cache
    assert first.letter == again.letter == "B"
    assert again.usage.calls == again.usage.cached_calls == 3 and again.usage.prompt_tokens == 0
    other = walker(scripted(), Store(tmp_path / "s.db"), segment_tokens=40).build(doc)
    assert other.key != tree.key


# --- navigation --------------------------------------------------------------------------------------
def test_revert_excludes_the_rejected_child_and_the_walk_reads_like_the_issue():
    fake = scripted(navigate=[
        "Reasoning: part 2 mentions it.\nAction: 2", "Reasoning: 1 looks right\nAction: 1",
        "Reasoning: not here.\nAction: -1", "Reasoning: then 3.\nAction: 3",
        "Reasoning: found it.\nAction: -2\nAnswer: (C) three"])
    mw = walker(fake, segment_tokens=10, max_children=4)
    tree = mw.build(Document.from_text(make_text(16, 10)))  # 16 leaves, 4 under each of 4 parents
    answer = mw.answer(tree, QUESTION)
    assert answer.details["walk"] == "root → 2 → 2.1 (leaf: -1) ← → 2.3 (leaf: -2, answer C)"
    assert format_walk(answer.details["trajectory"]) == answer.details["walk"]
    assert answer.letter == "C" and answer.text == "three" and answer.method == "memwalker"
    # the re-issued triage at node 2 no longer offers the rejected child
    again = navigations(fake)[3].messages[0].content
    assert "Summary 1:" not in again and all(f"Summary {i}:" in again for i in (0, 2, 3))
    steps = answer.details["trajectory"]
    assert [(s["node"], s["kind"], s["action"]) for s in steps] == [
        ("root", "triage", 2), ("2", "triage", 1), ("2.1", "leaf", -1), ("2", "triage", 3), ("2.3", "leaf", -2)]
    assert steps[0]["reasoning"] == "part 2 mentions it." and steps[-1]["answer"] == "C"
    d = answer.details
    assert d["reverts"] == 1 and d["strayed"] and d["recovered"] and d["navigation_failure"] is None
    assert d["leaves_read"] == ["2.1", "2.3"] and answer.pages_read == [tree.node("2.1").index, tree.node("2.3").index]
    assert d["fraction_read"] == pytest.approx(20 / 160) and d["valid_action_rate"] == 1.0


def test_an_exhausted_subtree_reverts_further_up():
    fake = scripted(navigate=["Action: 0", "Action: 0", "Action: -1", "Action: -1", "Action: 1",
                              "Reasoning: yes\nAction: -2\nAnswer: (A)"])
    mw = walker(fake)
    answer = mw.answer(mw.build(Document.from_text(make_text(8, 10))), QUESTION)
    assert answer.details["walk"] == ("root → 0 → 0.0 (leaf: -1) ← → 0.1 (leaf: -1) ← [0 exhausted] ← "
                                      "→ 1 → 1.1 (leaf: -2, answer A)")
    # 0.1 and then 1 were the only children left: taken without a call
    assert len(navigations(fake)) == answer.details["navigation_calls"] == 6
    assert answer.details["reverts"] == 3 and answer.details["recovered"]
    assert answer.letter == "A"


def test_every_path_rejected_is_a_recorded_no_answer():
    fake = scripted(navigate=["Action: 0", "Action: 0", "Action: -1", "Action: -1", "Action: 0", "Action: -1",
                              "Action: -1"])
    mw = walker(fake)
    answer = mw.answer(mw.build(Document.from_text(make_text(8, 10))), QUESTION)
    assert answer.text == "no answer" and answer.choice is None
    assert answer.details["navigation_failure"] == "exhausted" and answer.details["walk"].endswith("[root exhausted]")
    assert any("every path" in f for f in answer.fallbacks)


def test_best_leaf_answers_from_the_walks_first_choice_once_the_root_is_exhausted():
    rejecting = ["Action: 0", "Action: 0", "Action: -1", "Action: -1", "Action: 0", "Action: -1", "Action: -1"]
    fake = scripted(navigate=rejecting + ["Reasoning: it must be here\nAction: -1",  # refused: only -2 now
                                          "Reasoning: it must be here\nAction: -2\nAnswer: (C)"])
    mw = walker(fake, on_exhausted="best-leaf")
    answer = mw.answer(mw.build(Document.from_text(make_text(8, 10))), QUESTION)
    assert answer.letter == "C" and answer.details["root_exhausted"] and answer.details["answered_after_exhaustion"]
    forced = navigations(fake)[-2:]
    assert all(r.messages[0].content == navigations(fake)[2].messages[0].content for r in forced)  # leaf 0.0 again
    assert "(Action: -2)" in forced[1].messages[-1].content  # the re-ask says why -1 was refused
    assert any("answered from leaf 0.0, the walk's first choice" in f for f in answer.fallbacks)
    assert answer.pages_read == [0, 1, 2, 3]  # the forced answer re-reads a leaf; it is counted once


def test_best_leaf_forbids_the_revert_in_the_grammar():
    fake = scripted(navigate=["Action: 0", "Action: 0", "Action: -1", "Action: -1", "Action: 0", "Action: -1",
                              "Action: -1", "Reasoning: r\nAction: -2\nAnswer: (B)"], supports_grammar=True)
    mw = walker(fake, on_exhausted="best-leaf", reasoning=False)
    answer = mw.answer(mw.build(Document.from_text(make_text(8, 10))), QUESTION)
    last = navigations(fake)[-1]
    assert '"-1"' not in last.constraint.gbnf and '"-1"' in navigations(fake)[2].constraint.gbnf
    assert answer.letter == "B"


def test_three_consecutive_invalid_replies_end_with_no_answer_never_a_crash():
    fake = scripted(navigate=["I am not sure.", "Action: 0 / 1 / 2, …", "Summary one, I think"])
    mw = walker(fake)
    answer = mw.answer(mw.build(Document.from_text(make_text(8, 10))), QUESTION)
    assert answer.text == "no answer" and answer.letter is None
    d = answer.details
    assert d["navigation_failure"] == "failed" and d["invalid_replies"] == 3 and d["valid_action_rate"] == 0.0
    assert any("3 consecutive invalid replies at node root" in f for f in answer.fallbacks)
    # the re-asks continue the conversation (a new request each time, so never a cached repeat)
    asks = navigations(fake)
    assert [len(r.messages) for r in asks] == [1, 3, 5]
    assert asks[1].messages[1].content == "I am not sure." and "one of 0, 1" in asks[1].messages[2].content
    assert "template" in [e.decision for e in answer.trace.events][1]


def test_failures_are_counted_per_decision_and_reset_by_a_valid_reply():
    fake = scripted(navigate=["?", "??", "Action: 1", "??", "???", "Action: 0",
                              "Reasoning: ok\nAction: -2\nAnswer: (D) four"])
    mw = walker(fake)
    answer = mw.answer(mw.build(Document.from_text(make_text(8, 10))), QUESTION)
    assert answer.letter == "D" and answer.details["invalid_replies"] == 4
    assert answer.details["valid_action_rate"] == pytest.approx(3 / 7, abs=1e-4)


def test_out_of_range_and_negative_children_are_reasked():
    fake = scripted(navigate=["Reasoning: r\nAction: 7", "Action: -1", "Action: 1", "Action: 0",
                              "Action: 3", "Action: -2\nAnswer: (B)"])
    mw = walker(fake)
    answer = mw.answer(mw.build(Document.from_text(make_text(8, 10))), QUESTION)
    decisions = [e.decision for e in answer.trace.events]
    assert "does not exist" in decisions[0] and "not allowed here" in decisions[1]
    assert "not allowed at a leaf" in decisions[4]
    assert answer.details["walk"] == "root → 1 → 1.0 (leaf: -2, answer B)"


def test_step_budget_ends_the_search():
    fake = scripted(navigate=["Action: 0", "Action: 0", "Action: -1", "Action: 0"])
    mw = walker(fake, max_steps=3)
    answer = mw.answer(mw.build(Document.from_text(make_text(8, 10))), QUESTION)
    assert answer.text == "no answer" and answer.details["navigation_failure"] == "budget"
    assert len(navigations(fake)) == 3 and any("step budget of 3" in f for f in answer.fallbacks)


def test_single_segment_text_goes_straight_to_the_leaf_prompt():
    fake = scripted(navigate=["Reasoning: here\nAction: -2\nAnswer: Ryan invited him."])
    mw = walker(fake, segment_tokens=200, abstain="off")  # the filler text does not say: the draft stands
    answer = mw.answer(mw.build(Document.from_text(make_text(3, 10))), Question("Who invited Michael?"))
    assert answer.text == "Ryan invited him." and answer.choice is None
    assert answer.details["walk"] == "root (leaf: -2, answer Ryan invited him.)"
    assert "Story background information" not in navigations(fake)[0].messages[0].content


# --- working memory --------------------------------------------------------------------------------
def test_working_memory_carries_the_path_once_and_can_be_turned_off():
    reply = ["Action: 1", "Action: 1", "Action: -2\nAnswer: (A)"]
    fake = scripted(navigate=reply)
    mw = walker(fake)
    mw.answer(mw.build(Document.from_text(make_text(8, 10))), QUESTION)
    leaf = navigations(fake)[-1].messages[0].content
    background = leaf.split("Story background information: ")[1].split("\nMain text: ")[0]
    # the root's content (all four leaf summaries) with node 1's part not repeated
    assert background.split() == make_text(8, 10).split()
    off = scripted(navigate=reply)
    mw = walker(off, working_memory=False)
    mw.answer(mw.build(Document.from_text(make_text(8, 10))), QUESTION)
    assert "Story background information" not in navigations(off)[-1].messages[0].content


def test_working_memory_is_truncated_from_the_oldest():
    items = ["root " * 10, "mid " * 10, "near " * 10]
    count = lambda s: len(s.split())
    assert fit_memory(items, 30, count) == (" ".join(items), False)
    text, cut = fit_memory(items, 25, count)
    assert cut and text.split() == ["mid"] * 10 + ["near"] * 10
    text, cut = fit_memory(items, 5, count)
    assert cut and text.split() == ["near"] * 5

    def summarise(request):  # distinct compressed parents: three separate memory items on a depth-3 path
        content = request.messages[0].content
        return f"gist-{content.split()[0]} " + "w " * 9 if content.endswith(NONLEAF_TAIL) else echo(request)

    fake = scripted(summarise=summarise, navigate=["Action: 0", "Action: 0", "Action: 0", "Action: -2\nAnswer: (A)"])
    mw = walker(fake, node_tokens=16, memory_tokens=15)
    answer = mw.answer(mw.build(Document.from_text(make_text(16, 10))), QUESTION)
    leaf = navigations(fake)[-1].messages[0].content
    background = leaf.split("Story background information: ")[1].split("\nMain text: ")[0]
    assert background.split() == ["gist-p0w0"] + ["w"] * 9  # node 0.0 only: the root and node 0 were dropped
    assert answer.details["memory_truncated"] == 1


def test_working_memory_is_cut_to_what_the_context_window_leaves():
    fake = scripted(navigate=["Action: 1", "Action: 1", "Action: -2\nAnswer: (A)"], context_window=240)
    mw = walker(fake, max_tokens=40)
    answer = mw.answer(mw.build(Document.from_text(make_text(8, 10))), QUESTION)
    leaf = navigations(fake)[-1]
    assert mw.llm.prompt_tokens(leaf) + leaf.max_tokens <= 240
    background = leaf.messages[0].content.split("Story background information: ")[1].split("\nMain text: ")[0]
    assert answer.details["memory_truncated"] == 1
    assert background.split() == make_text(8, 10).split()[40:]  # node 1's summary kept, the root's part dropped


# --- prompts and grammars --------------------------------------------------------------------------
def test_prompts_keep_the_papers_wording_and_the_no_reasoning_variant_drops_one_line():
    triage = get_prompt("memwalker", "triage")
    plain = get_prompt("memwalker", "triage_no_reasoning")
    assert "Relpy with the passage number as your action." in triage.template
    assert not triage.verbatim and "line breaks" in triage.differences
    assert "Your should reply" in get_prompt("memwalker", "leaf").template
    removed = "First provide reasoning to compare the summaries before you make the decision.\n"
    assert triage.template.replace(removed, "") == plain.template
    fake = scripted(navigate=["Action: 0", "Action: 0", "Action: -1", "Action: -1", "Action: 0"] * 3)
    mw = walker(fake, reasoning=False)
    mw.answer(mw.build(Document.from_text(make_text(8, 10))), QUESTION)
    assert "First provide reasoning" not in navigations(fake)[0].messages[0].content


def test_grammars_on_a_backend_that_enforces_them():
    fake = scripted(supports_grammar=True, navigate=[
        "Reasoning: r\nAction: 2", "Reasoning: r\nAction: -1", "Reasoning: r\nAction: 0",
        "Reasoning: r\nAction: -2\nAnswer: (B)"])
    mw = walker(fake, segment_tokens=10, max_children=4)
    answer = mw.answer(mw.build(Document.from_text(make_text(4, 10))), QUESTION)
    asks = navigations(fake)
    assert asks[0].constraint.gbnf == ('root ::= "Reasoning: " reason "\\nAction: " ("0" | "1" | "2" | "3")\n'
                                       'reason ::= [^\\n]{1,300}')
    assert '("0" | "1" | "3")' in asks[2].constraint.gbnf  # the rejected child is not offered again
    assert '("-1" | "-2\\nAnswer: (" ("A" | "B" | "C" | "D") ")")' in asks[1].constraint.gbnf
    assert answer.letter == "B" and all(r.constraint is None for r in fake.history if r.role == "summarise")
    plain = scripted(supports_grammar=True, navigate=["Action: 1", "Action: -2\nAnswer: x"])
    mw = walker(plain, segment_tokens=10, max_children=4, reasoning=False)
    mw.answer(mw.build(Document.from_text(make_text(4, 10))), Question("Who?"))
    assert navigations(plain)[0].constraint.gbnf == 'root ::= "Action: " ("0" | "1" | "2" | "3")'
    assert 'free ::= [^\\n]{1,300}' in navigations(plain)[1].constraint.gbnf
    unconstrained = scripted(navigate=["Action: 1", "Action: -2\nAnswer: x"])
    mw = walker(unconstrained, segment_tokens=10, max_children=4)
    mw.answer(mw.build(Document.from_text(make_text(4, 10))), Question("Who?"))
    assert all(r.constraint is None for r in unconstrained.history)


# --- parsing -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("reply, child", [
    ("Sure! Here is my analysis.\n\nReasoning: Summary 1 mentions the map.\nAction: 1\n\nI hope this helps.", 1),
    ("###################################\nReasoning: …\nAction: 2\n###################################", 2),
    ("**Reasoning:** it fits.\n**Action:** 2", 2),
    ("Reasoning: fits.\nAction: 2.", 2),
    ("Action: [0]", 0),
    ("Action: Summary 3", 3),
    ("Reasoning: Summary 2 is relevant. Action: 2", 2),
    ("Reasoning: Action: 3 would be tempting, but summary 0 tells the ending.\nAction: 0", 0),
    ("Reasoning: I first wrote\nAction: 3 in my head\nbut no.\nAction: 1", 1),
    ("  1 ", 1),
])
def test_triage_replies_with_extra_text(reply, child):
    parsed = parse_triage(reply, 4)
    assert parsed.child == child and parsed.problem == ""


def test_triage_reasoning_is_kept():
    parsed = parse_triage("Reasoning: Summary 1 mentions\nthe map.\nAction: 1", 3)
    assert parsed.reasoning == "Summary 1 mentions the map."


@pytest.mark.parametrize("reply, problem", [
    ("Action: -1", "not allowed here"),
    ("Action: -2", "not allowed here"),
    ("Action: 4", "does not exist"),
    ("Action: 2", "already read"),
    ("Reasoning: …\nAction: 0 / 1 / 2, …", "template"),
    ("I choose the second summary.", "no 'Action:' line"),
    ("", "empty"),
])
def test_triage_rejections(reply, problem):
    parsed = parse_triage(reply, 4, frozenset({2}))
    assert parsed.child is None and problem in parsed.problem


@pytest.mark.parametrize("reply, action, choice", [
    ("Reasoning: found it.\nAction: -2\nAnswer: (C) three", -2, 2),
    ("Reasoning: found it. Action: -2 Answer: (A)", -2, 0),
    ("Answer: (B)\nAction: -2", -2, 1),
    ("**Action:** -2\n**Answer:** D", -2, 3),
    ("Reasoning: says -2 is wrong\nAction: -1", -1, None),
    ("Reasoning: The text mentions Action: -1 once.\nAction: -2\nAnswer: (B) two\n###", -2, 1),
])
def test_leaf_replies(reply, action, choice):
    parsed = parse_leaf(reply, QUESTION)
    assert (parsed.action, parsed.choice, parsed.problem) == (action, choice, "")


@pytest.mark.parametrize("reply, problem", [
    ("Action: -2", "without an 'Answer:'"),
    ("Action: -2\nAnswer: (E)", "without an option letter"),
    ("Action: 1", "not allowed at a leaf"),
    ("Action: -3", "not allowed at a leaf"),
    ("Reasoning: …\nAction: -2 or -1\nAnswer: …", "template"),
])
def test_leaf_rejections(reply, problem):
    parsed = parse_leaf(reply, QUESTION)
    assert parsed.action is None and problem in parsed.problem


def test_free_form_leaf_answer_stops_at_the_format_rule():
    parsed = parse_leaf("Reasoning: Ryan says so.\nAction: -2\nAnswer: Ryan\n###################", Question("Who?"))
    assert (parsed.action, parsed.answer) == (-2, "Ryan")


def test_a_leaf_answered_with_a_stand_in_for_no_answer_is_a_rejection_and_a_forced_one_no_answer():
    """"Action: -2 / Answer: None" (a code model's null; "-1" the revert's number) says the leaf does not answer:
    read as -1, so the walk goes on; a count's "None" is an answer. Forced to answer from its best leaf, the walk
    that gets only stand-ins ends with no answer (a recorded fallback), never "None" shown as the answer."""
    which = Question("Which region had the highest EBITDAR?")
    for said in ("None", "-1", "N/A"):
        parsed = parse_leaf(f"Reasoning: not here.\nAction: -2\nAnswer: {said}", which)
        assert parsed.action == -1 and not parsed.problem and repr(said) in parsed.reasoning
    for asked in ("How many stores closed?", "Were there any impairments?"):
        counted = parse_leaf("Reasoning: none.\nAction: -2\nAnswer: None", Question(asked))
        assert (counted.action, counted.answer) == (-2, "None")
    assert parse_leaf("Reasoning: r\nAction: -2\nAnswer: -1%", Question("What was the change?")).answer == "-1%"
    fake = scripted(navigate=["Action: 0"] + ["Reasoning: r\nAction: -2\nAnswer: None"] * 12)
    mw = walker(fake, max_steps=6, on_exhausted="best-leaf")
    answer = mw.answer(mw.build(Document.from_text(make_text(8, 10))), which)
    assert answer.text != "None" and answer.details["navigation_failure"] is not None
    assert any("no answer" in f for f in answer.fallbacks)


# --- API and CLI -------------------------------------------------------------------------------------
def test_api_options_and_presets(tmp_path):
    fake = scripted(navigate=["Action: 0", "Action: 1", "Action: -2\nAnswer: (B)"])
    with Pagemind(fake, store=tmp_path / "s.db") as pm:
        book = tmp_path / "book.txt"
        book.write_text(make_text(8, 10))
        answer = pm.ask(book, "Which?\n(A) one\n(B) two", method="memwalker", segment_tokens=25, max_children=2)
        assert answer.letter == "B" and answer.as_dict()["details"]["walk"].startswith("root → 0 → 0.1")
        with pytest.raises(ConfigError):
            pm.reader("memwalker", max_pages=3)
        with pytest.raises(ConfigError):
            pm.reader("memwalker", preset="qmsum")
        assert pm.reader("memwalker", preset="summscreen").options.max_children == 5
        assert pm.reader("memwalker", preset="govreport").options.segment_tokens == 1200


def test_cli_ask_trace_prints_the_walk_and_show_prints_the_tree(tmp_path):
    book = tmp_path / "book.txt"
    book.write_text(make_text(8, 10))
    fake = scripted(navigate=["Reasoning: first half\nAction: 0", "Action: 1", "Action: -2\nAnswer: (B) two"])
    args = ["--method", "memwalker", "--segment-tokens", "25", "--max-children", "2"]
    result = CliRunner().invoke(cli, ["ask", str(book), "Which?", "-o", "one", "-o", "two", "--trace", *args],
                                obj={"backend": fake})
    assert result.exit_code == 0, result.output
    assert "Answer: (B) two" in result.stdout
    assert "walk: root → 0 → 0.1 (leaf: -2, answer B)" in result.stderr
    assert "first half" in result.stderr and "read 25% of the text" in result.stderr
    shown = CliRunner().invoke(cli, ["show", str(book), *args], obj={"backend": fake})
    assert shown.exit_code == 0, shown.output
    assert "root  [level 2, 2 children] 80 tokens" in shown.stdout and "    0.1  [leaf] 20 tokens" in shown.stdout
    assert "root summary:" in shown.stdout and "depth: 2" in shown.stdout
    data = json.loads(CliRunner().invoke(cli, ["show", str(book), "--json", *args], obj={"backend": fake}).stdout)
    assert data["depth"] == 2 and [n["id"] for n in data["nodes"]][-1] == "root"
    ablation = CliRunner().invoke(cli, ["ask", str(book), "Which?", "--no-reasoning", "--no-working-memory",
                                        "--max-steps", "1", *args], obj={"backend": scripted(navigate=["Action: 0"])})
    assert ablation.exit_code == 0 and "step budget of 1" in ablation.stderr


@pytest.mark.parametrize("layout", ["paper", "prefix-cache"])
def test_prefix_cache_layout_lets_questions_share_the_roots_triage_prompt(layout):
    fake = scripted(navigate=["Reasoning: r\nAction: 0", "Reasoning: r\nAction: 0",
                              "Reasoning: r\nAction: -2\nAnswer: (A)"] * 2)
    mw = walker(fake, layout=layout)
    tree = mw.build(Document.from_text(make_text(8, 10)))
    for question in (Question("Which one?", QUESTION.options), Question("Who did it?", QUESTION.options)):
        mw.answer(tree, question)
    first, second = (r.messages[0].content for r in navigations(fake)[0::3])
    shared = len(os.path.commonprefix([first, second]))  # noqa: RUF071 - prompts, not paths: characters are meant
    summaries = first.index("Summary 0:")
    if layout == "paper":
        assert shared < summaries  # the question comes first: nothing after it is shared
    else:
        assert shared > first.index("Summary 1:") and first.index("Which one?") > summaries


def test_no_answer_to_a_free_form_question_is_judged_and_shown_as_an_abstention():
    fake = scripted(navigate=["Action: 0", "Action: 0", "Action: -1", "Action: -1", "Action: 0", "Action: -1",
                              "Action: -1"])
    mw = walker(fake)
    answer = mw.answer(mw.build(Document.from_text(make_text(8, 10))), Question("Which?"))
    assert answer.abstained and answer.draft == "no answer" and answer.text != "no answer"
    assert answer.support is not None and answer.support.declined
    assert answer.support.reason == "the method found no answer in what it read"


def test_a_tree_of_sections_for_a_document_without_any_is_refused_never_built_by_the_llm():
    from pagemind.errors import InputError

    fake = scripted()
    mw = walker(fake, tree="sections")
    with pytest.raises(InputError, match="has no sections"):
        mw.build(Document.from_text(make_text(8, 10)))
    assert not fake.history


def test_a_guided_triage_shows_the_children_over_the_best_segment_first_and_only_guide_k_of_them():
    """guide=bm25 (issue 47: MemWalker on a filing's sections rejected leaf after leaf among twenty titles): each
    node's children ranked by BM25 of the question over the segments beneath them, the first guide_k shown in that
    order; a hidden child is not on offer (re-asked), and comes in once the shown ones are rejected."""
    parts = paragraphs(16)
    parts[11] = "The zeppelin landed at Brannoch harbour."  # leaf 2.3
    fake = scripted(navigate=["Reasoning: r\nAction: 3",  # not shown at the root: re-asked
                              "Reasoning: r\nAction: 2", "Reasoning: r\nAction: 3",
                              "Reasoning: r\nAction: -1", "Reasoning: r\nAction: 0", "Reasoning: r\nAction: -1",
                              "Reasoning: r\nAction: 1", "Reasoning: r\nAction: -2\nAnswer: at the harbour"])
    mw = walker(fake, segment_tokens=10, max_children=4, guide="bm25", guide_k=2)
    tree = mw.build(Document.from_text("\n\n".join(parts)))
    assert tree.node("2.3").text == parts[11]
    answer = mw.answer(tree, Question("Where did the zeppelin land?"))

    def shown(request):
        return [int(n) for n in re.findall(r"Summary (\d+):", request.messages[0].content)]

    asks = navigations(fake)
    assert shown(asks[0]) == [2, 0]  # the zeppelin's part first, then reading order among the rest (all 0)
    assert "summary 3 is not among those shown" in next(e.decision for e in answer.trace.events)
    assert shown(asks[2]) == [3, 0] and shown(asks[4]) == [0, 1] and shown(asks[6]) == [1, 2]
    assert answer.details["walk"].startswith("root → 2 → 2.3 (leaf: -1) ← → 2.0 (leaf: -1) ← → 2.1")
    assert answer.details["trajectory"][-1]["answer"] == "at the harbour"  # (withheld: leaf 2.1 does not hold it)


def test_revert_best_climbs_to_the_best_unread_leaf_instead_of_finishing_the_rejected_section():
    """revert=best (guided walks): a rejected leaf sends the walk up to the node above the best unread leaf (the
    zeppelin's sighting in part 0), not to the rejected leaf's siblings; a child ranks as its best unread leaf; the
    paper's revert goes back to the parent; without a guide the option is refused."""
    parts = paragraphs(16)
    parts[11] = "The zeppelin landed at Brannoch harbour."  # leaf 2.3, the best
    parts[1] = "A zeppelin was seen over the hills."  # leaf 0.1, the next best
    replies = ["Reasoning: r\nAction: 2", "Reasoning: r\nAction: 3", "Reasoning: r\nAction: -1",
               "Reasoning: r\nAction: 0", "Reasoning: r\nAction: 1", "Reasoning: r\nAction: -2\nAnswer: the hills"]
    fake = scripted(navigate=replies)
    mw = walker(fake, segment_tokens=10, max_children=4, guide="bm25", guide_k=2, revert="best")
    tree = mw.build(Document.from_text("\n\n".join(parts)))
    answer = mw.answer(tree, Question("Where did the zeppelin land at Brannoch?"))
    shown = [[int(n) for n in re.findall(r"Summary (\d+):", r.messages[0].content)] for r in navigations(fake)]
    assert shown[0][0] == 2 and shown[3][0] == 0  # after 2.3: the root again, part 0 (the sighting) first
    assert "seen over the hills" in navigations(fake)[3].messages[0].content
    assert answer.details["walk"].startswith("root → 2 → 2.3 (leaf: -1)") and "0.1 (leaf: -2" in answer.details["walk"]
    fake = scripted(navigate=replies[:3] + ["Reasoning: r\nAction: 0"])
    parent = walker(fake, segment_tokens=10, max_children=4, guide="bm25", guide_k=2, max_steps=4)
    parent.answer(parent.build(Document.from_text("\n\n".join(parts))),
                  Question("Where did the zeppelin land at Brannoch?"))
    after = navigations(fake)[3].messages[0].content  # node 2's other leaves, not part 0 with the sighting
    assert "harbour" not in after and "seen over the hills" not in after and parts[8].split()[0] in after
    with pytest.raises(ConfigError, match="revert=best"):
        MemWalkerOptions.create(revert="best")


def test_a_hybrid_guide_ranks_children_as_the_reader_ranks_its_leaves_and_embeds_them_once():
    """guide=hybrid: the children are ranked by the reader's own ranking of its leaves (BM25 and the embedder fused,
    as OP-RAG ranks), which ``retrieve`` returns too; the leaves are embedded once into the store's cache."""
    from pagemind.retrieval.embed import HashingEmbedder

    class Counting(HashingEmbedder):
        texts = 0

        def embed(self, texts):
            Counting.texts += len(texts)
            return super().embed(texts)

    parts = paragraphs(16)
    parts[11] = "The zeppelin landed at Brannoch harbour."  # leaf 2.3
    store = Store(":memory:")
    fake = scripted(navigate=["Reasoning: r\nAction: 2", "Reasoning: r\nAction: 3",
                              "Reasoning: r\nAction: -2\nAnswer: at the harbour"] * 2)
    llm = LLM(fake, cache=StoreResponseCache(store), concurrency=4)
    options = MemWalkerOptions.create("quality", segment_tokens=10, max_children=4, guide="hybrid", guide_k=2,
                                      cite_encoder="lexical")
    mw = MemWalker(llm, store, options, embedder=Counting(dim=256))
    tree = mw.build(Document.from_text("\n\n".join(parts)))
    question = Question("Where did the zeppelin land?")
    ranked = [int(i) for i in mw.passage_index(tree).rank(question.text).order]
    assert tree.leaves[ranked[0]].id == "2.3" and mw.passage_index(tree).settings.scorer == "hybrid"
    assert next(e.text for e, _ in mw.rank(tree, question.text)) == parts[11]
    answer = mw.answer(tree, question)
    assert answer.details["walk"].startswith("root → 2 → 2.3 (leaf: -2")
    assert next(int(n) for n in re.findall(r"Summary (\d+):", navigations(fake)[0].messages[0].content)) == 2
    embedded = Counting.texts
    assert embedded >= len(tree.leaves)
    again = MemWalker(llm, store, options, embedder=Counting(dim=256))  # another reader on the same store
    again.answer(tree, Question("Where did the zeppelin land, and when?"))
    assert Counting.texts == embedded + 1  # the new question alone: the leaves' vectors came from the store's cache


def test_a_question_naming_a_statement_ranks_that_sections_leaves_first():
    """A tree of sections labels each leaf with its sections' titles, so a question that names "the cash flow
    statement" ranks (and a guided walk shows) the statement's leaves before the discussion that repeats its words,
    as RAG's named sections do; a tree of the paper's summaries has no titles to read and keeps its ranking."""
    from dataclasses import replace

    from pagemind.methods.memwalker import section_labels
    from pagemind.text.sections import Section

    discussion = "Item 7. Discussion\n" + "Purchases of property and equipment rose; cash flows from purchases " \
        "of property were discussed. " * 12
    statement = "Consolidated Statements of Cash Flows\n" + "Investing 1,577 1,373 for the year. " * 10
    risks = "Item 1A. Risk Factors\n" + "A storm may come. " * 20
    text = "\n".join([discussion, statement, risks])
    at = [0, len(discussion) + 1, len(discussion) + len(statement) + 2, len(text)]
    document = replace(Document.from_text(text, name="filing.pdf"), sections=tuple(
        Section(title.split("\n")[0], 1, at[i], at[i + 1]) for i, title in enumerate([discussion, statement, risks])))
    question = "According to the cash flow statement, what were the purchases of property?"
    mw = walker(scripted(), tree="sections", summaries="titles", segment_tokens=60, guide="bm25")
    tree = mw.build(document)
    labels = section_labels(tree)
    named = {("§Item 7. Discussion",), ("§Consolidated Statements of Cash Flows",), ("§Item 1A. Risk Factors",)}
    assert set(labels) == named and len(labels) > 3  # the path a RAG fragment's label names, on every leaf
    whole = walker(scripted(), tree="sections", summaries="titles", segment_tokens=400, guide="bm25")
    one_each = whole.build(document)  # each section fits one segment: the section is its leaf, and still named
    assert len(one_each.leaves) == 3 and set(section_labels(one_each)) == named
    plain = [int(i) for i in mw.passage_index(tree).rank(question).order]
    assert labels[plain[0]] == ("§Item 7. Discussion",)  # BM25 alone: the discussion repeats the question's words
    ranked = [e.index for e, _ in mw.rank(tree, question)]
    assert labels[ranked[0]] == ("§Consolidated Statements of Cash Flows",)
    scores = mw.guide_scores(tree, question)
    assert labels[max(range(len(scores)), key=scores.__getitem__)] == ("§Consolidated Statements of Cash Flows",)
    paper = walker(scripted(), segment_tokens=60)
    tree = paper.build(document)
    assert [e.index for e, _ in paper.rank(tree, question)] == \
        [int(i) for i in paper.passage_index(tree).rank(question).order]


def test_a_tree_of_sections_keeps_a_statements_rows_and_each_leaf_carries_its_tables_head():
    """Issue 47: a tree of sections had run a statement's rows into one line ("| Depreciation | 594.7 | 620.1 | |
    After-tax earnings | (91.1) |") and a leaf starting inside the statement had no header: which number was which
    year could not be told. Rows stay lines; a leaf starting below the header carries the title lines and header
    above its rows (as a RAG fragment does), counted in its tokens but not its own text — a citation of the leaf
    places its rows, and the index ranks its own words."""
    from dataclasses import replace

    from pagemind.answering.evidence import passage
    from pagemind.text.sections import Section

    rows = "\n".join(f"| Line item {i} of the statement | {1000 + i:,} | {2000 + i:,} |" for i in range(40))
    statement = ("Consolidated Statements of Cash Flows\n(In millions)\n| Fiscal Year | 2020 | 2019 |\n"
                 "| --- | --- | --- |\n" + rows)
    intro = "Item 7. Discussion\n" + "Cash from operations rose on higher earnings. " * 20
    text = intro + "\n\n" + statement + "\n\nThe notes are part of the statements."
    at = len(intro) + 2
    document = replace(Document.from_text(text, name="filing.pdf"), sections=(
        Section("Item 7. Discussion", 1, 0, at), Section("Consolidated Statements of Cash Flows", 1, at, len(text))))
    mw = walker(scripted(), tree="sections", summaries="titles", segment_tokens=120, guide="bm25")
    tree = mw.build(document)
    table = [leaf for leaf in tree.leaves if "| Line item" in leaf.text]
    assert len(table) >= 3
    for leaf in table:  # every row on its own line, whole
        own = leaf.text[len(leaf.head):]
        assert all(line.startswith("| ") and line.endswith(" |") for line in own.split("\n") if "Line item" in line)
        assert leaf.tokens <= 120 + 16
    first, later = table[0], table[1:]
    assert first.head == "" and first.text.startswith("Consolidated Statements of Cash Flows\n(In millions)\n")
    for leaf in later:
        assert leaf.head == "Consolidated Statements of Cash Flows\n(In millions)\n| Fiscal Year | 2020 | 2019 |\n" \
            "| --- | --- | --- |\n"
        assert leaf.text[len(leaf.head):].startswith("| Line item")
    unit = mw.units(tree)[later[0].index]
    cited = passage(document, unit)
    assert cited is not None and document.text[cited.start:cited.end] == later[0].text[len(later[0].head):]
    index = mw.passage_index(tree)
    assert index.fragments[later[0].index].text == later[0].text[len(later[0].head):]
    assert index.fragments[later[0].index].head == later[0].head
    prose = [leaf for leaf in tree.leaves if "Cash from operations" in leaf.text]
    assert prose and all(leaf.head == "" and "\n" not in leaf.text for leaf in prose)  # prose as the paper's
    # a library's tree over two such trees keeps each leaf's head (its rows are cited, not head and rows)
    from pagemind.llm.usage import Trace
    from pagemind.methods.memwalker.build import compose_trees

    nodes = compose_trees(["a.pdf", "b.pdf"], [list(tree.nodes), list(tree.nodes)], 400, 8, mw.llm, Trace())
    composed = [n for n in nodes if n.is_leaf]
    assert [n.head for n in composed] == [n.head for n in tree.leaves] * 2
    assert "head" not in tree.leaves[0].as_dict() and later[0].as_dict()["head"] == later[0].head  # stored so


def test_a_long_line_of_prose_above_a_tables_rows_is_cut_as_a_paragraph_and_a_row_never_is():
    from pagemind.methods.memwalker.sections import segment_rows

    def count(text):
        return len(text.split())

    note = "The statement below is read with the notes that follow it. " * 12  # 132 words on one line
    row = "| " + " | ".join(["Total revenue"] + [f"{n:,}" for n in range(1000, 1040)]) + " |"  # 41 words
    text = note + "\n| Year | 2020 |\n| --- | --- |\n" + row
    leaves = segment_rows(text, 0, len(text), 30, count)
    assert all(count(t) <= 30 for t, _ in leaves if row not in t)
    assert " ".join(t for t, _ in leaves).split() == text.split()  # every word once, in order
    assert [(t, h) for t, h in leaves if row in t] == [("| Year | 2020 |\n| --- | --- |\n" + row, "")]  # whole


def test_a_leaf_never_ends_between_a_tables_title_header_rule_and_first_rows():
    """The review's case: whatever the leaf size, no leaf starts on a table's rule or header without its title, and
    none holds a title and header without rows; a leaf starting further down carries the head (or, where the whole
    head would take over half a leaf, the header and rule alone)."""
    from pagemind.methods.memwalker.sections import segment_rows

    def count(text):
        return len(text.split())

    rows = "\n".join(f"| Item {i} | {i} | {i + 1} |" for i in range(12))
    text = "word " * 20 + "\n\nConsolidated Statements of Cash Flows\n(In millions)\n| Fiscal Year | 2020 | 2019 |\n" \
        "| --- | --- | --- |\n" + rows
    for size in range(12, 60):
        leaves = segment_rows(text, 0, len(text), size, count)
        assert " ".join(t for t, _ in leaves).split() == text.split()
        for own, head in leaves:
            assert not own.startswith("| --- |") and not own.startswith("| Fiscal Year")
            assert not own.rstrip().endswith(("| --- | --- | --- |", "(In millions)", "| Fiscal Year | 2020 | 2019 |"))
            if own.startswith("| Item") and not own.startswith("| Item 0 "):
                header = "| Fiscal Year | 2020 | 2019 |\n| --- | --- | --- |\n"
                assert head.endswith(header) if count(header) <= size // 2 else head == ""
                assert count(head) <= size // 2
                assert head.startswith("Consolidated") or count("Consolidated Statements of Cash Flows\n(In "
                                                                "millions)\n" + header) > size // 2


def test_best_leaf_answers_when_two_navigation_calls_are_left():
    fake = scripted(navigate=["Action: 0", "Action: 0", "Action: -1", "Reasoning: r\nAction: -2\nAnswer: (B)"])
    mw = walker(fake, max_steps=5, on_exhausted="best-leaf")
    answer = mw.answer(mw.build(Document.from_text(make_text(8, 10))), QUESTION)
    assert answer.letter == "B" and answer.details["navigation_calls"] == 4  # one call: never the cached "-1" again
    forced = navigations(fake)[3]  # leaf 0.0 again: its rejection continued with why it must answer now
    assert forced.messages[0].content == navigations(fake)[2].messages[0].content
    assert forced.messages[1].content == "Reasoning: \nAction: -1" and "(Action: -2)" in forced.messages[-1].content
    assert any("step budget of 5 navigation calls was all but used up" in f for f in answer.fallbacks)
    assert answer.details["walk"] == "root → 0 → 0.0 (leaf: -1) ← ⇒ 0.0 (leaf: -2, answer B)"  # which leaf answered
    cut = [{"kind": "triage", "node": "root", "action": 1}, {"kind": "leaf", "node": "1", "action": -1},
           {"kind": "triage", "node": "root", "action": 2}, {"kind": "triage", "node": "2", "action": 2},
           {"kind": "leaf", "node": "1", "action": -2, "answer": "B"}]  # the budget ran out after a triage
    assert format_walk(cut) == "root → 1 (leaf: -1) ← → 2 → 2.2 ⇒ 1 (leaf: -2, answer B)"
    assert answer.details["answered_from_best_leaf"] and not answer.details["answered_after_exhaustion"]
    # re-asks never eat the two calls kept back: an unreadable reply at the next leaf ends that leaf, not the answer
    fake = scripted(navigate=["Action: 0", "Action: 0", "Action: -1", "I cannot tell.",
                              "Reasoning: r\nAction: -2\nAnswer: (B)"])
    mw = walker(fake, max_steps=6, on_exhausted="best-leaf")
    answer = mw.answer(mw.build(Document.from_text(make_text(8, 10))), QUESTION)
    assert answer.letter == "B" and answer.details["navigation_calls"] == 5
    assert answer.details["answered_from_best_leaf"] and answer.details["walk"].endswith("⇒ 0.0 (leaf: -2, answer B)")
    # the first leaf keeps every call (no answer yet to fall back on), and a re-asked first leaf leaves room enough
    first = walker(scripted(navigate=["Action: 0", "Action: 0", "Reasoning: r\nAction: -2\nAnswer: (B)"]),
                   max_steps=3, on_exhausted="best-leaf")
    assert first.answer(first.build(Document.from_text(make_text(8, 10))), QUESTION).letter == "B"
    asked_twice = walker(scripted(navigate=["Action: 0", "Action: 0", "?", "Action: -1", "?", "??",
                                            "Reasoning: r\nAction: -2\nAnswer: (B)"]), max_steps=8,
                         on_exhausted="best-leaf")
    assert asked_twice.answer(asked_twice.build(Document.from_text(make_text(8, 10))), QUESTION).letter == "B"
    no_answer = walker(scripted(navigate=["Action: 0", "Action: 0", "Action: -1", "Action: 0", "Action: -1"]),
                       max_steps=5)
    assert no_answer.answer(no_answer.build(Document.from_text(make_text(8, 10))), QUESTION).text == "no answer"
