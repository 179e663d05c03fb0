"""What one request may give pagemind, declared once for every surface.

The native HTTP API, MCP, the Letta and OpenAI surfaces, Agent File imports and the Python API all take texts,
labels, blocks and passages; each of them is bounded here and nowhere else. The request shapes
(:mod:`pagemind.server.shapes`, the Letta and OpenAI bodies) declare these bounds in their schemas, so a client
learns them before it sends; the agent checks the ones that guard its memory (:func:`check_label`,
:func:`check_text`) where the memory is written, so a surface that forgot a bound still cannot store what another
refuses. A JSON body is bounded in depth and in the values it holds (:func:`check_json_shape`) before it is parsed:
a few megabytes of tiny objects would otherwise cost a gigabyte of Python objects.
"""

from __future__ import annotations

import re

from .errors import InputError

MAX_ID = 2**63 - 1  # what a 64-bit integer column holds: larger ids, offsets and seqs are refused, never a 500
MAX_JSON_INT = 2**53  # the largest integer every JSON reader holds exactly (a body's version numbers, seeds)
MAX_NAME = 255  # characters of a document's name
MAX_QUESTION = 20_000  # characters of a question
MAX_OPTIONS = 10  # multiple-choice options (A..J)
MAX_OPTION = 2_000  # characters of one option
MAX_MESSAGE = 100_000  # characters of an agent message (the agent's window is checked too, before it is stored)
MAX_PASSAGE = 100_000  # characters of an archival passage
MAX_BLOCK = 100_000  # characters of a core-memory block value (and of a block's limit), a persona or human text
MAX_BLOCK_VERSIONS = 100_000  # versions of core memory an Agent File may carry (a pagemind export's history)
MAX_DESCRIPTION = 2_000  # characters of a core-memory block's description
MAX_SYSTEM = 100_000  # characters of an agent's own system instructions
MAX_EMBEDDED = 20_000  # characters of a passage its vector is taken of (the rest is found by text search)
MAX_QUERY = 2_000  # characters of a search query
MAX_METHOD = 64  # characters of a method's name
MAX_ENCODING = 64  # characters of a text encoding's name
MAX_AGENT_NAME = 48  # characters of an agent's name as a user gives it (stored as u<user id>.<name>: 64 at most)
MAX_LIST = 1_000  # items of one page of a listing
PASSAGE_WORDS = (20, 5_000)  # words of an archival passage a document is loaded in (fewest, most)
MAX_BUDGET = 10_000_000  # tokens of a context budget a request may name
MAX_RADIUS = 100_000  # characters shown either side of a cited span
MAX_REPLY_TOKENS = 1_000_000  # tokens of a reply a request may ask for
MAX_RESULT_PAGE = 1_000_000  # the page number of a search's results
QUEUED_READS = 8  # uploads one user may have waiting or being read in the background (each holds its spooled file)
LIST_PAGE = 100  # items of a listing's page when the request names no limit (the cursor of the next page is given)
MAX_EMBED_INPUTS = 2_048  # texts embedded in one request (OpenAI's limit for /v1/embeddings)
MAX_EMBED_TOKENS = 8_192  # the encoder's tokens of one embedded text (OpenAI's per-input limit)
MAX_EMBED_TOTAL = 300_000  # the encoder's tokens of one embedding request (OpenAI's per-request limit)
EMBED_TOKENS = 15_000  # ... by default: MiniLM embeds ~3,000 tokens a CPU second, so ~5 s of CPU on 2 cores
MAX_BLOCKS = 64  # core-memory blocks of one agent given in one request or file
MAX_AGENT_FILE = 64 * 1024 * 1024  # bytes of an Agent File (.af)
MAX_JSON_DEPTH = 64  # nesting of a JSON body (deeper is no request pagemind reads; Python's parser recurses)
MAX_JSON_VALUES = 200_000  # values (strings, numbers, objects, ...) in one JSON body
MAX_OCR_PAGES = 100  # pages of one document read by OCR by default (2-10 s a page on 2 cores; --ocr-pages)
MAX_DOCUMENT_ELEMENTS = 500_000  # paragraphs and table cells of a DOCX body (a 1,000-page report: ~60,000)
MAX_IMPORTED_MESSAGES = 200_000  # messages of one imported conversation (LoCoMo's longest: ~700)
MAX_AGENT_FILE_VALUES = 1_000_000  # values in an Agent File (an agent's history: ~10 a message), ~150 MB parsed

AGENT_NAME = rf"^[A-Za-z0-9][A-Za-z0-9_.-]{{0,{MAX_AGENT_NAME - 1}}}$"  # a user's agent's name, on every surface
AGENT_NAME_RULE = f"letters, digits, '_', '.', '-' (at most {MAX_AGENT_NAME}), starting with a letter or digit"
BLOCK_LABEL = r"^[a-z][a-z0-9_.-]{0,31}$"  # a core-memory block's label: it is markup in the agent's prompt
LABEL = re.compile(BLOCK_LABEL)
# Letta's labels may hold '/' ("project/notes"), which would close the label's markup: it is '.' here, and '/' again
# in what the Letta surface and Agent Files show, so a Letta label survives an import and an export unchanged
LETTA_BLOCK_LABEL = r"^[a-z][a-z0-9_/-]{0,31}$"
TEXTS = {"name": MAX_NAME, "question": MAX_QUESTION, "option": MAX_OPTION, "message": MAX_MESSAGE,
         "passage": MAX_PASSAGE, "block": MAX_BLOCK, "system": MAX_SYSTEM, "query": MAX_QUERY}


