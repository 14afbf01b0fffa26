"""A client from another ecosystem: the official Python MCP SDK talks to mcp-nextcloud.

Usage: python list_and_call.py MCP_URL BEARER
Lists the tools, calls files_list on the root, and prints one JSON object on stdout:
{"tools": [...names], "paths": [...], "is_error": bool}. Exit status 0 on success.
"""

import json
import sys

import anyio
import httpx2
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client


async def main(url: str, bearer: str) -> None:
    headers = {"Authorization": f"Bearer {bearer}"}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = await session.list_tools()
                result = await session.call_tool("files_list", {"path": ""})
                entries = (result.structured_content or {}).get("entries", [])
                print(json.dumps({
                    "tools": sorted(t.name for t in tools.tools),
                    "paths": sorted(e["path"] for e in entries),
                    "is_error": bool(result.is_error),
                }))


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])
