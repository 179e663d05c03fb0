"""``pagemind serve``: the HTTP API, the MCP endpoint and the web viewer over one session (docs/api.md)."""

from __future__ import annotations

from typing import Any

import click

from ..errors import ConfigError
from ..server.net import is_loopback
from .main_errors import handle_errors
from .options import llm_options, session


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="address to bind (anything but loopback "
                                                                      "needs API keys)")
@click.option("--port", type=int, default=8283, show_default=True)
@click.option("--auth", type=click.Choice(["auto", "keys", "none"]), default="auto", show_default=True,
              help="keys: every request carries a user's API key; none: every request is the user 'local' "
                   "(loopback only); auto: keys once `pagemind users create` made a user")
@click.option("--workers", type=int, default=16, show_default=True, help="runs (index, ask, agent turns) at once")
@click.option("--keepalive", type=float, default=15.0, show_default=True,
              help="seconds of silence after which an event stream sends a keep-alive comment")
@click.option("--max-body", type=int, envvar="PAGEMIND_MAX_BODY", default=None,
              help="bytes of a request body other than an upload (413 beyond; default: 2 x max_bytes + 1 MiB)")
@click.option("--allowed-host", "allowed_hosts", multiple=True, envvar="PAGEMIND_ALLOWED_HOSTS",
              help="a host name requests may name and pages may come from besides loopback (behind a proxy; "
                   "repeat it; the env var takes names separated by spaces)")
@click.option("--consolidate-every", type=click.FloatRange(min=0), default=60.0, show_default=True,
              help="seconds between looks for agents due a background memory consolidation (their consolidate_idle "
                   "option); 0: never")
@click.option("--log-level", default="warning", show_default=True, help="uvicorn's log level")
@llm_options
@click.pass_context
@handle_errors
def serve(ctx: click.Context, host: str, port: int, auth: str, workers: int, keepalive: float, max_body: int | None,
          allowed_hosts: tuple[str, ...], consolidate_every: float, log_level: str, encoding: str,
          **kw: Any) -> None:
    """Serve the HTTP API (OpenAPI at /docs), the MCP endpoint (/mcp) and the web trace viewer (/).

    \b
    pagemind users create ann                     # prints ann's API key once
    pagemind serve --port 8283
    curl -H "Authorization: Bearer $KEY" -F file=@book.txt localhost:8283/v1/documents
    pagemind serve --llm openai:qwen --base-url http://localhost:8000/v1 --workers 32
    """
    try:
        import uvicorn

        from ..server.app import create_app
    except ImportError as err:
        raise ConfigError(f"pagemind serve needs the 'serve' extra: pip install 'pagemind[serve]' ({err})") from None
    pm = session(ctx, kw)
    try:
        if max_body is not None and max_body < 1024:
            raise ConfigError(f"--max-body {max_body}: at least 1024 bytes")
        app = create_app(pm, auth=auth, keepalive=keepalive, workers=workers, max_body=max_body,
                         allowed_hosts=tuple(h for given in allowed_hosts for h in given.split()),
                         consolidate_every=consolidate_every)
    except ImportError as err:
        pm.close()
        raise ConfigError(f"pagemind serve needs the 'serve' extra: pip install 'pagemind[serve]' ({err})") from None
    except BaseException:
        pm.close()
        raise
    service = app.state.service
    if service.auth == "none" and not is_loopback(host):
        service.close()
        pm.close()
        raise ConfigError(f"refusing to serve {host} without API keys: create a user (pagemind users create NAME) "
                          "and use --auth keys, or bind 127.0.0.1")
    mode = "API keys" if service.auth == "keys" else "no keys (user 'local')"
    click.echo(f"pagemind serve on http://{host}:{port}  ({mode}; model {pm.settings.llm}; store "
               f"{pm.store.path if hasattr(pm.store, 'path') else pm.settings.store_path()})", err=True)
    try:
        uvicorn.run(app, host=host, port=port, log_level=log_level, timeout_graceful_shutdown=5)
    finally:
        pm.close()
