"""Markdown kept as text, without the markup that hurts reading.

Removed: YAML front matter, images, link targets (a link becomes its text), link reference definitions, HTML
tags and comments, emphasis and inline-code markers, heading markers and setext underlines, blockquote markers,
horizontal rules and table separator rows. Kept: every word of the prose, list markers, table cells, and code
blocks as plain text (their fences removed, their lines untouched). Each heading becomes its own paragraph.
"""

from __future__ import annotations

import re

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
FRONT_MATTER_KEY = re.compile(r"^[A-Za-z0-9_-]+\s*:")
ATX_HEADING = re.compile(r"^ {0,3}#{1,6}(?:\s+|$)(.*?)(?:\s+#+)?\s*$")
SETEXT_UNDERLINE = re.compile(r"^ {0,3}(=+|-+)\s*$")
RULE = re.compile(r"^ {0,3}([-*_])(?:\s*\1){2,}\s*$")
TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")
REFERENCE_DEFINITION = re.compile(r"^ {0,3}\[[^\]]+\]:\s*\S+.*$")
BLOCKQUOTE = re.compile(r"^ {0,3}(?:>\s?)+")
COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
TARGET = r"(?:\((?:[^()\s]|\([^()]*\))*(?:\s+[\"'(][^\n]*?[\"')])?\)|\[[^\]]*\])"
IMAGE = re.compile(r"[ \t]*!\[[^\]]*\]" + TARGET)
LINK = re.compile(r"\[([^\]]+)\]" + TARGET)
AUTOLINK = re.compile(r"<((?:https?|ftp|mailto):[^>\s]+)>")
TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>")
STRONG = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
EMPHASIS_STAR = re.compile(r"(?<![\w*])\*(?=\S)(.+?)(?<=\S)\*(?![\w*])")
EMPHASIS_UNDERSCORE = re.compile(r"(?<![\w_])_(?=\S)(.+?)(?<=\S)_(?![\w_])")
STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|>~])")


def markdown_to_text(source: str) -> str:
    """The readable text of a Markdown document (see the module docstring for what is removed)."""
    lines = _without_front_matter(source.split("\n"))
    out: list[str] = []
    fence: str | None = None
    for line in lines:
        opened = FENCE.match(line)
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence) \
                    and not line.strip().strip(fence[0]):
                fence = None
                out.append("")
            else:
                out.append(line)
            continue
        if opened:
            fence = opened.group(1)
            out.append("")
            continue
        if REFERENCE_DEFINITION.match(line) or (TABLE_SEPARATOR.match(line) and "|" in line):
            continue
        previous = out[-1] if out else ""
        if SETEXT_UNDERLINE.match(line) and previous.strip() and not _is_list_item(previous):
            out[-1:] = ["", _inline(previous.strip()), ""]
            continue
        if RULE.match(line):
            out.append("")
            continue
        heading = ATX_HEADING.match(line)
        if heading:
            out.extend(["", _inline(heading.group(1)), ""])
            continue
        out.append(_inline(BLOCKQUOTE.sub("", line)))
    text = COMMENT.sub("", "\n".join(out))
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def _inline(line: str) -> str:
    """Inline markup removed from one line; code spans keep their content verbatim."""
    spans: list[str] = []

    def keep(kept: str) -> str:
        spans.append(kept)
        return f"\ue000{len(spans) - 1}\ue001"

    line = CODE_SPAN.sub(lambda m: keep(m.group(2).strip() or m.group(2)), line)
    line = ESCAPE.sub(lambda m: keep(m.group(1)), line)
    line = IMAGE.sub("", line)
    line = LINK.sub(r"\1", line)
    line = AUTOLINK.sub(r"\1", line)
    line = TAG.sub("", line)
    line = STRONG.sub(r"\2", line)
    line = STRIKE.sub(r"\1", line)
    line = EMPHASIS_STAR.sub(r"\1", line)
    line = EMPHASIS_UNDERSCORE.sub(r"\1", line)
    return re.sub("\ue000(\\d+)\ue001", lambda m: spans[int(m.group(1))], line)


def _without_front_matter(lines: list[str]) -> list[str]:
    """``lines`` without a leading ``---`` ... ``---`` block of ``key: value`` lines."""
    if not lines or lines[0].strip() != "---":
        return lines
    for end in range(1, min(len(lines), 200)):
        if lines[end].strip() in ("---", "..."):
            body = [line for line in lines[1:end] if line.strip()]
            if body and FRONT_MATTER_KEY.match(body[0]):
                return lines[end + 1:]
            return lines
    return lines


def _is_list_item(line: str) -> bool:
    return bool(re.match(r"^\s*(?:[-*+]|\d+[.)])\s+", line))
