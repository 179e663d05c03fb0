"""HTML and XHTML to paragraphs with the standard library's parser.

What a reader sees is kept: headings, paragraphs, list items, quotations, table rows and preformatted text each
become a paragraph, separated by blank lines; line breaks (``<br>``) stay line breaks. What a reader does not
see or does not want read is dropped: ``script``, ``style``, ``nav``, ``head``, ``noscript``, ``template``,
``svg`` and elements marked ``hidden``.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

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
        if tag == "br":
            self._current.append("\n")
        elif tag in ("td", "th"):
            if "".join(self._current).strip():
                self._current.append(" | ")
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
        if tag in BLOCKS:
            self.flush()
            if tag == "pre" and self._pre:
                self._pre -= 1

    def handle_data(self, data: str) -> None:
        if self._skipping:
            return
        data = data.replace("\u00ad", "")
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
