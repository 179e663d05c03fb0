"""Building (and resuming) the memory tree: segments, leaf summaries, then parents level by level.

The tree's shape depends only on the number of segments and ``max_children``, so node ids and store indices
are known before any LLM call; every node is written as it finishes and a killed build redoes only the rest.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace

from ...errors import ConfigError
from ...llm.client import LLM
from ...llm.usage import Trace
from ...text import Document
from ..base import Build, MemoryWriter
from .memory import ROOT, MemWalkerOptions, TreeNode, child_id
from .requests import leaf_summary_request, nonleaf_summary_request
from .segment import SEPARATOR, cut_to_tokens, segment_text

TRIAGE_RESERVE = 1024  # tokens kept free beside max_children summaries: instructions, question, options, reply


@dataclass
class Slot:
    """A planned node: its place in the tree before its text exists."""

    index: int
    level: int
    children: list[Slot] = field(default_factory=list)
    id: str = ""


def node_limit(opts: MemWalkerOptions, context_window: int) -> int:
    """The node size limit: ``node_tokens``, lowered so a triage prompt with ``max_children`` summaries fits."""
    return max(8, min(opts.node_tokens, (context_window - TRIAGE_RESERVE) // opts.max_children))


def check_window(opts: MemWalkerOptions, llm: LLM) -> None:
    """A segment plus its summary reply must fit the model's window."""
    need = opts.segment_tokens + node_limit(opts, llm.context_window) + 64
    if need > llm.context_window:
        raise ConfigError(f"MemWalker segments of {opts.segment_tokens} tokens do not fit {llm.model_id}'s "
                          f"{llm.context_window}-token window with their summaries; lower --segment-tokens")


