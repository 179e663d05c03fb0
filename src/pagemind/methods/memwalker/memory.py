"""MemWalker's state: tree nodes, the memory tree, and the options with the paper's presets."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ...errors import ConfigError
from ..options import from_preset

ROOT = "root"


def child_id(parent: str, number: int) -> str:
    """The path id of a parent's child: ``root`` -> ``2``, ``2`` -> ``2.1``."""
    return str(number) if parent == ROOT else f"{parent}.{number}"


@dataclass(frozen=True)
class TreeNode:
    """One node. Leaf: ``text`` is a segment, ``summary`` its LLM summary. Non-leaf: ``text`` is the
    concatenation of the children's summaries, ``summary`` that text compressed by the LLM when it exceeded
    the node size limit, else the same text (it is what the parent's triage prompt shows)."""

    id: str  # path: root, 2, 2.1 (the child numbers the triage actions use)
    index: int  # stable integer: leaves 0..n-1 in reading order, then parents bottom-up; the store's idx
    level: int  # 0 for leaves, 1 + the highest child level otherwise
    children: tuple[str, ...]
    text: str
    summary: str
    tokens: int  # of text
    summary_tokens: int
    compressed: bool = False  # True when the non-leaf prompt shortened the concatenation

    @property
    def is_leaf(self) -> bool:
        return not self.children

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TreeNode":
        return cls(**{**data, "children": tuple(data["children"])})


@dataclass(frozen=True)
class MemoryTree:
    """The summary tree of one document, model and settings."""

    key: str
    document_id: str
    document_words: int
    nodes: tuple[TreeNode, ...]  # by index
    settings: dict[str, Any]
    model: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_id", {n.id: n for n in self.nodes})

    def node(self, node_id: str) -> TreeNode:
        return self._by_id[node_id]  # type: ignore[attr-defined]

    @property
    def root(self) -> TreeNode:
        return self.node(ROOT)

    @property
    def leaves(self) -> tuple[TreeNode, ...]:
        return tuple(n for n in self.nodes if n.is_leaf)

    @property
    def document_tokens(self) -> int:
        return sum(n.tokens for n in self.leaves)

    @property
    def depth(self) -> int:
        """Edges on the longest root-to-leaf path (a one-segment text has depth 0)."""
        return max(0 if n.id == ROOT else n.id.count(".") + 1 for n in self.nodes)

    def children(self, node: TreeNode) -> list[TreeNode]:
        return [self.node(c) for c in node.children]

    def path(self, node_id: str) -> list[TreeNode]:
        """The nodes from the root down to ``node_id``, both included."""
        if node_id == ROOT:
            return [self.root]
        parts = node_id.split(".")
        return [self.root] + [self.node(".".join(parts[: i + 1])) for i in range(len(parts))]


@dataclass(frozen=True)
class MemWalkerOptions:
    """Settings. Those that change the tree are in :meth:`memory_settings` (part of its key)."""

    preset: str = "quality"
    segment_tokens: int = 1000  # most tokens of a leaf segment (whole paragraphs packed)
    max_children: int = 8  # the paper's "maximum number of nodes" grouped under a parent
    node_tokens: int = 500  # node size limit: longer concatenated summaries are compressed; summary reply cap
    reasoning: bool = True  # triage asks for reasoning first (paper Table 3 ablation when False)
    working_memory: bool = True  # carry the path's summaries into the leaf prompt (paper Fig. 3 ablation)
    memory_tokens: int = 1500  # working-memory budget, also cut to what the context window leaves
    max_steps: int = 20  # navigation LLM calls per question before giving up with "no answer"
    max_failures: int = 3  # consecutive unparsable replies that end the search (the paper's 3)
    reasoning_chars: int = 300  # grammar bound on the reasoning line (constrained backends only)
    constrained: bool = True  # enforce reply formats by grammar where the backend can
    max_tokens: int = 512  # per navigation reply when unconstrained
    budget: int | None = None  # tokens of text shown per call (summaries, or segment + working memory)

    def memory_settings(self) -> dict[str, Any]:
        keys = ("segment_tokens", "max_children", "node_tokens")
        d = asdict(self)
        return {k: d[k] for k in keys}

    @classmethod
    def from_preset(cls, preset: str = "quality", **overrides: Any) -> "MemWalkerOptions":
        opts = from_preset(cls, "MemWalker", PRESETS, preset, overrides)
        if opts.max_children < 2:
            raise ConfigError("max_children must be at least 2")
        if opts.segment_tokens < 8 or opts.node_tokens < 8:
            raise ConfigError("segment_tokens and node_tokens must be at least 8")
        if opts.max_steps < 1 or opts.max_failures < 1:
            raise ConfigError("max_steps and max_failures must be at least 1")
        if opts.budget is not None and opts.budget < opts.segment_tokens:
            raise ConfigError(f"a budget of {opts.budget} tokens cannot show a {opts.segment_tokens}-token segment; "
                              "lower segment_tokens (--segment-tokens) to at most the budget")
        return opts


# Paper §4.2: "We set the maximum number of nodes and segment size for QuALITY, SummScreenFD, and GovReport
# respectively" -- the numbers did not survive in the stored PDF text. We use 8 / 1000 (QuALITY), 5 / 1000
# (SummScreenFD) and 8 / 1200 (GovReport): within the third-party figures (segments 1000-1200 tokens,
# 5-8 children) and the values of the arXiv text as we read it; see the README's MemWalker section.
PRESETS: dict[str, dict[str, Any]] = {
    "quality": {"segment_tokens": 1000, "max_children": 8},
    "summscreen": {"segment_tokens": 1000, "max_children": 5},
    "govreport": {"segment_tokens": 1200, "max_children": 8},
}
