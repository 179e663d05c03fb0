"""Answers that judge their own support (issue 38): claims checked against the cited text without an LLM call, the
opt-in verifier (labels, log-probabilities, re-ask, fallback), abstention, and the surfaces that show them."""

import json
import math
import re

import pytest
from click.testing import CliRunner

from pagemind import LLM, Document, Pagemind, ScriptedLLM, Store
from pagemind.answering.question import Question
from pagemind.answering.support import assess, declined, names, numbers, placeholder, registrant
from pagemind.answering.verify import label_probability, parse
from pagemind.citations import Citation
from pagemind.cli.main import cli
from pagemind.llm.base import LLMResponse, TokenLogprob
from pagemind.methods import registry

STORY = ("The letter came with the supply boat on a Thursday in October. Tam Ruddock skippered the Margery Dell.\n\n"
         "Mr. Pellow arrived on the Wednesday in a grey coat too thin for the weather. He climbed the one hundred and "
         "twelve steps with a handkerchief pressed to his mouth.\n\n"
         "Wren found the map inside an old sea chest in the oil store.")


def ask(answer, question, text=STORY, **options):
    fake = ScriptedLLM(by_role={"answer": answer, "verify": options.pop("verifier", "supported")},
                       supports_logprobs=options.pop("logprobs", False))
    reader = registry.get("full")(LLM(fake, concurrency=1), Store(":memory:"), **options)
    got = reader.answer(reader.build(Document.from_text(text)), Question.parse(question))
    return got, fake


# --- numbers, names, refusals ----------------------------------------------------------------------------
def test_numbers_are_one_number_however_written():
    assert numbers("one hundred and twelve steps, 1,200 feet, 3.50 pounds, the 14th, twenty-one") == \
        {"112", "1200", "3.5", "14", "21"}
    assert numbers("and so on") == set()


def test_names_are_capitalised_words_inside_a_sentence():
    assert names("Mr. Pellow met Tam Ruddock. Then they left.") == {"pellow", "tam", "ruddock"}


def test_a_reply_that_says_the_text_does_not_say_is_declined():
    assert declined("The story does not say how old Mr. Pellow is.") and declined("This is not mentioned.")
    assert declined("Cannot be inferred from the text above.")  # MemWalker's forced answer on a 10-K
    assert not declined("He is 45 years old.") and not declined("The text says he was grey-faced.")
    # a model speaking for itself: "I don't know", "I could not find ..." (not a person who does not know)
    assert declined("I don't know.") and declined("I could not find where Maud lives.") and declined("I can't recall.")
    assert not declined("She does not know the way.") and not declined("I know Maud well.")
    # "do not indicate" answers when its subject is the thing asked about, declines when it is the text (issue 47)
    assert not declined("JnJ's FY2022 financials do not indicate a high growth company.")
    assert declined("The filing does not indicate the FY2023 capex.") and declined("It does not specifically say.")


def test_a_stand_in_for_no_answer_is_declined_and_scored_a_refusal_but_none_or_minus_one_may_answer():
    """Issue 47: answers that stand for no answer ("N/A", "null", "not found") are declined by the support check
    and scored a refusal; "None", "-1", "NA" and "Nil" answer some questions and are left to be judged as answers."""
    from pagemind.eval.metrics import financebench

    region = "Which region had the highest EBITDAR contribution for MGM during FY2022?"
    for said in ("N/A", "n/a.", "**null**", "Not found", "Not applicable"):
        assert placeholder(said) and not declined(said)
        judged = assess(region, said, [], ["Las Vegas Strip Resorts contributed most of the EBITDAR."])
        assert judged.declined and judged.label == "unsupported" and "stands for no answer" in judged.reason
        assert financebench(said, "Las Vegas resorts contributed ~90%", region)["refused"] == 1.0
    for said in ("None", "-1", "NA", "Nil", "Las Vegas"):
        assert not placeholder(said)
    headcount = "What was the year-over-year change in headcount, in percent?"
    assert financebench("-1", "-1%", headcount) == {"accuracy": 1.0, "refused": 0.0, "numeric": 1.0}
    charges = "What goodwill impairment charges did the company record in FY2022?"
    assert financebench("None", "None", charges)["refused"] == 0.0
    assert not assess(charges, "None", [], ["No goodwill impairment was recorded."]).declined


# --- support without an LLM call ------------------------------------------------------------------------
def test_a_short_answer_is_read_with_its_question_and_supported_by_its_source():
    answer, fake = ask("Answer: Grey.", "What colour was the inspector's coat?")
    assert answer.support.label == "supported" and not answer.abstained and answer.text == "Grey."
    assert answer.support.sources == (1,) and "grey coat" in answer.citations[0].quote
    assert fake.roles() == ["answer"]  # no verifier call unless asked


def test_a_number_written_in_words_supports_the_same_number_in_digits():
    answer, _ = ask("He climbed 112 steps.", "How many steps did Pellow climb?")
    assert answer.support.label == "supported" and answer.support.claims[0].missing == ()


def test_an_invented_number_abstains_and_names_it_with_what_was_closest():
    answer, _ = ask("Mr. Pellow is 45 years old.", "How old is Mr. Pellow?")
    assert answer.abstained and answer.draft == "Mr. Pellow is 45 years old." and answer.choice is None
    assert answer.support.unfounded == ("45",) and answer.support.label == "unsupported"
    assert answer.text.startswith("The document does not say (45 is nowhere in what was read).")
    assert "The closest it comes: \"" in answer.text and answer.citations  # what was closest stays cited
    data = answer.as_dict()
    assert data["abstained"] is True and data["draft"] == answer.draft and list(data["support"]["unfounded"]) == ["45"]


def test_invented_names_are_unsupported_and_a_true_sentence_is_supported():
    wrong, _ = ask("Captain Ahab skippered the Pequod.", "Who skippered the supply boat?")
    right, _ = ask("Tam Ruddock skippered the Margery Dell.", "Who skippered the supply boat?")
    assert wrong.support.unfounded == ("ahab", "pequod") and wrong.abstained
    assert right.support.label == "supported" and right.support.confidence > wrong.support.confidence + 0.5


def test_a_model_that_declines_abstains_without_a_draft_line():
    answer, _ = ask("The text does not say how old he is.", "How old is Mr. Pellow?")
    assert answer.abstained and answer.support.declined and answer.support.confidence == 0.0


def test_partial_support_answers_and_says_so():
    answer, _ = ask("He wore a grey coat. He sailed to Iceland on a whaler.", "What did the inspector wear?")
    assert answer.support.claims[0].label == "supported"
    assert answer.support.claims[1].label == "unsupported" and answer.support.label == "partial"
    assert not answer.abstained and "iceland" in answer.support.unfounded


def test_abstain_off_keeps_the_answer_and_multiple_choice_never_abstains_by_default():
    off, _ = ask("Mr. Pellow is 45 years old.", "How old is Mr. Pellow?", abstain="off")
    assert off.text == "Mr. Pellow is 45 years old." and not off.abstained and off.support.label == "unsupported"
    choice, _ = ask("Answer: (B)", "Where was the map?\n(A) In a boat\n(B) In a sea chest")
    assert choice.letter == "B" and not choice.abstained and choice.support.label == "supported"
    on, _ = ask("Answer: (A)", "Where was the map?\n(A) In a whaler off Iceland\n(B) In a sea chest", abstain="on")
    assert on.abstained and on.choice is None and on.draft == "In a whaler off Iceland"


def test_support_off_and_a_reader_without_citations_are_not_judged():
    off, _ = ask("Mr. Pellow is 45 years old.", "How old?", support="off")
    uncited, _ = ask("Mr. Pellow is 45 years old.", "How old?", cite="off")
    assert off.support is None and uncited.support is None and not off.abstained and not uncited.abstained
    assert off.as_dict()["support"] is None and off.confidence is None


def test_the_minilm_scorer_adds_similarity_and_lexical_has_none():
    lexical, _ = ask("He climbed 112 steps.", "How many steps did Pellow climb?", support="lexical")
    dense, _ = ask("He climbed 112 steps.", "How many steps did Pellow climb?", support="minilm")
    assert lexical.support.scorer == "lexical" and lexical.support.claims[0].similarity is None
    assert dense.support.scorer == "minilm" and 0.3 < dense.support.claims[0].similarity <= 1.0


def test_an_empty_reply_and_a_number_only_document_are_handled():
    empty, _ = ask("", "Who?")
    assert empty.abstained and empty.support.reason == "the answer is empty"
    sums = assess(Question("What is the total?"), "The total is 4,512.",
                  [Citation("d", "text", None, 0, 11, "4512 1200 7", "text")], ["4512 1200 7"])
    assert sums.label == "supported" and sums.unfounded == ()


# --- the verifier --------------------------------------------------------------------------------------
def test_verify_labels_the_answer_from_the_cited_text_alone():
    answer, fake = ask("Grey.", "What colour was the inspector's coat?", verify=True, verifier="unsupported")
    assert fake.roles() == ["answer", "verify"]
    prompt = fake.history[-1].messages[0].content
    assert "[1] Mr. Pellow arrived on the Wednesday in a grey coat" in prompt and "Wren found the map" not in prompt
    verdict = answer.support.verdict
    assert verdict.label == "unsupported" and verdict.basis == "label" and verdict.confidence is None
    assert answer.support.label == "unsupported" and answer.abstained  # the more cautious label is kept
    assert fake.history[-1].constraint.gbnf and fake.history[-1].logprobs == 5


def test_a_verifier_reply_outside_the_labels_is_asked_again_then_recorded_never_supported():
    again, fake = ask("Grey.", "What colour was the inspector's coat?", verify=True,
                      verifier=["I think so", "partial"])
    assert fake.roles() == ["answer", "verify", "verify"] and again.support.verdict.label == "partial"
    failed, _ = ask("Grey.", "What colour was the inspector's coat?", verify=True, verifier=["yes", "maybe"])
    assert failed.support.verdict.label is None and failed.support.verdict.basis == "fallback"
    assert failed.support.label == "supported"  # the words' label stands; the fallback is recorded
    assert any(f.startswith("verify: no label from the verifier") for f in failed.fallbacks)


def test_the_label_probability_comes_from_the_alternatives_of_the_token_where_it_begins():
    reply = LLMResponse('{"label": "supported"}', 10, 5, 0.0, "m", logprobs=(
        TokenLogprob('{"', -0.01), TokenLogprob('label', -0.01), TokenLogprob('":', -0.01),
        TokenLogprob(' "', -0.01), TokenLogprob('supported', -0.2, (("supported", -0.2), ("un", -1.8),
                                                                    ("partial", -3.0)))))
    p = label_probability(reply, "supported")
    assert 0.75 < p < 0.85  # e^-0.2 / (e^-0.2 + e^-1.8 + e^-3.0)
    assert label_probability(LLMResponse("supported", 1, 1, 0.0, "m"), "supported") is None  # no log-probabilities
    assert parse("Unsupported.") == "unsupported" and parse("supported or partial").startswith("not one label")


def test_a_backend_with_log_probabilities_gives_the_verdict_its_confidence():
    def verifier(request):
        return LLMResponse("partial", 5, 1, 0.0, "scripted",
                           logprobs=(TokenLogprob("partial", -0.1, (("partial", -0.1), ("supported", -2.5))),))

    answer, _ = ask("Grey.", "What colour was the inspector's coat?", verify=True, verifier=verifier, logprobs=True)
    verdict = answer.support.verdict
    assert verdict.basis == "logprobs" and 0.9 < verdict.confidence < 0.95 and answer.support.label == "partial"


def test_the_cache_keeps_the_log_probabilities_of_a_reply(tmp_path):
    store = Store(tmp_path / "s.db")
    reply = LLMResponse("supported", 3, 1, 0.1, "m", logprobs=(TokenLogprob("supported", -0.3, (("un", -1.5),)),))
    store.put_response("k", reply)
    again = store.get_response("k")
    assert again.logprobs == reply.logprobs and again.cached


