"""Archival storage: insert passages (embedded when an embedder is available) and search them, paginated.

Search modes: ``text`` (case-insensitive substring, the paper's nested-KV setting: UUIDs are out of
distribution for embedding models), ``semantic`` (cosine over the retrieval layer's embeddings) and
``hybrid`` (exact text matches first, then the semantic ranking). Without an embedding model (numpy,
onnxruntime or the MiniLM weights missing, or ``embedder="none"``) semantic ranking falls back to keyword
overlap scoring, and :meth:`Archive.describe` says so.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ..limits import MAX_EMBEDDED, check_text
from ..text.words import STOPWORDS, WORD, keywords
from .memory import AgentOptions, Passage, SearchPage
from .store import AgentStore

if TYPE_CHECKING:
    import numpy as np

    from ..retrieval.embed import Embedder

# A passage is a repeat of a stored one when their MiniLM vectors are this close and it adds no word the stored one
# lacks (numbers, names and negations count as words). Measured on MSC's persona facts (benchmarks/archival_dedup.py):
# no two distinct facts of one speaker reach 0.81; restatements ("I like to paint." / "I paint.") from 0.83. The
# word rule keeps "Ada is 31" from folding into "Ada is 30" (0.97) and "on Friday" into "on Tuesday" (0.86).
NEAR_REPEAT = 0.85
SUPERSEDE_NEAR = 0.35  # this similar, no repeat: maybe an earlier state of the fact ("lives in York" / "Leeds": 0.59)
CONTENDERS = 2  # passages the supersession check asks about, at most
_WHOSE = frozenset({"user", "users", "human", "assistant", "agent", "person"})  # in every fact: no shared subject
NEGATIONS = frozenset({"not", "no", "never", "nor", "none", "nothing", "nobody", "without"})
BOILERPLATE = ("inserted into archival memory", "sent message successfully", "core memory", "function result",
               "request_heartbeat")


def told_words(text: str) -> set[str]:
    """The words a passage tells: its content words with numbers, names and negations (``n't`` is ``not``)."""
    return set(WORD.findall(text.lower().replace("n't", " not"))) - (STOPWORDS - NEGATIONS)


def adds_nothing(new: str, old: str) -> bool:
    """Whether ``new`` tells no word ``old`` does not."""
    return told_words(new) <= told_words(old)


# A statement that something is not known: "The user's name is not mentioned in the conversation." (what a small model
# writes when asked for facts a conversation does not hold)
UNKNOWN = re.compile(r"\b(?:not|never|nowhere) (?:been )?(?:mentioned|specified|provided|given|stated|known|said|"
                     r"discussed|shared|disclosed|revealed)\b|\bno (?:information|details?|mention|facts?)\b|"
                     r"\b(?:unknown|unspecified)\b")


def junk_reason(text: str) -> str | None:
    """Why a passage is junk (nothing to tell, one word repeated, a function's own boilerplate, only that something is
    not known), or None."""
    words = WORD.findall(text.lower())
    told = told_words(text)
    if not told:
        return "empty: no word that tells anything"
    if len(words) >= 20 and Counter(words).most_common(1)[0][1] >= len(words) / 2:
        return "one word repeated"
    if len(told) <= 6 and any(b in text.lower() for b in BOILERPLATE):
        return "boilerplate of the agent's functions"
    sentences = [s for s in re.split(r"[.;!?\n]+", text.lower().replace("n't", " not")) if s.strip()]
    if sentences and all(UNKNOWN.search(s) for s in sentences):
        return "says only that something is not known"
    return None


@dataclass(frozen=True)
class Added:
    """What an insert did: ``stored`` the passage, or found it already known (``passage`` is the one kept)."""

    passage: Passage
    stored: bool
    replaced: tuple[Passage, ...] = ()  # the earlier passages it supersedes


@dataclass(frozen=True)
class Audit:
    """An archive's state: passages, repeats (groups of ids, the earliest first: exact, and near by
    :data:`NEAR_REPEAT` and the word rule), junk (id, why) and superseded passages."""

    total: int
    exact: tuple[tuple[int, ...], ...]
    near: tuple[tuple[int, ...], ...]
    junk: tuple[tuple[int, str], ...]
    superseded: int

    def share(self, count: int) -> float:
        return count / self.total if self.total else 0.0

    def as_dict(self) -> dict[str, Any]:
        repeats = sum(len(g) - 1 for g in self.exact + self.near)
        return {"total": self.total, "repeats": repeats, "repeat_share": self.share(repeats),
                "exact": [list(g) for g in self.exact], "near": [list(g) for g in self.near],
                "junk": [{"id": i, "why": why} for i, why in self.junk], "junk_share": self.share(len(self.junk)),
                "superseded": self.superseded}


@lru_cache(maxsize=4)
def resolve_embedder(name: str) -> Any | None:
    """The embedder for ``name`` (auto | minilm | hashing | none), or None when there is none to use."""
    if name == "none":
        return None
    try:
        from ..retrieval.embed import load_embedder
    except ImportError as err:  # numpy missing: the retrieval layer cannot run
        if name == "auto":
            return None
        raise ConfigError(f"embedder {name!r} needs the retrieval layer ({err})") from None
    if name == "auto":
        try:
            return load_embedder("minilm")
        except (ConfigError, ImportError):
            return None
    return load_embedder(name)


class Archive:
    """The archival storage of one agent."""

    def __init__(self, store: AgentStore, agent_id: int, options: AgentOptions, embedder: Any | None = "auto"):
        self.store = store
        self.agent_id = agent_id
        self.options = options
        self._embedder = embedder  # an Embedder, None, or "auto": resolve from options on first use

    @property
    def embedder(self) -> Any | None:
        if self._embedder == "auto":
            self._embedder = resolve_embedder(self.options.embedder)
        return self._embedder

    def describe(self) -> str:
        mode = self.options.archival_search
        if mode == "text":
            return "text search (case-insensitive substring)"
        if self.embedder is None:
            return f"{mode}: keyword-overlap ranking (no embedding model available)"
        return f"{mode}: embeddings from {self.embedder.model_id}"

    def _vectors(self, texts: Sequence[str]) -> list[bytes | None]:
        embedder = self.embedder
        if embedder is None or not texts:
            return [None] * len(texts)
        from ..retrieval.embed import CachedEmbedder, fragment_vectors

        # passages go through the store's embedding cache: the same document loaded into another agent (or
        # into one agent per evaluation question) is embedded once
        cached = CachedEmbedder.in_store(embedder, self.store.store)
        matrix = fragment_vectors(cached.embed(list(texts)))
        return [row.tobytes() for row in matrix]

    def insert(self, texts: Sequence[str], time: str | Sequence[str], summaries: Sequence[str | None] | None = None,
               source: str | Sequence[str | None] | None = None) -> list[int]:
        """Store passages; the embedding is taken of the summary (if any) plus the text (its first
        :data:`~pagemind.limits.MAX_EMBEDDED` characters). ``time`` and ``source``:
        one for all, or one per passage (an imported archive keeps each passage's own)."""
        for text in texts:  # every surface's passages end here: one bound, and the embedding's work with it
            check_text("passage", text)
        summaries = list(summaries) if summaries is not None else [None] * len(texts)
        times = [time] * len(texts) if isinstance(time, str) else list(time)
        sources = [source] * len(texts) if source is None or isinstance(source, str) else list(source)
        # a passage's vector is taken of its beginning (at most MAX_EMBEDDED characters): the work one request causes
        # stays bounded (a 100,000-character passage took 16 s of CPU to embed whole); text search reads it all
        vectors = self._vectors([(f"{s}\n{t}" if s else t)[:MAX_EMBEDDED] for t, s in zip(texts, summaries)])
        model = self.embedder.model_id if self.embedder is not None else None
        rows = [(t, s, src, v, model if v is not None else None, when)
                for t, s, src, v, when in zip(texts, summaries, sources, vectors, times)]
        return self.store.insert_passages(self.agent_id, rows)

    # --- clean writes --------------------------------------------------------------------------------
    def add(self, text: str, time: str, source: str | None = None, replaces: str | Passage | None = None,
            judge: Callable[[str, str], bool] | None = None) -> Added:
        """One passage the agent or a user was told: stored, unless it repeats one already stored (exactly, or near:
        :data:`NEAR_REPEAT` and no word the stored one lacks), whose repeats then record this one's time and
        source instead. ``replaces``: the earlier fact it corrects (the passage, or its text or a part of it, found
        among the current passages by :meth:`find`), marked superseded by the new one (nothing is deleted).
        ``judge`` (the supersession check), without ``replaces``: asked ``(old text, new text)`` of each of the
        :meth:`contenders` in turn; the first it says the new one replaces is superseded."""
        check_text("passage", text)
        same = self.repeat_of(text)
        if same is not None:
            self.store.note_repeat(self.agent_id, same.id, time, source)
            return Added(self.store.passages(self.agent_id, [same.id])[0], False)
        old = replaces if isinstance(replaces, Passage) else \
            self.find(replaces) if replaces and replaces.strip() else None
        if old is None and replaces is None and judge is not None:
            old = next((p for p in self.contenders(text) if judge(p.text, text)), None)
        (pid,) = self.insert([text], time, source=source)
        if old is not None:
            self.store.supersede(self.agent_id, old.id, pid, time)
        (made,) = self.store.passages(self.agent_id, [pid])
        return Added(made, True, () if old is None else (old,))

    def find(self, described: str) -> Passage | None:
        """The current passage ``described`` names: one holding it exactly (the latest), else the best ranked of
        the archive's search that holds every word it tells (compared by their first four letters: "lived" finds
        "lives")."""
        exact = [p for p in self.store.search_passages_text(self.agent_id, described)[1] if p.superseded_by is None]
        if exact:
            return exact[-1]
        wanted = {w[:4] for w in told_words(described)}
        for p in self.store.passages(self.agent_id, self.ranked(described, 10)[1]) if wanted else []:
            if p.superseded_by is None and wanted <= {w[:4] for w in told_words(p.text)}:
                return p
        return None

    def repeat_of(self, text: str) -> Passage | None:
        """The current stored passage ``text`` repeats, or None."""
        exact = [p for p in self.store.passages_with_text(self.agent_id, text) if p.superseded_by is None]
        if exact:
            return exact[0]
        nearest, cosine = self._nearest(text, 3)
        return next((p for p in nearest if adds_nothing(text, p.text) and cosine(p) >= NEAR_REPEAT), None)

    def contenders(self, text: str) -> list[Passage]:
        """Current passages that may be an earlier state of the fact ``text`` tells (the supersession check asks
        the model about each): MiniLM cosine at least :data:`SUPERSEDE_NEAR`, below a repeat, sharing a word
        that tells other than whose fact it is ("lives" of "The user lives in York" and "... in Leeds now"; not
        "user"); none without the encoder."""
        nearest, cosine = self._nearest(text, CONTENDERS + 2)
        told = told_words(text) - _WHOSE
        return [p for p in nearest if told & told_words(p.text) and SUPERSEDE_NEAR <= cosine(p) < NEAR_REPEAT][
            :CONTENDERS]

    def _nearest(self, text: str, limit: int) -> tuple[list[Passage], Callable[[Passage], float]]:
        """The current passages among the ``limit`` nearest to ``text`` under the encoder, and their cosine to it
        (each computed when asked: -1 for a passage without a vector); none without the encoder."""
        embedder = self.embedder
        if embedder is None:
            return [], lambda p: -1.0
        import numpy as np

        query = np.frombuffer(self._vectors([text[:MAX_EMBEDDED]])[0] or b"", dtype=np.float32)
        total, ids = self.store.nearest_passages(self.agent_id, embedder.model_id, query.tobytes(), limit)

        def cosine(p: Passage) -> float:
            shown = f"{p.summary}\n{p.text}" if p.summary else p.text  # embedded as it was stored
            near = np.frombuffer(self._vectors([shown[:MAX_EMBEDDED]])[0] or b"", dtype=np.float32)
            return float(near @ query) if near.size else -1.0

        current = [p for p in self.store.passages(self.agent_id, ids) if p.superseded_by is None] if total else []
        return current, cosine

    @staticmethod
    def _query_vector(embedder: Embedder, query: str) -> np.ndarray:
        """A search query's unit vector, embedded directly: a query is not kept in the store's embedding cache (the
        passages and messages it is compared with are)."""
        from ..retrieval.embed import fragment_vectors

        return fragment_vectors(embedder.embed([query]))[0]

    def similarities(self, query: str, texts: Sequence[str]) -> list[float] | None:
        """The encoder's cosine of each text to ``query`` (the texts' vectors through the store's embedding cache, so
        recall's messages are embedded once; the query's not kept), or None without the encoder."""
        embedder = self.embedder
        if embedder is None or not texts:
            return None
        import numpy as np

        q = self._query_vector(embedder, query[:MAX_EMBEDDED])
        vectors = self._vectors([t[:MAX_EMBEDDED] for t in texts])
        return [float(np.frombuffer(v, dtype=np.float32) @ q) if v else -1.0 for v in vectors]

    def audit(self) -> Audit:
        """Repeats, junk and superseded passages of the whole archive (nothing changed)."""
        texts = dict(self.store.passage_texts(self.agent_id))
        by_text: dict[str, list[int]] = {}
        for pid, text in texts.items():
            by_text.setdefault(" ".join(text.split()), []).append(pid)
        exact = tuple(tuple(sorted(g)) for g in by_text.values() if len(g) > 1)
        in_exact = {i for g in exact for i in g[1:]}
        near: dict[int, list[int]] = {}
        embedder = self.embedder
        if embedder is not None:
            import numpy as np

            rows = [(i, v) for i, v in self.store.passage_vectors(self.agent_id, embedder.model_id)
                    if i not in in_exact]
            ids = [i for i, _ in rows]
            matrix = np.stack([np.frombuffer(v, dtype=np.float32) for _, v in rows]) if rows else np.zeros((0, 1))
            owner: dict[int, int] = {}
            for start in range(0, len(ids), 512):
                block = matrix[start:start + 512] @ matrix.T
                for r in range(len(block)):
                    i = start + r
                    for j in np.nonzero(block[r][:i] >= NEAR_REPEAT)[0]:  # earlier passages only
                        first = owner.get(ids[j], ids[j])
                        if adds_nothing(texts[ids[i]], texts[first]):
                            owner[ids[i]] = first
                            near.setdefault(first, [first]).append(ids[i])
                            break
        junk = tuple((pid, why) for pid, text in texts.items() if (why := junk_reason(text)) is not None)
        return Audit(len(texts), exact, tuple(tuple(g) for g in near.values()), junk,
                     len(self.store.superseded(self.agent_id)))

    def fold(self, audit: Audit) -> int:
        """Fold every repeat an audit found into the earliest passage of its group (its time and source kept in
        that passage's repeats); how many passages were folded."""
        return sum(self.store.fold_passages(self.agent_id, group[0], group[1:]) for group in audit.exact + audit.near)

    def search(self, query: str, page: int) -> SearchPage:
        total, found = self.search_passages(query, page)
        return SearchPage(tuple(p.describe() for p in found), total, page, self.options.page_size)

    def search_passages(self, query: str, page: int, size: int | None = None) -> tuple[int, list[Passage]]:
        """(how many passages match, the passages of page ``page``) of a search, as :meth:`search` shows them;
        ``size`` a page (the agent's page size unless given)."""
        size = size or self.options.page_size
        superseded = self.store.superseded(self.agent_id)
        if self.options.archival_search == "text" and not superseded:
            return self.store.search_passages_text(self.agent_id, query, page * size, size)
        if self.options.archival_search == "text":
            total, matched = self.store.search_passages_text(self.agent_id, query)
            ranked = [p.id for p in matched]
        else:
            total, ranked = self.ranked(query, None if superseded else (page + 1) * size)
        if superseded:  # the fact that holds now first, then what it replaced
            ranked = [i for i in ranked if i not in superseded] + [i for i in ranked if i in superseded]
        found = self.store.passages(self.agent_id, ranked[page * size:(page + 1) * size])
        return total, [self._with_replaced(p, superseded) for p in found]

    def _with_replaced(self, passage: Passage, superseded: dict[int, int]) -> Passage:
        olds = [old for old, new in superseded.items() if new == passage.id]
        return replace(passage, replaces=tuple(self.store.passages(self.agent_id, olds))) if olds else passage

    def rank(self, query: str) -> list[int]:
        """Passage ids best first: exact matches first in hybrid mode, then semantic (or keyword) order."""
        return self.ranked(query)[1]

    def ranked(self, query: str, limit: int | None = None) -> tuple[int, list[int]]:
        """(how many passages rank, the first ``limit`` of them best first); in semantic mode the store finds only
        those (a Postgres store with its vector index), in hybrid mode the whole order is needed for the total."""
        if self.options.archival_search == "hybrid":
            exact = [p.id for p in self.store.search_passages_text(self.agent_id, query)[1]]
            seen = set(exact)
            ranked = exact + [i for i in self._similar(query)[1] if i not in seen]
            return len(ranked), ranked[:limit]
        return self._similar(query, limit)

    def _similar(self, query: str, limit: int | None = None) -> tuple[int, list[int]]:
        embedder = self.embedder
        if embedder is not None:
            q = self._query_vector(embedder, query)
            total, ids = self.store.nearest_passages(self.agent_id, embedder.model_id, q.tobytes(), limit)
            if total:
                return total, ids
        wanted = keywords(query)
        scored = []
        for pid, text in self.store.passage_texts(self.agent_id):
            hits = len(wanted & keywords(text))
            if hits:
                scored.append((-hits / len(wanted), pid))
        found = [pid for _, pid in sorted(scored)]
        return len(found), found[:limit]
