"""The names pagemind's MCP server takes from the ``mcp`` SDK, from whichever major version is installed.

pagemind declares ``mcp>=1.25,<3`` so it installs beside applications pinned to 1.x. The two majors serve the same
protocol with renamed parts: 2.x's ``MCPServer`` was 1.x's ``FastMCP``, its types moved to the ``mcp_types``
package with snake_case fields (1.x's models take the wire's camelCase names and keep unknown ones as extras, so
``structured_content=`` there would be silently dropped), and the streamable HTTP settings moved from the server's
constructor to ``streamable_http_app``. Everything that differs is here; :mod:`.mcp` is written once against it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # checked against 2.x
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ResourceError, ToolError
    from mcp.server.mcpserver.tools import Tool
    from mcp_types import CallToolResult, ToolAnnotations
else:
    try:
        from mcp.server.mcpserver import Context, MCPServer
        from mcp.server.mcpserver.exceptions import ResourceError, ToolError
        from mcp.server.mcpserver.tools import Tool
        from mcp_types import CallToolResult, ToolAnnotations
    except ImportError:  # mcp 1.x
        from mcp.server.fastmcp import Context
        from mcp.server.fastmcp import FastMCP as MCPServer
        from mcp.server.fastmcp.exceptions import ResourceError, ToolError
        from mcp.server.fastmcp.tools import Tool
        from mcp.types import CallToolResult, ToolAnnotations
from mcp.server.transport_security import TransportSecuritySettings

MAJOR = 2 if MCPServer.__name__ == "MCPServer" else 1


def hints(*, read_only: bool, destructive: bool = False) -> ToolAnnotations:
    """A tool's hints, by their wire names (which both majors accept)."""
    hints: dict[str, bool] = {"readOnlyHint": read_only, "openWorldHint": False}
    if not read_only:
        hints["destructiveHint"] = destructive
    return ToolAnnotations.model_validate(hints)


def tool_result(data: dict[str, Any], text: str) -> CallToolResult:
    """A tool's result: ``text`` for the model, ``data`` as structured content."""
    return CallToolResult.model_validate({"content": [{"type": "text", "text": text}], "structuredContent": data})


def server(name: str, *, instructions: str, version: str, tools: list[Tool]) -> MCPServer:
    """The SDK's server of ``tools``."""
    if MAJOR == 2:
        return MCPServer(name, title=name, instructions=instructions, version=version, tools=tools,
                         log_level="WARNING")
    return MCPServer(name, instructions=instructions, tools=tools, log_level="WARNING")


def serve_http(made: MCPServer, max_body: int) -> None:
    """Make ``made``'s streamable HTTP transport (its ``session_manager``): stateless (every POST stands alone,
    so any replica answers it), at ``/`` of wherever it is mounted, Host/Origin left to pagemind's edge."""
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    if MAJOR == 2:
        made.streamable_http_app(streamable_http_path="/", stateless_http=True, transport_security=security,
                                 max_request_body_size=max_body)
        return
    settings: Any = made.settings  # 1.x's settings, which 2.x's type does not describe
    settings.streamable_http_path, settings.stateless_http = "/", True
    settings.transport_security, settings.max_request_body_size = security, max_body
    made.streamable_http_app()


def validate_arguments(tool: Tool, arguments: dict[str, Any]) -> None:
    """Raise pydantic's ValidationError if ``arguments`` do not fit the tool's signature."""
    meta = tool.fn_metadata
    meta.arg_model.model_validate(meta.pre_parse_json(arguments))


__all__ = ["MAJOR", "CallToolResult", "Context", "MCPServer", "ResourceError", "Tool", "ToolAnnotations",
           "ToolError", "hints", "serve_http", "server", "tool_result", "validate_arguments"]