# --- surfaces ------------------------------------------------------------------------------------------
def test_the_cli_prints_the_support_line_after_the_sources_and_the_draft_when_it_abstains(tmp_path):
    fake = ScriptedLLM(by_role={"answer": "Answer: He is 45 years old."})
    result = CliRunner().invoke(cli, ["ask", "--sample", "How old is Mr. Pellow?", "-m", "full", "--store",
                                      str(tmp_path / "s.db")], obj={"backend": fake})
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.startswith("The document does not say (45 is nowhere in what was read).")
    assert out.index("Sources:") < out.index("Support: abstained: not supported by the sources — check them")
    assert "The model's draft (not supported): He is 45 years old." in out
    line = next(x for x in out.splitlines() if x.startswith("Support:"))
    # a figure: the support's value (0.06) recalibrated on labelled figures, still unlikely right
    shown = re.search(r"\(confidence (\d\.\d\d), fitted; support 0\.06; not in what was read: 45\)", line)
    assert shown is not None and float(shown[1]) < 0.3, line
    said = CliRunner().invoke(cli, ["ask", "--sample", "What colour was the inspector's coat?", "-m", "full",
                                    "--store", str(tmp_path / "s.db")],
                              obj={"backend": ScriptedLLM(by_role={"answer": "Answer: Grey."})})
    line = next(x for x in said.stdout.splitlines() if x.startswith("Support:"))  # a free answer: the fitted
    assert re.fullmatch(r"Support: supported by \[1\].* \(confidence 0\.\d\d, fitted; support 1\.00\)", line), line
    grey = CliRunner().invoke(cli, ["ask", "--sample", "What colour was the inspector's coat?", "-m", "full",
                                    "--store", str(tmp_path / "s.db"), "--json"],
                              obj={"backend": ScriptedLLM(by_role={"answer": "Answer: Grey."})})
    data = json.loads(grey.stdout)
    assert data["answer"] == "Grey." and data["support"]["label"] == "supported" and data["abstained"] is False
    assert data["support"]["line"].startswith("supported by [1]") and "grey coat" in data["citations"][0]["quote"]


def test_the_sample_is_the_story_the_done_when_questions_are_about():
    from importlib import resources

    story = resources.files("pagemind").joinpath("samples", "lighthouse.txt").read_text(encoding="utf-8")
    assert "in a grey coat too thin for the weather" in story
    assert " years old" not in story  # Mr. Pellow's age is not in it


def navigate(request):
    prompt = request.messages[-1].content
    return "Reasoning: here.\nAction: -2\nAnswer: 45 years old." if "-2" in prompt else "Reasoning: x.\nAction: 0"


@pytest.mark.parametrize("method", ["rag", "readagent-p", "memwalker"])
def test_every_reader_judges_support_through_the_base_reader(method):
    fake = ScriptedLLM(by_role={"answer": "Answer: 45 years old.", "lookup": "Page [0]", "gist": "a gist",
                                "paginate": "Break point: <1>", "summarise": "a summary",
                                "navigate": navigate})
    opts = {"rag": {"fragment_words": 30}, "memwalker": {"segment_tokens": 60}}.get(method, {})
    reader = registry.get(method)(LLM(fake, concurrency=1), Store(":memory:"), **opts)
    got = reader.answer(reader.build(Document.from_text(STORY)), Question("How old is Mr. Pellow?"))
    assert got.support is not None and got.abstained and "45" in got.support.unfounded


def test_pagemind_ask_records_support_in_the_run(tmp_path):
    with Pagemind(ScriptedLLM(by_role={"answer": "Answer: Grey."}), store=tmp_path / "s.db") as pm:
        answer = pm.ask(Document.from_text(STORY), "What colour was the inspector's coat?", method="full")
        run = pm.store.get_run(answer.run_id)
    assert answer.confidence == answer.calibrated and run.result["support"]["label"] == "supported"
    assert run.result["confidence"] == answer.confidence  # the run keeps the confidence the answer showed


def test_a_number_held_by_a_sentence_about_someone_else_is_not_support():
    text = STORY + "\n\nAbel Callis had kept the light on Brannoch Point for forty-one years."
    answer, _ = ask("41 years", "How old is Mr. Pellow?", text=text)
    assert answer.abstained and answer.support.claims[0].unnamed == ("pellow",)
    assert answer.text.startswith("The document does not say (the sentences holding the answer do not speak of "
                                  "Pellow).")
    she, _ = ask("A map.", "What did Wren find?", text="Wren opened the chest at last. She found a map inside.")
    assert she.support.label == "supported" and she.support.claims[0].unnamed == ()  # named just before "She"


def test_a_reply_that_copies_the_context_or_is_in_another_language_is_not_vouched_for():
    long_story = "\n\n".join(f"Wren climbed the {n} steps of tower {n}. The lamp of tower {n} was lit at dusk."
                             for n in range(1, 6))
    copied, _ = ask(long_story.replace("\n\n", " "), "Who climbed the steps?", text=long_story)
    assert copied.support.reason == "the reply copies what was read instead of answering"
    assert copied.support.label == "partial" and copied.support.confidence <= 0.35 and not copied.abstained
    french, _ = ask("Le manteau était gris.", "What colour was the inspector's coat?")
    assert french.abstained and french.support.label == "unsupported"


def test_a_verifier_can_lower_the_label_the_words_give_but_never_raise_it():
    lowered, _ = ask("Grey.", "What colour was the inspector's coat?", verify=True, verifier="partial")
    assert lowered.support.label == "partial" and lowered.support.reason == \
        "the verifier read the sources as not supporting it"
    kept, _ = ask("Mr. Pellow is 45 years old.", "How old is Mr. Pellow?", verify=True, verifier="supported")
    assert kept.support.label == "unsupported" and kept.abstained and kept.support.verdict.label == "supported"


def test_a_chosen_option_less_supported_than_another_is_flagged_with_the_better_one():
    right, _ = ask("Answer: (B)", "Where was the map?\n(A) In a whaler off Iceland\n(B) In an old sea chest")
    assert right.support.label == "supported" and right.support.rival[0] == "A"
    wrong, _ = ask("Answer: (A)", "Where was the map?\n(A) In the oil store, under a cat\n(B) In an old sea chest")
    assert wrong.support.rival == ("B", 1.0) and wrong.support.label == "partial" and not wrong.abstained
    assert wrong.support.confidence < wrong.support.claims[0].score  # scaled by how much better B is supported
    assert wrong.support.reason  # says why
    assert wrong.support.confidence < right.support.confidence


# --- a fitted confidence (issue 51) ------------------------------------------------------------------------------
def test_a_logistic_model_is_fitted_on_signals_and_round_trips():
    import random

    from pagemind.answering.calibration import Fitted, fit

    rng = random.Random(0)
    rows, right = [], []
    for _ in range(300):  # right answers have higher claim scores; the noise signal tells nothing
        ok = rng.random() < 0.5
        rows.append({"claim_min": rng.gauss(0.8 if ok else 0.4, 0.15), "noise": rng.random()})
        right.append(ok)
    model = fit(rows, right, ("claim_min", "noise"), "free", source="synthetic")
    assert model.weights[0] > 1.0 and abs(model.weights[1]) < 0.3 and model.n == 300
    assert model.probability({"claim_min": 0.9, "noise": 0.5}) > 0.85 > 0.15 > \
        model.probability({"claim_min": 0.3, "noise": 0.5})
    assert Fitted.from_dict(json.loads(json.dumps(model.as_dict()))).probability({"claim_min": 0.6}) == \
        pytest.approx(model.probability({"claim_min": 0.6}), abs=1e-5)
    with pytest.raises(ValueError, match="every signal"):
        Fitted.from_dict({**model.as_dict(), "weights": [1.0]})


def test_a_fitted_confidence_never_rises_as_support_falls():
    """Issue 51: fitted freely on a few hundred labels, the free-form model weighed "supported" -0.37 and the choice
    model "missing" +0.17 — an answer ranked higher for being less supported. Each signal's weight keeps the sign
    signals.DIRECTION declares: one the labels pull the other way weighs nothing, the rest are fitted again."""
    import random

    from pagemind.answering import calibration
    from pagemind.answering.calibration import fit
    from pagemind.answering.signals import DIRECTION, NAMES

    assert set(DIRECTION) == set(NAMES)  # every signal declares its way
    rng = random.Random(1)
    rows, right = [], []
    for _ in range(300):  # the labels' noise: "supported" answers a little less often right; claim_min tells
        ok = rng.random() < 0.5
        rows.append({"claim_min": rng.gauss(0.8 if ok else 0.4, 0.15), "supported": float(rng.random() < (
            0.3 if ok else 0.6)), "missing": float(rng.random() < (0.5 if ok else 0.2))})
        right.append(ok)
    free = fit(rows, right, ("claim_min", "supported", "missing"), "free")
    assert free.weights[0] > 1.0 and free.weights[1] == 0.0 and free.weights[2] == 0.0
    low, high = {"claim_min": 0.6, "supported": 0.0, "missing": 1.0}, {"claim_min": 0.6, "supported": 1.0,
                                                                        "missing": 0.0}
    assert free.probability(high) == free.probability(low)  # never lower for being supported, nor higher missing
    for model in calibration.fitted().values():  # and so the shipped ones
        assert all(DIRECTION[n] * w >= 0 for n, w in zip(model.names, model.weights)), model.kind
        # the review: "supported" and "partial" are one label each; a supported answer (partial read as at least
        # partly supported) never ranks below a partial one, nor a partial one below an unsupported one
        base = dict(zip(model.names, model.mean))
        ranked = [model.probability({**base, "supported": s, "partial": p}) for s, p in ((0, 0), (0, 1), (1, 0))]
        assert ranked == sorted(ranked), (model.kind, ranked)


def test_a_shipped_model_for_the_answers_kind_gives_its_confidence(monkeypatch):
    """Where package data holds a model for the kind of question, the answer's confidence is its probability of
    right (Answer.calibrated), read from the answer's signals; without one the support's hand-set value stands."""
    from pagemind.answering import calibration
    from pagemind.answering.signals import NAMES, kind_of, signals

    monkeypatch.setattr(calibration, "shipped", lambda: ())
    plain, _ = ask("Tam Ruddock skippered the Margery Dell.", "Who skippered the supply boat?")
    assert plain.calibrated is None and plain.confidence == plain.support.confidence and kind_of(plain) == "free"
    assert list(signals(plain)) == list(NAMES) and signals(plain)["supported"] == 1.0
    model = calibration.Fitted("free", ("claim_min",), (4.0,), -2.0, (0.5,), (0.25,), 100, "test")
    monkeypatch.setattr(calibration, "shipped", lambda: (model,))
    fitted, _ = ask("Tam Ruddock skippered the Margery Dell.", "Who skippered the supply boat?")
    assert fitted.calibrated == pytest.approx(model.probability(signals(fitted)), abs=1e-4)
    assert fitted.confidence == fitted.calibrated != fitted.support.confidence
    assert fitted.as_dict()["calibrated"] is True and plain.as_dict()["calibrated"] is False
    numeric, _ = ask("Mr. Pellow climbed 112 steps.", "How many steps did Mr. Pellow climb?")
    assert kind_of(numeric) == "numeric" and numeric.calibrated is None  # none for figures among these


def test_a_signal_the_backend_does_not_give_counts_as_its_mean_where_it_was_never_missing():
    """A review found the shipped free-form model giving an invented, withheld answer 0.85: the scripted backend
    returns no log-probabilities, and their 0 read as the surest reply the model had ever seen (every labelled
    answer had them). Missing where never missing in the labels, a signal counts as its mean there."""
    from pagemind.answering.calibration import Fitted

    model = Fitted("free", ("min_logprob", "has_probability", "claim_min"), (1.0, 0.0, 1.0), 0.0, (-1.5, 1.0, 0.5),
                   (0.5, 1.0, 0.25), 100)
    missing = model.probability({"min_logprob": 0.0, "has_probability": 0.0, "claim_min": 0.5})
    assert missing == pytest.approx(0.5) and model.probability({"min_logprob": 0.0, "has_probability": 1.0,
                                                                "claim_min": 0.5}) > 0.9
    learnt = Fitted("free", ("min_logprob", "has_probability"), (1.0, -1.0), 0.0, (-1.0, 0.5), (0.5, 0.5), 100)
    assert learnt.probability({"min_logprob": 0.0, "has_probability": 0.0}) == pytest.approx(
        1 / (1 + math.exp(-(2.0 + 1.0))))  # missing in the labels too: the model learnt what absence means


def _lettered(shares):
    """A reply "Answer: (B)" whose letter token carries ``shares`` as its alternatives' probabilities."""
    def reply(request):
        top = tuple((letter, math.log(p)) for letter, p in shares.items())
        return LLMResponse("Answer: (B)", 10, 4, 0.0, "scripted", logprobs=(
            TokenLogprob("Answer", -0.01), TokenLogprob(": (", -0.01), TokenLogprob("B", math.log(shares["B"]), top),
            TokenLogprob(")", -0.01)))
    return reply


