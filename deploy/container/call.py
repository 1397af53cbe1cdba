"""Call a tool of a running `toolhost mcp --http` with the official Python MCP SDK: the check
that deploy/container/test.sh makes of the image.

    python call.py URL TOKEN TOOL JSON_ARGUMENTS

Prints the tool's text; exits 1 if the call failed or the tool is not listed.
"""

from __future__ import annotations

import json
import sys

import anyio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


async def main(url: str, token: str, tool: str, arguments: str) -> int:
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http:
        async with Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
            listed = [t.name for t in (await client.list_tools()).tools]
            if tool not in listed:
                print(f"{tool} is not among the tools: {listed}", file=sys.stderr)
                return 1
            result = await client.call_tool(tool, json.loads(arguments))
            text = "".join(getattr(block, "text", "") for block in result.content)
            print(text)
            return 1 if result.is_error else 0


if __name__ == "__main__":
    sys.exit(anyio.run(main, *sys.argv[1:5]))
