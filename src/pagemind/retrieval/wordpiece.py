"""A pure-Python BERT WordPiece tokenizer (uncased), equal to the MiniLM ``tokenizer.json`` pipeline.

BertNormalizer (clean text, spaces around CJK ideographs, lowercase, strip accents), BertPreTokenizer
(split on whitespace and on every punctuation character) and greedy longest-match WordPiece with ``##``
continuations (a word over 100 characters, or with an unknown piece, is ``[UNK]``). The vocabulary is
vendored in ``data/minilm-vocab.txt`` (bert-base-uncased, Apache-2.0), so nothing is downloaded.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache
from importlib import resources
from pathlib import Path

VOCAB_SHA256 = "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"


def _is_control(ch: str) -> bool:
    if ch in "\t\n\r":
        return False
    return unicodedata.category(ch).startswith("C")


def _is_whitespace(ch: str) -> bool:
    return ch in " \t\n\r" or unicodedata.category(ch) == "Zs"


def _is_punctuation(ch: str) -> bool:
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def _is_cjk(cp: int) -> bool:
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF or 0x2A700 <= cp <= 0x2B73F
            or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF or 0xF900 <= cp <= 0xFAFF
            or 0x2F800 <= cp <= 0x2FA1F)


def normalise(text: str) -> str:
    """BertNormalizer(clean_text, handle_chinese_chars, strip_accents, lowercase)."""
    out = []
    for ch in text:
        cp = ord(ch)
        if cp == 0 or cp == 0xFFFD or _is_control(ch):
            continue
        if _is_whitespace(ch):
            out.append(" ")
        elif _is_cjk(cp):
            out.append(f" {ch} ")
        else:
            out.append(ch)
    text = unicodedata.normalize("NFD", "".join(out))
    return "".join(ch for ch in text if unicodedata.category(ch) != "Mn").lower()


def pre_tokenize(text: str) -> list[str]:
    """Split on whitespace, and make every punctuation character its own word."""
    words: list[str] = []
    for chunk in text.split():
        current: list[str] = []
        for ch in chunk:
            if _is_punctuation(ch):
                if current:
                    words.append("".join(current))
                    current = []
                words.append(ch)
            else:
                current.append(ch)
        if current:
            words.append("".join(current))
    return words


class WordPiece:
    """Text -> WordPiece ids with ``[CLS]``/``[SEP]``; per-word results are memoised."""

    def __init__(self, vocab_path: str | Path | None = None, max_chars_per_word: int = 100):
        if vocab_path is None:
            text = resources.files("pagemind.retrieval").joinpath("data/minilm-vocab.txt").read_text("utf-8")
        else:
            text = Path(vocab_path).read_text("utf-8")
        tokens = text.split("\n")
        if tokens and tokens[-1] == "":
            tokens.pop()
        self.vocab = {tok: i for i, tok in enumerate(tokens)}
        self.max_chars = max_chars_per_word
        self.unk, self.cls, self.sep, self.pad = (self.vocab[t] for t in ("[UNK]", "[CLS]", "[SEP]", "[PAD]"))
        self.word_ids = lru_cache(maxsize=200_000)(self._word_ids)

    def _word_ids(self, word: str) -> tuple[int, ...]:
        if len(word) > self.max_chars:
            return (self.unk,)
        ids: list[int] = []
        start = 0
        while start < len(word):
            end = len(word)
            found = None
            while start < end:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in self.vocab:
                    found = self.vocab[piece]
                    break
                end -= 1
            if found is None:
                return (self.unk,)
            ids.append(found)
            start = end
        return tuple(ids)

    def tokenize_words(self, text: str) -> list[tuple[int, ...]]:
        """The ids of each pre-tokenized word of ``text`` (no special tokens)."""
        return [self.word_ids(w) for w in pre_tokenize(normalise(text))]

    def ids(self, text: str) -> list[int]:
        """WordPiece ids of ``text``, without special tokens."""
        return [i for word in self.tokenize_words(text) for i in word]

    def count(self, text: str) -> int:
        """How many WordPiece tokens ``text`` has (without ``[CLS]``/``[SEP]``)."""
        return sum(len(w) for w in self.tokenize_words(text))

    def encode(self, text: str, max_length: int) -> list[int]:
        """``[CLS] ids [SEP]``, cut to ``max_length`` (callers chunk first, so the cut is a last resort)."""
        return [self.cls, *self.ids(text)[: max_length - 2], self.sep]