def test_a_choice_is_asked_once_more_with_no_text_and_the_confidence_reads_how_far_the_text_moved_it():
    """Issue 51: an option the model would pick without reading is a guess however sure it looks. Where the backend
    gives log-probabilities, a multiple-choice answer gets one short call — the same prompt, question and options,
    with no text — and records the chosen option's share there (``probability.prior``) beside its share read; the
    fitted confidence reads the difference (``lift``: on the labelled QuALITY answers AUROC 0.60 for the share
    alone, 0.68 for the lift). ``prior=off``, a backend without log-probabilities: no call, the lift absent."""
    from pagemind.answering import calibration
    from pagemind.answering.signals import signals

    question = "Who skippered the supply boat?\n(A) Mr. Pellow\n(B) Tam Ruddock"
    story = "Tam Ruddock skippered the Margery Dell, the supply boat of the lighthouse."

    def run(unread, **options):
        fake = ScriptedLLM(by_role={"answer": _lettered({"A": 0.1, "B": 0.9}), "prior": _lettered(unread)},
                           supports_logprobs=options.pop("logprobs", True))
        options.setdefault("reorder", "off")  # the prior alone (the reordered call: the next test)
        reader = registry.get("full")(LLM(fake, concurrency=1), Store(":memory:"), **options)
        return reader.answer(reader.build(Document.from_text(story)), Question.parse(question)), fake

    read, fake = run({"A": 0.4, "B": 0.6})
    assert fake.roles() == ["answer", "prior"]
    unread_prompt = fake.history[-1].messages[0].content
    assert "(no text)" in unread_prompt and "Margery Dell" not in unread_prompt and "(B) Tam Ruddock" in unread_prompt
    assert read.probability.choice == pytest.approx(0.9) and read.probability.prior == pytest.approx(0.6)
    assert read.probability.lift == pytest.approx(0.3) and read.as_dict()["probability"]["prior"] == 0.6
    assert signals(read)["lift"] == pytest.approx(0.3) and signals(read)["has_prior"] == 1.0
    # and how far the chosen option led the next one read (0.9 against 0.1): a narrow lead is a coin toss
    assert read.probability.margin == pytest.approx(0.8) and read.as_dict()["probability"]["runner_up"] == 0.1
    assert signals(read)["margin"] == pytest.approx(0.8) and signals(read)["has_margin"] == 1.0
    guessed, _ = run({"A": 0.05, "B": 0.95})  # the model picks B as surely without the text: a guess
    assert signals(guessed)["lift"] == pytest.approx(-0.05) and guessed.confidence < read.confidence
    model = calibration.fitted()["choice"]
    assert model.probability(signals(guessed)) < model.probability(signals(read))
    off, fake = run({"A": 0.4, "B": 0.6}, prior="off")
    assert fake.roles() == ["answer"] and off.probability.prior is None and signals(off)["has_prior"] == 0.0
    plain, fake = run({"A": 0.4, "B": 0.6}, logprobs=False)
    assert fake.roles() == ["answer"] and plain.probability.prior is None and plain.probability.lift is None
    # the prior's call failing (a server gone, rate limits past their retries) leaves the answer as it is, said
    from pagemind.errors import BackendUnavailable

    def down(request):
        raise BackendUnavailable("the server went away")

    fake = ScriptedLLM(by_role={"answer": _lettered({"A": 0.1, "B": 0.9}), "prior": down}, supports_logprobs=True)
    reader = registry.get("full")(LLM(fake, concurrency=1, max_retries=0), Store(":memory:"), reorder="off")
    failed = reader.answer(reader.build(Document.from_text(story)), Question.parse(question))
    assert failed.letter == "B" and failed.probability.prior is None and signals(failed)["has_prior"] == 0.0
    assert any(f.startswith("prior: the call with no text failed") for f in failed.fallbacks)


def test_the_prior_is_read_where_its_reply_names_an_option_not_at_an_article_before_it():
    """A review found a reply without a grammar, "A guess without the text. Answer: (B)", read as option A (the
    article) at 0.0: a sure guess turned into a large lift. The share is read at the token where the reply names its
    option, as an answer's letter is read; no option named, no prior. The call asks for a short reply whatever the
    grammar, and an answer asked as the next turn of a conversation (ReadAgent's follow-up) gets no prior."""
    from pagemind.llm.base import LLMRequest, Message
    from pagemind.llm.usage import Trace
    from pagemind.methods.reply import PRIOR_TOKENS, prior

    def prose(request):
        return LLMResponse("A guess without the text. Answer: (B)", 10, 9, 0.0, "scripted", logprobs=(
            TokenLogprob("A", -0.2, (("A", -0.2), ("The", -1.8))), TokenLogprob(" guess", -0.1),
            TokenLogprob(" Answer: (", -0.01), TokenLogprob("B", math.log(0.95), (("B", math.log(0.95)),
                                                                                   ("A", math.log(0.05)))),
            TokenLogprob(")", -0.01)))

    fake = ScriptedLLM(by_role={"prior": prose}, supports_logprobs=True)
    question = Question.parse("Who skippered the supply boat?\n(A) Mr. Pellow\n(B) Tam Ruddock")
    assert prior(LLM(fake, concurrency=1), question, "quality", False, 1, Trace()) == pytest.approx(0.95)
    assert fake.history[-1].max_tokens == PRIOR_TOKENS and fake.history[-1].constraint is None
    silent = ScriptedLLM(by_role={"prior": "I cannot tell without the text."}, supports_logprobs=True)
    assert prior(LLM(silent, concurrency=1), question, "quality", False, 1, Trace()) is None
    story = "Tam Ruddock skippered the Margery Dell, the supply boat of the lighthouse."
    answers = ScriptedLLM(by_role={"answer": _lettered({"A": 0.1, "B": 0.9}), "prior": _lettered({"A": 0.5, "B": 0.5}),
                                   "reordered": _lettered({"A": 0.2, "B": 0.8})}, supports_logprobs=True)
    reader = registry.get("full")(LLM(answers, concurrency=1), Store(":memory:"))
    from pagemind.answering.finish import Context

    context = Context()
    turn = LLMRequest(messages=(Message("user", "Which pages?"), Message("assistant", "2"),
                                Message("user", f"{story}\n{question.text}\n{question.options_block()}")),
                      role="answer", max_tokens=12)
    reader._reply(question, turn, context)
    # the options reversed in the turn that shows them: the conversation before it is the prefix, as asked
    assert answers.roles() == ["answer", "reordered"] and context.probability.choice == pytest.approx(0.9)
    # reversed, Tam Ruddock is (A), and the reply names (B) at 0.8: the pick did not hold, 0.2 left to it
    assert context.probability.prior is None and context.probability.reordered == pytest.approx(0.2)
    assert answers.history[-1].messages[:2] == turn.messages[:2]


def test_with_reorder_a_choice_is_asked_again_with_its_options_reversed_and_its_share_there_recorded(capsys, tmp_path,
                                                                                                   monkeypatch):
    """Issue 51: a small model's pick that follows a position (the first option, the last) moves when the options
    do. ``reorder=auto`` sends the answer's prompt again with the options listed in reverse order and nothing else
    changed — the text before them is the prompt the backend has just read — and records the chosen option's share
    there under its new letter (``probability.reordered``, signal ``reordered``); the prior's call is then not made
    (the model fitted on such answers reads the reordered share, not the lift), only where it failed. Off, a
    backend without log-probabilities, or a prompt that does not show the options as listed: no call; ``pagemind
    eval`` asks it only when told (the papers' protocols make the papers' calls)."""
    from pagemind.answering.signals import signals
    from pagemind.llm.base import LLMRequest, Message
    from pagemind.llm.usage import Trace
    from pagemind.methods.reply import REORDERED_TOKENS, reordered

    question = "Who skippered the supply boat?\n(A) Mr. Pellow\n(B) Tam Ruddock\n(C) Abel Hume"
    story = "Tam Ruddock skippered the Margery Dell, the supply boat of the lighthouse."

    def run(moved, **options):
        fake = ScriptedLLM(by_role={"answer": _lettered({"A": 0.1, "B": 0.9}), "reordered": _lettered(moved),
                                    "prior": _lettered({"A": 0.4, "B": 0.6})},
                           supports_logprobs=options.pop("logprobs", True))
        reader = registry.get("full")(LLM(fake, concurrency=1), Store(":memory:"), **options)
        return reader.answer(reader.build(Document.from_text(story)), Question.parse(question)), fake

    # reversed, Tam Ruddock is still (B): the reply naming (B) at 0.7 keeps the pick
    held, fake = run({"A": 0.2, "B": 0.7, "C": 0.1})  # auto, the default
    assert fake.roles() == ["answer", "reordered"]
    asked, again = fake.history[0].messages[0].content, fake.history[1].messages[0].content
    assert again == asked.replace("(A) Mr. Pellow\n(B) Tam Ruddock\n(C) Abel Hume",
                                  "(A) Abel Hume\n(B) Tam Ruddock\n(C) Mr. Pellow") and again != asked
    assert fake.history[1].max_tokens == REORDERED_TOKENS
    assert held.letter == "B" and held.probability.reordered == pytest.approx(0.7)
    assert held.as_dict()["probability"]["reordered"] == 0.7 and signals(held)["has_reordered"] == 1.0
    assert signals(held)["reordered"] == pytest.approx(0.7) and held.probability.prior is None
    assert signals(held)["has_prior"] == 0.0
    from pagemind.cli.render import print_support

    print_support(held)  # the CLI's support line says both shares
    assert "the model's own probability 0.90, 0.70 with the options reversed" in capsys.readouterr().out
    # read by the shipped model fitted on answers that had the call: a pick that moved is trusted less
    from pagemind.answering import calibration

    model = calibration.model_for("choice", signals(held))
    assert model is not None and model.needs == ("has_reordered",) and "reordered" in model.names
    assert not {"lift", "has_prior"} & set(model.names)  # so the prior's call would tell it nothing
    assert held.calibrated == pytest.approx(model.probability(signals(held)), abs=1e-4)
    moved, _ = run({"A": 0.05, "B": 0.1, "C": 0.85})
    assert moved.probability.reordered == pytest.approx(0.1) and moved.confidence < held.confidence
    off, fake = run({"A": 0.2, "B": 0.7, "C": 0.1}, reorder="off")
    assert fake.roles() == ["answer", "prior"] and off.probability.reordered is None
    assert signals(off)["has_reordered"] == 0.0 and "reordered" not in off.as_dict()["probability"]
    assert calibration.model_for("choice", signals(off)) is calibration.fitted()["choice"]  # fitted without it
    assert off.calibrated == pytest.approx(calibration.fitted()["choice"].probability(signals(off)), abs=1e-4)
    plain, fake = run({"A": 0.2, "B": 0.7, "C": 0.1}, logprobs=False)
    assert fake.roles() == ["answer"] and plain.probability.reordered is None
    # the share is the chosen option's under its new letter: Mr. Pellow, (A) as asked, is (C) reversed
    first = Question.parse("Who skippered the supply boat?\n(A) Mr. Pellow\n(B) Tam Ruddock\n(C) Abel Hume")
    request = LLMRequest(messages=(Message("user", f"{story}\n{first.text}\n{first.options_block()}"),),
                         role="answer", max_tokens=12)
    scripted = ScriptedLLM(by_role={"reordered": _lettered({"A": 0.25, "B": 0.7, "C": 0.05})},
                           supports_logprobs=True)
    assert reordered(LLM(scripted, concurrency=1), first, request, 0, Trace()) == pytest.approx(0.05)
    unlisted = LLMRequest(messages=(Message("user", f"{story}\n{first.text}\nA, B or C?"),), role="answer")
    assert reordered(LLM(scripted, concurrency=1), first, unlisted, 0, Trace()) is None
    assert len(scripted.history) == 1  # a prompt without the options as listed gets no call
    # the call failing (a server gone) leaves the answer as it is, said; the prior is still asked
    from pagemind.errors import BackendUnavailable

    def down(request):
        raise BackendUnavailable("the server went away")

    fake = ScriptedLLM(by_role={"answer": _lettered({"A": 0.1, "B": 0.9}), "reordered": down,
                                "prior": _lettered({"A": 0.4, "B": 0.6})}, supports_logprobs=True)
    reader = registry.get("full")(LLM(fake, concurrency=1, max_retries=0), Store(":memory:"))
    failed = reader.answer(reader.build(Document.from_text(story)), Question.parse(question))
    assert failed.letter == "B" and failed.probability.reordered is None and signals(failed)["has_reordered"] == 0.0
    assert failed.probability.prior == pytest.approx(0.6)
    assert any(f.startswith("reorder: the call with the options reversed failed") for f in failed.fallbacks)
    # the prior is skipped because the model shipped for such answers does not read the lift: prior=on asks it
    # anyway (labelled runs that record both), and so does auto where the model that reads them would read it
    both, fake = run({"A": 0.2, "B": 0.7, "C": 0.1}, prior="on")
    assert fake.roles() == ["answer", "reordered", "prior"] and both.probability.prior == pytest.approx(0.6)
    general = calibration.fitted()["choice"]
    assert "lift" in general.names and not general.needs
    monkeypatch.setattr(calibration, "shipped", lambda: (general,))  # no model fitted on answers with the call
    read, fake = run({"A": 0.2, "B": 0.7, "C": 0.1})
    assert fake.roles() == ["answer", "reordered", "prior"] and read.probability.prior == pytest.approx(0.6)
    # an evaluated method makes the papers' calls (and scores every answer) unless -O asks
    from pagemind import Pagemind
    from pagemind.eval import EvalConfig, Runner

    with Pagemind(ScriptedLLM(default="Answer: (A)"), store=tmp_path / "s.db") as pm:
        plain = Runner(pm, EvalConfig("quality", ("rag",)), tmp_path / "a", progress=False).make("rag")
        asked = Runner(pm, EvalConfig("quality", ("rag",), method_options={"rag": {"reorder": "auto"}}),
                       tmp_path / "b", progress=False).make("rag")
    assert (plain.options.reorder, plain.options.abstain, asked.options.reorder) == ("off", "off", "auto")


