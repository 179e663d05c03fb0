"""Benchmark examples as plain values, the dataset registry, and where the data lives.

An :class:`Example` is one question with everything a method needs: the document text (a transcript for
conversations), the options or references, and for MemGPT the conversation turns or archival passages.
Loaders live in ``sets_documents``, ``sets_dialogue``, ``sets_kv`` and ``generated``; each module lists its
:class:`DatasetSpec` values in ``SPECS`` and :func:`.sets.datasets` collects them (no registry is mutated at import;
the loaders import this module, so the collection lives in :mod:`.sets`, which imports them).

Data is read in place, never copied: ``--data PATH`` > ``PAGEMIND_DATA`` > ``<user dir>/data`` (the user data
directory, where ``pagemind data get NAME`` puts what it downloads; see :mod:`.sources`). PATH may be the data
root (holding ``quality/``, ``qmsum/``...), a dataset folder, or one file in the staged or the upstream format.
A file's layout is read from its content, never its name: a JSON list, one JSON object or JSON lines, gzip or
not (:func:`read_rows`); each row's format from its fields (:class:`RowFormat`). Files are only read, never
moved or rewritten.
"""

from __future__ import annotations

import gzip
import hashlib
import inspect
import json
import os
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..answering.question import Question
from ..errors import DatasetError
from ..text import Document
from .evidence import Span

TASKS = ("choice", "qa", "summary", "kv", "open")


class DatasetWarning(UserWarning):
    """Part of a set left out or mended while loading (a PDF without a text layer, an evidence page that is not a
    page of its PDF): the run goes on with the rest, and the run directory keeps the warning."""


@dataclass(frozen=True)
class Turn:
    """One turn of a conversation; ``role`` is the agent's view (the user speaks, the assistant answers)."""

    speaker: str
    text: str
    role: str = "user"  # user | assistant
    time: str = ""  # "YYYY-MM-DD HH:MM:SS" when the data has dates
    where: str = ""  # its place in the conversation as the data names it ("session 1, turn 3"), cited with it


@dataclass(frozen=True)
class Example:
    """One question of a benchmark, ready for any method."""

    id: str
    dataset: str
    task: str  # choice | qa | summary | kv | open
    question: str
    document_id: str  # examples with the same id share one memory per method
    document: str  # the text document methods read (conversations: a dated transcript)
    options: tuple[str, ...] = ()
    gold: int | None = None  # 0-based option (choice)
    references: tuple[str, ...] = ()  # gold answers or summaries (qa, summary, kv)
    conversation: tuple[Turn, ...] = ()  # MemGPT: put into recall storage
    passages: tuple[str, ...] = ()  # MemGPT: archival passages (empty: split the document)
    meta: Mapping[str, Any] = field(default_factory=dict)  # JSON values only
    # labelled evidence: character spans of ``document`` (QMSum turn ranges, LoCoMo dialogue ids; see .evidence)
    evidence: tuple[Span, ...] = ()
    # (name, text) of every document read together with ``document`` as one library (the question is asked of the
    # whole library; ``document`` is the member it is about, whose spans the evidence labels are)
    library: tuple[tuple[str, str], ...] = ()
    # the document as pagemind reads its file (a PDF's pages, sections and format), where the set has a file: what a
    # method builds from, so the evaluation reads a filing as `pagemind ask report.pdf` does (``document`` is its text)
    read: Document | None = field(default=None, compare=False, repr=False)

    def as_question(self) -> Question:
        return Question(self.question, self.options)

    @property
    def words(self) -> int:
        return len(self.document.split())


Loader = Callable[..., list[Example]]


def short_hash(text: str) -> str:
    """A text's short content id (examples over the same text share one document id, hence one memory)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]


# The presets most sets use: QuALITY's prompts and page sizes for every method family.
QUALITY_PRESETS: Mapping[str, str] = {"readagent": "quality", "rag": "quality", "full": "quality",
                                      "memwalker": "quality"}


@dataclass(frozen=True)
class DatasetSpec:
    """A registered set: how to load it, where its staged file lives and how it is scored."""

    name: str
    loader: Loader  # loader(path, **params) -> examples
    default_path: str  # relative to the data root
    description: str
    primary: str  # the headline metric (accuracy, rougeL, f1, judge)
    presets: Mapping[str, str] = field(default_factory=dict)  # method family -> preset
    citation: str = ""
    # integer parameters that only add examples when raised (the earlier ones stay, like --limit): a resumed run
    # may raise them, any other parameter change is another run
    widening: tuple[str, ...] = ()
    needs_data: bool = True  # False: the set is made without files (generated from bundled text) unless --data

    @property
    def params(self) -> dict[str, Any]:
        """The loader's keyword parameters with their defaults."""
        sig = inspect.signature(self.loader)
        return {n: p.default for n, p in list(sig.parameters.items())[1:] if p.kind == p.KEYWORD_ONLY}

    def preset_for(self, method: str) -> str | None:
        return self.presets.get(family(method))


