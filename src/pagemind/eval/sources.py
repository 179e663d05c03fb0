"""Where each benchmark comes from, and getting it: download, verify, unpack, put in place.

The table is package data (``sources.yaml``): per set, the files with their URL, SHA-256 and/or git blob id,
size, licence and citation. ``PAGEMIND_DATA_SOURCES`` names a YAML file of the same layout whose entries add
to or replace the packaged ones; ``PAGEMIND_DATA_MIRROR`` (a base URL) fetches ``https://host/path`` from
``MIRROR/host/path`` instead, checked against the same checksums.

A download streams to a hidden ``.NAME.part`` file beside its target and is renamed into place only when every
recorded checksum matched; on any failure (a cut connection, a mismatch, Ctrl-C) the temporary file is deleted,
so the data root never holds a half-written file and running the command again starts afresh.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
import shutil
import tarfile
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path, PurePosixPath
from typing import IO, Any
from urllib.parse import quote, urlsplit

import yaml

from ..errors import DatasetError

ENV_SOURCES = "PAGEMIND_DATA_SOURCES"
ENV_MIRROR = "PAGEMIND_DATA_MIRROR"
CHUNK = 1 << 16
Progress = Callable[[int, "int | None"], None]  # (bytes so far, bytes in all or None)


class DownloadError(DatasetError):
    """A download that failed, was cut short or did not match its checksum (nothing of it was kept)."""


@dataclass(frozen=True)
class SourceFile:
    """One file to fetch: where from, how to check it, and what it becomes under the set's folder."""

    url: str
    save: str = ""  # target under the set's folder (default: the URL's file name); unused when unpacked
    sha256: str | None = None
    git_blob: str | None = None  # git object id at the pinned commit: SHA-1 of b"blob <size>\0" + bytes
    size: int | None = None
    unpack: str = ""  # "" | zip | tar
    members: Mapping[str, str] = field(default_factory=dict)  # archive path (or its end) -> target

    @property
    def name(self) -> str:
        return posixpath.basename(urlsplit(self.url).path) or "download"

    @property
    def targets(self) -> tuple[str, ...]:
        return tuple(self.members.values()) if self.unpack else (self.save or self.name,)

    @property
    def checked_by(self) -> str:
        """What the download is checked against ('' when nothing is recorded)."""
        return " and ".join(k for k, v in (("SHA-256", self.sha256), ("git blob id", self.git_blob),
                                           ("size", self.size)) if v)


@dataclass(frozen=True)
class Source:
    """A set's official source: its files, licence and citation, and its folder under the data root."""

    name: str
    title: str
    homepage: str
    licence: str
    citation: str
    folder: str
    checksums: str  # where the checksums come from
    files: tuple[SourceFile, ...]

    @property
    def targets(self) -> tuple[str, ...]:
        return tuple(t for f in self.files for t in f.targets)

    @property
    def size(self) -> int | None:
        """Bytes to download, when every file's size is recorded."""
        sizes = [f.size for f in self.files]
        return None if None in sizes else sum(s for s in sizes if s is not None)

    def present(self, root: Path) -> list[Path]:
        """The targets already under ``root``."""
        return [root / self.folder / t for t in self.targets if (root / self.folder / t).is_file()]


@dataclass(frozen=True)
class Fetched:
    """One downloaded file: what it was checked against and the files it became."""

    url: str
    sha256: str
    size: int
    checked_by: str  # '' when kept on --trust-first-download
    written: tuple[Path, ...]


# --- the table -------------------------------------------------------------------------------------
def load_sources(env: Mapping[str, str] | None = None) -> dict[str, Source]:
    """The packaged table, updated by the file ``PAGEMIND_DATA_SOURCES`` names."""
    env = os.environ if env is None else env
    text = resources.files(__package__).joinpath("sources.yaml").read_text(encoding="utf-8")
    table = parse_sources(yaml.safe_load(text), "sources.yaml")
    if env.get(ENV_SOURCES):
        path = Path(env[ENV_SOURCES])
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except OSError as err:
            raise DatasetError(f"{path} ({ENV_SOURCES}): {err.strerror or err}") from None
        except yaml.YAMLError as err:
            raise DatasetError(f"{path} ({ENV_SOURCES}): not valid YAML ({err})") from None
        table.update(parse_sources(data, str(path)))
    return table


def parse_sources(data: Any, where: str) -> dict[str, Source]:
    """Sources from a mapping ``name -> entry`` (the layout of sources.yaml), every field checked."""
    if not isinstance(data, dict):
        raise DatasetError(f"{where}: expected a mapping of set names to sources")
    return {str(name): _source(str(name), entry, f"{where}, {name}") for name, entry in data.items()}


def _source(name: str, entry: Any, where: str) -> Source:
    if not isinstance(entry, dict):
        raise DatasetError(f"{where}: expected a mapping")
    files = entry.get("files")
    if not isinstance(files, list) or not files:
        raise DatasetError(f"{where}: 'files' should be a non-empty list")
    text = {k: " ".join(str(entry.get(k, "")).split()) for k in ("title", "homepage", "licence", "citation",
                                                                    "checksums")}
    return Source(name=name, folder=_relative(str(entry.get("folder") or name), where), files=tuple(
        f for i, item in enumerate(files) for f in _files(item, f"{where}, file {i}")), **text)


