"""``pagemind mcp``: pagemind's tools for an MCP client (Claude Desktop, an IDE, any agent) over stdio."""

from __future__ import annotations

from typing import Any

import click

from .main_errors import handle_errors
from .options import SectionedCommand, llm_options, session


@click.command("mcp", cls=SectionedCommand, short_help="Serve pagemind's tools to an MCP client over stdio")
@llm_options
@click.pass_context
@handle_errors
def mcp_command(ctx: click.Context, encoding: str, **kw: Any) -> None:
    """Serve pagemind's tools over stdio to an MCP client: add a document, ask it (any method, with its options),
    list documents, show a run's trace; create agents, send them messages, read their core memory, search their
    archival and recall memory. The tools act as the local user. stdout carries the protocol; logs go to stderr.

    \b
    Claude Desktop (claude_desktop_config.json), or any client that starts a command:
      {"mcpServers": {"pagemind": {"command": "pagemind", "args": ["mcp"]}}}
    pagemind mcp --llm openai:MODEL --base-url http://localhost:8000/v1
    """
    from ..server import mcp

    with session(ctx, kw) as pm:
        mcp.run_stdio(pm)
