"""Reading a source tree for code retrieval: which files, as what text, and why others were left out.

Walk rules (each skipped file gets a one-line reason in :attr:`SourceTree.skipped`; skipped directories are
silent, they are never source):

* directories: hidden ones (``.git``, ``.venv``, ...), ``__pycache__``, ``node_modules``, ``site-packages``
  and every virtual environment (a directory holding ``pyvenv.cfg``) are not entered;
* symbolic links: a linked directory is not entered (``os.walk`` without ``followlinks``); a linked file is
  read only when its target lies inside the tree, so nothing outside the tree is ever indexed;
* files: only extensions of a known language (:data:`EXTENSIONS`: Python, the one tree-sitter grammar
  installed with the ``retrieval`` extra); hidden files are skipped; a file over ``max_file_bytes``, a file
  with a NUL byte (binary) or a file that is not UTF-8 is skipped with its reason.

Text is normalised so that line numbers are the ones an editor shows and tree-sitter counts: a UTF-8 BOM is
dropped, ``\\r\\n`` and ``\\r`` become ``\\n``, and the other characters Python's ``str.splitlines`` treats as
line breaks (form feed, vertical tab, ``\\x1c``-``\\x1e``, ``\\x85``, ``\\u2028``, ``\\u2029``) become spaces.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from ...errors import InputError
from ...hashing import content_hash

EXTENSIONS = {".py": "python", ".pyi": "python"}
SKIP_DIRS = frozenset({"__pycache__", "node_modules", "site-packages"})
_OTHER_BREAKS = str.maketrans({c: " " for c in "\v\f\x1c\x1d\x1e\x85\u2028\u2029"})
DEFAULT_MAX_FILE_BYTES = 1_000_000  # a generated 1 MB Python file is data, not code worth retrieving
DEFAULT_MAX_FILES = 20_000


@dataclass(frozen=True)
class SourceFile:
    """One source file: ``path`` relative to the tree's root, with ``/`` separators."""

    path: str
    text: str
    language: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class SourceTree:
    """The readable source files of a directory, sorted by path, and the files left out with a reason."""

    root: str  # as given; used only to read files, never stored
    name: str  # the directory's name, for display
    files: tuple[SourceFile, ...]
    skipped: tuple[tuple[str, str], ...] = ()  # (relative path, reason)

    @property
    def id(self) -> str:
        """Content address of the tree: the paths and texts of its files (not where it lies on disk)."""
        return content_hash([[f.path, f.sha256] for f in self.files])

    @property
    def words(self) -> int:
        return sum(len(f.text.split()) for f in self.files)

    @property
    def chars(self) -> int:
        return sum(len(f.text) for f in self.files)

    def file(self, path: str) -> SourceFile | None:
        for f in self.files:
            if f.path == path:
                return f
        return None

    def notes(self, limit: int = 5) -> list[str]:
        """One line per skipped file (at most ``limit``, then a count of the rest)."""
        out = [f"skipped {path}: {reason}" for path, reason in self.skipped[:limit]]
        if len(self.skipped) > limit:
            out.append(f"skipped {len(self.skipped) - limit} more files")
        return out


def normalise_code(text: str) -> str:
    """Newlines as ``\\n`` only; other line-break characters as spaces (see the module docstring)."""
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n").translate(_OTHER_BREAKS)


def decode_source(raw: bytes, name: str) -> str:
    """The normalised text of a source file, or :class:`InputError` naming why it is not source text."""
    if b"\x00" in raw:
        raise InputError(f"{name}: binary file (contains NUL bytes)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(f"{name}: not valid UTF-8 (byte {err.start}: {raw[err.start:err.start + 1]!r})") from None
    return normalise_code(text)


def _is_venv(directory: str) -> bool:
    return os.path.isfile(os.path.join(directory, "pyvenv.cfg"))


def walk_source_tree(root: str | Path, *, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
                     max_files: int = DEFAULT_MAX_FILES) -> SourceTree:
    """Read every source file under ``root`` (rules in the module docstring).

    Raises :class:`InputError` when ``root`` is not a directory, holds no readable source file, or holds more
    than ``max_files`` candidate files (point at a subdirectory instead).
    """
    top = Path(root)
    if not top.exists():
        raise InputError(f"{root}: no such directory")
    if not top.is_dir():
        raise InputError(f"{root}: not a directory")
    real_top = os.path.realpath(top)
    files: list[SourceFile] = []
    skipped: list[tuple[str, str]] = []
    seen = 0
    for current, dirs, names in os.walk(top, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIP_DIRS
                         and not _is_venv(os.path.join(current, d)))
        for name in sorted(names):
            language = EXTENSIONS.get(os.path.splitext(name)[1])
            if language is None or name.startswith("."):
                continue
            full = os.path.join(current, name)
            rel = Path(os.path.relpath(full, top)).as_posix()
            seen += 1
            if seen > max_files:
                raise InputError(f"{root}: more than {max_files} source files; point at a subdirectory "
                                 "(or raise max_files)")
            if os.path.islink(full):
                target = os.path.realpath(full)
                if os.path.commonpath([real_top, target]) != real_top:
                    skipped.append((rel, "symbolic link to a file outside the tree"))
                    continue
            try:
                size = os.path.getsize(full)
                if size > max_file_bytes:
                    skipped.append((rel, f"{size} bytes, over the {max_file_bytes}-byte limit"))
                    continue
                with open(full, "rb") as fh:
                    raw = fh.read()
            except OSError as err:
                skipped.append((rel, f"unreadable ({err.strerror or err})"))
                continue
            try:
                text = decode_source(raw, rel)
            except InputError as err:
                skipped.append((rel, str(err).split(": ", 1)[1]))
                continue
            files.append(SourceFile(rel, text, language))
    if not files:
        kinds = ", ".join(sorted(set(EXTENSIONS)))
        why = f" ({'; '.join(f'{p}: {r}' for p, r in skipped[:3])})" if skipped else ""
        raise InputError(f"{root}: no readable source files ({kinds}) found{why}")
    files.sort(key=lambda f: f.path)
    return SourceTree(str(root), top.resolve().name or str(top), tuple(files), tuple(skipped))


def tree_from_files(files: dict[str, str], name: str = "repo") -> SourceTree:
    """A tree from ``{relative path: text}`` held in memory (tests, benchmarks); texts are normalised."""
    out = []
    for path in sorted(files):
        language = EXTENSIONS.get(os.path.splitext(path)[1])
        if language is None:
            raise InputError(f"{path}: not a source file of a known language ({', '.join(sorted(EXTENSIONS))})")
        out.append(SourceFile(Path(path).as_posix(), normalise_code(files[path]), language))
    if not out:
        raise InputError("no source files given")
    return SourceTree("", name, tuple(out))
