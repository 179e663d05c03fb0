"""Generated stress sets built from QuALITY articles (read in place; nothing is written or downloaded).

* quality-long: documents of ``words`` words made by concatenating whole QuALITY articles in a seeded order;
  every article inside a document contributes its question, so a 50k-word document carries about a dozen
  questions, each about one of its articles, and its memory is built once for all of them.
* needle: a haystack of QuALITY articles of ``words`` words with one sentence (a passcode) inserted at a
  paragraph boundary at each relative ``depth`` (0 = start, 1 = end); correct when the reply contains it.
"""

from __future__ import annotations

import random
from pathlib import Path

from ..errors import DatasetError
from .datasets import QUALITY_PRESETS, DatasetSpec, Example
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


def insert_at_depth(text: str, sentence: str, depth: float) -> tuple[str, float]:
    """``text`` with ``sentence`` as a paragraph at the boundary nearest ``depth``; (text, actual depth)."""
    if not 0.0 <= depth <= 1.0:
        raise DatasetError(f"needle: depth {depth} is outside 0..1")
    paragraphs = [p for p in text.split("\n\n") if p.strip()]
    total = sum(len(p.split()) for p in paragraphs)
    target, seen, cut = depth * total, 0, len(paragraphs)
    for i, p in enumerate(paragraphs):
        if seen >= target:
            cut = i
            break
        seen += len(p.split())
    paragraphs.insert(cut, sentence)
    return "\n\n".join(paragraphs), round(seen / max(1, total), 4)


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


SPECS = (
    DatasetSpec("quality-long", load_quality_long, "quality/quality_dev_slice.json",
                "Generated: concatenated QuALITY articles of 20k-200k words, a question about one (accuracy)",
                "accuracy", QUALITY_PRESETS),
    DatasetSpec("needle", load_needle, "quality/quality_dev_slice.json",
                "Generated: a passcode at chosen depths in a QuALITY haystack (accuracy)", "accuracy", QUALITY_PRESETS),
)