def plan_tree(n_leaves: int, max_children: int) -> list[Slot]:
    """Slots by index: leaves first, then parents bottom-up. Up to ``max_children`` consecutive nodes share a
    parent; groups are balanced (9 nodes, at most 8 a parent -> 5 + 4) and a group of one moves up unwrapped."""
    slots = [Slot(i, 0) for i in range(n_leaves)]
    level = list(slots)
    while len(level) > 1:
        groups = -(-len(level) // max_children)
        q, r = divmod(len(level), groups)
        sizes = [q + 1] * r + [q] * (groups - r)
        nxt: list[Slot] = []
        start = 0
        for size in sizes:
            members = level[start:start + size]
            start += size
            if size == 1:
                nxt.append(members[0])
                continue
            parent = Slot(len(slots), 1 + max(m.level for m in members), members)
            slots.append(parent)
            nxt.append(parent)
        level = nxt
    _name(level[0], ROOT)
    return slots


def _name(slot: Slot, node_id: str) -> None:
    slot.id = node_id
    for i, child in enumerate(slot.children):
        _name(child, child_id(node_id, i))


_PREAMBLE = re.compile(
    r"^\s*\**\s*(?:here(?:'s| is)|sure[,!]?)[^\n]{0,80}(?:summary|passage)[^\n]{0,40}[:：]\s*\**\s*\n", re.IGNORECASE)


def clean_summary(reply: str) -> str:
    """Strip a chatty first line ("Here is a summary of the text:")."""
    return _PREAMBLE.sub("", reply.strip(), count=1).strip()


def build_tree(document: Document, writer: MemoryWriter, build: Build, llm: LLM, opts: MemWalkerOptions,
               limit: int) -> None:
    """The memory tree of ``document``, resuming from the nodes ``writer`` already holds."""
    done = {n.index: n for n in (TreeNode.from_dict(d) for d in writer.items("node"))}
    segments = segment_text(document.text, opts.segment_tokens, llm.count_tokens)
    slots = plan_tree(len(segments), opts.max_children)
    leaves = [s for s in slots if s.level == 0]
    # progress counts the words of the segments summarised (a running total; all are known before any call)
    seg_words = [len(t.split()) for t in segments]
    words = [sum(seg_words[s.index] for s in leaves if s.index in done)]
    build.total = sum(seg_words)

    def leaf(slot: Slot) -> TreeNode:
        node = _leaf(slot, segments[slot.index], limit, llm, build.trace)
        writer.put("node", node.index, node.as_dict())  # stored as each finishes: a kill loses little
        return node

    unwritten: list[TreeNode] = []  # parents made without an LLM call: written once per level, in one transaction

    def parent(slot: Slot) -> TreeNode:
        node = _parent(slot, [done[c.index] for c in slot.children], limit, llm, build.trace)
        if node.compressed:
            writer.put("node", node.index, node.as_dict())
        else:
            unwritten.append(node)
        return node

    def leaf_done(node: TreeNode) -> None:
        words[0] += seg_words[node.index]
        build.report(words[0], "summarising segments")

    _run([s for s in leaves if s.index not in done], leaf, llm.concurrency, done, leaf_done)
    parents = [s for s in slots if s.level > 0]
    built = [sum(s.index in done for s in parents)]  # a running count

    def parent_done(node: TreeNode) -> None:
        built[0] += 1
        build.phase("building the tree", built[0], len(parents), "node")

    for level in range(1, max(s.level for s in slots) + 1):
        todo = [s for s in slots if s.level == level and s.index not in done]
        try:
            _run(todo, parent, llm.concurrency, done, parent_done)  # one level's summaries are independent
        finally:
            writer.put_many("node", [(n.index, n.as_dict()) for n in unwritten])
            unwritten.clear()


def compose_trees(names: list[str], trees: list[list[TreeNode]], limit: int, max_children: int, llm: LLM,
                  trace: Trace) -> list[TreeNode]:
    """One tree over several documents' trees (a library): their roots grouped under library-level parents as
    leaves are grouped in one tree (at most ``max_children`` a parent; a parent compressed by the LLM only when its
    children's summaries exceed the node limit, as in a document's tree). Each document's root summary starts with
    its name. Node ids are paths from the new root; indices: every leaf in document order, then the parents."""
    slots = plan_tree(len(trees), max_children)
    tops = [s for s in slots if s.level == 0]  # a document's place (its root) in the library tree
    leaves: list[TreeNode] = []
    inner: list[TreeNode] = []
    for name, slot, tree in zip(names, tops, trees):
        first = len(leaves)
        n_leaves = sum(n.is_leaf for n in tree)

        def moved(node_id: str, at: str = slot.id) -> str:
            if node_id == ROOT:
                return at
            return node_id if at == ROOT else f"{at}.{node_id}"

        for node in sorted(tree, key=lambda n: n.index):
            index = first + node.index if node.is_leaf else -1  # inner indices are given below
            renamed = replace(node, id=moved(node.id), index=index, children=tuple(moved(c) for c in node.children))
            if node.id == ROOT and len(trees) > 1:  # the library's triage tells documents apart by name
                renamed = replace(renamed, summary=f"[{name}] {node.summary}", summary_tokens=node.summary_tokens + 4)
            (leaves if node.is_leaf else inner).append(renamed)
        assert len(leaves) == first + n_leaves
    nodes = {n.id: n for n in leaves + inner}
    for slot in sorted((s for s in slots if s.level > 0), key=lambda s: s.index):
        children = [nodes[c.id] for c in slot.children]
        slot.level = 1 + max(c.level for c in children)
        made = _parent(slot, children, limit, llm, trace)
        nodes[made.id] = made
        inner.append(made)
    ordered = sorted(inner, key=lambda n: n.level)  # parents after every leaf, each after its children
    return leaves + [replace(n, index=len(leaves) + k) for k, n in enumerate(ordered)]


def _run(slots: list[Slot], work: Callable[[Slot], TreeNode], workers: int, done: dict[int, TreeNode],
         on_done: Callable[[TreeNode], None] | None = None) -> None:
    """Run ``work`` over independent slots, at most ``workers`` at once; nothing new starts after a failure."""
    def finish(nodes: Iterable[TreeNode]) -> None:
        for node in nodes:
            done[node.index] = node
            if on_done:
                on_done(node)

    if workers <= 1 or len(slots) <= 1:
        finish(work(s) for s in slots)
        return
    pool = ThreadPoolExecutor(max_workers=min(workers, len(slots)))
    try:
        futures = [pool.submit(work, s) for s in slots]
        finish(f.result() for f in as_completed(futures))
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _leaf(slot: Slot, text: str, limit: int, llm: LLM, trace: Trace) -> TreeNode:
    response, event = llm.complete(leaf_summary_request(text, limit), trace)
    summary = clean_summary(response.text)
    if not summary:
        summary = cut_to_tokens(text, limit, llm.count_tokens)
        trace.decide(event, f"empty summary of node {slot.id}: its text's beginning used")
    else:
        trace.decide(event, f"summary of leaf {slot.id}")
    return TreeNode(slot.id, slot.index, 0, (), text, summary, llm.count_tokens(text), llm.count_tokens(summary))


def _parent(slot: Slot, children: list[TreeNode], limit: int, llm: LLM, trace: Trace) -> TreeNode:
    """Content = the children's summaries concatenated; compressed only when it exceeds the node limit."""
    text = SEPARATOR.join(c.summary for c in children)
    tokens = llm.count_tokens(text)
    summary, compressed = text, False
    if tokens > limit:
        response, event = llm.complete(nonleaf_summary_request(text, limit), trace)
        summary, compressed = clean_summary(response.text), True
        if not summary:
            summary = cut_to_tokens(text, limit, llm.count_tokens)
            trace.decide(event, f"empty compression of node {slot.id}: the concatenation's beginning used")
        else:
            trace.decide(event, f"compressed node {slot.id} ({tokens} tokens)")
    return TreeNode(slot.id, slot.index, slot.level, tuple(c.id for c in children), text, summary, tokens,
                    llm.count_tokens(summary), compressed)