def base_method(method: str) -> str:
    """``rag@fragrel`` -> ``rag``: a method name with an optional ``@label`` naming a variant (its options are
    given with ``-O rag@fragrel:fragrel=true``), so one run can compare a method with itself differently set."""
    return method.partition("@")[0]


def family(method: str) -> str:
    method = base_method(method)
    if method in ("readagent-p", "readagent-s", "gistmem"):
        return "readagent"
    if method in ("rag", "op-rag"):
        return "rag"
    return method


def data_root(data: str | Path | None = None, env: Mapping[str, str] | None = None) -> Path:
    """``data`` > ``PAGEMIND_DATA`` > ``<user dir>/data`` (``PAGEMIND_HOME`` moves the user dir)."""
    from ..config import user_dir

    env = os.environ if env is None else env
    return Path(data or env.get("PAGEMIND_DATA") or user_dir(env) / "data")


def data_origin(data: str | Path | None = None, env: Mapping[str, str] | None = None) -> str:
    """Which setting chose the data root: ``--data``, ``PAGEMIND_DATA`` or ``the user data directory``."""
    env = os.environ if env is None else env
    return "--data" if data else "PAGEMIND_DATA" if env.get("PAGEMIND_DATA") else "the user data directory"


def how_to_get(spec: DatasetSpec, data: str | Path | None = None, env: Mapping[str, str] | None = None) -> str:
    """The command that downloads the set's data (with ``--data`` when that chose the root), or where to look."""
    from .sources import load_sources, source_for

    source = source_for(spec.name, spec.default_path, load_sources(env))
    if source is None:
        return "no download is known: pass --data PATH to its files"
    where = f" --data {shlex.quote(str(data))}" if data else ""
    return f"pagemind data get {source.name}{where}"


def resolve_path(spec: DatasetSpec, data: str | Path | None = None) -> Path:
    """The file or folder the loader reads: ``data`` itself when it is a file or a folder of the set, else
    ``data/<default_path>``. The user data directory holds only set folders: a set missing there is an error
    that says how to get it."""
    root, origin = data_root(data), data_origin(data)
    default = origin == "the user data directory"
    if not root.exists():
        if default:
            raise DatasetError(f"{spec.name}: no data yet ({root}, the user data directory, does not exist); "
                               f"run `{how_to_get(spec)}`, or pass --data PATH or set PAGEMIND_DATA")
        raise DatasetError(f"{root}: no such file or folder ({origin}); pass --data PATH or set PAGEMIND_DATA, "
                           f"or run `{how_to_get(spec, data)}`")
    if root.is_file():
        return root
    staged = root / spec.default_path
    if staged.exists():
        return staged
    folder = root / Path(spec.default_path).parts[0]
    if len(Path(spec.default_path).parts) > 1 and folder.is_dir():
        return folder  # the set's folder without the staged file (upstream files inside)
    if default:
        raise DatasetError(f"{spec.name}: not in {root} (the user data directory); run `{how_to_get(spec)}`, "
                           "or pass --data PATH or set PAGEMIND_DATA")
    return root  # a set folder (or another file layout) given directly: the loader looks inside


def parse_params(spec: DatasetSpec, given: Mapping[str, str]) -> dict[str, Any]:
    """``KEY=VALUE`` strings from the CLI, converted to the type of each parameter's default."""
    known = spec.params
    out: dict[str, Any] = {}
    for key, value in given.items():
        name = key.replace("-", "_")
        if name not in known:
            have = ", ".join(known) or "none"
            raise DatasetError(f"{spec.name} has no parameter {key!r} (have: {have})")
        out[name] = convert(value, known[name], key)
    return out


def convert(value: Any, default: Any, key: str) -> Any:
    if not isinstance(value, str):
        return value
    try:
        if isinstance(default, bool):
            if value.lower() not in ("1", "0", "true", "false", "yes", "no"):
                raise ValueError(value)
            return value.lower() in ("1", "true", "yes")
        if isinstance(default, int):
            return int(value)
        if isinstance(default, float):
            return float(value)
        if isinstance(default, tuple):
            return tuple(convert(v.strip(), default[0] if default else "", key) for v in value.split(",") if v.strip())
    except ValueError:
        raise DatasetError(f"parameter {key}: {value!r} is not a valid value (default {default!r})") from None
    return value


# --- reading files ---------------------------------------------------------------------------------
ROW_LAYOUTS = "a JSON list of objects, one JSON object, or JSON lines (one object per line)"