def test_the_shipped_models_give_a_multiple_choice_or_free_answer_its_confidence():
    """Issue 51: the package ships a model for multiple-choice answers, fitted by benchmarks/calibrate.py on
    labelled runs of at least 100 answers (held out by document, it beat the hand-set confidence there), and one for
    free-form answers (BABILong's exact labels, LoCoMo's graded by hand); an answer's confidence is its kind's
    model's probability of right. A figure asked and given gets the support's hand-set value recalibrated: 55
    labelled figures are too few for a model of every signal (100), enough for its two numbers (50), and the map
    keeps the support's ranking."""
    from pagemind.answering import calibration
    from pagemind.answering.signals import kind_of, signals

    shipped = calibration.fitted()
    assert set(shipped) == {"choice", "free", "numeric"}, shipped
    assert min(shipped["choice"].n, shipped["free"].n) >= 100 and shipped["numeric"].n >= 50
    story = "Tam Ruddock skippered the Margery Dell, the supply boat of the lighthouse."
    choice, _ = ask("Answer: (B) Tam Ruddock", "Who skippered the supply boat?\n(A) Mr. Pellow\n(B) Tam Ruddock",
                    text=story)
    assert kind_of(choice) == "choice" and choice.letter == "B"
    assert choice.calibrated == pytest.approx(shipped["choice"].probability(signals(choice)), abs=1e-4)
    assert choice.confidence == choice.calibrated and 0.0 < choice.confidence < 1.0
    free, _ = ask("Tam Ruddock skippered the Margery Dell.", "Who skippered the supply boat?", text=story)
    assert free.calibrated == pytest.approx(shipped["free"].probability(signals(free)), abs=1e-4)
    assert free.confidence == free.calibrated != free.support.confidence
    numeric, _ = ask("Mr. Pellow climbed 112 steps.", "How many steps did Mr. Pellow climb?")
    figure = shipped["numeric"]
    assert kind_of(numeric) == "numeric" and figure.names == ("support_confidence",) and figure.weights[0] > 0
    assert numeric.calibrated == pytest.approx(figure.probability(signals(numeric)), abs=1e-4)
    assert numeric.confidence == numeric.calibrated != numeric.support.confidence
    invented, _ = ask("Mr. Pellow climbed 900 steps.", "How many steps did Mr. Pellow climb?")
    assert invented.support.confidence < numeric.support.confidence and invented.confidence < numeric.confidence


def test_an_answer_with_an_opt_in_calls_signal_is_read_by_the_model_fitted_on_answers_that_had_it(monkeypatch):
    """A kind may ship a second model for answers that carry an opt-in call's signal (``needs``: its flags, e.g.
    ``has_reordered``): an answer with the flag set is read by it, one without by its kind's model, fitted without
    that signal — not by a model that would read the missing signal at its labels' mean and weigh the rest as if it
    were there. The flag is kept through the file; a flag that is none is refused."""
    from pagemind.answering import calibration

    general = calibration.Fitted("choice", ("probability",), (1.0,), 0.0, (0.5,), (0.25,), 100, "test")
    special = calibration.Fitted("choice", ("probability", "reordered"), (0.5, 2.0), 0.0, (0.5, 0.5), (0.25, 0.25),
                                 100, "test", needs=("has_reordered",))
    monkeypatch.setattr(calibration, "shipped", lambda: (general, special))
    moved = {"probability": 0.9, "reordered": 0.1, "has_reordered": 1.0}
    assert calibration.model_for("choice", moved) is special
    assert calibration.model_for("choice", {**moved, "has_reordered": 0.0}) is general
    assert calibration.model_for("free", moved) is None and calibration.fitted() == {"choice": general}
    assert special.probability(moved) < general.probability(moved)  # the pick did not hold: read lower
    assert calibration.Fitted.from_dict(special.as_dict()) == special and "needs" not in general.as_dict()
    with pytest.raises(ValueError, match="needs"):
        calibration.Fitted.from_dict({**special.as_dict(), "needs": ["has_nothing"]})


def test_abstention_by_a_stated_precision_withholds_below_the_fitted_threshold(monkeypatch):
    """Issue 51: ``abstain_precision`` withholds an answer whose fitted confidence is below the threshold under which
    that share of labelled answers were wrong (shipped beside each model), says why, and is what an evaluation counts
    as would-abstain; a kind without a model keeps the support rule (recorded), a precision no threshold reached
    withholds nothing on the confidence (recorded too)."""
    from pagemind.answering import calibration

    shipped = calibration.shipped

    model = calibration.Fitted("free", ("claim_min",), (1.0,), -2.0, (0.5,), (0.25,), 100, "test",
                               below=((0.8, 0.3), (0.9, 0.6)))
    assert model.threshold(0.8) == 0.3 and model.threshold(0.85) == 0.6 and model.threshold(0.96) is None
    assert calibration.Fitted.from_dict(model.as_dict()) == model
    with pytest.raises(ValueError):
        calibration.Fitted.from_dict({**model.as_dict(), "abstain_below": [[1.5, 0.2]]})
    monkeypatch.setattr(calibration, "shipped", lambda: (model,))
    supported = "Tam Ruddock skippered the Margery Dell."
    kept, _ = ask(supported, "Who skippered the supply boat?", abstain_precision=0.8)
    assert kept.support.label == "supported" and not kept.abstained and not kept.would_abstain
    assert kept.calibrated is not None and kept.calibrated > 0.3
    held, _ = ask(supported, "Who skippered the supply boat?", abstain_precision=0.9)  # threshold 0.6: withheld
    assert held.abstained and held.would_abstain and held.draft == supported
    assert held.text.startswith("The document does not say (confidence ") and "below 0.60" in held.text
    assert "at least 90% of those below it were wrong" in held.text
    invented = "Captain Morgan skippered the Margery Dell."  # unsupported, yet above a threshold no one reached
    none, _ = ask(invented, "Who skippered the supply boat?", abstain_precision=0.99)
    assert none.support.label != "supported" and not none.abstained and not none.would_abstain
    declining, _ = ask("The text does not say.", "Who skippered the supply boat?", abstain_precision=0.99)
    assert declining.abstained  # a reply that declines is withheld whatever the confidence
    ruled, _ = ask(invented, "Who skippered the supply boat?")  # no precision asked: the support rule
    assert ruled.support.label == "unsupported" and ruled.abstained and ruled.would_abstain
    assert any(f.startswith("abstain_precision: no confidence of free answers had 99%") for f in none.fallbacks)
    numeric, _ = ask("Mr. Pellow climbed 900 steps.", "How many steps did Mr. Pellow climb?", abstain_precision=0.9)
    assert numeric.calibrated is None and numeric.abstained  # no numeric model: the support rule, said so
    assert any(f.startswith("abstain_precision: no fitted confidence for numeric answers") for f in numeric.fallbacks)
    off, _ = ask(supported, "Who skippered the supply boat?", abstain_precision=0.9, abstain="off")
    assert not off.abstained and off.would_abstain  # shown, and counted as what abstain=on would withhold
    # the shipped figures' map reached 70% and not 80%: at 0.7 an invented figure is withheld by it, at 0.8 none is
    # withheld on the confidence, and the answer says so (never silently kept)
    monkeypatch.setattr(calibration, "shipped", shipped)
    figure = calibration.fitted()["numeric"]
    assert figure.threshold(0.7) is not None and figure.threshold(0.8) is None
    held_figure, _ = ask("Mr. Pellow climbed 900 steps.", "How many steps did Mr. Pellow climb?", abstain_precision=0.7)
    assert held_figure.calibrated < figure.threshold(0.7) and held_figure.abstained
    assert f"below {figure.threshold(0.7):.2f}" in held_figure.text
    kept_figure, _ = ask("Mr. Pellow climbed 900 steps.", "How many steps did Mr. Pellow climb?", abstain_precision=0.8)
    assert not kept_figure.abstained and not kept_figure.would_abstain
    said = "abstain_precision: no confidence of numeric answers had 80%"
    assert any(f.startswith(said) for f in kept_figure.fallbacks)


def test_an_abstention_threshold_withholds_a_set_that_wrong_that_often_and_no_answer_likely_right():
    """The threshold for an abstention precision: the highest cut between two answers' values under which at least
    that share (and at least five answers, never all) were wrong, and no higher than 1 - precision — so it never
    withholds an answer its own calibrated confidence calls likely right (a review found 0.83 shipped for 60%)."""
    from pagemind.eval.report import abstain_below

    confidence = [0.02, 0.03, 0.05, 0.06, 0.08, 0.3, 0.5, 0.8, 0.85, 0.9]
    right = [False, False, False, False, True, False, True, True, True, False]
    at = abstain_below(confidence, right, 0.8)  # the five lowest: 4 of 5 wrong; 0.19 is the midpoint to 0.3
    assert at == 0.19 and sum(c < at for c in confidence) == 5
    assert abstain_below(confidence, right, 0.6) == 0.4  # 5 of 6 wrong below 0.4 (= 1 - 0.6)
    assert abstain_below(confidence, right, 0.65) == 0.19  # 5 of 6, but 0.4 is above 1 - 0.65: a likely right kept
    assert abstain_below(confidence, right, 0.95) is None  # no five answers 95% wrong
    assert abstain_below([0.1] * 6 + [0.2], [False] * 7, 0.8) == 0.15  # never all the answers
    assert abstain_below([0.1] * 7, [False] * 7, 0.8) is None  # one value: withholding them all is no threshold
    tied = [0.01, 0.02, 0.03, 0.04, 0.05, 0.05]
    assert abstain_below(tied + [0.2], [False] * 5 + [True, True], 0.8) == 0.125  # the tie withheld together


def test_an_abstained_answer_is_fitted_as_the_kind_of_its_draft(monkeypatch):
    """The abstention's own text (its reason's figures, the closest passage's marker) never makes a free answer a
    figure: the kind is read from what the model said."""
    from pagemind.answering import calibration
    from pagemind.answering.signals import kind_of

    model = calibration.Fitted("free", ("claim_min",), (1.0,), -2.0, (0.5,), (0.25,), 100, "test",
                               below=((0.9, 0.6),))
    monkeypatch.setattr(calibration, "shipped", lambda: (model,))
    held, _ = ask("Tam Ruddock skippered it.", "Who skippered the boat, and when did it come?", abstain_precision=0.9)
    assert held.abstained and any(ch.isdigit() for ch in held.text) and kind_of(held) == "free"


