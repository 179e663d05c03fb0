"""Fragments, independent scorers (BM25, Jaccard, cosine), normalisation and fusion."""

import numpy as np
import pytest

from pagemind.retrieval import Fragment, FragmentIndex, RetrievalSettings, fit
from pagemind.retrieval.fragments import (
    from_dicts,
    split_lines,
    split_pages,
    split_repository,
    split_turns,
    split_words,
)
from pagemind.retrieval.scorers import BM25, Jaccard, code_tokens, cosine_scores, mix, normalise, ranks, rrf, words

DOCS = [
    "The lighthouse keeper climbed the stairs every night to light the lamp.",
    "Photosynthesis turns sunlight, water and carbon dioxide into sugar and oxygen in plants.",
    "The stock market fell sharply after the central bank raised interest rates.",
    "Plants need sunlight; without light, leaves cannot make the sugar the plant lives on.",
]


# --- fragments ------------------------------------------------------------------------------------------
def test_split_words_keeps_positions_and_every_word():
    text = " ".join(f"w{i}" for i in range(1203))
    frags = split_words(text, 500)
    assert [(f.index, f.position, f.start, f.end) for f in frags] == [(0, 0, 0, 500), (1, 1, 500, 1000),
                                                                      (2, 2, 1000, 1203)]
    assert " ".join(f.text for f in frags).split() == text.split()
    assert from_dicts([f.as_dict() for f in frags]) == frags


def test_split_turns_and_pages():
    turns = split_turns([("user", "hi"), ("bot", "hello"), "bye"], source="chat-1")
    assert [(t.position, t.source, t.text) for t in turns] == [(0, "chat-1", "user: hi"), (1, "chat-1", "bot: hello"),
                                                               (2, "chat-1", "bye")]

    class Page:
        def __init__(self, start, end, text):
            self.start, self.end, self.text = start, end, text

    pages = split_pages([Page(0, 3, "a b"), Page(3, 5, "c")])
    assert [(p.index, p.start, p.end, p.unit) for p in pages] == [(0, 0, 3, "pages"), (1, 3, 5, "pages")]


def test_split_lines_follows_repocoder_windows():
    code = "\n".join(f"line{i}" for i in range(35))
    frags = split_lines(code, "pkg/a.py")
    # line_no 0, 10, 20, 30 -> [max(0, l-10), min(35, l+10))
    assert [(f.start, f.end) for f in frags] == [(0, 10), (0, 20), (10, 30), (20, 35)]
    assert [f.position for f in frags] == [0, 1, 2, 3] and {f.source for f in frags} == {"pkg/a.py"}
    assert frags[1].text.splitlines() == [f"line{i}" for i in range(20)]
    repo = split_repository([("a.py", code), ("b.py", "x = 1\n\n\ny = 2")])
    assert [f.index for f in repo] == list(range(5)) and repo[-1].source == "b.py" and repo[-1].position == 0
    assert split_lines("\n\n\n") == []  # blank-only windows are dropped


# --- scorers --------------------------------------------------------------------------------------------
def test_bm25_ranks_the_matching_fragment_first_and_returns_all_scores():
    scores = BM25(DOCS).scores("How do plants use sunlight to make sugar?")
    assert scores.shape == (4,)
    assert list(np.argsort(-scores)[:2]) in ([1, 3], [3, 1])
    assert scores[2] == 0.0  # no query word in the stock-market fragment
    assert BM25(DOCS).scores("zzz qqq").tolist() == [0.0] * 4
    assert BM25([]).scores("x").shape == (0,)


def test_words_keeps_one_character_tokens():
    assert words("A b-2 C_d") == ["a", "b", "2", "c_d"]
    assert code_tokens("x = foo(a, 1)") == ["x", "=", "foo", "(", "a", ",", "1", ")"]


def test_words_find_a_filings_periods_and_plurals():
    """Issue 47: "FY2023" also matches the "2023" a filing prints ("fiscal 2023"), "Q2" the "2"; a plural matches
    its singular; other tokens that mix letters and digits ("p5w0", "covid19") stay whole."""
    assert words("FY2023 Q2 FY23") == ["fy2023", "2023", "q2", "2", "fy23", "23"]
    assert words("acquisitions business sales its") == ["acquisition", "business", "sale", "its"]
    assert words("p5w0 covid19 abc2023") == ["p5w0", "covid19", "abc2023"]


def test_jaccard_is_repocoders_set_overlap():
    j = Jaccard(["a = b + c", "x = y", "a b c"], tokenize=str.split)
    # query {a, =, b}: doc0 {a, =, b, +, c} -> 3/5; doc1 {x, =, y} -> 1/5; doc2 {a, b, c} -> 2/4
    assert j.scores("a = b").tolist() == pytest.approx([3 / 5, 1 / 5, 2 / 4])


def test_cosine_pooling_over_sub_chunks():
    chunks = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
    owners = np.array([0, 0, 1])
    q = np.array([[0.0, 1.0]])
    assert cosine_scores(q, chunks, owners, 3, "max").tolist() == pytest.approx([1.0, 0.8, 0.0])
    assert cosine_scores(q, chunks, owners, 3, "mean").tolist() == pytest.approx([0.5, 0.8, 0.0])


