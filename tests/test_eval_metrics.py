"""Metrics against hand-computed values."""

import pytest

from pagemind.eval.datasets import Example
from pagemind.eval.metrics import (
    exact_match,
    kv_correct,
    locomo_f1,
    normalize_answer,
    rouge,
    score,
    sentence_lines,
    token_f1,
)
from pagemind.eval.report import bootstrap, interval, wilson

U1, U2 = "11111111-2222-4333-8444-555555555555", "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"


def test_normalisation_and_token_f1():
    assert normalize_answer("The  Cat, sat!") == "cat sat"
    # pred "cat sat on mat" (4 tokens), gold "cat on mat" (3): P = 3/4, R = 1, F1 = 6/7
    assert token_f1("The cat sat on the mat.", "a cat on a mat") == pytest.approx(6 / 7)
    assert token_f1("", "cat") == 0.0 and token_f1("dog", "cat") == 0.0
    assert exact_match("The Cat.", "cat") == 1.0 and exact_match("cats", "cat") == 0.0


def test_rouge_by_hand():
    r = rouge("the cat sat on the mat", ["the cat was on the mat"])
    assert r["rouge1"] == pytest.approx(5 / 6)  # the x2, cat, on, mat
    assert r["rouge2"] == pytest.approx(3 / 5)  # the-cat, on-the, the-mat of 5 bigrams each
    assert r["rougeL"] == pytest.approx(5 / 6)  # LCS: the cat on the mat
    assert rouge("completely different words", ["the cat was on the mat"])["rouge1"] == 0.0


def test_rougelsum_needs_sentences_on_lines_and_gets_them():
    assert sentence_lines("Cats purr loudly. Dogs bark often!") == "Cats purr loudly.\nDogs bark often!"
    r = rouge("Cats purr loudly. Dogs bark often.", ["Dogs bark often. Cats purr loudly."])
    assert r["rougeL"] == pytest.approx(0.5)  # one sentence in order over the whole text
    assert r["rougeLsum"] == pytest.approx(1.0)  # union LCS per reference sentence


def test_rouge_takes_the_best_reference():
    r = rouge("the cat sat", ["dogs bark", "the cat sat"])
    assert r["rouge1"] == pytest.approx(1.0)


def test_key_value_rules():
    assert kv_correct(f"The value is {U1.upper()}", U1) == 1.0  # contains, case-insensitive
    assert kv_correct("nothing", U1) == 0.0
    assert kv_correct(f"{U1} leads to {U2}", U2, "last-uuid") == 1.0
    assert kv_correct(f"{U2} then {U1}", U2, "last-uuid") == 0.0  # an intermediate key is not the answer


def test_locomo_categories():
    assert locomo_f1("Paris, London", "London, Rome", 1) == pytest.approx(0.5)  # best per gold part, averaged
    assert locomo_f1("yes", "Yes; she likes it", 3) == 1.0  # only the part before ';'
    # number words: the official scorer gives "2 roadtrips" against "two" nothing; f1_numbers reads them as digits
    assert locomo_f1("2 roadtrips", "two", 4) == 0.0
    assert locomo_f1("2 roadtrips", "two", 4, numbers=True) == pytest.approx(2 / 3)
    assert locomo_f1("Two, Paris", "2, Paris", 1, numbers=True) == 1.0
    assert locomo_f1("That is not mentioned.", "anything", 5) == 1.0
    assert locomo_f1("She went to Rome.", "anything", 5) == 0.0
    assert locomo_f1("running dogs", "run dog", 4) == 1.0  # Porter stems
    assert token_f1("running dogs", "run dog") == 0.0


def example(task, **kw):
    base = dict(id="x", dataset="d", task=task, question="q?", document_id="doc", document="text")
    return Example(**{**base, **kw})


def test_score_per_task():
    choice = example("choice", options=("a", "b"), gold=1)
    assert score(choice, "b", 1) == {"accuracy": 1.0} and score(choice, "a", 0) == {"accuracy": 0.0}
    assert score(choice, "no idea", None) == {"accuracy": 0.0}
    kv = example("kv", references=(U2,), meta={"match": "last-uuid"})
    assert score(kv, f"{U1} -> {U2}") == {"accuracy": 1.0}
    summary = score(example("summary", references=("the cat was on the mat",)), "the cat sat on the mat")
    assert set(summary) == {"f1", "rouge1", "rouge2", "rougeL", "rougeLsum"}
    assert summary["rouge1"] == pytest.approx(5 / 6)
    qa = score(example("qa", references=("Ann Lee", "Ann")), "ann")
    assert qa == {"f1": 1.0, "em": 1.0}
    loc = score(example("qa", dataset="locomo", references=("a cat",), meta={"category": 4}), "cats")
    assert loc["f1"] == 1.0
    assert score(example("open"), "anything") == {}


def test_confidence_intervals():
    lo, hi = wilson(5, 10)
    assert lo == pytest.approx(0.2366, abs=1e-4) and hi == pytest.approx(0.7634, abs=1e-4)
    assert wilson(0, 4)[0] == 0.0 and wilson(4, 4)[1] == pytest.approx(1.0) and wilson(0, 0) == (0.0, 0.0)
    assert bootstrap([0.4] * 7) == (pytest.approx(0.4), pytest.approx(0.4))
    values = [0.1, 0.9, 0.5, 0.3, 0.7]
    lo, hi = bootstrap(values)
    assert 0.1 <= lo < 0.5 < hi <= 0.9 and bootstrap(values) == (lo, hi)  # seeded
    assert interval("accuracy", [1.0, 0.0, 1.0, 0.0]) == wilson(2, 4)
    assert interval("rougeL", [0.2, 0.4]) != wilson(0.6, 2)


def test_pagemind_and_the_cli_import_without_the_eval_extra():
    """rouge-score, nltk and matplotlib are optional: blocked here, imports still work and ROUGE names the extra."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "for name in ('rouge_score', 'nltk', 'matplotlib'): sys.modules[name] = None\n"
        "import pagemind, pagemind.cli.main, pagemind.eval\n"
        "from pagemind.eval.metrics import rouge\n"
        "try:\n    rouge('a', ['a'])\nexcept pagemind.ConfigError as err:\n    print(err)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install 'pagemind[eval]'" in out.stdout
