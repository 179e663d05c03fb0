"""EPUB books with the standard library: the OPF spine's reading order, each XHTML chapter read as HTML."""

from __future__ import annotations

import posixpath
import xml.etree.ElementTree as ET
import zipfile
from collections.abc import Iterator
from urllib.parse import unquote

from ...errors import InputError, InputTooLarge
from ..decoding import declared_encoding
from ..sections import Heading, html_headings
from .html import html_to_text

CONTAINER = "META-INF/container.xml"
ENCRYPTION = "META-INF/encryption.xml"
HTML_TYPES = ("application/xhtml+xml", "text/html")


def epub_chapters(archive: zipfile.ZipFile, name: str, max_bytes: int,
                  headings: list[Heading] | None = None) -> Iterator[str]:
    """The text of each spine document with text in it, in reading order, each read when it is asked for; its
    ``h1``-``h6`` headings go into ``headings`` with the chapter's number as their page.

    Chapters are unpacked only while their unpacked sizes add up to at most ``max_bytes`` (a chapter's text is
    less than its markup), so a zip bomb cannot make this allocate more than the text limit."""
    opf_path = _package_path(archive, name)
    opf = _xml(archive, opf_path, name)
    base = posixpath.dirname(opf_path)
    manifest = {
        item.get("id"): (_resolve(base, item.get("href", "")), item.get("media-type", ""))
        for item in _children(opf, "manifest", "item")
    }
    spine = [ref.get("idref") for ref in _children(opf, "spine", "itemref") if ref.get("linear", "yes") != "no"]
    if not spine:
        raise InputError(f"{name}: the EPUB has no reading order (an empty OPF spine)")
    protected = _encrypted_members(archive)
    found = False
    read = chapters = 0
    for idref in spine:
        if idref not in manifest:
            continue
        path, media_type = manifest[idref]
        if media_type not in HTML_TYPES or path not in archive.NameToInfo:
            continue
        if path in protected:
            raise InputError(f"{name}: the EPUB is DRM-protected ({path} is encrypted); pagemind reads DRM-free books")
        read += archive.getinfo(path).file_size
        if read > max_bytes:
            raise InputTooLarge(f"{name}: the EPUB's chapters are over the {max_bytes / 1e6:.1f} MB text limit "
                                f"(raise it with --max-bytes or PAGEMIND_MAX_BYTES)")
        raw = archive.read(path)
        markup = raw.decode(declared_encoding(raw), errors="replace")
        text = html_to_text(markup)
        if text.strip():
            if headings is not None:
                headings.extend(Heading(h.level, h.title, chapters + 1) for h in html_headings(markup))
            chapters += 1
            found = True
            yield text
    if not found:
        raise InputError(f"{name}: the EPUB's spine has no chapter with text")


def _package_path(archive: zipfile.ZipFile, name: str) -> str:
    """Where the OPF package document is, from META-INF/container.xml (else the only .opf in the archive)."""
    if CONTAINER in archive.NameToInfo:
        for rootfile in _xml(archive, CONTAINER, name).iter():
            if _local(rootfile.tag) == "rootfile" and rootfile.get("full-path"):
                path = unquote(rootfile.get("full-path", ""))
                if path in archive.NameToInfo:
                    return path
    candidates = [n for n in archive.namelist() if n.lower().endswith(".opf")]
    if len(candidates) == 1:
        return candidates[0]
    raise InputError(f"{name}: not a readable EPUB (no OPF package document found via {CONTAINER})")


def _encrypted_members(archive: zipfile.ZipFile) -> set[str]:
    """Archive paths that META-INF/encryption.xml lists (fonts are often obfuscated; chapters mean DRM)."""
    if ENCRYPTION not in archive.NameToInfo:
        return set()
    try:
        root = ET.fromstring(archive.read(ENCRYPTION))
    except ET.ParseError:
        return set()
    return {unquote(ref.get("URI", "")) for ref in root.iter() if _local(ref.tag) == "CipherReference"}


def _xml(archive: zipfile.ZipFile, path: str, name: str) -> ET.Element:
    try:
        return ET.fromstring(archive.read(path))
    except ET.ParseError as err:
        raise InputError(f"{name}: not a readable EPUB ({path}: {err})") from None


def _children(root: ET.Element, parent: str, child: str) -> list[ET.Element]:
    """Elements named ``child`` under the first element named ``parent``, whatever their namespaces."""
    for element in root.iter():
        if _local(element.tag) == parent:
            return [c for c in element if _local(c.tag) == child]
    return []


def _resolve(base: str, href: str) -> str:
    return posixpath.normpath(posixpath.join(base, unquote(href.split("#", 1)[0])))


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]
