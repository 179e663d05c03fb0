"""The service's shapes, written once for HTTP and MCP: request bodies with their limits, the JSON of documents,
runs, steps and agents, and the one error body.

Every text a client sends has a declared maximum and every number a range a 64-bit store column holds, so a
request that could not be stored or could not fit is refused at the edge (422, or 413 for a body over its size)
instead of reaching the store or the model. The MCP tools validate their arguments with these same models.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .. import steps
from ..library import NAME

# the limits are declared once for every surface (:mod:`pagemind.limits`); here they enter the OpenAPI and MCP
# tool schemas
from ..limits import (
    AGENT_NAME,
    AGENT_NAME_RULE,
    MAX_BLOCK,
    MAX_BUDGET,
    MAX_DESCRIPTION,
    MAX_ID,
    MAX_JSON_INT,
    MAX_MESSAGE,
    MAX_METHOD,
    MAX_NAME,
    MAX_OPTION,
    MAX_OPTIONS,
    MAX_PASSAGE,
    MAX_QUERY,
    MAX_QUESTION,
    PASSAGE_WORDS,
)
from ..methods.registry import options_schema
from ..runs import KINDS

if TYPE_CHECKING:
    from ..agent.archive import Added
    from ..agent.documents import LoadedDocument
    from ..agent.memory import Block, BlockVersion, Passage, SearchPage
    from ..answering.question import Answer
    from ..library import Change
    from ..methods.base import Method
    from ..store import DocumentRow, LibraryDocumentRow, LibraryRow, MemoryRecord, RunRow, StepRow
    from ..text import Document
    from .views import AgentSummary, AgentView, CitedPlace, Me, MemoryUnits, ModelInfo, Unit

DOCUMENT_ID = r"^[A-Za-z0-9_.:-]{1,128}$"
RUN_ID = r"^[A-Za-z0-9_.:-]{1,128}$"
MEMORY_KEY = r"^[A-Za-z0-9_.:-]{1,256}$"
RUN_KINDS = KINDS
RUN_STATUSES = ("queued", "running", "done", "failed", "cancelled")

# the text encodings an upload may name (multipart ``encoding``; what the schema enumerates, with their aliases)
ENCODINGS = ("utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "ascii", "latin-1", "iso-8859-15", "cp1252",
             "cp1251", "cp1250", "koi8-r", "mac-roman", "shift_jis", "euc-jp", "gb18030", "big5", "euc-kr")

Id = Annotated[int, Field(ge=0, le=MAX_ID)]
Seq = Annotated[int, Field(ge=-1, le=MAX_ID)]
Offset = Annotated[int, Field(ge=0, le=MAX_ID)]


def check_encoding(name: str | None) -> None:
    """Refuse (:class:`InputError`) an upload encoding that is not one of :data:`ENCODINGS` (or an alias)."""
    import codecs

    from ..errors import InputError

    if name is None:
        return
    try:
        known = codecs.lookup(name).name in {codecs.lookup(e).name for e in ENCODINGS}
    except LookupError:
        known = False
    if not known:
        raise InputError(f"encoding {name[:64]!r}: use one of {', '.join(ENCODINGS)}")


def _stripped(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value


class Shape(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --- request bodies -----------------------------------------------------------------------------------------------
class TextDocument(Shape):
    name: str = Field("text.txt", min_length=1, max_length=MAX_NAME, pattern=r"^[^\x00]*$",
                      description="a name for the document")
    text: str = Field(min_length=1, description="the document's text (at most the server's max_bytes, UTF-8)")


def per_method(field: str) -> Callable[[dict[str, Any]], None]:
    """The HTTP schema of a request naming a ``method`` and its options in ``field``: ``method`` enumerates the
    document methods, and one branch per method (``anyOf``) holds that method's exact options (its declaration's
    schema; null is its default), so the schema admits exactly what the service accepts. (The MCP tools keep one
    flat object: several clients refuse unions in tool schemas; docs/mcp.md.)"""

    def extra(schema: dict[str, Any]) -> None:
        from ..methods import registry
        from ..methods.base import Chooser

        methods = list(registry.document_methods())
        schema["properties"]["method"]["enum"] = methods
        branches = []
        for method in methods:
            cls = registry.get(method)
            declared = dict(cls.Options.json_schema()["properties"])
            picks: dict[str, list[tuple[str, dict[str, Any]]]] = {}  # a choice takes its picks' options, for the pick
            candidates = cls.readers() if issubclass(cls, Chooser) else {}
            for candidate, reader in candidates.items():
                for name, prop in reader.Options.json_schema()["properties"].items():
                    picks.setdefault(name, []).append((candidate, prop))
            for name, variants in picks.items():
                declared.setdefault(name, registry.merged(variants, len(candidates)))
            options = {name: {"anyOf": [prop, {"type": "null"}]} if "null" not in str(prop.get("type")) else prop
                       for name, prop in declared.items()}
            branch: dict[str, Any] = {"properties": {"method": {"const": method}, field: {
                "type": "object", "properties": options, "additionalProperties": False}}}
            if method != "auto":  # the default when no method is named
                branch["required"] = ["method"]
            branches.append(branch)
        schema["anyOf"] = branches

    return extra


class IndexRequest(Shape):
    model_config = ConfigDict(extra="forbid", json_schema_extra=per_method("options"))

    method: str = Field("auto", max_length=MAX_METHOD, description="the reading method (GET /v1/methods)")
    options: dict[str, Any] = Field(default_factory=dict, json_schema_extra=options_schema(),
                                    description="options of the method")


class AskRequest(Shape):
    model_config = ConfigDict(extra="forbid", json_schema_extra=per_method("method_options"))

    question: str = Field(min_length=1, max_length=MAX_QUESTION, description="the question")
    options: list[Annotated[str, Field(min_length=1, max_length=MAX_OPTION)]] = Field(
        default_factory=list, max_length=MAX_OPTIONS, description="multiple-choice options, in order (at most 10)")
    method: str = Field("auto", max_length=MAX_METHOD, description="the reading method (GET /v1/methods)")
    method_options: dict[str, Any] = Field(default_factory=dict, json_schema_extra=options_schema(),
                                           description="options of the method")
    budget: int | None = Field(None, ge=1, le=MAX_BUDGET,
                               description="tokens the answer's context may use (methods with a budget)")

    _question = field_validator("question")(_stripped)


def agent_options_schema() -> dict[str, Any]:
    """The agent's settings as one JSON object schema, generated from their declaration
    (:class:`pagemind.agent.AgentOptions`, as a method's options are): each setting's type, help, bounds and allowed
    values (an enum); unknown names are schema errors; null only where a setting is nullable (``context_window``:
    the model's window). The MCP tools drop the null (leaving the argument out is the default there)."""
    from ..agent import AgentOptions

    return {**AgentOptions.json_schema(),
            "description": "MemGPT settings (context_window, max_steps, page_size, archival_search, embedder, ...); "
                           "leave out what should keep its default"}


class AgentCreate(Shape):
    name: str = Field(pattern=AGENT_NAME, description=AGENT_NAME_RULE)
    persona: str | None = Field(None, max_length=MAX_BLOCK, description="who the agent is (its persona block)")
    human: str | None = Field(None, max_length=MAX_BLOCK, description="what it knows about the user")
    options: dict[str, Any] = Field(default_factory=dict, description="AgentOptions fields",
                                    json_schema_extra=lambda s: s.update(agent_options_schema()))


class AgentUpdate(Shape):
    options: dict[str, Any] = Field(default_factory=dict, description="AgentOptions fields to change",
                                    json_schema_extra=lambda s: s.update(agent_options_schema()))


class MessageRequest(Shape):
    message: str = Field(min_length=1, max_length=MAX_MESSAGE, description="the user's message")

    _message = field_validator("message")(_stripped)


class BlockUpdate(Shape):
    """A block's new value, limit and/or description; what is left out stays as it is (a new block: empty, with
    the agent's default limit). A write that changes nothing makes no version."""

    value: str | None = Field(None, max_length=MAX_BLOCK, description="the block's new value (within its limit)")
    limit: int | None = Field(None, ge=1, le=MAX_BLOCK, description="the block's new character limit")
    description: str | None = Field(None, max_length=MAX_DESCRIPTION, description="what the block is for")


class BlockRevert(Shape):
    version: int = Field(ge=1, le=MAX_JSON_INT, description="the version whose value the block takes again")


class BlockEdit(Shape):
    """A core-memory edit as the agent's functions make it: append a line, or replace text in the block."""

    append: str | None = Field(None, min_length=1, max_length=MAX_BLOCK, description="a line to append")
    old_content: str | None = Field(None, min_length=1, max_length=MAX_BLOCK,
                                    description="text to replace, exactly as it is in the block")
    new_content: str | None = Field(None, max_length=MAX_BLOCK, description="what replaces old_content")


UNITS = r"^[0-9]{1,7}(-[0-9]{1,7})?(,[0-9]{1,7}(-[0-9]{1,7})?){0,49}$"  # 3, 3-7, 1,4,9-11


class ArchivalInsert(Shape):
    text: str = Field(min_length=1, max_length=MAX_PASSAGE, description="the passage")
    replaces: str | None = Field(None, min_length=1, max_length=MAX_QUERY,
                                 description="the earlier fact this one supersedes (its text, or part of it)")

    _text = field_validator("text")(_stripped)


class MemoryAudit(Shape):
    fold: bool = Field(False, description="fold every repeat into the earliest passage of its group")


class LoadDocument(Shape):
    document_id: str = Field(pattern=DOCUMENT_ID, description="one of your documents")
    words: int = Field(300, ge=PASSAGE_WORDS[0], le=PASSAGE_WORDS[1], description="words per passage")


# --- citations ---------------------------------------------------------------------------------------------------
class CitationShape(BaseModel):
    """One citation of an answer or an agent's reply (:class:`pagemind.citations.Citation`)."""

    model_config = ConfigDict(extra="allow", title="Citation")

    document: str = Field(description="the document's id; for an agent's turn the passage's source (or archival), "
                                      "or recall for a message")
    unit: str = Field(description="page | leaf | fragment | text | window | passage | message")
    index: int | None = Field(None, description="that unit's number (page, leaf, fragment, passage id, message seq)")
    start: int = Field(description="where the quote starts in the cited text (the document's; a passage's or "
                                   "message's own)")
    end: int = Field(description="where it ends: quote == text[start:end]")
    quote: str = Field(description="the cited text, as it stands")
    found_by: str = Field(description="how the method came to read it (page, gist, leaf, fragment, passage, "
                                      "message, quote...)")
    source_page: int | None = Field(None, description="the document's own page (PDF page, EPUB chapter)")
    score: float | None = Field(None, description="how strongly it supports the answer, when ranked")
    section: str | None = Field(None, description="the document's own sections holding it, e.g. '§2 Results › "
                                                  "2.1 Cash flows'")
    ocr: bool = Field(False, description="its page was read by OCR (no text layer)")
    location: str = Field(description="where a person finds it, e.g. 'page 3 (§2 Results › 2.1 Cash flows, "
                                      "p. 12)'")


class CitedSpan(BaseModel):
    n: int = Field(description="the citation's number in the run (its marker [n])")
    start: int = Field(description="where the span starts in text")
    end: int = Field(description="where it ends in text")


class CitedLocation(BaseModel):
    """A cited location: the citation, the text around it and the cited spans in that text."""

    run_id: str
    n: int = Field(description="the citation asked for, from 1")
    citation: CitationShape
    text: str = Field(description="the paragraphs holding the span, cut to radius characters either side of it")
    offset: int = Field(description="where text starts in the cited text (the document's, or the passage's)")
    chars: int = Field(description="the length of the whole cited text")
    spans: list[CitedSpan] = Field(description="every citation of the run inside text (n's own included), as "
                                               "offsets into text")
    marked: str = Field(description='text with the spans marked <cite n="k">...</cite>')


# --- the error body -----------------------------------------------------------------------------------------------
class Error(BaseModel):
    """Every 4xx and 5xx answer of the service."""

    detail: str = Field(description="what is wrong, in one sentence")
    type: str = Field(description="the kind of error (e.g. InputError, NotFound, ValidationError)")
    run_id: str | None = Field(None, description="the run the error belongs to, when there is one")
    errors: list[dict[str, Any]] | None = Field(None, description="each invalid field (validation errors)")


def error_body(detail: str, kind: str, **extra: Any) -> dict[str, Any]:
    return {"detail": detail, "type": kind, **{k: v for k, v in extra.items() if v is not None}}


class OpenAIErrorDetail(BaseModel):
    message: str = Field(description="what is wrong")
    type: str = Field(description="invalid_request_error, authentication_error, not_found_error, ...")
    param: str | None = Field(None, description="the field at fault, when one is")
    code: str | None = Field(None, description="pagemind's kind of error (InputError, NotFound...)")


class OpenAIError(BaseModel):
    """Every 4xx and 5xx answer of OpenAI's routes (``/v1/chat/completions``, ``/v1/models``), as its SDK reads it."""

    error: OpenAIErrorDetail


# OpenAI's routes answer errors in OpenAI's shape (what its SDK reads); Letta's in Letta's, which is FastAPI's
# ``{"detail": ...}`` and so pagemind's own
OPENAI_PATHS = ("/v1/chat/completions", "/v1/models", "/v1/responses", "/v1/completions", "/v1/embeddings")
OPENAI_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                      404: "not_found_error", 409: "conflict_error", 413: "invalid_request_error",
                      422: "invalid_request_error", 429: "rate_limit_error"}


def is_openai_path(path: str) -> bool:
    return any(path == p or path.startswith(p + "/") for p in OPENAI_PATHS)


def openai_error_body(message: str, status: int, code: str | None = None, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": OPENAI_ERROR_TYPES.get(status, "api_error"), "param": param,
                      "code": code}}