def _files(entry: Any, where: str) -> list[SourceFile]:
    """One file, or a group of many from one place: ``base`` (a URL ending in /), ``git_blobs`` (file name ->
    git blob id; each file is fetched from base + its quoted name) and optionally ``under`` (the folder the
    files go to)."""
    if not isinstance(entry, dict) or "base" not in entry:
        return [_file(entry, where)]
    unknown = set(entry) - {"base", "git_blobs", "under"}
    base, blobs, under = entry.get("base"), entry.get("git_blobs"), str(entry.get("under") or "")
    if unknown:
        raise DatasetError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    if not isinstance(base, str) or not base.endswith("/") or not isinstance(blobs, dict) or not blobs:
        raise DatasetError(f"{where}: a group needs 'base' (a URL ending in /) and 'git_blobs' (name -> blob id)")
    return [_file({"url": base + quote(str(name)), "save": posixpath.join(under, str(name)), "git_blob": blob},
                  f"{where}, {name}") for name, blob in blobs.items()]


def _file(entry: Any, where: str) -> SourceFile:
    if not isinstance(entry, dict) or not isinstance(entry.get("url"), str):
        raise DatasetError(f"{where}: expected a mapping with a 'url'")
    unknown = set(entry) - {"url", "save", "sha256", "git_blob", "size", "unpack", "members"}
    if unknown:
        raise DatasetError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    sha256, blob = entry.get("sha256"), entry.get("git_blob")
    if sha256 is not None and not re.fullmatch(r"[0-9a-f]{64}", str(sha256)):
        raise DatasetError(f"{where}: sha256 should be 64 lowercase hex digits")
    if blob is not None and not re.fullmatch(r"[0-9a-f]{40}", str(blob)):
        raise DatasetError(f"{where}: git_blob should be 40 lowercase hex digits")
    size = entry.get("size")
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 0):
        raise DatasetError(f"{where}: size should be a number of bytes")
    unpack, members = str(entry.get("unpack") or ""), entry.get("members") or {}
    if unpack not in ("", "zip", "tar"):
        raise DatasetError(f"{where}: unpack should be zip or tar")
    if bool(unpack) != bool(members) or not isinstance(members, dict):
        raise DatasetError(f"{where}: an archive ('unpack') needs 'members' (archive path -> target), and only it")
    return SourceFile(url=entry["url"], save=_relative(str(entry.get("save") or ""), where, empty=True),
                      sha256=sha256, git_blob=blob, size=size, unpack=unpack,
                      members={str(k): _relative(str(v), where) for k, v in members.items()})


def _relative(path: str, where: str, empty: bool = False) -> str:
    """A target path inside the set's folder (never absolute, never climbing out of it)."""
    if not path and empty:
        return path
    parts = PurePosixPath(path).parts
    if not parts or path.startswith("/") or "\\" in path or ".." in parts or ":" in parts[0]:
        raise DatasetError(f"{where}: {path!r} should be a relative path inside the set's folder")
    return path


def source_for(name: str, default_path: str, sources: Mapping[str, Source]) -> Source | None:
    """The source of a set: the one of its name, else the one filling its folder (sets generated from another)."""
    if name in sources:
        return sources[name]
    folder = PurePosixPath(default_path).parts[0] if default_path else ""
    return next((s for s in sources.values() if s.folder == folder), None)


def mirrored(url: str, mirror: str | None) -> str:
    """``https://host/path`` -> ``MIRROR/host/path`` (the URL unchanged without a mirror)."""
    if not mirror:
        return url
    return mirror.rstrip("/") + "/" + url.split("://", 1)[-1]


# --- getting a set ---------------------------------------------------------------------------------
def get(source: Source, root: Path, *, force: bool = False, trust_first_download: bool = False,
        mirror: str | None = None, progress: Callable[[SourceFile], Progress | None] | None = None,
        timeout: float = 60.0) -> list[Fetched]:
    """Download, verify and unpack ``source`` into ``root/<folder>``; files already there are kept unless
    ``force``. ``progress(file)`` may return a ``(done, total)`` callback for that file's bytes."""
    folder = root / source.folder
    created = [p for p in (folder, *folder.parents) if not p.exists()]
    folder.mkdir(parents=True, exist_ok=True)
    fetched = []
    try:
        for file in source.files:
            if not force and all((folder / t).is_file() for t in file.targets):
                continue
            url = mirrored(file.url, mirror)
            temp = folder / f".{file.name}.part"
            temp.unlink(missing_ok=True)  # left by a killed run: start afresh
            try:
                sha256, size = download(url, temp, timeout, progress(file) if progress else None)
                verify(file, url, temp, sha256, size, trust_first_download)
                written = unpack(file, url, temp, folder) if file.unpack else [_place(temp, folder / file.targets[0])]
            finally:
                temp.unlink(missing_ok=True)
            fetched.append(Fetched(url, sha256, size, file.checked_by, tuple(written)))
    finally:
        for made in created:  # folders this call made and left empty (a failed first download) go again
            if made.is_dir() and not any(made.iterdir()):
                made.rmdir()
    return fetched