def open_text(path: Path) -> str:
    """The file's text; gzip is recognised by its magic bytes, whatever the name."""
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise DatasetError(f"{path}: {err.strerror or err}") from None
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as err:
            raise DatasetError(f"{path}: a damaged gzip file ({err})") from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise DatasetError(f"{path}, line {line}: not UTF-8 text") from None


def json_values(path: Path) -> list[tuple[int, Any]]:
    """(first line, value) for each JSON value in the file: one for a JSON document, one per line for JSON
    lines (also several pretty-printed values in a row); decided from the content, never from the name."""
    text = open_text(path)
    decoder = json.JSONDecoder()
    values: list[tuple[int, Any]] = []
    pos, line, size = 0, 1, len(text)
    while True:
        start = pos
        while pos < size and text[pos] in " \t\r\n":
            pos += 1
        line += text.count("\n", start, pos)
        if pos == size:
            return values
        try:
            value, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as err:
            began = f", in the value that begins on line {line}" if err.lineno != line else ""
            raise DatasetError(f"{path}, line {err.lineno}: not valid JSON ({err.msg}{began}); "
                               f"expected {ROW_LAYOUTS}") from None
        values.append((line, value))
        line += text.count("\n", pos, end)
        pos = end


def read_json(path: Path) -> Any:
    """The one JSON value a file holds (a settings file, not rows)."""
    values = json_values(path)
    if len(values) != 1:
        raise DatasetError(f"{path}: expected one JSON value, found {len(values)}")
    return values[0][1]


def read_rows(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """Rows of a JSON list, a single JSON object or a JSON-lines file (whatever the file is called), each with
    its location for error messages (``path, row i`` or ``path, line n``)."""
    values = json_values(path)
    if not values:
        raise DatasetError(f"{path}: the file is empty; expected {ROW_LAYOUTS}")
    if len(values) == 1 and isinstance(values[0][1], list):
        rows = values[0][1]
        for i, row in enumerate(rows):
            if not isinstance(row, dict):
                raise DatasetError(f"{path}, row {i}: expected a JSON object, not {type(row).__name__}")
        return [(f"{path}, row {i}", row) for i, row in enumerate(rows)]
    if len(values) == 1:
        line, row = values[0]
        if not isinstance(row, dict):
            raise DatasetError(f"{path}, line {line}: expected {ROW_LAYOUTS}, not a JSON {type(row).__name__}")
        return [(f"{path}, line {line}", row)]
    for line, row in values:
        if not isinstance(row, dict):
            raise DatasetError(f"{path}, line {line}: expected a JSON object on each line (JSON lines), "
                               f"not {type(row).__name__}")
    return [(f"{path}, line {line}", row) for line, row in values]


@dataclass(frozen=True)
class RowFormat:
    """One upstream layout of a set's rows, recognised by fields that only it has (never by the file name)."""

    name: str
    marks: tuple[str, ...]  # the fields that identify the layout; the reader checks the others
    read: Callable[[dict, str, int], list[Example]]  # (row, where, index of the row in its file) -> examples

    def matches(self, row: Mapping[str, Any]) -> bool:
        return all(k in row for k in self.marks)


def read_examples(path: Path, dataset: str, formats: tuple[RowFormat, ...]) -> list[Example]:
    """Every row of ``path`` read by the first format whose fields it has, or an error listing those accepted."""
    examples: list[Example] = []
    for index, (where, row) in enumerate(read_rows(path)):
        fmt = next((f for f in formats if f.matches(row)), None)
        if fmt is None:
            have = ", ".join(sorted(row)[:12]) or "none"
            accepted = "; ".join(f"{f.name} ({', '.join(f.marks)})" for f in formats)
            raise DatasetError(f"{where}: not a {dataset} row in any accepted format (its fields: {have}); "
                               f"accepted: {accepted}")
        examples.extend(fmt.read(row, where, index))
    return examples


def field_of(row: Mapping[str, Any], key: str, where: str, kind: type | tuple[type, ...] = str) -> Any:
    """``row[key]`` checked for presence and type, or a :class:`DatasetError` naming the row."""
    if key not in row:
        raise DatasetError(f"{where}: missing field {key!r}")
    value = row[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise DatasetError(f"{where}: field {key!r} should be {names}, not {type(value).__name__}")
    return value


def find_file(path: Path, *names: str) -> Path:
    """``path`` when it is a file, else the first of ``names`` inside it (also with ``.gz``)."""
    if path.is_file():
        return path
    for name in names:
        for candidate in (path / name, path / f"{name}.gz"):
            if candidate.is_file():
                return candidate
    raise DatasetError(f"{path}: none of {', '.join(names)} found")
