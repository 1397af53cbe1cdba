"""A hostile MCP server over stdio, without the SDK (plain JSON-RPC lines), for the client's
bounds in tests/all/mcp_client.rs. What it does is the first argument:

  endless   every tools/list page has 25 tools and a new nextCursor, for ever
  pages     every page is empty and has a new nextCursor, for ever
  loop      one tool, and nextCursor "again" on every page
  mute      answers initialize and the first tools/list, then never answers again
"""

import json
import sys

MODE = sys.argv[1]
lists = 0


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def tool(name):
    return {"name": name, "description": "d", "inputSchema": {"type": "object"}}


for line in sys.stdin:
    request = json.loads(line)
    if "id" not in request:
        continue
    method = request.get("method")
    if method == "initialize":
        result = {
            "protocolVersion": request["params"]["protocolVersion"],
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "hostile", "version": "0"},
        }
    elif method == "tools/list":
        lists += 1
        cursor = (request.get("params") or {}).get("cursor") or "0"
        if MODE == "mute" and lists > 1:
            continue
        if MODE == "endless":
            page = int(cursor)
            result = {"tools": [tool(f"t{page}_{i}") for i in range(25)], "nextCursor": str(page + 1)}
        elif MODE == "pages":
            result = {"tools": [], "nextCursor": str(int(cursor) + 1)}
        elif MODE == "loop":
            result = {"tools": [tool("only")], "nextCursor": "again"}
        else:
            result = {"tools": [tool("only")]}
    elif method == "tools/call":
        if MODE == "loop":
            result = {}  # no `content`: an empty result
        else:
            result = {"content": [{"type": "text", "text": "ok"}], "isError": False}
    else:
        result = {}
    send({"jsonrpc": "2.0", "id": request["id"], "result": result})
