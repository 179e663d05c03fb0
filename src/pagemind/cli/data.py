"""``pagemind data list`` and ``pagemind data get NAME``: benchmark data from its official source.

Registered at the bottom of ``cli/main.py``.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from ..errors import DatasetError
from ..eval.datasets import data_origin, data_root
from ..eval.sources import ENV_MIRROR, Progress, SourceFile, get, load_sources
from .main_errors import handle_errors


def _size(n: int | None) -> str:
    if n is None:
        return "size unknown"
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:,} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1000  # type: ignore[assignment]
    return ""


@click.group("data")
def data_group() -> None:
    """Benchmark data for `pagemind eval`: where each set comes from, and getting it.

    \b
    pagemind data list
    pagemind data get quality
    pagemind data get qmsum --data ~/benchmarks
    """


@data_group.command("list")
@click.option("--data", help="data root [env PAGEMIND_DATA; default: the user data directory]")
@handle_errors
def list_sources(data: str | None) -> None:
    """Every set `data get` can download: its source, licence, size, and whether it is installed."""
    root = data_root(data)
    click.echo(f"data root: {root} ({data_origin(data)})")
    sources = load_sources()
    for source in sources.values():
        present, folder = source.present(root), root / source.folder
        state = (f"installed in {folder}" if len(present) == len(source.targets)
                 else f"partly installed in {folder} ({len(present)} of {len(source.targets)} files)" if present
                 else "not installed")
        click.echo(f"{source.name:13} {state}")
        click.echo(f"  {source.title}")
        sized = [f.size for f in source.files if f.size is not None]
        size = (_size(source.size) if source.size is not None else "size unknown" if not sized else
                f"{_size(sum(sized))} for {len(sized)} of them, the others of unknown size")
        click.echo(f"  from {source.homepage} ({len(source.files)} file{'s' * (len(source.files) > 1)}, {size})")
        click.echo(f"  licence: {source.licence}")
        if not all(f.checked_by for f in source.files):
            click.echo("  checksums: none recorded for some files (`data get` prints the SHA-256; keep them with "
                       "--trust-first-download)")
        click.echo(f"  cite: {source.citation}")
    from ..eval.sets import datasets

    others = [spec for name, spec in datasets().items() if name not in sources]
    if others:
        click.echo("\nsets `data get` does not fetch (generated, or read from a copy you name with --data):")
        for spec in others:
            how = "generated; --data: your own files" if not spec.needs_data else f"--data PATH ({spec.default_path})"
            click.echo(f"{spec.name:13} {spec.description} [{how}]" + (f"; cite: {spec.citation}" if spec.citation
                                                                       else ""))
    click.echo("\n`pagemind data get NAME` downloads a set (checked against the recorded checksums).")


@data_group.command("get")
@click.argument("names", nargs=-1, required=True, metavar="NAME...")
@click.option("--data", help="data root to put it in [env PAGEMIND_DATA; default: the user data directory]")
@click.option("--force", is_flag=True, help="download again even when the files are there")
@click.option("--trust-first-download", is_flag=True,
              help="keep a file that has no recorded checksum (its SHA-256 is printed: compare it yourself)")
@handle_errors
def get_command(names: tuple[str, ...], data: str | None, force: bool, trust_first_download: bool) -> None:
    """Download NAME (a set of `pagemind data list`) from its official source, check it, and put it under
    the data root the way `pagemind eval NAME` reads it. Needs network access; nothing half-written is kept."""
    sources = load_sources()
    unknown = [n for n in names if n not in sources]
    if unknown:
        raise DatasetError(f"no download source for {', '.join(unknown)} (have: {', '.join(sources)})")
    root = data_root(data)
    mirror = os.environ.get(ENV_MIRROR) or None
    for name in names:
        source = sources[name]
        folder = root / source.folder
        if not force and len(source.present(root)) == len(source.targets):
            click.echo(f"{name}: already in {folder} (--force downloads it again)")
            continue
        click.echo(f"{name}: {source.title}", err=True)
        click.echo(f"  licence: {source.licence}", err=True)
        try:
            fetched = get(source, root, force=force, trust_first_download=trust_first_download, mirror=mirror,
                          progress=_bar)
        except KeyboardInterrupt:
            click.echo("interrupted: the unfinished download was deleted; run the same command to start again",
                       err=True)
            sys.exit(130)
        for f in fetched:
            check = (f"checked: {f.checked_by}" if f.checked_by
                     else "NO recorded checksum: kept on --trust-first-download")
            click.echo(f"  {f.url}\n    {_size(f.size)}, SHA-256 {f.sha256} ({check})", err=True)
        click.echo(f"{name}: ready in {folder} (`pagemind eval {name} -m METHOD`)")


def _bar(file: SourceFile) -> Progress | None:
    """A byte progress bar on stderr for one file (none when stderr is not a terminal)."""
    if not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    bar: Any = None

    def update(done: int, total: int | None) -> None:
        nonlocal bar
        if bar is None:
            bar = tqdm(total=total or file.size, desc=f"  {file.name}", unit="B", unit_scale=True,
                       file=sys.stderr, leave=False)
        bar.update(done - bar.n)
        if done >= (total or file.size or done + 1):
            bar.close()

    return update