def test_a_yes_or_no_is_fitted_as_a_free_answer_whatever_figures_it_restates():
    """Issue 51 on the filings: "Yes, there was a change in the number of Best Buy stores between Q2 of FY2024 and
    FY2023" was fitted as a figure (the question says "number", the answer has digits); a yes or no is free form. A
    figure asked and given stays a figure; a question that opens with "Which" or "How" is not a yes/no question."""
    from pagemind.answering.question import Question
    from pagemind.answering.signals import kind_of, signals

    story = "Best Buy had 982 stores at the end of Q2 FY2023 and 969 at the end of Q2 FY2024."
    polar, _ = ask("Yes, there was a change in the number of stores between Q2 of FY2024 and FY2023.",
                   "Was there any change in the number of Best Buy stores between Q2 of FY2024 and FY2023?", text=story)
    assert polar.question.is_polar and kind_of(polar) == "free" and signals(polar)["yes_no"] == 1.0
    count, _ = ask("969 stores.", "How many stores did Best Buy have at the end of Q2 FY2024?", text=story)
    assert not count.question.is_polar and kind_of(count) == "numeric" and signals(count)["yes_no"] == 0.0
    led, _ = ask("No, 969 stores.", "For Best Buy, did the number of stores grow by Q2 FY2024?", text=story)
    assert led.question.is_polar and kind_of(led) == "free" and signals(led)["yes_no"] == 1.0
    # a yes/no question answered with content of its own is no yes or no: its words are its evidence
    named, _ = ask("969 stores at the end of Q2 FY2024.", "Did Best Buy have more stores in FY2023?", text=story)
    assert named.question.is_polar and signals(named)["yes_no"] == 0.0
    assert not Question("Which region had the highest EBITDAR in 2022?").is_polar
    for lead in ("As of Q2'2023, is Pfizer spinning off any large business segments?",
                 "According to the 10-K, is Boeing's business cyclical?",
                 "For the fiscal year ended June 30, 2023, did Amcor's sales grow?", "Will JnJ's growth accelerate?"):
        assert Question(lead).is_polar, lead
    for request in ("Could you give me the FY2019 revenue?", "Can you calculate the FY2019 current ratio?"):
        assert not Question(request).is_polar, request
    assert Question("Answer Yes or No. Did revenue growth exceed 5% in FY2022?").is_polar  # "No." ends a sentence
    assert not Question("Is it (A) or (B)?", ("one", "two")).is_polar  # a choice among options


def test_the_shipped_models_carry_their_abstention_thresholds():
    """calibrate.py --write records, beside each shipped model, the thresholds its held-out answers gave for the
    abstention precisions it reached: higher precision, lower threshold."""
    from pagemind.answering import calibration

    for model in calibration.fitted().values():
        assert model.below, model.kind
        assert all(at <= 1 - target + 1e-9 for target, at in model.below), model.below
        targets = [t for t, _ in model.below]
        at = [model.threshold(t) for t in targets]
        assert targets == sorted(targets) and at == sorted(at, reverse=True), model.below
    assert calibration.fitted()["free"].threshold(0.9) is not None  # a free answer can be withheld at 90%
    # a choice too, since the fit reads how far the text moved the model (before, no threshold got there)
    assert calibration.fitted()["choice"].threshold(0.9) is not None


def test_a_yes_or_no_answer_is_cited_and_judged_by_the_question_it_answers():
    """Issue 47's filings: "Yes." to "Has MGM Resorts paid dividends to common shareholders in FY2022?" was cited
    nowhere and judged unsupported (0.0) though right: a verdict has no words of its own, so the sentences that hold
    the question's words are cited and it is judged as an echo of them (partial); a "Yes." to what the text never
    says stays unsupported and is withheld."""
    story = ("MGM Resorts International reported revenue of $13.1 billion in 2022. The company paid dividends of "
             "$0.0025 per share to common shareholders in each quarter of 2022. Its casinos in Macau reopened.")
    right, _ = ask("Yes.", "Has MGM Resorts paid dividends to common shareholders in FY2022?", text=story)
    assert right.citations and right.citations[0].quote.startswith("The company paid dividends")
    assert right.support.label == "partial" and not right.abstained
    wrong, _ = ask("Yes.", "Has MGM Resorts bought a football club in FY2022?", text=story)
    assert wrong.support.label == "unsupported" and wrong.abstained


def test_a_questions_title_cased_words_are_not_names_the_cited_sentence_must_hold():
    """Issue 47's filings: "Which region had the Highest EBITDAR Contribution for MGM during FY2022?" answered
    "Las Vegas Strip Resorts" (right) was withheld: its title-cased "Highest" and "Contribution" were taken for whom
    the question asks about and required of the cited row. A word the text never writes as a name is not one; a
    name the text writes (Pellow) still has to be in the cited sentence."""
    table = ("Las Vegas Strip Resorts $ 3,142,308 Regional Operations $ 1,294,630 MGM China $ 128,430\n\n"
             "Adjusted Property EBITDAR measures each segment's contribution to the results.")
    right, _ = ask("Las Vegas Strip Resorts", "Which region had the Highest EBITDAR Contribution for MGM during "
                   "FY2022?", text=table)
    assert right.support.label != "unsupported" and not right.abstained
    assert not any(c.unnamed for c in right.support.claims)
    story = "Abel was 41 years old. Mr. Pellow kept the lighthouse and never said his age."
    wrong, _ = ask("41 years", "How old is Mr. Pellow?", text=story)
    assert wrong.support.claims[0].unnamed == ("pellow",)  # a sentence about Abel does not answer for Pellow


def test_a_statement_row_is_about_the_company_its_table_title_names():
    """Issue 47's own issue: a right free cash flow, worked out of the cash flow statement's rows, was judged
    "unsupported" because the rows never name General Mills. A row is read with its table's title lines: the
    company there answers for it (however many rows above, and read from the document when what was read starts
    inside the table); another company's title, or none, does not."""
    rows = ("| Fiscal Year | 2020 | 2019 |\n| --- | --- | --- |\n"
            + "".join(f"| Adjustment number {i} to reconcile net earnings | {i}.5 | {i}.7 |\n" for i in range(12))
            + "| Net cash provided by operating activities | 3,676.2 | 2,807.0 |\n"
            "| Purchases of land, buildings, and equipment | (460.8) | (537.6) |")
    question = "What is the FY2020 capital expenditure of General Mills?"
    other_prose = "\n\nGeneral Mills makes cereal."  # the name is written in what was read, so it is a name

    def judged(title: str) -> tuple[str, ...]:
        text = title + rows + other_prose
        quote = "| Purchases of land, buildings, and equipment | (460.8) | (537.6) |"
        start = text.index(quote)
        support = assess(question, "460.8", [Citation("d", "text", None, start, start + len(quote), quote, "text")],
                         [text])
        return support.claims[0].unnamed

    assert judged("Consolidated Statements of Cash Flows\nGENERAL MILLS, INC. AND SUBSIDIARIES\n(In Millions)\n") == ()
    assert judged("Consolidated Statements of Cash Flows\nKELLOGG COMPANY\n(In Millions)\n") == ("general", "mills")
    assert judged("") == ("general", "mills")
    # a fragment read from inside the statement: its title is found in the document the citation points into
    document = "Consolidated Statements of Cash Flows\nGENERAL MILLS, INC. AND SUBSIDIARIES\n" + rows + other_prose
    fragment = document[document.index("| Adjustment number 6"):]
    quote = "| Purchases of land, buildings, and equipment | (460.8) | (537.6) |"
    start = document.index(quote)
    cited = [Citation("d", "fragment", 3, start, start + len(quote), quote, "retrieval")]
    assert assess(question, "460.8", cited, [fragment]).claims[0].unnamed == ("general", "mills")
    assert assess(question, "460.8", cited, [fragment], whole=document).claims[0].unnamed == ()
    for read in (document[start:], " ".join(document[start - 300:].split())):  # from the row; words joined by spaces
        assert assess(question, "460.8", cited, [read], whole=document).claims[0].unnamed == ()
    spaced = " ".join(("Kellogg's own text. " * 30 + document).split())  # no lines: no table can be told, and
    at = spaced.index(quote)  # the names far above the row are no title (the 400 characters before it are read)
    far = [Citation("d", "fragment", 3, at, at + len(quote), quote, "retrieval")]
    assert assess("What is the capital expenditure of Kellogg?", "460.8", far, [spaced]).claims[0].unnamed == \
        ("kellogg",)


def test_a_filings_registrant_is_the_subject_of_every_sentence_it_files():
    """A 10-K's MD&A says "cash provided by operating activities was $381.6 million" of "we": asked of Block's
    (Square's) cash flow, the right figure was "unsupported" because the sentence never names Square. The cover page
    names the registrant; a question's name for it need not be in the cited sentence, another name still must."""
    cover = "SQUARE, INC.\n(Exact name of registrant as specified in its charter)\n\n"
    body = "For the year ended December 31, 2020, cash provided by operating activities was $381.6 million."
    prose = "\n\nSquare sells hardware. Afterpay is a partner."
    quote = body
    for text, unnamed in ((cover + body + prose, ()), (body + prose, ("square",))):
        start = text.index(quote)
        cited = [Citation("d", "text", None, start, start + len(quote), quote, "text")]
        support = assess("How much cash did Square generate from operations in FY2020?", "$381.6 million", cited,
                         [text], whole=text)
        assert support.claims[0].unnamed == unnamed
    start = (cover + body + prose).index(quote)
    cited = [Citation("d", "text", None, start, start + len(quote), quote, "text")]
    other = assess("How much cash did Afterpay generate from operations in FY2020?", "$381.6 million", cited,
                   [cover + body + prose], whole=cover + body + prose)
    assert other.claims[0].unnamed == ("afterpay",)
    assert registrant(cover) == {"square"} and registrant("Abel was 41 years old.") == frozenset()
    both = assess("How much cash did Square and Afterpay generate from operations in FY2020?", "$381.6 million",
                  cited, [cover + body + prose], whole=cover + body + prose)
    assert both.claims[0].unnamed == ("afterpay",)  # the registrant is met; the other name it asks of is not
    amazon = "AMAZON.COM, INC.\n(Exact name of registrant as specified in its charter)\n\n"
    assert registrant(amazon) == {"amazon"}  # its legal form is no name: "Netflix, Inc." does not share it
    assert registrant("Commission File Number 001-37622\n(Exact name of registrant") == frozenset()
    assert registrant("Commission File Number 001-37622 ________ SQUARE, INC.\r\n(Exact name of registrant") == \
        {"square"}  # the name after the rule that follows the file number, as Block's 2020 cover prints it
    assert registrant("a" * 20_000) == frozenset() and registrant("x" * 5_000 + "\n(exact name of registrant") == \
        frozenset()  # one long line: read at once, never a backtracking search
    assert registrant("AMERICAN\nEXPRESS COMPANY\n(Exact name of registrant") == {"american", "express"}
    # MGM's 2018 cover: a word a line, small capitals whose first letter the text layer sets apart
    assert registrant("Commission\nFile\nNo.\n001-10362\nMGM\nR\nESORTS I\nNTERNATIONAL\n(Exact name of Registrant "
                      "as specified in its charter)") == {"mgm", "resorts", "international"}
    assert registrant("FORM 10-K\nGENERAL MILLS, INC.\n\n____\n( Exact name of registrant") == {"general", "mills"}
    for asked in ("How much cash did Square, Inc. generate from operations in FY2020?",  # its legal form: no name
                  "How much cash did Square generate from operations in FY2020 (see www.afterpay.com)?"):
        assert assess(asked, "$381.6 million", cited, [cover + body + prose], whole=cover + body + prose).claims[
            0].unnamed == ()
    linked = cover + body + prose + " Visit www.afterpay.com."  # a web address does not make Afterpay a common noun
    assert assess("How much cash did Square and Afterpay generate from operations in FY2020?", "$381.6 million",
                  cited, [linked], whole=linked).claims[0].unnamed == ("afterpay",)
    # with the registrant met, the question's other title-cased words that the text writes as common nouns do not
    # become required in its place ("Balance Sheet" of "the largest liability in Square's Balance Sheet")
    whole = cover + body + prose + " Our balance sheet is strong."  # the filing writes it lower case somewhere
    titled = assess("What was Square's cash from operations in its Balance Sheet?", "$381.6 million", cited,
                    [cover + body + prose + " The Balance Sheet follows."], whole=whole)
    assert titled.claims[0].unnamed == ()


