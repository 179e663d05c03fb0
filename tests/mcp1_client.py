"""An MCP client written against the ``mcp`` 1.x SDK (``ClientSession``, camelCase result fields), run by
``tests/test_mcp_versions.py`` in the side environment where ``mcp`` 1.x is installed. It walks pagemind's tools,
resources and prompt and prints what it saw as one JSON object; the test asserts on it.

    python tests/mcp1_client.py stdio COMMAND ARG...   # a server started over stdio
    python tests/mcp1_client.py http URL KEY           # a streamable HTTP endpoint
"""

from __future__ import annotations

import json
import os
import sys
from contextlib import AsyncExitStack
from typing import Any

import anyio
import mcp
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client
from pydantic import AnyUrl

STORY = ("Wren keeps the lamps of the tower on the northern cape.\n\nAbel, her brother, sails the ferry.\n\n"
         "The map was found under the third stair by Wren in the winter of the storm.")


async def walk(session: ClientSession) -> dict[str, Any]:
    seen: dict[str, Any] = {"sdk": mcp.__version__ if hasattr(mcp, "__version__") else None}
    init = await session.initialize()
    seen["server"] = init.serverInfo.name
    tools = {t.name: t for t in (await session.list_tools()).tools}
    seen["tools"] = sorted(tools)
    seen["ask_required"] = tools["ask"].inputSchema.get("required")
    seen["read_only"] = tools["list_documents"].annotations.readOnlyHint if tools["list_documents"].annotations \
        else None
    added = await session.call_tool("add_document", {"text": STORY, "name": "cape.txt"})
    seen["added"] = {"error": added.isError, "data": added.structuredContent, "text": added.content[0].text}
    heard: list[str | None] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        heard.append(message)

    doc_id = (added.structuredContent or {}).get("id")
    answered = await session.call_tool("ask", {"document_id": doc_id, "question": "Who keeps the lamps?",
                                               "method": "full"}, progress_callback=progress)
    seen["answer"] = {"error": answered.isError, "data": answered.structuredContent,
                      "text": answered.content[0].text}
    seen["progress"] = heard
    bad = await session.call_tool("ask", {"document_id": doc_id, "question": "q", "method": "full",
                                          "method_options": {"budget": 0}})
    seen["bad"] = {"error": bad.isError, "text": bad.content[0].text}
    templates = await session.list_resource_templates()
    seen["templates"] = sorted(t.uriTemplate for t in templates.resourceTemplates)
    read = await session.read_resource(AnyUrl(f"pagemind://documents/{doc_id}"))
    seen["resource"] = json.loads(read.contents[0].text)  # type: ignore[union-attr]
    prompt = await session.get_prompt("ask-with-citations", {"question": "Who?", "document_id": doc_id})
    seen["prompt"] = prompt.messages[0].content.text  # type: ignore[union-attr]
    return seen


async def main(argv: list[str]) -> dict[str, Any]:
    async with AsyncExitStack() as stack:
        if argv[0] == "stdio":
            params = StdioServerParameters(command=argv[1], args=argv[2:], env=dict(os.environ))
            read, write = await stack.enter_async_context(stdio_client(params, errlog=sys.stderr))
        else:
            headers = {"Authorization": f"Bearer {argv[2]}"} if len(argv) > 2 and argv[2] else None
            read, write, _ = await stack.enter_async_context(streamablehttp_client(argv[1], headers=headers))
        session = await stack.enter_async_context(ClientSession(read, write))
        return await walk(session)


if __name__ == "__main__":
    print(json.dumps(anyio.run(main, sys.argv[1:])))