def error_for(path: str, status: int, detail: str, kind: str) -> dict[str, Any]:
    """The error body of a request to ``path`` in its surface's shape (OpenAI's or pagemind's)."""
    return openai_error_body(detail, status, kind) if is_openai_path(path) else error_body(detail, kind)


_UNION_MEMBER = re.compile(r"^(str|int|float|bool|list|dict|none|[a-z]+(-[a-z]+)+)(\[.*\])?$|^[a-z-]+\[.*\]$")


def validation_detail(errors: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """A validation error's one-line detail and its fields (location, message), without pydantic's URLs, the
    names of a union's members in a location (``input.constrained-str``: ``input``) and without echoing the
    whole rejected input."""
    fields = []
    for e in errors:
        where = ".".join(str(p) for p in e.get("loc", ()) if p != "body" and not _UNION_MEMBER.match(str(p)))
        fields.append({"loc": [str(p) for p in e.get("loc", ())], "msg": str(e.get("msg", "")),
                       "type": str(e.get("type", ""))})
        fields[-1]["field"] = where or "body"
    first = fields[0] if fields else {"field": "body", "msg": "invalid"}
    others = len({f["field"] for f in fields[1:]} - {first["field"]})  # a union's members: one field, said once
    more = f" (and {others} more)" if others else ""
    return f"{first['field']}: {first['msg']}{more}", fields


# --- JSON of what the service returns ---------------------------------------------------------------------------
def sections_json(document: Document) -> dict[str, Any]:
    """A document's own structure: its format, page count and sections (title, level, span, pages, source)."""
    return {"id": document.id, "name": document.name, "format": document.format, "pages": len(document.pages),
            "sections": [s.as_dict() for s in document.sections]}


def document_json(row: DocumentRow) -> dict[str, Any]:
    return {"id": row.id, "name": row.name, "words": row.words, "chars": row.chars, "created": row.created}


LIBRARY_NAME = NAME  # letters, digits, '_', '.', '-', 1-100 characters (pagemind.library.NAME)


def sources_text(citations: list[dict[str, Any]], named: bool, head: str = "Sources:", width: int = 300) -> str:
    """An answer's citations as text after it (MCP, the OpenAI-compatible reply): ``[n] location: "quote"``, each
    place with its document's name when ``named`` (an answer over a library, an agent's passages)."""
    lines = []
    for n, c in enumerate(citations, 1):
        where = f"{c['document_name']}, " if named and c.get("document_name") else ""
        lines.append(f'[{n}] {where}{c.get("location", "")}: "{" ".join(str(c.get("quote", "")).split())[:width]}"')
    return f"\n\n{head}\n" + "\n".join(lines) if lines else ""


def memory_json(m: MemoryRecord) -> dict[str, Any]:
    return {"key": m.key, "method": m.method, "status": m.status, "settings": m.settings, "model": m.model}


def library_change_json(library: str, change: Change) -> dict[str, Any]:
    """What adding a document to ``library`` changed (a :class:`pagemind.library.Change`)."""
    return {"library": library, "document": {**change.__dict__, "id": change.document_id}}


def library_json(row: LibraryRow) -> dict[str, Any]:
    return {"name": row.name, "document_count": row.documents, "words": row.words, "created": row.created}


def library_document_json(row: LibraryDocumentRow) -> dict[str, Any]:
    """A library's document as a user sees it (where the server read it from is not said)."""
    return {"name": row.name, "id": row.document_id, "words": row.words, "chars": row.chars, "added": row.added,
            "has_previous_version": row.previous_id is not None}


def run_json(run: RunRow) -> dict[str, Any]:
    return {"id": run.id, "kind": run.kind, "method": run.method, "target": run.target, "request": run.request,
            "status": run.status, "created": run.created, "started": run.started, "finished": run.finished,
            "result": run.result, "error": run.error, "cancel_requested": run.cancel_requested}


def agent_json(view: AgentView) -> dict[str, Any]:
    """An agent (:class:`~.service.AgentView`) as pagemind's API and MCP show it."""
    return {"id": view.row.id, "name": view.name, "created": view.row.created, "options": view.options.as_dict(),
            "blocks": [block_json(b) for b in view.blocks], "counts": view.counts, "state": view.row.state,
            "busy": view.busy, "running_run": view.running, "model": view.model}


def agent_summary_json(summary: AgentSummary) -> dict[str, Any]:
    """An agent as a list shows it (:class:`~.views.AgentSummary`): :func:`agent_json` without options, blocks
    and model (GET the agent for those)."""
    return {"id": summary.row.id, "name": summary.name, "created": summary.row.created, "counts": summary.counts,
            "state": summary.row.state, "busy": summary.busy, "running_run": summary.running}


def block_json(block: Block) -> dict[str, Any]:
    return {"label": block.label, "value": block.value, "limit": block.limit, "description": block.description}


def block_version_json(v: BlockVersion, previous: BlockVersion | None = None) -> dict[str, Any]:
    """One version of a block; with ``diff``, its change from ``previous`` (the version before it) when that is
    known, or from nothing for a version 1."""
    out = {"label": v.block.label, "version": v.version, "value": v.block.value, "limit": v.block.limit,
           "description": v.block.description, "cause": v.cause, "time": v.time}
    if previous is not None or v.version == 1:
        out["diff"] = v.diff(previous)
    return out


def history_json(versions: Sequence[BlockVersion]) -> list[dict[str, Any]]:
    """Versions newest first, each with its diff from the one before it where that is listed (or it is the
    first)."""
    from ..agent.memory import with_previous

    return [block_version_json(v, before) for v, before in with_previous(versions)]


def passage_json(p: Passage) -> dict[str, Any]:
    return {"id": p.id, "text": p.text, "summary": p.summary, "source": p.source, "time": p.time,
            "superseded_by": p.superseded_by, "superseded": p.superseded,
            "repeats": [{"time": t, "source": src} for t, src in p.repeats],
            **({"replaces": [passage_json(old) for old in p.replaces]} if p.replaces else {})}


def added_json(added: Added) -> dict[str, Any]:
    """What an archival insert did: the passage stored, or the one it repeats (``stored`` false)."""
    return {"ids": [added.passage.id] if added.stored else [], "stored": added.stored,
            "passage": passage_json(added.passage), "replaced": [p.id for p in added.replaced]}


def search_json(found: SearchPage) -> dict[str, Any]:
    return {"items": list(found.items), "total": found.total, "page": found.page, "pages": found.pages,
            "page_size": found.page_size}



def me_json(me: Me) -> dict[str, Any]:
    return {"id": me.user.id, "name": me.user.name, "auth": me.auth}


def models_json(info: ModelInfo) -> dict[str, Any]:
    """The backend's own description, as ``/v1/models`` adds it to OpenAI's list."""
    return {"model": info.model, "backend": info.backend, "capabilities": asdict(info.capabilities)}


def method_json(cls: type[Method]) -> dict[str, Any]:
    """A method as ``/v1/methods`` and ``list_methods`` show it, with its options' JSON schema."""
    return {**cls.describe_method(), "unit": cls.unit, "schema": cls.Options.json_schema()}


def structure_json(memory: MemoryUnits) -> dict[str, Any]:
    """A memory's structure: ReadAgent's pages (number, words, gist), MemWalker's nodes (id, index, level,
    children, summary) or the fragments (number, words, place)."""
    out: dict[str, Any] = {"document_id": memory.document_id, "method": memory.method, "key": memory.key}
    if memory.method == "readagent":
        out["pages"] = [{"page": u.index, "words": u.words, "gist": u.gist or ""} for u in memory.units]
    elif memory.method == "memwalker":
        out["nodes"] = [{"id": u.id, "index": u.index, "level": u.level, "children": list(u.children),
                         "summary": u.summary} for u in memory.units]
    else:
        out["fragments"] = [{"fragment": u.index, "words": u.words, "start": u.start, "end": u.end}
                            for u in memory.units]
    return out


def units_json(memory: MemoryUnits) -> dict[str, Any]:
    """Units of a memory with their text: pages with their gists, leaves with their summaries, fragments."""
    def one(u: Unit) -> dict[str, Any]:
        if u.kind == "page":
            return {"unit": "page", "index": u.index, "text": u.text, "gist": u.gist or ""}
        if u.kind == "leaf":
            return {"unit": "leaf", "index": u.index, "id": u.id, "text": u.text, "summary": u.summary}
        return {"unit": "fragment", "index": u.index, "text": u.text}

    return {"document_id": memory.document_id, "method": memory.method, "units": [one(u) for u in memory.units]}


def cited_place_json(place: CitedPlace) -> dict[str, Any]:
    """A citation in its place, with every cited span of the run in the window as offsets and marked."""
    spans = [{"n": s.n, "start": s.start, "end": s.end} for s in place.spans]
    return {"run_id": place.run_id, "n": place.n, "citation": place.citation, "text": place.text,
            "offset": place.offset, "chars": place.chars, "spans": spans, "marked": marked(place)}


def marked(place: CitedPlace) -> str:
    """The text shown with its cited spans marked ``<cite n="k">...</cite>`` (overlapping spans: the
    earlier-starting one, and always the citation's own)."""
    text, n = place.text, place.n
    chosen = next((s for s in place.spans if s.n == n), None)
    shown = [s for s in place.spans if chosen is None or s is chosen or s.end <= chosen.start
             or s.start >= chosen.end]
    out, at = [], 0
    for span in sorted(shown, key=lambda s: s.start):
        if span.start < at:
            continue
        out += [text[at:span.start], f'<cite n="{span.n}">', text[span.start:span.end], "</cite>"]
        at = span.end
    return "".join(out) + text[at:]


def loaded_json(loaded: LoadedDocument) -> dict[str, Any]:
    """What loading a document into an agent stored."""
    return {"name": loaded.name, "words": loaded.words, "passages": loaded.passages}


def answer_json(run: RunRow, answer: Answer, **extra: Any) -> dict[str, Any]:
    """An answer as pagemind's API returns it: its run's id and the answer."""
    return {"run_id": run.id, **answer.as_dict(), **extra}


def step_json(row: StepRow) -> dict[str, Any]:
    """A stored step in the one JSON form the API, the event streams, MCP and the viewer read."""
    return steps.as_json(steps.from_row(row))

__all__ = ["AgentCreate", "AgentUpdate", "ArchivalInsert", "AskRequest", "BlockUpdate", "CitationShape",
           "CitedLocation", "CitedSpan", "Error", "IndexRequest", "LoadDocument", "MessageRequest", "TextDocument"]