def test_an_earnings_release_speaks_for_its_issuer_and_a_cover_for_its_trading_symbol():
    """The support check's anchor rule withheld a right figure from an earnings release whose statement rows never
    name the company: a release has no cover page, but its dateline names the issuer with its ticker, or its headline
    says who reports. A 10-K's cover lists its trading symbol, which questions write as a name ("JnJ's")."""
    dateline = ("FOR IMMEDIATE RELEASE\n• 2022 Full-Year reported sales growth of 1.3% to $94.9 Billion\n"
                "New Brunswick, N.J. (January 24, 2023) – Johnson & Johnson (NYSE: JNJ) today announced results.\n")
    assert registrant(dateline) == {"johnson", "jnj"}
    assert registrant("Amcor reports fiscal 2023 results and provides outlook for fiscal 2024\nJune 2023 quarter:\n") \
        == {"amcor"}
    assert registrant("MGM RESORTS INTERNATIONAL REPORTS FOURTH QUARTER AND\nFULL YEAR 2022 RESULTS\n") == \
        {"mgm", "resorts", "international"}
    # a story's or a news article's lines are no release; a headline far down is not a headline
    for text in ("Abel reports to the captain every morning.\nThe sea was calm.",
                 "Pellow reports to the captain at the end of every quarter.\nThe sea was calm.",
                 "Mary announces the results of the village fair\nIt rained.",
                 "Reuters reports that Boeing quarterly results missed estimates.",
                 "Shares of Tesla rose while Ford Motor (NYSE: F) fell on Tuesday.\n",
                 "Pellow reports every quarter to the captain on the crew's results.\nx",
                 "Captain Ahab announces the annual results of the hunt\nx",
                 "Every year Mary posts her annual results on the board.\nx",
                 "Earnings roundup\n- Ford Motor (NYSE: F) reported a loss.\n- General Motors (NYSE: GM) reported.",
                 "Stocks were mixed - The Dow rose. Meanwhile Apple Inc. (NASDAQ: AAPL) reported results.",
                 "\n" * 10 + "Amcor reports fiscal 2023 results\n"):
        assert registrant(text) == frozenset(), text
    assert registrant("Page 1 of 15\nExhibit 99.1\nMGM RESORTS INTERNATIONAL REPORTS FOURTH QUARTER AND\n"
                      "FULL YEAR 2022 FINANCIAL AND OPERATING RESULTS\n") == {"mgm", "resorts", "international"}
    assert registrant("Las Vegas, Nevada, February 8, 2023 – MGM Resorts International (NYSE: MGM) (“MGM Resorts” "
                      "or the “Company”) today reported results.") == {"mgm", "resorts", "international"}
    for wire in ("NEW YORK--(BUSINESS WIRE)--Acme Corp. (NYSE: ACME) today announced results",
                 "CHICAGO, March 1, 2023 /PRNewswire/ -- Acme Inc. (Nasdaq: ACME) today released results",
                 "Acme Announces Record Third Quarter 2023 Results\nCHICAGO, March 1, 2023",
                 "NEW YORK, May 20, 2022 – Acme Inc. (NYSE: ACME), a leading retailer, today reported results"):
        assert registrant(wire) >= {"acme"}, wire
    assert registrant("JOHNSON & JOHNSON\n(Exact name of registrant)\nTrading Symbol\nCommon Stock JNJ NEW YORK "
                      "STOCK EXCHANGE") == {"johnson", "jnj"}  # the exchange in capitals
    cover = ("Commission file number 1-3215\nJOHNSON & JOHNSON\n(Exact\xa0name\xa0of\xa0registrant as specified)\n"
             "Trading Symbol Name of each exchange on which registered\n"
             "Common Stock, Par Value $1.00 JNJ New York Stock Exchange\n0.650% Notes Due 2024 JNJ24C New York\n")
    assert registrant(cover) == {"johnson", "jnj"}  # "\xa0" between the marker's words, the first symbol listed
    assert registrant("SQUARE,\nINC.\n(Exact\nname\nof\nregistrant\nas\nspecified") == {"square"}  # a word a line
    rows = "Sales to customers $ 94,943 $ 93,775\n"
    filler = "The company sold products in many markets during the year. " * 80  # the row far from the dateline
    asked = "What were Johnson & Johnson's FY2022 sales to customers?"
    for head, unnamed in ((dateline, ()), ("FOR IMMEDIATE RELEASE\nJohnson & Johnson did well.\n", ("johnson",))):
        whole = head + filler + "\n" + rows
        start = whole.index(rows)
        cited = [Citation("d", "text", None, start, start + len(rows) - 1, rows.strip(), "text")]
        assert assess(asked, "$94,943 million", cited, [whole], whole=whole).claims[0].unnamed == unnamed


def test_a_number_the_question_gives_is_not_a_claim_the_sources_must_hold():
    """FinanceBench: "Yes, commercial airplanes and defense, space & security represent more than 20% of Boeing's
    revenue" was withheld as unsupported because the segment table never writes "20" — a figure the question gave,
    said back. The question's own numbers are not claimed; a number the answer adds still must be found."""
    table = ("Revenues:\nCommercial Airplanes 25,867 19,493\nDefense, Space & Security 23,162 26,540\n"
             "Global Services 17,611 16,328\nTotal revenues 66,608 62,286")
    cited = [Citation("d", "text", None, 0, len(table), table, "text")]
    question = "Are there any segments that represent more than 20% of Boeing's revenue for FY2022?"
    said_back = assess(question, "Yes, Commercial Airplanes and Defense, Space & Security represent more than 20% "
                                 "of revenue.", cited, [table])
    assert said_back.claims[0].missing == () and "20" not in said_back.unfounded
    added = assess(question, "Yes, Commercial Airplanes represents 45% of revenue.", cited, [table])
    assert "45" in added.claims[0].missing


def test_claims_that_stand_together_take_the_weakest_label_and_never_a_higher_one():
    from pagemind.answering.support import Claim, Support

    def claim(text, label, score):
        return Claim(text, label, score, score, None, (1,), ())

    mixed = Support("partial", 0.3, (claim("Net earnings: 2,707.3.", "supported", 1.0),
                                     claim("Dividends paid: 17.4.", "unsupported", 0.1)))
    weakest = mixed.weakest()
    assert weakest.label == "unsupported" and weakest.reason == (
        "a figure of the working is not in the cited text: Dividends paid: 17.4.")
    # a verifier's "unsupported" over claims the words support is kept: weakest only ever lowers
    lowered = Support("unsupported", 0.4, (claim("Net earnings: 2,707.3.", "supported", 1.0),),
                      reason="the verifier read the sources as not supporting it")
    assert lowered.weakest() is lowered
    misplaced = mixed.misplaced(["Net earnings: 2,707.3."])
    assert misplaced.label == "unsupported" and [c.label for c in misplaced.claims] == ["unsupported", "unsupported"]
    assert misplaced.confidence <= 0.35 / 2 and mixed.misplaced([]) is mixed


def test_a_later_sentence_about_what_was_asked_is_counted_and_said_and_recorded_as_a_signal():
    """Issue 51: BABILong's "Where is Daniel?" answered from "Daniel went to the bedroom." while the text says later
    "Daniel journeyed to the office.": the sentences after the last passage cited that speak of all the question asks
    about are counted (at most three), said on the support's line, and recorded as the fitted model's ``later``
    signal; an answer citing the last such sentence, or citing nothing in the document, counts none."""
    from pagemind.answering.signals import signals
    from pagemind.answering.support import LATER_CAP, later_mentions

    text = ("Daniel went to the bedroom. Mary went to the garden. The rain fell on the roofs of the town. "
            "Daniel journeyed to the office. Mary moved to the hallway.")

    def cite(quote):
        start = text.index(quote)
        return Citation("d", "text", None, start, start + len(quote), quote, "text")

    first, last = cite("Daniel went to the bedroom."), cite("Daniel journeyed to the office.")
    assert later_mentions("Where is Daniel? Answer with one word.", text, [first]) == 1
    assert later_mentions("Where is Daniel?", text, [last]) == 0
    assert later_mentions("Where is Daniel?", text, [first, last]) == 0  # the last passage cited counts
    assert later_mentions("Where's Daniel?", text, [first]) == 1  # the "s" of "Where's" is no word to look for
    assert later_mentions("Where is Daniel?", None, [first]) is None  # no document text: cannot be told
    assert later_mentions("Where is Daniel?", text, [Citation("d", "text", None, 0, 5, "other", "text")]) is None
    assert later_mentions("How old is Mr. Pellow?", text, [first]) == 0  # "Mr." ends no sentence: Pellow is asked
    many = text + " Daniel went back. Daniel slept. Daniel woke. Daniel left."
    assert later_mentions("Where is Daniel?", many, [first]) == LATER_CAP

    stale, _ = ask("Bedroom.", "Where is Daniel?", text=text)
    assert stale.support.later == 1 and signals(stale)["later"] == 1.0 and signals(stale)["has_later"] == 1.0
    assert "the document speaks of it again after the passages cited" in stale.support.line()
    fresh, _ = ask("Office.", "Where is Daniel?", text=text)
    assert fresh.support.later == 0 and "again after" not in fresh.support.line()


def test_a_question_about_a_name_the_document_never_writes_abstains_and_says_so():
    """Issue 51: BABILong's unanswerable "Where is Sandra?" (every sentence about her removed) answered "Brannoch",
    a place the haystack names, cited from a sentence every check supports: no answer the document gives is about
    a name it never writes. Such an answer abstains saying so, the support's line says it, and the fitted model reads
    it as the ``unwritten`` signal; the names a question gives (a quoted title, a month, a yes/no question's
    subject) or that the text writes in another form (any case, a plural, a word it begins) are no such name."""
    from pagemind.answering.signals import signals
    from pagemind.answering.support import unwritten

    text = ("Daniel went to the bedroom. The gull stayed at Brannoch. Mary moved to the hallway. Maria's console "
            "sat by the Himalayas poster on 3 May. LeBron dunked.")
    assert unwritten("Where is Sandra? Answer with one word.", text) == ("Sandra",)
    assert unwritten("Where is Daniel?", text) == () and unwritten("Where is Sandra?", None) is None
    assert unwritten("When did John meet Harry Potter?", text) == ("John", "Harry Potter")
    # a term the question capitalises after an article or beside an acronym; an alias in brackets
    assert unwritten("Which room had the Highest EBITDAR Contribution for Mary?", text) == ()
    assert unwritten("What did Brannoch's (formerly known as Gullhaven) keeper say?", text) == ()
    assert unwritten("Why do Tim and Mary like LeBron James?", text) == ("Tim",)  # one word of a name is enough
    assert unwritten("Would Melanie enjoy the song by Vivaldi?", text) == ()  # "no" may answer it
    assert unwritten('What is "Eternal Sunshine" about for Mary?', text) == ()  # a title it gives
    assert unwritten("What did Mary do on 3 May and in Sept?", text) == ()  # times, not whom
    assert unwritten("What Console does Maria own, and after the Himalayan trip what did Marys do?", text) == ()
    assert unwritten("What does Emilie do?", "Émilie de Fontaine falls in love.") == ()  # accents aside
    # a clause's first word and a question's own words name no one; a hyphen or an apostrophe in any form
    for asked in ("Question: Where is Daniel?", "Where did Daniel go\nConsider the bedroom",
                  "What did Daniel do? Note: Please answer in one word.",
                  "Where did Daniel go (Answer With One Word)?"):
        assert unwritten(asked, text) == (), asked
    assert unwritten("What did Coca-Cola earn?", "THE COCA\u2011COLA COMPANY") == ()
    assert unwritten("What did Ja’Marr say?", "Ja'Marr ran.") == () and unwritten("Who is Jean-Luc?", "Jean Luc") == ()

    answer, _ = ask("Brannoch.", "Where is Sandra?", text=text)
    assert answer.abstained and answer.draft == "Brannoch." and answer.support.unwritten == ("Sandra",)
    assert answer.text.startswith("The document does not say (the document never names Sandra).")
    assert "the document never names Sandra" in answer.support.line()
    read = signals(answer)
    assert read["unwritten"] == 1.0 and read["has_unwritten"] == 1.0
    kept, _ = ask("Brannoch.", "Where is Sandra?", text=text, abstain="off")
    assert not kept.abstained and kept.text == "Brannoch."
    fine, _ = ask("The bedroom.", "Where is Daniel?", text=text)
    assert not fine.abstained and fine.support.unwritten == () and signals(fine)["unwritten"] == 0.0
    assert signals(fine)["has_unwritten"] == 1.0