def download(url: str, temp: Path, timeout: float = 60.0, progress: Progress | None = None) -> tuple[str, int]:
    """Stream ``url`` byte for byte into ``temp``: (SHA-256, size). A cut connection is a DownloadError."""
    import httpx

    digest, done, started = hashlib.sha256(), 0, False
    try:
        with httpx.stream("GET", url, follow_redirects=True, headers={"Accept-Encoding": "identity"},
                          timeout=httpx.Timeout(timeout, connect=min(timeout, 30.0))) as reply:
            started = True
            if reply.status_code != 200:
                raise DownloadError(f"{url}: the server answered {reply.status_code} {reply.reason_phrase}")
            length = reply.headers.get("content-length")
            total = int(length) if length and length.isdigit() else None
            with temp.open("wb") as out:
                for chunk in reply.iter_raw(CHUNK):
                    out.write(chunk)
                    digest.update(chunk)
                    done += len(chunk)
                    if progress:
                        progress(done, total)
    except httpx.HTTPError as err:
        what = "was cut short" if started else "failed"
        raise DownloadError(f"{url}: the download {what} ({type(err).__name__}: {err}); nothing was kept: "
                            "run the command again") from None
    except OSError as err:
        raise DownloadError(f"{temp}: {err.strerror or err}; nothing was kept") from None
    if total is not None and done != total:
        raise DownloadError(f"{url}: the download was cut short at {done:,} of {total:,} bytes; nothing was kept: "
                            "run the command again")
    return digest.hexdigest(), done


def git_blob_id(path: Path) -> str:
    """The git object id of the file's bytes (what a repository's tree lists for it)."""
    digest = hashlib.sha1(b"blob %d\0" % path.stat().st_size)
    with path.open("rb") as f:
        while chunk := f.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def verify(file: SourceFile, url: str, temp: Path, sha256: str, size: int, trust_first_download: bool) -> None:
    """Every recorded checksum must match; a file with none is kept only on ``trust_first_download``."""
    wrong = []
    if file.size is not None and size != file.size:
        wrong.append(f"{size:,} bytes, expected {file.size:,}")
    if file.sha256 and sha256 != file.sha256:
        wrong.append(f"SHA-256 {sha256}, expected {file.sha256}")
    if file.git_blob and (blob := git_blob_id(temp)) != file.git_blob:
        wrong.append(f"git blob id {blob}, expected {file.git_blob}")
    if wrong:
        raise DownloadError(f"{url}: checksum mismatch ({'; '.join(wrong)}): the file is not the one recorded "
                            "(changed upstream, corrupted, or an error page); the download was deleted")
    if not file.checked_by and not trust_first_download:
        raise DownloadError(f"{url}: no checksum is recorded for this file; it downloaded as {size:,} bytes with "
                            f"SHA-256 {sha256}. Compare that with a published value, then run again with "
                            "--trust-first-download to keep it; the download was deleted")


def unpack(file: SourceFile, url: str, archive: Path, folder: Path) -> list[Path]:
    """Extract ``file.members`` from the verified archive, each to a temporary file renamed into place."""
    try:
        if file.unpack == "zip":
            with zipfile.ZipFile(archive) as z:
                names = [n for n in z.namelist() if not n.endswith("/") and not n.startswith("__MACOSX/")]
                chosen = {_member(names, m, url): t for m, t in file.members.items()}  # all found before any is written
                return [_place_stream(z.open(name), folder / t) for name, t in chosen.items()]
        with tarfile.open(archive, "r:*") as tar:
            entries = {m.name: m for m in tar.getmembers() if m.isfile()}
            chosen = {_member(list(entries), m, url): t for m, t in file.members.items()}
            return [_place_stream(tar.extractfile(entries[name]), folder / t)  # type: ignore[arg-type]
                    for name, t in chosen.items()]
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError) as err:
        raise DownloadError(f"{url}: the archive cannot be read ({err}); nothing was extracted") from None


def _member(names: list[str], wanted: str, url: str) -> str:
    """The archive entry named ``wanted``, or ending in ``/wanted`` (archives differ in their top folder)."""
    found = [n for n in names if n == wanted or n.endswith("/" + wanted)]
    if not found:
        have = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
        raise DownloadError(f"{url}: the archive has no {wanted} (it has: {have or 'no files'})")
    return min(found, key=len)


def _place(temp: Path, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(temp, target)
    return target


def _place_stream(stream: IO[bytes], target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    part = target.with_name(f".{target.name}.part")
    try:
        with stream, part.open("wb") as out:
            shutil.copyfileobj(stream, out, CHUNK)
        os.replace(part, target)
    finally:
        part.unlink(missing_ok=True)
    return target
