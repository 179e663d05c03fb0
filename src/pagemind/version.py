"""pagemind's version (as ``pyproject.toml`` declares it): what the server, the MCP server and Letta's health report."""

VERSION = "0.1.0"

__all__ = ["VERSION"]
