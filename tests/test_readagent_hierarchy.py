"""ReadAgent beyond the window, top-down (overflow=hierarchical, pagemind's variant past the paper's stated limit):
groups of consecutive gists gisted again into parts, level by level until the top fits; the model chooses parts,
then pages inside them; parts are stored (resume, reuse); when the gists fit, every prompt is the paper's."""

from __future__ import annotations

import re
import threading

import pytest

from helpers import middle_label
from pagemind.answering.question import Question
from pagemind.llm.client import LLM
from pagemind.llm.fake import ScriptedLLM
from pagemind.methods import registry
from pagemind.methods.readagent.hierarchy import part_kind
from pagemind.store import Store
from pagemind.text import Document

QUESTION = Question("Where did the lighthouse keeper hide the brass compass?", ("in the boathouse", "in the attic"))
ALL = ("readagent-p", "readagent-s", "gistmem")


def book(pages: int) -> Document:
    """Paragraphs of filler; one paragraph in the middle speaks of the compass."""
    paragraphs = [" ".join(f"tide{i}w{j}" for j in range(70)) for i in range(pages * 5)]
    paragraphs[pages * 5 // 2] = ("The lighthouse keeper hid the brass compass in the boathouse under the nets. "
                                  + " ".join(f"filler{j}" for j in range(50)))
    return Document.from_text("\n\n".join(paragraphs))


def is_part_gist(request) -> bool:
    return "several consecutive pages" in request.messages[0].content


def gist(request) -> str:
    """A page's 'gist': twelve words of each paragraph; a part's: twelve words of each gist, those about the
    compass when there are (a summariser that keeps what matters)."""
    passage = request.messages[-1].content.split("Passage:\n", 1)[1]
    lines = [line.split() for line in passage.splitlines() if line.strip()]
    if not is_part_gist(request):
        return " ".join(" ".join(words[:12]) for words in lines)
    kept = []
    for words in lines:
        at = next((k for k, w in enumerate(words) if w == "The" and "compass" in words[k:k + 12]), 0)
        kept.append(" ".join(words[at:at + 12]))
    return " ".join(kept)


def shown(request, noun: str) -> list[int]:
    return [int(n) for n in re.findall(rf"^<{noun} (\d+)>$", request.messages[0].content, flags=re.MULTILINE)]


def blocks(request, noun: str) -> dict[int, str]:
    text = request.messages[0].content
    return {int(n): body for n, body in re.findall(rf"^<{noun} (\d+)>\n(.*)$", text, flags=re.MULTILINE)}


def look_up(request) -> str:
    """Parts: the one that speaks of the compass, else the first. Pages: likewise; ReadAgent-S stops after one."""
    if "Part" in request.messages[0].content.split("Text:", 1)[0]:
        found = [i for i, body in blocks(request, "Part").items() if "compass" in body] or shown(request, "Part")
        return f"Part {found[0]}" if "SINGLE part" in request.messages[0].content else \
            f"I want to look into Part [{found[0]}] to check"
    if "Pages re-read already" in request.messages[0].content:
        past = request.messages[0].content.split("Pages re-read already", 1)[1].split("Question:", 1)[0]
        if re.search(r"\d", past):
            return "STOP"
    found = [i for i, body in blocks(request, "Page").items() if "compass" in body] or shown(request, "Page")
    return f"Page {found[0]}" if "SINGLE page" in request.messages[0].content else \
        f"I want to look up Page [{found[0]}] to check"


def fake(window: int, **by_role) -> ScriptedLLM:
    return ScriptedLLM(by_role={"paginate": middle_label, "gist": gist, "lookup": look_up,
                                "answer": "Answer: (A) in the boathouse", **by_role}, context_window=window)


def reader(method: str, scripted: ScriptedLLM, store: Store, **options):
    return registry.get(method)(LLM(scripted), store, overflow="hierarchical", **options)


@pytest.fixture(scope="module")
def long_book() -> Document:
    return book(200)


@pytest.mark.parametrize("method", ALL)
def test_a_gist_memory_beyond_an_8k_window_answers_top_down_and_a_second_question_reuses_the_parts(method,
                                                                                                   long_book):
    store = Store(":memory:")
    scripted = fake(8192)
    first = reader(method, scripted, store)
    memory = first.build(long_book)
    assert LLM(scripted).count_tokens(memory.tagged_gists()) > 8192  # the paper's look-up cannot be sent
    built = len(scripted.history)
    answer = first.answer(memory, QUESTION)
    assert answer.letter == "A"
    tree = answer.details["hierarchy"]
    assert tree["levels"] >= 1 and tree["parts_gisted"] == sum(tree["parts"]) > 0
    assert any("overflow=hierarchical" in f for f in answer.fallbacks)
    sent = scripted.history[built:]
    part_gists = [r for r in sent if r.role == "gist"]
    assert len(part_gists) == tree["parts_gisted"] and all(map(is_part_gist, part_gists))
    assert answer.trace.by_role()["gist"].calls == len(part_gists)  # the parts count in the answer's cost
    compass = next(p.index for p in memory.pages if "compass" in p.text)
    pages = answer.details["gists_shown"]
    assert compass in pages and pages == sorted(pages) and len(pages) <= 10  # one part of group_size pages
    for request in sent[len(part_gists):]:
        assert set(shown(request, "Page")) <= set(pages)  # no page outside the chosen part is ever shown
    if method != "gistmem":
        assert compass in answer.pages_read
    # a second question (another process: a new reader on the same store) gists nothing again
    again = fake(8192)
    second = reader(method, again, store).load(long_book)
    answer2 = reader(method, again, store).answer(second, QUESTION)
    assert answer2.letter == "A" and answer2.details["hierarchy"]["parts_gisted"] == 0
    assert not [r for r in again.history if r.role == "gist"]