def test_the_share_of_what_was_asked_that_the_cited_passages_speak_of_is_a_signal():
    """Issue 51: BABILong's "Where is Julie?" answered "Quillhaven" from a haystack sentence about Saltby: the passage
    holding the answer speaks of nothing the question asks about. ``asked`` is the share of the question's content
    words the cited passages speak of — a transcript's line counting its speaker, a second fact of the document
    linking a cited name to a word asked ("Fred picked up the milk." for "Fred moved to the cellar.") — recorded as a
    signal of the fitted confidence with its flag."""
    from pagemind.answering.signals import signals
    from pagemind.answering.support import asked_cited, speaker

    text = ("Fred picked up the milk. Julie went to the hallway. Saltby was a railway town, plainer than Quillhaven. "
            "Fred moved to the cellar. Mary dropped the apple.")

    def cite(quote, whole=text):
        start = whole.index(quote)
        return Citation("d", "text", None, start, start + len(quote), quote, "text")

    julie, haystack, cellar = cite("Julie went to the hallway."), cite("Saltby was a railway town"), \
        cite("Fred moved to the cellar.")
    assert asked_cited("Where is Julie? Answer with one word.", [julie], text) == 1.0
    assert asked_cited("Where is Julie?", [haystack], text) == 0.0  # about no one asked, linked to none
    assert asked_cited("Where is the milk?", [cellar], text) == 1.0  # Fred carries the milk: a second fact
    assert asked_cited("Where is the milk?", [cellar], None) == 0.0  # without the document, no second fact read
    assert asked_cited("Where is the apple?", [cellar], text) == 0.0  # no sentence has Fred with the apple
    # a share: the milk (by Fred) and the hallway cited, nothing "before"
    assert asked_cited("Where was the milk before the hallway?", [cellar, julie], text) == pytest.approx(2 / 3)
    assert asked_cited("Where is Julie?", [], text) is None and asked_cited("Where is it?", [julie], text) is None
    # a transcript's line speaks of its speaker; a heading opening one line is no one
    chat = ("[2023-01-20] Gina: Hey Jon!\n[2023-01-20] Jon: Lost my job.\n"
            "[2023-01-20] Gina: I lost my job at Door Dash.\n[2023-01-20] Jon: Sorry!\n")
    line = cite("I lost my job at Door Dash.", chat)
    assert speaker(chat, line.start) == "Gina" and speaker(chat, chat.index("Lost")) == "Jon"
    assert speaker("Total Revenues: 4,000\nCost: 2,000", 16) is None
    assert asked_cited("What job did Gina have at Door Dash?", [line], chat) == 1.0
    assert asked_cited("What job did Tim have at Door Dash?", [line], chat) == 0.75
    # recorded as the fitted model reads it, and not where it cannot be told
    found, _ = ask("The hallway.", "Where is Julie?", text=text)
    read = signals(found)
    assert found.support.asked == 1.0 and read["asked"] == 1.0 and read["has_asked"] == 1.0
    vague, _ = ask("Somewhere.", "Where is it?", text=text)
    assert vague.support.asked is None and signals(vague)["has_asked"] == 0.0


def test_the_fit_leaves_out_a_signal_no_run_recorded_and_a_signal_with_its_flag(monkeypatch):
    """Issue 51 (benchmarks/calibrate.py): a signal no labelled answer holds (``margin`` in runs made before it was
    recorded) has nothing to teach; a flag left out for naming the dataset (only one set has MiniLM similarities)
    takes its signal with it — read without its flag, an answer lacking the signal would read its 0, not the labels'
    mean; a flag every answer has set stays, the model's cue to read a missing signal at its mean."""
    from pathlib import Path

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from calibrate import within_sets

    def row(dataset, similarity, probability):
        signals = {"similarity_min": similarity, "has_similarity": float(similarity > 0), "probability": probability,
                   "has_probability": 1.0}
        return {"dataset": dataset, "signals": signals}

    rows = [row("filings", 0.6, 0.7), row("filings", 0.4, 0.5), row("talk", 0.0, 0.9), row("talk", 0.0, 0.3)]
    kept, left = within_sets(rows, ("similarity_min", "has_similarity", "probability", "has_probability", "margin"))
    assert kept == ("probability", "has_probability")
    assert sorted(left) == ["has_similarity", "margin", "similarity_min"]
    # what goes in or out of a fit together (--without, --needing): a flag and the signals it stands for
    from pagemind.answering.signals import tied

    assert tied("has_probability") == {"has_probability", "probability", "min_logprob"}
    assert tied("has_reordered") == {"has_reordered", "reordered"}


def test_a_signal_is_left_out_of_every_fit_or_of_one_calls_model_only(monkeypatch):
    """Issue 51 (benchmarks/calibrate.py): ``--without lift`` leaves a signal out of every fit, its flag with it where
    it was the flag's only signal; ``--without has_reordered:lift`` out of the second model only, the one for answers
    asked again with their options reversed (``--needing has_reordered``): read there, the prior added nothing, so the
    product skips its call for them. A name that is no signal, a flag no ``--needing`` gives, a kind named twice or
    one that is not a kind: the script exits saying which."""
    from pathlib import Path

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from calibrate import chosen

    assert chosen("lift", []) == ({"lift", "has_prior"}, {}, {})
    assert chosen("probability", [])[0] == {"probability"}  # min_logprob is still read: its flag stays
    without, apart, needing = chosen(" has_reordered:lift ", ["choice:has_reordered"])
    assert without == set() and apart == {"has_reordered": {"lift", "has_prior"}}
    assert needing == {"choice": "has_reordered"}
    with pytest.raises(SystemExit, match="no --needing gives: has_reordered"):
        chosen("has_reordered:lift", [])
    with pytest.raises(SystemExit, match="no such signal: lifted"):
        chosen("has_reordered:lifted", ["has_reordered"])
    with pytest.raises(SystemExit, match="names choice twice"):
        chosen("", ["choice:has_reordered", "choice:has_prior"])
    with pytest.raises(SystemExit, match="FLAG or KIND:FLAG"):
        chosen("", ["answers:has_reordered"])


def test_the_fits_ridge_penalty_is_chosen_on_the_training_documents_by_held_out_log_loss(monkeypatch):
    """Issue 51 (benchmarks/calibrate.py): the ridge penalty is not set by hand: each fit takes the one of
    ``L2S`` whose fits, held out by document within its own training answers, gave the lowest log loss — light where
    a signal tells right from wrong, heavy where it is noise (the labels' mean is the best guess there)."""
    import random
    from pathlib import Path

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from calibrate import L2S, held_out, penalty

    draw = random.Random(1)
    scores = [draw.random() for _ in range(80)]

    def rows(right):
        return [{"document": f"d{i}", "signals": {"claim_mean": x}, "right": right(x)} for i, x in enumerate(scores)]

    telling = rows(lambda x: x > 0.5 if draw.random() < 0.9 else x <= 0.5)
    noise = rows(lambda x: draw.random() < 0.4)
    assert penalty(telling, 5, ("claim_mean",), "free") == min(L2S)
    assert penalty(noise, 5, ("claim_mean",), "free") in sorted(L2S)[-2:]  # one of the two heaviest
    held = held_out(telling, 5, ("claim_mean",), "free")
    ranked = sorted(zip(held, telling), key=lambda pair: pair[0])
    assert sum(r["right"] for _, r in ranked[40:]) > 30  # the upper half held out is mostly right
    # nested: each held-out fold's penalty is chosen on the other folds' documents, never its own
    import calibrate

    seen: list[set[str]] = []

    def spy(mine, folds, names, kind):
        seen.append({r["document"] for r in mine})
        return penalty(mine, folds, names, kind)

    monkeypatch.setattr(calibrate, "penalty", spy)
    held_out(telling, 5, ("claim_mean",), "free")
    fold = calibrate.fold_of(sorted({r["document"] for r in telling}), 5)
    unseen = [set(range(5)) - {fold[d] for d in documents} for documents in seen]
    assert sorted(min(u) for u in unseen) == [0, 1, 2, 3, 4] and all(len(u) == 1 for u in unseen)


def test_the_second_model_is_measured_on_its_answers_and_on_the_kind_as_it_would_ship(monkeypatch):
    """Issue 51 (benchmarks/calibrate.py): the model of the answers with an opt-in call's flag (``--needing
    free:has_agreement``) is fitted in two forms — with every signal, and over the kind's model (its held-out logit
    as ``base`` beside the call's signal: two weights) — each measured against the kind's model on those answers
    (ranking, flags, the unanswerable variants an abstention withholds) and on every answer of the kind together,
    its confidence where the flag is set and the kind's elsewhere: what a user with the call on would get, held out
    by document. The form that ranks better ships."""
    import argparse
    import random
    from pathlib import Path

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from calibrate import measures, special

    draw = random.Random(3)
    rows, held = [], []
    for i in range(160):
        sampled = i % 2 == 0
        right = draw.random() < 0.5
        variant = not right and draw.random() < 0.3
        agreement = (0.7 if right else 0.3) + draw.uniform(-0.3, 0.3) if sampled else 0.0
        noise = {f"claim_{k}": draw.random() for k in ("min", "mean")}  # signals that tell nothing
        rows.append({"document": f"d{i}", "dataset": "talk", "right": right, "variant": variant,
                     "signals": {"agreement": agreement, "has_agreement": float(sampled), **noise}})
        held.append(min(0.99, max(0.01, (0.65 if right else 0.35) + draw.uniform(-0.3, 0.3))))  # the kind's model
    args = argparse.Namespace(folds=5, min=100, write=False)
    out = special(args, rows, held, "free", "has_agreement", ("agreement", "has_agreement", "claim_min",
                                                              "claim_mean"), [])
    assert out is not None and out["n"] == 80 and not out["shipped"]
    # the kind's model and the agreement each tell; over the first, the second adds to it
    assert out["stacked"]["auroc"] > out["general"]["auroc"] and out["stacked"]["auroc"] > out["fitted"]["auroc"]
    assert out["ships"] == "stacked"
    assert out["variants"]["stacked"]["variants_wrong"] == sum(
        r["variant"] and not r["right"] and r["signals"]["has_agreement"] for r in rows)
    together = out["together"]["stacked"]
    assert together["measures"]["n"] == 160 and together["variants"]["variants_wrong"] == sum(
        r["variant"] and not r["right"] for r in rows)
    everyone = measures(held, [r["right"] for r in rows])
    assert everyone["auroc"] < together["measures"]["auroc"] < out["stacked"]["auroc"] + 0.05


def test_a_model_read_over_its_kinds_model_reads_that_ones_logit():
    """Issue 51: a second model fitted on few answers may read its kind's model's verdict (``base``: the logit it
    gives the answer) beside the call's own signal instead of every signal again; read from the shipped file it is
    given the kind's model, and a file with such a model and no model of its kind to read over is refused."""
    import math

    from pagemind.answering.calibration import BASE, Fitted, joined, model_for

    general = Fitted("free", ("claim_mean",), (2.0,), -0.5, (0.5,), (0.25,), 300)
    over = Fitted("free", (BASE, "agreement"), (0.8, 0.6), 0.1, (0.0, 0.5), (1.2, 0.3), 120,
                  needs=("has_agreement",))
    models = joined((general, over))
    assert models[0] is general and models[1].over is general
    said = {"claim_mean": 0.9, "agreement": 0.75, "has_agreement": 1.0}
    base = -0.5 + 2.0 * (0.9 - 0.5) / 0.25
    assert general.logit(said) == pytest.approx(base)
    z = 0.1 + 0.8 * base / 1.2 + 0.6 * (0.75 - 0.5) / 0.3
    assert models[1].probability(said) == pytest.approx(1 / (1 + math.exp(-z)))
    # a disagreeing sample lowers it; an answer without samples is read by the kind's model
    assert models[1].probability({**said, "agreement": 0.1}) < models[1].probability(said)
    with pytest.raises(ValueError, match="without a free model that needs no flag"):
        joined((over,))
    with pytest.raises(ValueError, match="without a free model that needs no flag"):
        joined((Fitted("free", (BASE,), (1.0,), 0.0, (0.0,), (1.0,), 10),))
    from pagemind.answering import calibration

    shipped = calibration.shipped()
    for m in shipped:
        if BASE in m.names:
            assert m.over is not None and m.over.kind == m.kind and not m.over.needs
    free = model_for("free", said)  # shipped: the sampled answers' model reads the free model's logit
    assert free is not None and free.needs == ("has_agreement",) and free.names == (BASE, "agreement")
    assert free.over is calibration.fitted()["free"] and min(free.weights) > 0
    assert model_for("free", {**said, "has_agreement": 0.0}) is calibration.fitted()["free"]


