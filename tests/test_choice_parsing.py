"""The multiple-choice reader: which replies name an option, and which are None (never a guessed letter)."""

import pytest

from pagemind.answering.question import ParsedChoice, Question, parse_choice, read_choice

# Option B's text is contained in option C's: a reply holding "Wren and Abel" holds both texts.
OPTIONS = ("Abel", "Wren", "Wren and Abel", "The lighthouse keeper", "The ferryman", "The storm", "The tide",
           "The gulls", "The mayor", "The miller")


def question(n: int) -> Question:
    return Question("Who hid the key?", OPTIONS[:n])


CASES = [
    # the defect of issue 12: a lowercase word after "answer" was read as a letter
    ("The answer is a matter of interpretation", 4, None),
    ("Answer: a keeper finds it", 4, None),
    ("Answer: A keeper finds it", 4, None),  # "A" begins a word that is not option A's text
    ("A keeper finds it at dawn.", 4, None),
    ("I think so, but I am not sure.", 4, None),
    ("The answer is (c)", 4, None),  # lowercase letters are never letters
    ("answer: b", 4, None),
    ("b)", 4, None),
    # the answer forms
    ("Answer: (C)", 4, "C"),
    ("Answer: D.", 4, "D"),
    ("Final answer: D", 4, "D"),
    ("The correct answer is B.", 4, "B"),
    ("Answer: A Abel", 4, "A"),  # a bare letter followed by its own option's text
    ("Answer: I think it is (B).", 4, "B"),  # "I" begins a word; (B) is the one letter in parentheses
    ("Answer: B, because the keeper had it.", 4, None),  # a comma is not among the allowed followers
    ("Answer: B, because Wren had the key.", 4, "B"),  # ... but the reply holds option B's text and no other
    ("Answer: (E)", 4, None),  # not an option letter
    ("Answer: (E)", 5, "E"),
    ("Answer: I", 4, None),
    ("Answer: (J)", 10, "J"),
    # a letter in parentheses anywhere, when it is the only one
    ("I think (B) is right", 4, "B"),
    ("I pick (B); (B) fits every clue.", 4, "B"),
    ("Either (A) or (C).", 4, None),
    # the letter as the whole reply, or at its start followed by its option's text
    ("A", 4, "A"),
    ("I", 9, "I"),
    ("I", 4, None),
    ("B.", 4, "B"),
    ("C:", 4, "C"),
    ("B) Wren", 4, "B"),
    ("A. Abel", 4, "A"),
    ("D. The lighthouse keeper", 4, "D"),
    ("B. The keeper did it.", 4, None),  # the start is not followed by option B's text
    ("A. Wren", 4, None),  # letter A, but the text of option B
    ("b) wren", 4, "B"),  # the lowercase "b)" is no letter; the reply holds option B's text and no other
    ("a) wren", 4, None),  # a lowercase letter that contradicts the text still blocks it
    # markdown
    ("**Answer: (C)**", 4, "C"),
    ("**B**", 4, "B"),
    ("**(B)**", 4, "B"),
    ("My answer: **C**. The keeper lied.", 4, "C"),
    ("- Answer: (D)", 4, "D"),
    ("* **B.** Wren", 4, "B"),
    ("- (A) Abel\n- (B) Wren", 4, None),
    ("1. A\n2. C", 4, None),
    # two different letters
    ("A or C", 4, None),
    ("The answer is B or C.", 4, None),
    ("Answer: B\nOn reflection, Answer: C", 4, None),
    ("Option A fails because Abel was away. Answer: (D)", 4, None),
    # JSON
    ('{"answer": "C"}', 4, "C"),
    ('{"answer": "(C)"}', 4, "C"),
    ('```json\n{"answer": "D"}\n```', 4, "D"),
    ('{"Answer": "Wren"}', 4, "B"),
    ('{"answer": "E"}', 4, None),
    ('{"answer": "c"}', 4, None),
    # option texts
    ("Wren", 4, "B"),
    ('"wren."', 4, "B"),
    ("WREN AND ABEL", 4, "C"),  # the exact text of C, although it contains B's text
    ("Answer: Wren and Abel", 4, "C"),
    ("It was Wren and Abel together.", 4, None),  # contains the texts of A, B and C
    ("It was Wren, I am sure.", 4, "B"),
    ("The keeper saw something.", 4, None),  # words of an option are not its text
    # a chain of thought, then the answer
    ("The keeper lit the lamp before the storm, so he was there all night.\nAnswer: (D)", 4, "D"),
    ("Let me think step by step.\n1. The key was in the tower.\n2. Only the keeper had been there.\n\n"
     "**Answer: (D) The lighthouse keeper**", 4, "D"),
    ("None of the above", 4, None),
    ("", 4, None),
    ("   \n", 4, None),
]


