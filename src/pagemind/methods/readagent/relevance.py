"""Which gists matter most to a question, when not all of them fit (``overflow=retrieve``, the hierarchy's fallback)."""

from __future__ import annotations

from ...answering.question import Question


def relevance_order(texts: list[str], question: Question) -> list[int]:
    """Positions of ``texts``, most relevant to the question first: BM25 re-scored with FragRel's context
    relation, so a text's neighbours count."""
    from ...retrieval.fragments import Fragment
    from ...retrieval.index import FragmentIndex, RetrievalSettings

    index = FragmentIndex([Fragment(i, text, i) for i, text in enumerate(texts)],
                          RetrievalSettings(scorer="bm25", fragrel=True, relation="context"))
    query = question.text + ("\n" + "\n".join(question.options) if question.is_choice else "")
    return [int(i) for i in index.rank(query).order]