def test_several_levels_when_one_is_not_enough_and_each_level_chooses_inside_the_one_above(long_book):
    scripted = fake(2048)
    p = reader("readagent-p", scripted, Store(":memory:"), max_pages=1, max_groups=1)
    memory = p.build(long_book)
    built = len(scripted.history)
    answer = p.answer(memory, QUESTION)
    tree = answer.details["hierarchy"]
    assert tree["levels"] == 2 and [step["level"] for step in tree["path"]] == [2, 1]
    top, below = tree["path"]
    lookups = [r for r in scripted.history[built:] if r.role == "lookup"]
    assert shown(lookups[0], "Part") == list(range(tree["parts"][1]))  # every top part
    (chosen_top,) = top["kept"]
    assert shown(lookups[1], "Part") == [i for i in range(tree["parts"][0]) if i // 10 == chosen_top]
    (chosen,) = below["kept"]
    assert answer.details["gists_shown"] == [i for i in range(len(memory.pages)) if i // 10 == chosen]
    assert answer.letter == "A"


def test_the_look_up_chooses_pages_only_inside_the_chosen_part(long_book):
    """A page outside the chosen part is not offered: naming it is re-asked like any out-of-range page."""
    replies = iter(["I want to look up Page [0] to check"])

    def outside_first(request) -> str:
        if "Which page(s)" in request.messages[0].content and len(request.messages) == 1:
            return next(replies, None) or look_up(request)
        return look_up(request)

    scripted = fake(8192, lookup=outside_first)
    p = reader("readagent-p", scripted, Store(":memory:"))
    memory = p.build(long_book)
    answer = p.answer(memory, QUESTION)
    part = answer.details["hierarchy"]["path"][-1]["kept"]
    inside = {i for i in range(len(memory.pages)) if i // 10 in part}
    assert 0 not in inside and set(answer.details["requested_pages"]) <= inside and answer.details["requested_pages"]
    readings = [e.decision for e in answer.trace.events if e.role == "lookup"]
    assert any("invalid" in d and "page 0 out of range the pages shown" in d for d in readings)


def test_an_unparsable_part_choice_is_re_asked_then_the_fallback_is_recorded(long_book):
    def mumbles_about_parts(request) -> str:
        return "Hmm, hard to say." if "Part" in request.messages[0].content else look_up(request)

    scripted = fake(8192, lookup=mumbles_about_parts)
    p = reader("readagent-p", scripted, Store(":memory:"), max_retries=2)
    memory = p.build(long_book)
    answer = p.answer(memory, QUESTION)
    part_lookups = [e for e in answer.trace.events if e.role == "lookup" and e.decision.startswith("invalid")
                    and "part" in e.decision]
    assert len(part_lookups) == 3  # the first ask and two re-asks
    fallback = next(f for f in answer.fallbacks if "parts of level 1 was unusable" in f)
    assert "most relevant to the question (BM25)" in fallback
    compass = next(q.index for q in memory.pages if "compass" in q.text)
    assert compass in answer.details["gists_shown"]  # BM25 over the part gists found the compass's part
    assert answer.letter == "A"


class Killed(Exception):
    pass


def test_a_question_killed_while_gisting_parts_resumes_where_it_stopped(long_book):
    store = Store(":memory:")
    lock, made = threading.Lock(), []

    def dies_after_five(request) -> str:
        if is_part_gist(request):
            with lock:
                if len(made) >= 5:
                    raise Killed("the process was killed")
                made.append(1)
        return gist(request)

    dying = fake(8192, gist=dies_after_five)
    p = reader("readagent-s", dying, store)
    memory = p.build(long_book)
    with pytest.raises(Killed):
        p.answer(memory, QUESTION)
    stored = store.items(memory.key, part_kind(1, 10))
    assert len(stored) == 5
    resumed = fake(8192)
    answer = reader("readagent-s", resumed, store).answer(memory, QUESTION)
    parts = answer.details["hierarchy"]["parts"][0]
    assert answer.details["hierarchy"]["parts_gisted"] == parts - 5
    assert len([r for r in resumed.history if r.role == "gist"]) == parts - 5
    whole = Store(":memory:")
    fresh = reader("readagent-s", fake(8192), whole)
    fresh.answer(fresh.build(long_book), QUESTION)
    assert store.items(memory.key, part_kind(1, 10)) == whole.items(fresh.memory_key(long_book), part_kind(1, 10))
    assert answer.letter == "A"


@pytest.mark.parametrize("method", ALL)
def test_when_the_gists_fit_every_prompt_is_the_papers(method):
    doc = book(30)
    sent = {}
    for overflow in ("refuse", "hierarchical"):
        scripted = fake(1_000_000)
        r = registry.get(method)(LLM(scripted, concurrency=1), Store(":memory:"), overflow=overflow)  # in order
        answer = r.answer(r.build(doc), QUESTION)
        assert "hierarchy" not in answer.details and not answer.fallbacks
        sent[overflow] = [(q.role, q.messages, q.max_tokens, q.constraint) for q in scripted.history]
    assert sent["hierarchical"] == sent["refuse"]
    assert not any(re.search(r"<Part \d+>", m.content) for _, messages, _, _ in sent["hierarchical"]
                   for m in messages)