def check_list_limit(limit: int) -> int:
    """A listing's page size when it is 1 to :data:`MAX_LIST`; else an :class:`InputError`."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIST:
        raise InputError(f"limit: a page holds 1 to {MAX_LIST:,} items, not {limit!r}")
    return limit


def check_label(label: str) -> str:
    """``label`` when it is a block label (:data:`BLOCK_LABEL`), else an :class:`InputError` saying the rule."""
    if not isinstance(label, str) or not LABEL.match(label):
        shown = label[:40] + "..." if isinstance(label, str) and len(label) > 40 else label
        raise InputError(f"block label {shown!r}: a label is lowercase letters, digits, '_', '-' and '.' (at most "
                         "32), starting with a letter")
    return label


def check_agent_name(name: str) -> str:
    """``name`` when it is a user's agent's name (:data:`AGENT_NAME`: the one rule of the native API, MCP, Letta
    and Agent File imports), else an :class:`InputError` saying the rule."""
    if not isinstance(name, str) or not re.match(AGENT_NAME, name):
        shown = name[:60] + "..." if isinstance(name, str) and len(name) > 60 else name
        raise InputError(f"agent name {shown!r}: use {AGENT_NAME_RULE}")
    return name


def label_from_letta(label: str) -> str:
    """A Letta block label as pagemind's (``/`` is ``.``); an :class:`InputError` for one that has no reversible
    counterpart (a ``.`` of its own, capitals, markup)."""
    if not isinstance(label, str) or not re.match(LETTA_BLOCK_LABEL, label):
        shown = label[:40] + "..." if isinstance(label, str) and len(label) > 40 else label
        raise InputError(f"block label {shown!r}: a Letta label here is lowercase letters, digits, '_', '-' and '/' "
                         "(at most 32), starting with a letter")
    return label.replace("/", ".")


def label_to_letta(label: str) -> str:
    """pagemind's block label as Letta shows it (``.`` is ``/``): :func:`label_from_letta` undone."""
    return label.replace(".", "/")


def check_block(label: str, value: str, limit: int, description: str = "") -> None:
    """The one rule of a core-memory block, wherever it is written (created, set, edited by the agent or a user,
    reverted, imported: :class:`~pagemind.agent.store.AgentStore` checks every write): a label
    (:func:`check_label`), a limit of 1 to :data:`MAX_BLOCK` characters, a value within its limit, a description of
    at most :data:`MAX_DESCRIPTION` characters."""
    check_label(label)
    if len(description) > MAX_DESCRIPTION:
        raise InputError(f"block {label}: a description is at most {MAX_DESCRIPTION:,} characters")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_BLOCK:
        raise InputError(f"block {label}: a block's limit is 1 to {MAX_BLOCK:,} characters, not {limit!r}")
    if len(value) > limit:
        raise InputError(f"block {label}: {len(value):,} characters exceed its limit of {limit:,}")


def check_text(kind: str, text: str, what: str | None = None) -> str:
    """``text`` when it is within the limit of its ``kind`` (a key of :data:`TEXTS`); else an :class:`InputError`
    naming ``what`` (default: the kind) and the limit."""
    most = TEXTS[kind]
    if len(text) > most:
        raise InputError(f"{what or kind}: {len(text):,} characters; at most {most:,}")
    return text


def check_json_shape(body: bytes, *, depth: int = MAX_JSON_DEPTH, values: int = MAX_JSON_VALUES,
                     what: str = "the JSON body", fewer: str = "; send fewer (or one text)") -> str | None:
    """Why a JSON ``body`` is refused before it is parsed (nested deeper than ``depth``, or more than ``values``
    values), or None; ``what`` names it in the reason and ``fewer`` says what to do about too many values. Reads the
    body's structure with byte counts: once escapes are dropped every ``"`` opens or closes a string, so strings are
    counted exactly and skipped whole (a long text costs a scan, not a parse)."""
    plain = body.replace(b"\\\\", b"").replace(b'\\"', b"")
    strings = plain.count(b'"') // 2
    opened = plain.count(b"{") + plain.count(b"[")
    if strings > values:
        return f"{what} holds over {values:,} values{fewer}"
    if opened + plain.count(b",") + 1 <= values and opened <= depth:
        return None  # bounds that count brackets and commas inside strings too already hold
    stripped = _STRINGS.sub(b"", plain)
    opened = stripped.count(b"{") + stripped.count(b"[")
    if opened + stripped.count(b",") + 1 > values:
        return f"{what} holds over {values:,} values{fewer}"
    level = 0
    for match in _BRACKETS.finditer(stripped):  # at most ``values`` brackets
        level += 1 if match.group() in (b"{", b"[") else -1
        if level > depth:
            return f"{what} is nested over {depth} levels deep"
    return None


_STRINGS = re.compile(rb'"[^"]*"')
_BRACKETS = re.compile(rb"[\[\]{}]")

__all__ = ["BLOCK_LABEL", "LABEL", "TEXTS", "check_block", "check_json_shape", "check_label", "check_text"]
