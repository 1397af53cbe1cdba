"""A small well-behaved MCP server over stdio, without the SDK (plain JSON-RPC lines): for the
tests of what starts a server (tests/all/launch_gate.rs) and for the MCP source bench
(tests/benches/mcp.rs), where it is the server behind `mcp__plain__*`.

Tools (both read-only):
  Noop   answers "ok"
  env    answers the value of the variable its input names (`{"name": "X"}`), or "(unset)"

With PLAIN_STARTED set, it appends a line to the file it names when it starts (a variable, not
an argument: a path among a server's arguments is a file it runs, pinned).
"""

import json
import os
import sys

if os.environ.get("PLAIN_STARTED"):
    with open(os.environ["PLAIN_STARTED"], "a") as f:
        f.write("started\n")


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


TOOLS = [
    {
        "name": "Noop",
        "description": "Does nothing.",
        "inputSchema": {"type": "object"},
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "env",
        "description": "The value of an environment variable.",
        "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
        "annotations": {"readOnlyHint": True},
    },
]

for line in sys.stdin:
    request = json.loads(line)
    if "id" not in request:
        continue
    method = request.get("method")
    params = request.get("params") or {}
    if method == "initialize":
        result = {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "plain", "version": "0"},
        }
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        name = params.get("name")
        arguments = params.get("arguments") or {}
        if name == "Noop":
            text = "ok"
        elif name == "env":
            text = os.environ.get(str(arguments.get("name")), "(unset)")
        else:
            send({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32602, "message": "no such tool"}})
            continue
        result = {"content": [{"type": "text", "text": text}]}
    elif method == "ping":
        result = {}
    else:
        send({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": "no such method"}})
        continue
    send({"jsonrpc": "2.0", "id": request["id"], "result": result})
