"""HTML and XHTML to paragraphs with the standard library's parser.

What a reader sees is kept: headings, paragraphs, list items, quotations and preformatted text each become a
paragraph, separated by blank lines; a table becomes one Markdown table (its caption above it, a cell spanning
columns followed by empty ones, so each value stays in its column; a table inside a cell is that cell's text);
line breaks (``<br>``) stay line breaks. What a reader does not
see or does not want read is dropped: ``script``, ``style``, ``nav``, ``head``, ``noscript``, ``template``,
``svg`` and elements marked ``hidden``.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from .common import markdown_table

SKIPPED = frozenset({"script", "style", "nav", "head", "noscript", "template", "svg", "iframe", "object"})
BLOCKS = frozenset({
    "address", "article", "aside", "blockquote", "body", "caption", "center", "dd", "details", "div", "dl", "dt",
    "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr",
    "html", "legend", "li", "main", "ol", "p", "pre", "section", "summary", "table", "tbody", "thead", "tfoot",
    "tr", "ul",
})
VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
                  "track", "wbr"})
SPACES = re.compile(r"\s+")


def html_to_text(markup: str) -> str:
    """The visible text of an HTML page: one paragraph per block element, blank lines between."""
    return "\n\n".join(html_paragraphs(markup))


def html_paragraphs(markup: str) -> list[str]:
    """The visible paragraphs of an HTML page, in order."""
    parser = _Paragraphs()
    parser.feed(markup)
    parser.close()
    parser.flush()
    return parser.paragraphs


class _Paragraphs(HTMLParser):
    """Collects text into paragraphs, flushing at each block boundary."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.paragraphs: list[str] = []
        self._current: list[str] = []
        self._skipping: list[str] = []
        self._pre = 0
        self._tables: list[_Table] = []  # the tables open now, innermost last

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "body":  # an unclosed <head> ends where the body starts
            self._skipping = [t for t in self._skipping if t != "head"]
        if self._skipping:
            if tag not in VOID:
                self._skipping.append(tag)
            return
        if tag in SKIPPED or (tag not in VOID and any(name == "hidden" for name, _ in attrs)):
            self._skipping.append(tag)
            return
        if tag == "table":
            if self._tables:
                self._tables[-1].text(" ")
            else:
                self.flush()
            self._tables.append(_Table())
        elif self._tables:
            self._tables[-1].start(tag, attrs)
        elif tag == "br":
            self._current.append("\n")
        elif tag in BLOCKS:
            self.flush()
            if tag == "pre":
                self._pre += 1

    def handle_endtag(self, tag: str) -> None:
        if self._skipping:
            if tag in self._skipping:
                while self._skipping and self._skipping.pop() != tag:
                    pass
            return
        if tag == "table" and self._tables:
            table = self._tables.pop()
            if self._tables:  # a table inside a cell: its words are the cell's
                self._tables[-1].text(" " + table.words())
            elif rendered := table.render():
                self.paragraphs.append(rendered)
            return
        if self._tables:
            self._tables[-1].end(tag)
            return
        if tag in BLOCKS:
            self.flush()
            if tag == "pre" and self._pre:
                self._pre -= 1

    def handle_data(self, data: str) -> None:
        if self._skipping:
            return
        data = data.replace("\u00ad", "")
        if self._tables:
            self._tables[-1].text(data)
            return
        self._current.append(data if self._pre else SPACES.sub(" ", data))

    def flush(self) -> None:
        text = "".join(self._current)
        self._current = []
        if self._pre:
            lines = [line.rstrip() for line in text.split("\n")]
            while lines and not lines[0].strip():
                lines.pop(0)
        else:
            lines = [line.strip() for line in text.split("\n")]
            lines = [line for line in lines if line]
        block = "\n".join(lines).rstrip()
        if block.strip():
            self.paragraphs.append(block)


class _Table:
    """One HTML table as it is parsed: its caption and rows of cells."""

    def __init__(self) -> None:
        self.rows: list[list[str]] = []
        self.row: list[str] | None = None
        self.cell: list[str] | None = None
        self.span = 1
        self.caption: list[str] | None = None
        self.captions: list[str] = []

    def start(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tr":
            self.close_row()
            self.row = []
        elif tag in ("td", "th"):
            self.close_cell()
            if self.row is None:
                self.row = []
            self.cell = []
            span = dict(attrs).get("colspan") or "1"
            self.span = max(1, min(50, int(span))) if span.isdigit() else 1
        elif tag == "caption":
            self.caption = []
        elif tag == "br" or tag in BLOCKS:
            self.text(" ")

    def end(self, tag: str) -> None:
        if tag in ("td", "th"):
            self.close_cell()
        elif tag == "tr":
            self.close_row()
        elif tag == "caption" and self.caption is not None:
            self.captions.append("".join(self.caption))
            self.caption = None

    def text(self, data: str) -> None:
        if self.caption is not None:
            self.caption.append(data)
        elif self.cell is not None:
            self.cell.append(data)

    def close_cell(self) -> None:
        if self.cell is not None and self.row is not None:
            self.row += [" ".join("".join(self.cell).split())] + [""] * (self.span - 1)
        self.cell, self.span = None, 1

    def close_row(self) -> None:
        self.close_cell()
        if self.row:
            self.rows.append(self.row)
        self.row = None

    def render(self) -> str:
        self.close_row()
        return markdown_table(self.rows, " ".join(self.captions))

    def words(self) -> str:
        self.close_row()
        return " ".join(" ".join(c for row in self.rows for c in row if c).split())