def test_the_fit_reads_a_yes_or_no_from_a_run_made_before_it_was_recorded(monkeypatch):
    """Issue 51 (benchmarks/calibrate.py): runs made before ``yes_no`` was a signal have the question and the model's
    answer beside their signals; the fit reads the signal from them as an answer in use does — from the draft where
    the answer was withheld, the reply as given where a short phrase was scored — and keeps one a run recorded."""
    from pathlib import Path

    from pagemind.answering.signals import kind_of, signals

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from calibrate import derived

    def record(question, prediction, kind="free", **signals):
        return {"question": question, "prediction": prediction, "kind": kind, "signals": {"supported": 0.0, **signals}}

    assert derived(record("Does Corning have positive working capital?", "Yes, it does."))["yes_no"] == 1.0
    assert derived(record("For MGM, has it paid dividends in FY2022?", "No."))["yes_no"] == 1.0
    assert derived(record("Which region had the highest EBITDAR?", "Yes, Regional Operations."))["yes_no"] == 0.0
    assert derived(record("Is it (A) or (B)?", "Yes", kind="choice"))["yes_no"] == 0.0
    assert derived(record("Is Boeing's business cyclical?", "Yes.", yes_no=0.0))["yes_no"] == 0.0  # as recorded
    assert derived(record("Is Boeing's business cyclical?", "Yes."))["supported"] == 0.0
    short = {**record("Did Pfizer grow its PPNE?", "grew"), "details": {"short": "grew", "reply": "Yes, it grew."}}
    assert derived(short)["yes_no"] == 1.0  # --short-answers: the phrase scored, the reply as given read
    # a verdict's agreement is read anew from the replies kept: one with no verdict agrees by the claim's words
    kept = {**record("Is Best Buy's gross margin consistent?", "Yes, its gross margin is consistent.",
                     has_agreement=1.0, agreement=0.5),
            "probability": {"sampled": ["Yes.", "Its gross margin is consistent."]}}
    assert derived(kept)["agreement"] == pytest.approx((1.0 + 1.0) / 2)
    figure = {**record("How much did the rate change?", "up 2.70 points (computed by pagemind)", has_agreement=1.0,
                       agreement=0.1), "probability": {"sampled": ["up 2.70 points"]}}
    assert derived(figure)["agreement"] == 0.1  # not a verdict: as recorded (read against the model's own reply)
    # a record that keeps the reply its samples were read against has every agreement read anew against it
    reread = {**figure, "probability": {"sampled": ["up 2.70 points", "unchanged"], "against": "up 2.70 points"}}
    assert derived(reread)["agreement"] == pytest.approx((1.0 + 0.0) / 2)
    assert derived({**reread, "signals": {**reread["signals"], "has_agreement": 0.0}})["agreement"] == 0.1
    # a withheld answer, recorded as the evaluation records it (its prediction the abstention, its draft beside it)
    held, _ = ask("Yes, Mr. Pellow rowed the boat to Quillhaven.", "Did Mr. Pellow row the boat?",
                  text="Tam Ruddock skippered the Margery Dell.")
    assert held.abstained and held.draft is not None and not held.text.startswith("Yes")
    said = {k: v for k, v in signals(held).items() if k != "yes_no"}
    kept = {"question": held.question.text, "prediction": held.text, "draft": held.draft, "kind": kind_of(held),
            "signals": said}
    assert derived(kept)["yes_no"] == signals(held)["yes_no"] == 1.0


def test_the_variants_measure_counts_answers_the_product_withholds_whatever_their_confidence(monkeypatch):
    """Issue 51 (benchmarks/calibrate.py): an answer the product withholds by rule (the model declined, or the
    question asks of a name the document never writes) is withheld at any cut; the variants measure says what the
    cut alone withholds and, beside it, what the product withholds (``with_rules``)."""
    from pathlib import Path

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from calibrate import on_variants, ruled

    # ten answerable right answers, three variants answered wrong; one variant sure of itself but ruled out
    confidence = [0.9, 0.8, 0.85, 0.7, 0.75, 0.95, 0.6, 0.65, 0.88, 0.3, 0.2, 0.1, 0.92]
    right = [True] * 10 + [False] * 3
    variant = [False] * 10 + [True] * 3
    rules = [False] * 12 + [True]
    out = on_variants(confidence, right, variant, rules)
    assert out is not None and out["right_lost"] == 0.1 and out["variants_withheld"] == round(2 / 3, 3)
    assert out["with_rules"]["variants_withheld"] == 1.0 and out["with_rules"]["right_lost"] == 0.1
    assert "with_rules" not in on_variants(confidence, right, variant, [False] * 13)
    # right answers the rules withhold count against the 10%: two of ten leave the cut nothing
    both = on_variants(confidence, right, variant, [True, True] + [False] * 10 + [True])["with_rules"]
    assert both["right_lost"] == 0.2 and both["variants_withheld"] == round(1 / 3, 3)
    assert ruled({"signals": {"unwritten": 1.0}}) and ruled({"signals": {"declined": 1.0, "unwritten": 0.0}})
    assert not ruled({"signals": {"unwritten": 0.0}})
    assert not ruled({"kind": "choice", "signals": {"unwritten": 1.0}})  # --abstain auto withholds no choice


def test_candidate_signals_are_read_from_a_record_and_added_to_its_signals_by_the_loader(monkeypatch, tmp_path):
    """Issue 51 (benchmarks/candidate_signals.py): a signal is tried before it is made one: read from what a record
    holds (the question, what the model answered, retrieval's scores) and added to the signals the fit reads; a
    record's own signals stay as recorded."""
    import json
    from pathlib import Path

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from calibrate import load
    from candidate_signals import CANDIDATES, candidates, echo, gap, mismatch, top_z

    def record(question, prediction, **more):
        return {"question": question, "prediction": prediction, **more}

    assert mismatch(record("Who found the map?", "the old sailor")) == 1.0  # no name for a who
    assert mismatch(record("Who found the map?", "Tam Ruddock")) == 0.0
    assert mismatch(record("When did Caroline move?", "to Sweden")) == 1.0
    assert mismatch(record("When did Caroline move?", "last June")) == 0.0
    assert mismatch(record("How many boats were there?", "three")) == 0.0
    assert mismatch(record("Where is the milk?", "kitchen")) == 0.0  # no form asked: never a mismatch
    # withheld: the draft is what the model said
    assert mismatch(record("Who found the map?", "The document does not say", draft="Pellow")) == 0.0
    assert echo(record("What did Caroline paint?", "Caroline painted a lake")) == pytest.approx(1 / 3)
    assert echo(record("What did Caroline paint?", "")) == 1.0
    pool = record("q", "a", details={"scores": {"3": 2.0, "1": 1.0, "0": 0.0}})
    assert gap(pool) == pytest.approx(0.5) and top_z(pool) == pytest.approx(1 / (2 / 3) ** 0.5)
    assert gap(record("q", "a")) == 0.0 and top_z(record("q", "a")) == 0.0  # no scores recorded: none read
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"primary": "f1"}))
    line = {"status": "ok", "dataset": "locomo", "example_id": "e1", "document_id": "d1", "method": "rag",
            "kind": "free", "question": "Who found the map?", "prediction": "Tam Ruddock", "scores": {"f1": 1.0},
            "signals": {"supported": 1.0, "yes_no": 0.0}, "details": {"scores": {"0": 1.0, "1": 0.5}}}
    (run / "examples.jsonl").write_text(json.dumps(line) + "\n")
    (row,) = load([run], extra=candidates)
    assert set(CANDIDATES) <= set(row["signals"]) and row["signals"]["supported"] == 1.0
    assert row["signals"]["mismatch"] == 0.0 and row["signals"]["gap"] == 0.5 and row["right"] is True
    assert "gap" not in load([run])[0]["signals"]  # the fit itself reads none of them


def test_with_samples_a_free_form_answer_is_asked_again_sampled_and_their_agreement_recorded(capsys):
    """Issue 51: a model that knows gives the same answer again; one that guesses wanders. ``samples=n`` sends a
    free-form answer's prompt n times more at temperature 0.8 (seeds 1..n, nothing else changed, never served from the
    reply cache) and records how far the replies say what the answer says (``probability.agreement``, the signals
    ``agreement`` and ``has_agreement``): a yes or no by its verdict, anything else by word overlap; the replies are
    kept (``probability.sampled``). Off by default; a choice (its probability is read), a failed sample (the answer
    stands, said as a fallback) record none."""
    from pagemind.answering.probability import agreement
    from pagemind.answering.signals import signals
    from pagemind.errors import BackendUnavailable
    from pagemind.text.words import overlap_f1

    story = "Tam Ruddock skippered the Margery Dell, the supply boat of the lighthouse."

    def run(samples_said, question="Who skippered the supply boat?", **options):
        fake = ScriptedLLM(by_role={"answer": "Tam Ruddock", "sample": list(samples_said)})
        reader = registry.get("full")(LLM(fake, concurrency=1, max_retries=0), Store(":memory:"), **options)
        return reader.answer(reader.build(Document.from_text(story)), Question.parse(question)), fake

    held, fake = run(["Tam Ruddock", "Answer: Tam Ruddock.", "Ruddock"], samples=3)
    assert fake.roles() == ["answer", "sample", "sample", "sample"]
    sent = fake.history[1:]
    assert [r.temperature for r in sent] == [0.8] * 3 and [r.seed for r in sent] == [1, 2, 3]
    assert all(r.messages == fake.history[0].messages for r in sent) and fake.history[0].temperature == 0
    assert held.probability.agreement == pytest.approx((1 + 1 + 2 / 3) / 3) and held.probability.samples == 3
    assert held.as_dict()["probability"]["agreement"] == pytest.approx(0.8889) and held.text == "Tam Ruddock"
    # what they said is kept, unlabelled, in seed order: a reader sees the replies the answer was measured against
    assert held.probability.sampled == ("Tam Ruddock", "Tam Ruddock.", "Ruddock")
    assert held.as_dict()["probability"]["sampled"] == ["Tam Ruddock", "Tam Ruddock.", "Ruddock"]
    assert held.probability.against == held.as_dict()["probability"]["against"] == "Tam Ruddock"  # what they agree with
    assert signals(held)["has_agreement"] == 1.0 and signals(held)["agreement"] == pytest.approx(0.888889)
    from pagemind.cli.render import print_support

    print_support(held)  # the CLI's support line says it
    assert "; 3 samples agree 0.89" in capsys.readouterr().out
    wandered, _ = run(["Mr. Pellow", "Abel Hume", "Tam Ruddock"], samples=3)
    assert wandered.probability.agreement == pytest.approx(1 / 3) and wandered.text == "Tam Ruddock"
    assert wandered.probability.sampled == ("Mr. Pellow", "Abel Hume", "Tam Ruddock")
    plain, fake = run([])  # off by default: no call, no signal
    assert fake.roles() == ["answer"] and plain.probability.agreement is None
    assert signals(plain)["has_agreement"] == 0.0 and "agreement" not in plain.as_dict()["probability"]
    chose, fake = run(["x"], question="Who skippered the boat?\n(A) Mr. Pellow\n(B) Tam Ruddock", samples=3)
    assert "sample" not in fake.roles() and chose.probability.agreement is None
    failed, fake = run(["Tam Ruddock", BackendUnavailable("the server went away")], samples=2)
    assert failed.text == "Tam Ruddock" and failed.probability.agreement is None and failed.probability.sampled == ()
    assert any(f.startswith("samples: a sampled reply failed") for f in failed.fallbacks)
    # a yes or no to a yes/no question agrees by its verdict, whatever else a reply says; "No one" is no verdict
    asked = "Did Tam Ruddock skipper the boat?"
    assert agreement(asked, "Yes, Tam Ruddock did.", ["Yes.", "yes, he skippered it", "No."]) == pytest.approx(2 / 3)
    # a reply with no verdict agrees by the words it shares with the answer's claim (FinanceBench's "Best Buy's
    # historical gross margins are consistent." for "Yes, ... have been consistent"), never with a bare "Yes."
    claimed = agreement(asked, "Yes, Tam Ruddock skippered the boat.", ["Tam Ruddock skippered it.", "Mr. Pellow"])
    assert claimed == pytest.approx((overlap_f1(["tam", "ruddock", "skippered", "the", "boat"],
                                                ["tam", "ruddock", "skippered", "it"]) + 0.0) / 2)
    assert 0.3 < claimed < 0.5
    assert agreement(asked, "Yes.", ["Tam Ruddock skippered it.", "Yes"]) == 0.5
    assert agreement("Who found it?", "No one found it.", ["No one found it."]) == 1.0
    assert agreement("Who found it?", "No one found it.", ["No, Wren did."]) < 0.5
    assert agreement(asked, "", ["Tam Ruddock"]) is None and agreement(asked, "Tam Ruddock", []) is None
    assert agreement("Wer fand die Karte?", "Jürgen Weiß", ["Jürgen Weiß"]) == 1.0  # words of any script
    # an answer in the asker's own reply format (the OpenAI surface's max_tokens, stops): none sent, said so
    from dataclasses import replace

    from pagemind.answering.question import ReplySettings

    fake = ScriptedLLM(by_role={"answer": "Tam Ruddock", "sample": "Tam Ruddock"})
    reader = registry.get("full")(LLM(fake, concurrency=1), Store(":memory:"), samples=2)
    own = replace(Question.parse("Who skippered the supply boat?"), reply=ReplySettings(max_tokens=20))
    formatted = reader.answer(reader.build(Document.from_text(story)), own)
    assert fake.roles() == ["answer"] and formatted.probability.agreement is None
    assert any(f.startswith("samples: none sent for an answer in the asker's own reply format")
               for f in formatted.fallbacks)
    with pytest.raises(Exception, match="samples"):
        registry.get("full")(LLM(ScriptedLLM(), concurrency=1), Store(":memory:"), samples=9)
