"""MemWalker's tree on the document's own structure (``tree=sections``), as PageIndex builds its tree.

Inner nodes are the document's sections (a PDF's outline, the markup's headings or the text's: ``Document.sections``),
each node's children its own text's leaves (paragraphs packed into segments of ``segment_tokens``, the paper's
segmentation) then its subsections, in reading order; text before the first section hangs under the root. A node
with more than ``max_children`` children gets unnamed groups between, balanced as the paper's tree groups leaves.

What a parent's triage shows of each child (its ``summary``) is written without an LLM where it can be:

* a leaf shows its section path and its text's beginning (``node_limit / max_children`` tokens, so a triage of
  ``max_children`` leaves fits the node limit);
* a leaf's text keeps the document's table rows as rows, one a line (a statement's "| Net earnings | 2,210.8 |
  1,786.2 |" on its own line, never run into the next row), and a leaf starting inside a table carries the table's
  title lines and header above its rows (``head``), as a RAG fragment does — so the rows it holds keep their
  columns' periods;
* a section shows its title, then its children's summaries when they fit the node limit; only a section whose
  children do not fit needs a summary: ``summaries=llm`` asks the model for one there (the paper's non-leaf
  prompt: the one place this tree calls the LLM), ``summaries=titles`` shows its title and its subsections'
  titles instead — no LLM call at all, as PageIndex's flash index.

Navigation is the paper's (triage, revert, working memory) over this tree. A document without sections is refused
with ``tree=sections`` (an LLM-built tree is never started unasked): ``tree=paper`` builds the paper's.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from ...citations import section_label
from ...llm.client import LLM
from ...text import Document
from ...text.sections import path_at
from ..base import Build, MemoryWriter
from .build import clean_summary
from .memory import ROOT, MemWalkerOptions, TreeNode, child_id
from .requests import nonleaf_summary_request
from .segment import SEPARATOR, cut_to_tokens, paragraphs


@dataclass
class Part:
    """A planned node: a section (``title``), a group of a crowded section's children (no title), or a leaf
    (``text``)."""

    title: str = ""
    text: str = ""
    path: str = ""  # the section path of a leaf's text
    head: str = ""  # the title lines and header of the table a leaf starts inside (not its own text)
    children: list[Part] = field(default_factory=list)

    @property
    def is_leaf(self) -> bool:
        return not self.children and not self.title


def plan_sections(document: Document, opts: MemWalkerOptions, count: Callable[[str], int]) -> Part:
    """The tree's shape: sections, their own text's segments, groups where a node has too many children."""
    sections = document.sections

    def leaves(lo: int, hi: int) -> list[Part]:
        text = document.text[lo:hi].strip()
        if not text:
            return []
        label = section_label(path_at(sections, lo)) or ""
        return [Part(text=s, path=label, head=head)
                for s, head in segment_rows(document.text, lo, hi, opts.segment_tokens, count)]

    def node(title: str, lo: int, hi: int, i: int) -> tuple[Part, int]:
        """The part spanning ``[lo, hi)``: its own text's leaves and the sections starting in it (from ``i``)."""
        part, cursor = Part(title=title), lo
        while i < len(sections) and sections[i].start < hi:
            s = sections[i]
            part.children += leaves(cursor, s.start)
            child, i = node(s.title, s.start, min(s.end, hi), i + 1)
            part.children.append(child)
            cursor = min(s.end, hi)
        part.children += leaves(cursor, hi)
        return part, i

    root, _ = node(document.name, 0, len(document.text), 0)
    while len(root.children) == 1 and not root.children[0].is_leaf:  # a document under one title: that title
        root = root.children[0]
    _collapse(root)
    _group(root, opts.max_children)
    return root


def _collapse(part: Part) -> None:
    """A node with one child is that child (a section holding one segment is its leaf, which names the section's
    path): no triage between one choice."""
    for i, child in enumerate(part.children):
        _collapse(child)
        while len(child.children) == 1:
            child = child.children[0]
        part.children[i] = child


