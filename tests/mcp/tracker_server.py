"""An MCP server built with the official Python SDK (`MCPServer`, mcp 2.x): the server side
of toolhost's MCP client tests. Over stdio by default; `--http PORT` serves streamable HTTP.

Tools:
- `search` (read-only): the issues whose title contains `query`, one per line;
- `create` (writes): appends an issue to the file named by TRACKER_DB, answers its number;
- `boom`: fails (isError), for error results;
- `grow`: adds the tool `close` to the list and sends `tools/list_changed`, for a list that
  changes mid-run;
- `die`: the server exits at once, for a server that dies mid-run;
- `assign`: logs, reports progress, then asks the user (elicitation) whom to assign issue #1
  to, and answers what they said.
"""

import os
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

ISSUES = ["login fails on Safari", "crash when saving", "login page slow"]

server = MCPServer("tracker")


@server.tool(description="Find issues whose title contains the query.", annotations=ToolAnnotations(readOnlyHint=True))
def search(query: str) -> str:
    return "\n".join(i for i in ISSUES if query.lower() in i.lower()) or "no issue matches"


@server.tool(description="File a new issue.")
def create(title: str) -> str:
    with open(os.environ["TRACKER_DB"], "a", encoding="utf-8") as db:
        db.write(title + "\n")
    return f"issue #{len(ISSUES) + 1} filed: {title}"


@server.tool(description="Always fails.")
def boom() -> str:
    raise ValueError("the tracker is down")


@server.tool(description="Adds the tool `close` to the server's list, and says so (tools/list_changed).")
async def grow(ctx: Context) -> str:
    def close(number: int) -> str:
        return f"issue #{number} closed"

    server.add_tool(close, description="Close an issue.")
    await ctx.session.send_tool_list_changed()
    return "the list has grown"


@server.tool(description="Answers with 17 MiB of text: more than a client reads as one message.")
def huge() -> str:
    return "x" * (17 * 1024 * 1024)


@server.tool(description="Ends the server.")
def die() -> str:
    os._exit(3)


class Assignee(BaseModel):
    who: str = Field(description="Who takes the issue")
    urgent: bool = Field(default=False, description="Whether it is urgent")


@server.tool(description="Asks the user whom to assign issue #1 to.")
async def assign(ctx: Context) -> str:
    await ctx.info("assigning issue #1")
    await ctx.report_progress(1, 2, "asking whom")
    answer = await ctx.elicit(message="Whom should issue #1 go to?", schema=Assignee)
    if answer.action == "accept":
        return f"issue #1 assigned to {answer.data.who} (urgent: {answer.data.urgent})"
    return f"not assigned ({answer.action})"


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
