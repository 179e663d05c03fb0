"""Text handling: documents (text, Markdown, HTML, PDF, EPUB, DOCX), paragraphs, words."""
from .document import DEFAULT_MAX_BYTES, Document, load_document
from .paragraphs import split_paragraphs, split_sentences, word_count

__all__ = ["DEFAULT_MAX_BYTES", "Document", "load_document", "split_paragraphs", "split_sentences", "word_count"]
