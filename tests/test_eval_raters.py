"""ReadAgent's LLM raters and the MTBench+ judge: parsing odd replies, the aggregation rule, retries, fallbacks."""

import pytest

from pagemind import LLM, ScriptedLLM
from pagemind.eval.raters import Raters, combine, parse_judge, parse_permissive, parse_strict
from pagemind.prompts import get_prompt


@pytest.mark.parametrize("reply, expected", [
    ("YES", "yes"), ("no", "no"), ("**Yes.**", "yes"), ("No, John's answer misses the point.", "no"),
    ("Yes, partially", "no"),  # not an exact match
    ("John's answer agrees. YES", "yes"), ("I cannot tell.", None), ("", None), ("Nothing notable", None),
])
def test_strict_parsing(reply, expected):
    assert parse_strict(reply) == expected


@pytest.mark.parametrize("reply, expected", [
    ("Yes", "yes"), ('"Yes, partially"', "partial"), ("yes - partially.", "partial"), ("Partially.", "partial"),
    ("No.", "no"), ("## Yes\nbecause it contains it", "yes"), ("Maybe", None),
])
def test_permissive_parsing(reply, expected):
    assert parse_permissive(reply) == expected


@pytest.mark.parametrize("reply, expected", [
    ("The answer is faithful. [[87]]", 87), ("[[ 5 ]]", 5), ("Rating: 40", 40), ("[[150]] then [[60]]", 60),
    ("no number", None), ("[[0]]", None),
])
def test_judge_parsing(reply, expected):
    assert parse_judge(reply) == expected


def test_the_papers_aggregation_rule():
    assert combine("yes", "no") == "exact" and combine("no", "yes") == "exact"
    assert combine("no", "partial") == "partial" and combine(None, "partial") == "partial"
    assert combine("no", "no") == "none" and combine(None, None) == "none"


def test_prompts_are_the_papers_words():
    strict = get_prompt("raters", "strict")
    text = strict.render(question="Q?", response="R.", reference="G.")
    assert not strict.verbatim and strict.differences and strict.role == "rate"
    assert "After reading some text, John was given the following question about the text:\nQ?" in text
    assert text.endswith("Does John's answer agree with the ground truth answer? Please answer YES or NO.")
    permissive = get_prompt("raters", "permissive").render(question="Q?", response="R.", reference="G.")
    assert 'If John\'s response is more specific than the ground truth answer, answer "Yes".' in permissive


def test_best_rating_over_references_and_usage():
    fake = ScriptedLLM(by_role={"rate": ["NO", "No", "NO", "Yes, partially", "NO", "Yes"]})
    rating = Raters(LLM(fake)).rate("Who?", "Ann", ["Bo", "Ann Lee", "Ann"])
    assert [d["label"] for d in rating.decisions] == ["none", "partial", "exact"]
    assert rating.label == "exact" and rating.scores == {"lr1": 1.0, "lr2": 1.0}
    assert rating.trace.usage.calls == 6 and not rating.fallbacks
    first = fake.history[0].messages[0].content
    assert "John's answer to the question was:\nAnn" in first and "The ground truth answer was:\nBo" in first


def test_partial_only_counts_for_lr2():
    rating = Raters(LLM(ScriptedLLM(by_role={"rate": ["NO", "Yes, partially"]}))).rate("Q", "A", ["G"])
    assert rating.scores == {"lr1": 0.0, "lr2": 1.0}


def test_unparsable_replies_are_retried_then_recorded_as_no_match():
    fake = ScriptedLLM(by_role={"rate": ["hmm", "let me think", "YES", "???", "still unsure", "nope?"]})
    rating = Raters(LLM(fake), max_retries=2).rate("Q", "A", ["G"])
    assert rating.decisions[0]["strict"] == "yes"  # the third strict reply parsed
    assert rating.decisions[0]["permissive"] is None and rating.label == "exact"
    assert len(rating.fallbacks) == 1 and "permissive rater named no rating after 3 replies" in rating.fallbacks[0]
    retry = fake.history[1].messages
    assert [m.role for m in retry] == ["user", "assistant", "user"] and "YES or NO" in retry[-1].content
    assert len(fake.history) == 6  # bounded: 3 + 3


def test_grammar_constrains_the_reply_where_the_backend_can():
    fake = ScriptedLLM(by_role={"rate": ["YES", "Yes"]}, supports_grammar=True)
    Raters(LLM(fake)).rate("Q", "A", ["G"])
    assert fake.history[0].constraint.gbnf == 'root ::= "YES" | "NO"'
    assert '"Yes, partially"' in fake.history[1].constraint.gbnf


def test_judge_fills_memochats_placeholders():
    fake = ScriptedLLM(by_role={"rate": ["I think it is fine", "[[70]]"]})
    j = Raters(LLM(fake)).judge("H: RCH_0 | Q: UQ_1 | R: BR_2", "talked about cats", "What pet?", "A cat.")
    assert j.rating == 70 and j.scores == {"judge": 0.7}
    assert fake.history[0].messages[0].content == "H: talked about cats | Q: What pet? | R: A cat."
    missing = Raters(LLM(ScriptedLLM())).judge(None, "h", "q", "r")
    assert missing.rating is None and missing.scores == {"judge": 0.0} and "no judge prompt" in missing.fallbacks[0]
