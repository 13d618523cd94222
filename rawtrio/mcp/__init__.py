"""MCP client: the servers a session's agent selected, as tools, owned by the session.

- `manager.py` — a session's servers and their tools (`open_mcp_servers`);
- `connection.py` — one server: start, restart with backoff, stop;
- `stdio.py` — the bounded stdio transport (process group, capped log);
- `catalog.py` — tool selection, ids and the cached tool lists;
- `results.py` — `CallToolResult` → the text the model reads, plus its images;
- `importer.py` — Claude Desktop / Code `mcpServers` JSON and ACP `mcpServers` → config.

See docs/mcp.md.
"""
