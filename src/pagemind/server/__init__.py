"""``pagemind serve``: the HTTP API (:mod:`.app`), the MCP server (:mod:`.mcp`) and the web trace viewer
(``static/``), a thin layer over :class:`pagemind.Pagemind`. FastAPI and uvicorn are imported only here."""
