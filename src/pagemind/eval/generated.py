"""Generated stress sets built from QuALITY articles (read in place; nothing is written or downloaded).

* quality-long: documents of ``words`` words made by concatenating whole QuALITY articles in a seeded order;
  every article inside a document contributes its question, so a 50k-word document carries about a dozen
  questions, each about one of its articles, and its memory is built once for all of them.
* needle: a haystack of QuALITY articles of ``words`` words with one sentence (a passcode) inserted at a
  paragraph boundary at each relative ``depth`` (0 = start, 1 = end); correct when the reply contains it.
* babilong: BABILong-style stories (bAbI qa1-qa3 made here, with distractors) spread through public-domain prose of
  a chosen length in tokens (the bundled novellas, or the user's text files): the curve of accuracy against length.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from ..errors import DatasetError
from .datasets import QUALITY_PRESETS, DatasetSpec, Example
from .evidence import Span
from .sets_documents import load_quality

JOIN = "\n\n\n\n"
CITIES = ("Amsterdam", "Lisbon", "Nairobi", "Quito", "Oslo", "Hanoi", "Lima", "Tbilisi", "Perth", "Accra",
          "Valparaiso", "Bergen", "Cusco", "Tallinn", "Windhoek", "Porto")


def _articles(path: Path) -> list[Example]:
    articles = {e.document_id: e for e in load_quality(path)}  # one question per article is enough here
    if not articles:
        raise DatasetError(f"{path}: no QuALITY articles to build from")
    return list(articles.values())


def _fill(pool: list[Example], words: int, rng: random.Random) -> list[Example]:
    """Whole articles in a seeded order until ``words`` is reached (or the pool runs out)."""
    chosen: list[Example] = []
    total = 0
    for article in rng.sample(pool, len(pool)):
        if total >= words:
            break
        chosen.append(article)
        total += article.words
    return chosen


def load_quality_long(path: Path, *, words: tuple[int, ...] = (20000, 50000, 100000), documents: int = 1,
                      seed: int = 0) -> list[Example]:
    """Concatenated QuALITY articles of about ``words`` words each (``documents`` per length)."""
    pool = _articles(path)
    available = sum(a.words for a in pool)
    examples = []
    for target in words:
        if target > available:
            raise DatasetError(f"quality-long: {target} words asked, the articles in {path} hold {available}")
        for d in range(documents):
            rng = random.Random(f"{seed}-{target}-{d}")
            chosen = _fill(pool, target, rng)
            rng.shuffle(chosen)
            text = JOIN.join(a.document.strip() for a in chosen)
            doc_id = f"quality-long-{target}-{seed}-{d}"
            total = len(text.split())
            for position, article in enumerate(chosen):
                examples.append(Example(
                    id=f"{doc_id}-{article.document_id}", dataset="quality-long", task="choice",
                    question=article.question, document_id=doc_id, document=text, options=article.options,
                    gold=article.gold,
                    meta={"target_words": target, "words": total, "articles": len(chosen),
                          "article": article.document_id, "article_position": position}))
    return examples


def _paragraphs(text: str) -> list[str]:
    return [p for p in text.split("\n\n") if p.strip()]


def _boundary(before: list[int], depth: float) -> int:
    """The first paragraph boundary with at least ``depth`` of the words before it (``before[i]``: the words
    before paragraph ``i``; its last item is the total)."""
    return next(i for i, seen in enumerate(before) if seen >= depth * before[-1])


def _words_before(paragraphs: list[str]) -> list[int]:
    before = [0]
    for p in paragraphs:
        before.append(before[-1] + len(p.split()))
    return before


def insert_at_depth(text: str, sentence: str, depth: float) -> tuple[str, float]:
    """``text`` with ``sentence`` as a paragraph at the boundary nearest ``depth``; (text, actual depth)."""
    if not 0.0 <= depth <= 1.0:
        raise DatasetError(f"needle: depth {depth} is outside 0..1")
    paragraphs = _paragraphs(text)
    before = _words_before(paragraphs)
    cut = _boundary(before, depth)
    paragraphs.insert(cut, sentence)
    return "\n\n".join(paragraphs), round(before[cut] / max(1, before[-1]), 4)


def load_needle(path: Path, *, words: tuple[int, ...] = (20000,),
                depths: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 1.0), repeats: int = 1,
                seed: int = 0) -> list[Example]:
    """One passcode per haystack at each depth (``repeats`` haystacks and passcodes per cell)."""
    pool = _articles(path)
    examples = []
    for target in words:
        for r in range(repeats):
            rng = random.Random(f"needle-{seed}-{target}-{r}")
            hay = "\n\n".join(a.document.strip() for a in _fill(pool, target, rng))
            for depth in depths:
                city, code = rng.choice(CITIES), str(rng.randrange(100000, 1000000))
                needle = f"The secret passcode for the {city} vault is {code}."
                text, actual = insert_at_depth(hay, needle, depth)
                id_ = f"needle-{target}-d{depth:g}-{seed}-{r}"
                examples.append(Example(
                    id=id_, dataset="needle", task="kv",
                    question=f"What is the secret passcode for the {city} vault? Answer with the number only.",
                    document_id=id_, document=text, references=(code,),
                    meta={"depth": depth, "actual_depth": actual, "words": len(text.split()), "match": "contains"}))
    return examples


# --- BABILong-style fact chains ------------------------------------------------------------------------------
NAMES = ("Mary", "John", "Daniel", "Sandra", "Fred", "Julie", "Bill", "Jeff")
PLACES = ("bathroom", "hallway", "kitchen", "garden", "office", "bedroom", "cellar", "balcony")
OBJECTS = ("football", "apple", "milk", "lantern", "ledger", "compass")
MOVES = ("moved to", "went to", "journeyed to", "travelled to", "went back to")
BABI_TASKS = ("qa1", "qa2", "qa3")
WORDS_PER_TOKEN = 0.75  # English prose: about 3 words to 4 tokens (the target lengths are in tokens)


@dataclass(frozen=True)
class Story:
    """One bAbI-like story: its facts in order (``support``: the indices of the supporting ones), the question
    and the one-word answer."""

    facts: tuple[str, ...]
    support: tuple[int, ...]
    question: str
    answer: str


def babi_story(task: str, rng: random.Random, distractors: int = 6) -> Story:
    """A story of bAbI task ``qa1`` (one supporting fact: where is a person), ``qa2`` (two: where is an object a
    person carries) or ``qa3`` (three: where was an object before a place), with distractor moves of other people
    woven in; the answer follows from the supporting facts alone."""
    hero, *others = rng.sample(NAMES, 4)
    thing = rng.choice(OBJECTS)
    a, b, c = rng.sample(PLACES, 3)
    move = lambda who, where: f"{who} {rng.choice(MOVES)} the {where}."
    if task == "qa1":
        plot = [(move(hero, a), False), (move(hero, b), True)]
        question, answer = f"Where is {hero}?", b
    elif task == "qa2":
        plot = [(move(hero, a), False), (f"{hero} picked up the {thing}.", True), (move(hero, b), True)]
        question, answer = f"Where is the {thing}?", b
    elif task == "qa3":
        plot = [(move(hero, a), False), (f"{hero} picked up the {thing}.", True), (move(hero, b), True),
                (move(hero, c), True)]
        question, answer = f"Where was the {thing} before the {c}?", b
    else:
        raise DatasetError(f"babilong: unknown task {task!r} (have: {', '.join(BABI_TASKS)})")
    noise = [(move(rng.choice(others), rng.choice(PLACES)), False) for _ in range(distractors)]
    slots = sorted(rng.sample(range(len(plot) + len(noise)), len(plot)))  # the plot in order, noise around it
    facts: list[tuple[str, bool]] = []
    story, rest = iter(plot), iter(noise)
    for i in range(len(plot) + len(noise)):
        facts.append(next(story) if i in slots else next(rest))
    return Story(tuple(f for f, _ in facts), tuple(i for i, (_, s) in enumerate(facts) if s), question, answer)


def haystack_text(path: Path | None) -> str:
    """The public-domain prose facts are hidden in: the text files at ``path`` (a file, or a folder's ``.txt``
    files in name order), else the novellas bundled with pagemind."""
    if path is None:
        from importlib import resources

        folder = resources.files("pagemind").joinpath("samples")
        texts = [folder.joinpath(n).read_text("utf-8") for n in ("keepers-ledger.txt", "lighthouse.txt")]
    elif path.is_dir():
        texts = [f.read_text("utf-8", errors="replace") for f in sorted(path.glob("*.txt"))]
    else:
        texts = [path.read_text("utf-8", errors="replace")]
    texts = [t.strip() for t in texts if len(t.split()) >= 200]
    if not texts:
        raise DatasetError(f"babilong: {path or 'the bundled samples'} has no text of 200 words or more to hide "
                           "facts in")
    return "\n\n".join(texts)


def _stretch(paragraphs: list[str], words: int, start: int) -> str:
    """``words`` words of the prose from paragraph ``start`` on, going round to its beginning when it runs out
    (long lengths repeat the haystack, as BABILong repeats its books' text only across samples)."""
    out, total, i = [], 0, start % len(paragraphs)
    while total < words:
        out.append(paragraphs[i])
        total += len(paragraphs[i].split())
        i = (i + 1) % len(paragraphs)
    return "\n\n".join(out)


def insert_in_order(text: str, sentences: tuple[str, ...], depths: list[float]) -> str:
    """``text`` with each sentence as a paragraph at the boundary nearest its depth (sorted), in their order."""
    paragraphs = _paragraphs(text)
    before = _words_before(paragraphs)
    cuts = [_boundary(before, depth) for depth in depths]
    out: list[str] = []
    for i in range(len(paragraphs) + 1):
        out += [s for s, cut in zip(sentences, cuts) if cut == i]
        if i < len(paragraphs):
            out.append(paragraphs[i])
    return "\n\n".join(out)


def load_babilong(path: Path | None, *, tasks: tuple[str, ...] = BABI_TASKS,
                  tokens: tuple[int, ...] = (4000, 16000, 64000), samples: int = 5, seed: int = 0) -> list[Example]:
    """BABILong-style (Kuratov et al., NeurIPS 2024 D&B): a bAbI-like story's facts spread in order through a
    haystack of public-domain prose of ``tokens`` tokens (about 0.75 words each), deterministic by ``seed``;
    correct when the reply contains the one-word answer. Without ``--data`` the haystack is pagemind's bundled
    novellas; with it, the text files it names. Evidence labels are the supporting facts' places in the text."""
    paragraphs = _paragraphs(haystack_text(path))  # split once, cut for every sample
    examples = []
    for task in tasks:
        if task not in BABI_TASKS:
            raise DatasetError(f"babilong: unknown task {task!r} (have: {', '.join(BABI_TASKS)})")
        for length in tokens:
            if not 500 <= length <= 10_000_000:
                raise DatasetError(f"babilong: a length of {length} tokens is outside 500..10,000,000")
            for i in range(samples):
                rng = random.Random(f"babilong-{seed}-{task}-{length}-{i}")
                story = babi_story(task, rng)
                text = _stretch(paragraphs, int(length * WORDS_PER_TOKEN), rng.randrange(len(paragraphs)))
                text = insert_in_order(text, story.facts, sorted(rng.random() for _ in story.facts))
                spans, at = [], 0
                for k, fact in enumerate(story.facts):
                    at = text.index(fact, at)
                    if k in story.support:
                        spans.append(Span(f"fact {k + 1}", at, at + len(fact)))
                    at += len(fact)
                id_ = f"babilong-{task}-{length}-{seed}-{i}"
                examples.append(Example(
                    id=id_, dataset="babilong", task="kv", question=f"{story.question} Answer with one word.",
                    document_id=id_, document=text, references=(story.answer,), evidence=tuple(spans),
                    meta={"target_tokens": length, "babi_task": task, "words": len(text.split()),
                          "facts": len(story.facts), "supporting": len(story.support), "match": "contains"}))
    return examples


SPECS = (
    DatasetSpec("quality-long", load_quality_long, "quality/quality_dev_slice.json",
                "Generated: concatenated QuALITY articles of 20k-200k words, a question about one (accuracy)",
                "accuracy", QUALITY_PRESETS),
    DatasetSpec("needle", load_needle, "quality/quality_dev_slice.json",
                "Generated: a passcode at chosen depths in a QuALITY haystack (accuracy)", "accuracy", QUALITY_PRESETS),
    DatasetSpec("babilong", load_babilong, "",
                "Generated: bAbI-like fact chains (qa1-qa3) in public-domain prose of 4k-1M tokens; accuracy against "
                "length (--data: your own text files)", "accuracy", QUALITY_PRESETS,
                "after Kuratov et al., BABILong, NeurIPS 2024 Datasets and Benchmarks", widening=("samples",),
                needs_data=False),
)