def test_normalisation_and_fusion():
    a = np.array([10.0, 0.0, 5.0])
    assert normalise(a).tolist() == [1.0, 0.0, 0.5]
    assert normalise(np.array([2.0, 2.0])).tolist() == [0.0, 0.0]
    assert normalise(a, "zscore").mean() == pytest.approx(0.0)
    b = np.array([0.1, 0.9, 0.5])  # cosine scale
    assert mix([a, b]).tolist() == pytest.approx([0.5 * 1 + 0.5 * 0, 0.5 * 0 + 0.5 * 1, 0.5 * 0.5 + 0.5 * 0.5])
    assert ranks(a).tolist() == [1, 3, 2]
    assert rrf([a, b], k=60).tolist() == pytest.approx([1 / 61 + 1 / 63, 1 / 63 + 1 / 61, 2 / 62])


def test_index_scorers_agree_with_the_scorers():
    frags = [Fragment(i, t, i) for i, t in enumerate(DOCS)]
    q = "sunlight sugar"
    assert FragmentIndex(frags).rank(q).s_ind == pytest.approx(BM25(DOCS).scores(q))
    jac = FragmentIndex(frags, RetrievalSettings(scorer="jaccard")).rank(q)
    assert jac.s_ind == pytest.approx(Jaccard(DOCS).scores(q))
    assert FragmentIndex([]).rank(q).s_ind.shape == (0,)


def test_fit_adds_in_rank_order_skips_what_does_not_fit_and_orders_by_position():
    frags = [Fragment(i, " ".join(["w"] * n), i) for i, n in enumerate([30, 50, 10, 40])]
    ranked = [frags[1], frags[3], frags[0], frags[2]]
    count = lambda text: len(text.split())
    # 50 fits, +40 = 90 fits, +30 = 120 does not (skipped), +10 = 100 fits exactly
    sel = fit(ranked, lambda t: count(t) <= 100, order="position")
    assert sel.indices == [1, 2, 3] and sel.skipped == (0,) and count(sel.text) == 100
    assert fit(ranked, lambda t: count(t) <= 99, order="position").indices == [1, 3]
    assert fit(ranked, lambda t: count(t) <= 1000, order="score", top_k=2).indices == [1, 3]
    assert fit(ranked, lambda t: count(t) <= 10, max_skips=1).indices == []  # stops after one miss


def test_bm25s_says_nothing_at_debug_level_once_logging_is_configured(capsys):
    """`pagemind eval` printed a stray "DEBUG:bm25s" line: bm25s sets its logger to DEBUG, and the evaluation's
    scorers configure logging."""
    import logging

    handler = logging.StreamHandler()  # what logging.basicConfig() adds
    logging.getLogger().addHandler(handler)
    try:
        BM25(["the keeper lit the lamp", "the gull flew"]).scores("lamp")
    finally:
        logging.getLogger().removeHandler(handler)
    err = capsys.readouterr().err
    assert "bm25s" not in err and "Building index" not in err


def test_word_windows_keep_a_statement_s_rows_and_carry_its_header_into_a_window_inside_it():
    """A fragment is the document's own stretch, line breaks kept, so a statement's rows reach the model as rows; one
    that starts inside a table's body carries the table's title lines and header above it (``head``, shown, not its
    own text: a citation of the whole passage finds it in the document)."""
    from pagemind import Document
    from pagemind.answering.evidence import Evidence, passage
    from pagemind.retrieval.fragments import split_words
    from pagemind.retrieval.select import join

    rows = "\n".join(f"| Line item number {i} | {i},000 | {i},500 |" for i in range(1, 30))
    text = ("Intro words about the year.\n\nCONSOLIDATED STATEMENTS OF OPERATIONS\n(in millions)\n"
            f"| Year Ended December 31, | 2017 | 2016 |\n| --- | --- | --- |\n{rows}\n\nAfter the table.")
    fragments = split_words(text, 60)
    assert fragments[0].text.startswith("Intro words about the year.\n\nCONSOLIDATED") and not fragments[0].head
    inside = next(f for f in fragments[1:] if f.text.startswith("|"))
    assert "\n| Line item number" in inside.text  # rows stay rows
    assert inside.head == ("CONSOLIDATED STATEMENTS OF OPERATIONS\n(in millions)\n| Year Ended December 31, | 2017 | "
                           "2016 |\n| --- | --- | --- |\n")
    assert inside.shown == inside.head + inside.text and inside.words == len(inside.text.split())
    assert join([inside], "position").startswith("CONSOLIDATED STATEMENTS")
    assert " ".join(f.text for f in fragments).split() == text.split()  # every word once, in order
    assert inside.as_dict()["head"] == inside.head and "head" not in fragments[0].as_dict()
    document = Document.from_text(text, name="ops")
    cited = passage(document, Evidence("fragment", inside.index, inside.shown, "fragment", head=inside.head))
    assert cited is not None and cited.quote.strip("| ") == inside.text.strip("| ")  # its own text, in its place
    assert cited.start == text.index(inside.text.split("\n")[0])  # at the row the window starts on
