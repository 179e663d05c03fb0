"""MemWalker end to end on the real embedded model (the tiny SmolLM2: it exercises every path quickly)."""

import pytest

from helpers import on_embedded_models
from pagemind.cli.main import sample_path

pytestmark = on_embedded_models()

# small segments: a tree of at least two levels; short summaries and reasoning lines keep the tiny model quick
OPTIONS = {"segment_tokens": 200, "max_children": 3, "node_tokens": 60, "reasoning_chars": 60}


@pytest.fixture(scope="module")
def session(tiny_model):
    return tiny_model


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    paragraphs = sample_path().read_text().split("\n\n")
    path = tmp_path_factory.mktemp("doc") / "story.txt"
    path.write_text("\n\n".join(paragraphs[:10]))
    return path


def test_memwalker_end_to_end_on_the_embedded_model(session, book):
    question = "What is the name of the supply boat?"
    options = ["Isobel's Gate", "Margery Dell", "Orra's Bowl", "Kell Stone"]
    answer = session.ask(book, question, options=options, method="memwalker", **OPTIONS)
    tree = session.reader("memwalker", **OPTIONS).load(session.document(book))
    # the tree: segments cover the text in order, at most 200 tokens each; 2-3 children per parent; >= 2 levels
    assert tree is not None and tree.depth >= 2
    assert " ".join(leaf.text for leaf in tree.leaves).split() == book.read_text().split()
    assert all(leaf.tokens <= 200 and leaf.summary.strip() for leaf in tree.leaves)
    limit = tree.settings["node_limit"]
    for node in tree.nodes:
        if not node.is_leaf:
            assert 2 <= len(node.children) <= 3 and node.summary.strip()
            assert node.compressed == (node.tokens > limit)
            assert node.compressed or node.summary == node.text
    # the grammar makes every reply parse; each navigation call is in the trace and counted on its decision
    d, steps = answer.details, answer.details["trajectory"]
    assert d["valid_action_rate"] == 1.0 and d["invalid_replies"] == 0
    assert [e.role for e in answer.trace.events] == ["navigate"] * d["navigation_calls"]
    assert d["navigation_calls"] == sum(s["calls"] for s in steps) > 0
    # the walk: from the root, each triage to a child of the node it stands on, each leaf read a real leaf
    assert d["walk"].startswith("root → ") and steps[0]["node"] == "root" and steps[0]["kind"] == "triage"
    for s, following in zip(steps, steps[1:] + [None]):
        node = tree.node(s["node"])
        if s["kind"] == "triage":
            assert 0 <= s["action"] < len(node.children) and following is not None
            assert following["node"] == node.children[s["action"]]  # the next decision is at the chosen child
        elif s["kind"] == "leaf":
            assert node.is_leaf and s["action"] in (-1, -2)
    leaves = {leaf.id: leaf.index for leaf in tree.leaves}
    assert d["leaves_read"] and set(d["leaves_read"]) <= set(leaves)
    assert answer.pages_read == [leaves[i] for i in d["leaves_read"]]
    assert 0 < d["fraction_read"] <= 1
    document = session.document(book)  # every citation's quote is the document's text at its offsets
    assert all(document.text[c.start:c.end] == c.quote and c.document == document.id for c in answer.citations)
    # it ends at a leaf that answered with one of the options, or records why there is no answer
    last = steps[-1]
    if answer.choice is not None:
        assert answer.letter in ("A", "B", "C", "D") and answer.text == options[answer.choice]
        assert last["kind"] == "leaf" and last["action"] == -2 and last["answer"] == answer.letter
        assert d["navigation_failure"] is None and d["walk"].endswith(f"(leaf: -2, answer {answer.letter})")
    else:
        assert answer.text == "no answer" and d["navigation_failure"] == last["kind"] in {"exhausted", "budget"}
        assert any(f.startswith("no answer: ") for f in answer.fallbacks), answer.fallbacks
    # the same question again: the tree and every navigation reply come from the store
    again = session.ask(book, question, options=options, method="memwalker", **OPTIONS)
    assert again.letter == answer.letter and again.details["walk"] == d["walk"]
    assert again.index_trace is None and again.usage.calls == again.usage.cached_calls > 0


def test_memwalker_free_form_without_reasoning_on_the_embedded_model(session, book):
    answer = session.ask(book, "Who finds the map?", method="memwalker", reasoning=False, **OPTIONS)
    d = answer.details
    assert answer.choice is None and answer.text.strip()
    assert d["valid_action_rate"] == 1.0
    triage = [s for s in d["trajectory"] if s["kind"] == "triage" and s["calls"]]
    assert triage and all(s["reasoning"] == "" for s in triage)  # "Action: N" only
