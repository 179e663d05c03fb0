"""MemWalker's state: tree nodes, the memory tree, and the options with the paper's presets."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from ...declare import option
from ...errors import ConfigError
from ..base import StoredMemory
from ..options import ReaderOptions

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
    head: str = ""  # what a leaf's text starts with that is not its own: its table's title lines and header

    @property
    def is_leaf(self) -> bool:
        return not self.children

    def as_dict(self) -> dict[str, Any]:
        """What the store keeps: its fields, ``head`` only where a leaf carries one (the payloads of trees without
        one stay as they were)."""
        out = dict(self.__dict__)
        if not self.head:
            del out["head"]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TreeNode:
        return cls(**{**data, "children": tuple(data["children"])})


@dataclass(frozen=True)
class MemoryTree(StoredMemory):
    """The summary tree of one document, model and settings."""

    nodes: tuple[TreeNode, ...]  # by index
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

    def outline(self) -> list[str]:
        """Every node indented under its parent (size, summary size), then the root summary."""
        lines: list[str] = []

        def show(node: TreeNode, depth: int) -> None:
            kind = "leaf" if node.is_leaf else f"level {node.level}, {len(node.children)} children"
            squeeze = " (compressed)" if node.compressed else ""
            lines.append(f"{'  ' * depth}{node.id}  [{kind}] {node.tokens} tokens -> summary {node.summary_tokens}"
                         f"{squeeze}")
            for child in self.children(node):
                show(child, depth + 1)

        show(self.root, 0)
        return lines + ["", "root summary:", self.root.summary, ""]

    def as_json(self) -> dict[str, Any]:
        return {"nodes": [{k: v for k, v in n.as_dict().items() if k != "text"} for n in self.nodes]}

    def path(self, node_id: str) -> list[TreeNode]:
        """The nodes from the root down to ``node_id``, both included."""
        if node_id == ROOT:
            return [self.root]
        parts = node_id.split(".")
        return [self.root] + [self.node(".".join(parts[: i + 1])) for i in range(len(parts))]


OnExhausted = Literal["no-answer", "best-leaf"]


@dataclass(frozen=True)
class MemWalkerOptions(ReaderOptions):
    """MemWalker's settings; those marked ``memory`` shape the tree (its store key)."""

    owner = "MemWalker"
    # Paper §4.2: "We set the maximum number of nodes and segment size for QuALITY, SummScreenFD, and GovReport
    # respectively" -- the numbers did not survive in the stored PDF text. We use 8 / 1000 (QuALITY), 5 / 1000
    # (SummScreenFD) and 8 / 1200 (GovReport): within the third-party figures (segments 1000-1200 tokens,
    # 5-8 children) and the values of the arXiv text as we read it; see the README's MemWalker section.
    presets: ClassVar[dict[str, dict[str, Any]]] = {
        "quality": {"segment_tokens": 1000, "max_children": 8},
        "summscreen": {"segment_tokens": 1000, "max_children": 5},
        "govreport": {"segment_tokens": 1200, "max_children": 8},
    }

    preset: str = option("quality", "tree sizes of a paper dataset")
    segment_tokens: int = option(1000, "most tokens of a leaf segment (whole paragraphs packed)", memory=True,
                                 minimum=8)
    max_children: int = option(8, "the paper's maximum number of nodes grouped under a parent", memory=True,
                               minimum=2)
    node_tokens: int = option(500, "node size limit: longer concatenated summaries are compressed", memory=True,
                              minimum=8)
    tree: Literal["paper", "sections"] = option(
        "paper", "the tree: the paper's (segments summarised bottom-up) or the document's own sections as inner "
                 "nodes (its outline or headings; the paper's tree where it has none)", memory="changed")
    summaries: Literal["llm", "titles"] = option(
        "llm", "tree=sections: where a section's children do not fit the node limit, the LLM summarises them (llm), "
               "or its title and its subsections' titles stand for them (titles: no LLM call to build)",
        memory="changed")
    reasoning: bool = option(True, "triage asks for reasoning first (False: the paper's Table 3 ablation)")
    working_memory: bool = option(True, "carry the path's summaries into the leaf prompt (paper Fig. 3 ablation)")
    memory_tokens: int = option(1500, "working-memory budget, also cut to what the context window leaves",
                                minimum=0)
    max_steps: int = option(20, "navigation LLM calls per question before giving up", minimum=1)
    max_failures: int = option(3, "consecutive unparsable replies that end the search (the paper's 3)", minimum=1)
    reasoning_chars: int = option(300, "grammar bound on the reasoning line (constrained backends)", minimum=1)
    on_exhausted: OnExhausted = option(
        "no-answer", "when every path from the root was rejected, or two navigation calls are left: no-answer (the "
                     "paper) or best-leaf (pagemind: answer from the leaf the walk rated most promising, recorded as "
                     "a fallback)")
    guide: Literal["none", "bm25", "hybrid"] = option(
        "none", "pagemind: rank each node's children by how well the question matches the text beneath them (their "
                "best segment: BM25, or hybrid: BM25 and MiniLM mixed, as auto ranks a PDF's fragments) and show the "
                "first guide_k in that order, the next as those are rejected (none: the paper's triage over all "
                "children)")
    guide_k: int = option(3, "children a guided triage shows at a time", minimum=1)
    revert: Literal["parent", "best"] = option(
        "parent", "after a rejected leaf: back to its parent (the paper), or best (pagemind, guided walks only): "
                  "back up to the node above the best unread leaf, so the walk reads leaves in about the ranking's "
                  "order instead of finishing the rejected leaf's section first")
    layout: Literal["paper", "prefix-cache"] = option(
        "paper", "triage prompt layout: paper (the question first) or prefix-cache (pagemind: the summaries first, so "
                 "a server's prefix cache reuses the root's triage across questions)")
    max_tokens: int = option(512, "most tokens of a navigation reply when unconstrained", minimum=1)
    budget: int | None = option(None, "most tokens of text shown per call (summaries, or segment + working "
                                      "memory)", minimum=1)

    def check(self) -> None:
        if self.revert == "best" and self.guide == "none":
            raise ConfigError("revert=best follows the guide's ranking: give guide=bm25 or guide=hybrid too")
        if self.budget is not None and self.budget < self.segment_tokens:
            raise ConfigError(f"a budget of {self.budget} tokens cannot show a {self.segment_tokens}-token segment; "
                              "lower segment_tokens (--segment-tokens) to at most the budget")


PRESETS = MemWalkerOptions.presets