@pytest.mark.parametrize("reply, n, expected", CASES)
def test_reply_names_an_option_only_without_ambiguity(reply, n, expected):
    q = question(n)
    assert parse_choice(reply, q) == (None if expected is None else q.letters.index(expected))


def test_the_table_is_large_enough():
    assert len(CASES) >= 40 and sum(1 for c in CASES if c[2] is None) >= 20


@pytest.mark.parametrize("reply, problem", [
    ("", "empty reply"),
    ("A or C", "two letters named: A, C"),
    ("(A) (B) (C)", "3 letters named: A, B, C"),
    ("Answer: (E)", "letter E is not an option (A-D)"),
    ("Hello there", "no option form found"),
    ("Answer: B, because the keeper had it.", "no option form found (letter B only named in passing)"),
    ("It was Wren and Abel together.", "the reply contains the text of options A, B, C"),
    ("a) wren", "the text of option B but letter A named"),
    ('{"answer": "E"}', "JSON answer 'E': letter E is not an option (A-D)"),
])
def test_the_reason_nothing_was_chosen_is_given(reply, problem):
    assert read_choice(reply, question(4)) == ParsedChoice(None, problem)


@pytest.mark.parametrize("reply, form", [
    ("Answer: (C)", "answer"), ("I think (C) is right", "parenthesis"), ("C)", "start"),
    ('{"answer": "C"}', "json"), ("wren and abel.", "text"), ("Answer: Wren and Abel", "text"),
])
def test_the_form_that_named_the_option_is_given(reply, form):
    assert read_choice(reply, question(4)) == ParsedChoice(2, "", form)


def test_a_reply_holding_one_option_text_is_read_as_contained_text():
    assert read_choice("So it was Wren, clearly", question(4)) == ParsedChoice(1, "", "contained text")


def test_letters_inside_option_texts_name_nothing():
    q = Question("Which plan?", ("Plan A", "Plan B", "Plan A or B", "Neither"))
    assert parse_choice("Answer: (C) Plan A or B", q) == 2
    assert parse_choice("Plan A or B", q) == 2
    assert parse_choice("Answer: (C) but A or B", q) is None


def test_a_letter_followed_by_its_own_option_text_is_a_choice_even_if_the_text_starts_like_a_word():
    q = Question("Who?", ("keeper finds it", "Wren", "Abel", "Nobody"))
    assert parse_choice("Answer: A keeper finds it", q) == 0
    assert parse_choice("Answer: A keeper hides it", q) is None


def test_none_of_the_above_counts_when_it_is_an_option():
    q = Question("Who?", ("Abel", "Wren", "The keeper", "None of the above"))
    assert parse_choice("None of the above.", q) == 3
    assert parse_choice("(D)", q) == 3


def test_options_with_the_same_text_are_not_told_apart():
    q = Question("Who?", ("Wren", "wren.", "Abel"))
    assert read_choice("Wren", q) == ParsedChoice(None, "the reply is the text of options A, B")


def test_a_letter_that_is_also_another_options_text_is_ambiguous():
    q = Question("Which letter follows A?", ("B", "A", "C", "D"))
    assert read_choice("A", q) == ParsedChoice(None, "letter A but the text of option B")
    assert parse_choice("Answer: (C)", q) == 2


def test_a_free_form_question_has_no_choice():
    assert read_choice("Answer: (A)", Question("Who?")) == ParsedChoice(None, "not a multiple-choice question")