def _group(part: Part, most: int) -> None:
    """Balanced groups under a node with more than ``most`` children (9 children, at most 8: 5 + 4), recursively."""
    for child in part.children:
        _group(child, most)
    while len(part.children) > most:
        groups = -(-len(part.children) // most)
        q, r = divmod(len(part.children), groups)
        sizes = [q + 1] * r + [q] * (groups - r)
        made, start = [], 0
        for size in sizes:
            members = part.children[start:start + size]
            start += size
            made.append(members[0] if size == 1 else Part(children=members))
        part.children = made


def segment_rows(text: str, lo: int, hi: int, segment_tokens: int,
                 count: Callable[[str], int]) -> list[tuple[str, str]]:
    """The leaves of ``text[lo:hi]``, each with the head it carries: the paper's segments (whole paragraphs packed
    into ``segment_tokens``) where the text is prose; a block holding Markdown table rows is packed line by line, its
    lines kept — never ending a leaf between a table's title lines, header, rule and first
    :data:`~pagemind.retrieval.fragments.TABLE_HEAD_ROWS` rows (as RAG's windows do) — and a leaf that starts on a row
    further down carries the table's title lines and header (:func:`~pagemind.retrieval.fragments.carried_head`;
    counted in its tokens; the header alone where the whole head would take over half a leaf, none over that)."""
    from ...retrieval.fragments import HEAD_LINES, carried_head, header_lines, title_line
    from ...text.paragraphs import BLANK_LINE

    blocks, start = [], lo
    for m in BLANK_LINE.finditer(text, lo, hi):
        blocks.append((start, m.start()))
        start = m.end()
    blocks.append((start, hi))
    units: list[tuple[str, int, int, bool]] = []  # (text, tokens, offset of its first row or -1, opens a block)
    prose: list[str] = []

    def flush() -> None:  # the prose since the last table, as segment_text reads it (a block's lines joined)
        run = prose if len(prose) > 1 else [" ".join(line.strip() for line in b.split("\n") if line.strip())
                                            for b in prose]
        units.extend((piece, n, -1, True) for piece, n in paragraphs("\n\n".join(run), segment_tokens, count))
        prose.clear()

    for b0, b1 in blocks:
        block = text[b0:b1]
        lines = block.split("\n")
        if not any(line.startswith("|") for line in lines):
            prose += [block] if block.strip() else []
            continue
        flush()
        starts = list(itertools.accumulate((len(x) + 1 for x in lines[:-1]), initial=b0))  # each line's offset
        glued = [False] * len(lines)  # a line kept with the next one
        for k, past in header_lines(lines):  # a header: its title lines, it, its rule and first rows together
            top = k
            while top > 0 and k - top < HEAD_LINES and title_line(lines[top - 1]):
                top -= 1
            for j in range(top, past - 1):
                glued[j] = True
        first, at = True, -1
        group: list[str] = []  # lines glued together: one unit
        for k, line in enumerate(lines):
            if not line.strip():
                continue
            if group or glued[k]:
                group.append(line.strip())
                at = at if at >= 0 or not line.startswith("|") else starts[k]
                if not glued[k]:
                    units.append(_glued(group, at, first, count))
                    group, at, first = [], -1, False
                continue
            n = count(line.strip())
            if line.startswith("|") or n <= segment_tokens:  # a row is never cut
                units.append((line.strip(), n, starts[k] if line.startswith("|") else -1, first))
            else:  # a long line of prose beside a table: cut as the paper's segments cut a paragraph
                units.extend((piece, m, -1, first) for piece, m in paragraphs(line, segment_tokens, count))
            first = False
        if group:
            units.append(_glued(group, at, first, count))
    flush()
    sep = count(SEPARATOR)
    out: list[tuple[str, str]] = []
    current: list[str] = []
    head, size = "", 0
    for unit, n, at, opens in units:
        if current and size + sep + n > segment_tokens:
            out.append(("".join(current), head))
            current = []
        if not current:
            head = carried_head(text, at) if at >= 0 else ""
            carried = count(head) if head else 0
            if carried > segment_tokens // 2:  # the header and rule alone, or nothing
                head = "\n".join(head.split("\n")[-3:])
                carried = count(head)
                head, carried = (head, carried) if carried <= segment_tokens // 2 else ("", 0)
            size = carried + n
            current.append(unit)
        else:
            size += sep + n
            current.append((SEPARATOR if opens else "\n") + unit)
    if current:
        out.append(("".join(current), head))
    return out


def _glued(lines: list[str], at: int, first: bool, count: Callable[[str], int]) -> tuple[str, int, int, bool]:
    """Lines kept together (a table's title lines, header, rule and first rows) as one unit of :func:`segment_rows`."""
    joined = "\n".join(lines)
    return joined, count(joined), at, first


def leaf_summary(path: str, preview: str) -> str:
    """What a leaf of a tree of sections shows in triage: its section path in brackets, then its text's beginning."""
    return f"[{path}] {preview}" if path else preview


def leaf_path(summary: str) -> str:
    """The section path a leaf's summary names (:func:`leaf_summary`; a path is a citation's ``§A › B``), or ""."""
    if not summary.startswith("[§"):
        return ""
    end = summary.find("] ")
    return summary[1:end] if end > 0 else ""


def build_section_tree(document: Document, writer: MemoryWriter, build: Build, llm: LLM, opts: MemWalkerOptions,
                       limit: int) -> None:
    """The tree of ``document``'s sections (see the module), written to ``writer``."""
    root = plan_sections(document, opts, llm.count_tokens)
    preview = max(8, limit // opts.max_children)
    nodes: list[TreeNode] = []
    leaves: list[TreeNode] = []
    inner: list[TreeNode] = []
    calls = [0]

    def make(part: Part, node_id: str) -> TreeNode:
        if part.is_leaf:
            summary = leaf_summary(part.path, cut_to_tokens(part.text, preview, llm.count_tokens))
            text = part.head + part.text
            node = TreeNode(node_id, len(leaves), 0, (), text, summary, llm.count_tokens(text),
                            llm.count_tokens(summary), head=part.head)
            leaves.append(node)
            return node
        children = [make(c, child_id(node_id, k)) for k, c in enumerate(part.children)]
        text = SEPARATOR.join(c.summary for c in children)
        head = part.title or "(part)"
        summary, compressed = f"{head}: {text}", False
        if llm.count_tokens(summary) > limit:
            if opts.summaries == "llm":
                response, event = llm.complete(nonleaf_summary_request(text, limit), build.trace)
                made = clean_summary(response.text) or cut_to_tokens(text, limit, llm.count_tokens)
                build.trace.decide(event, f"summary of section node {node_id}")
                summary, compressed = f"{head}: {made}", True
                calls[0] += 1
            else:  # titles only: the section's title and what it holds, no LLM call
                titles = [p.title for p in part.children if p.title] or [f"{len(part.children)} parts"]
                summary = cut_to_tokens(f"{head} (contains: {'; '.join(titles)})", limit, llm.count_tokens)
            build.phase("building the tree", len(inner) + 1, 0, "node")
        node = TreeNode(node_id, -1, 1 + max(c.level for c in children), tuple(c.id for c in children), text,
                        summary, llm.count_tokens(text), llm.count_tokens(summary), compressed)
        inner.append(node)
        return node

    top = make(root, ROOT)
    if top.is_leaf:  # a document that is one segment: the root is that leaf
        nodes = [TreeNode(ROOT, 0, 0, (), top.text, top.summary, top.tokens, top.summary_tokens, head=top.head)]
    else:
        ordered = sorted(inner, key=lambda n: n.level)
        nodes = leaves + [replace(n, index=len(leaves) + k) for k, n in enumerate(ordered)]
    writer.put_many("node", [(n.index, n.as_dict()) for n in nodes])


__all__ = ["build_section_tree", "plan_sections"]
