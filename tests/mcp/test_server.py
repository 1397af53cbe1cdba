"""`toolhost mcp` driven end to end by the official Python MCP SDK, over stdio and over
streamable HTTP.

Run by the Rust test `mcp::python_sdk_end_to_end` (tests/all/mcp.rs), which builds the binary,
writes the test guests to a directory and passes:

    python test_server.py TOOLHOST_BINARY TOOLS_DIR

Exits non-zero if any check fails; the last line is "N passed, N failed".
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

TOOLHOST = str(Path(sys.argv[1]).resolve())
TOOLS = Path(sys.argv[2]).resolve()
RESULTS: list[tuple[str, str | None]] = []


def text(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


class Server:
    """How to reach one `toolhost mcp`: a stdio command, or an HTTP URL."""

    def __init__(self, transport: str, workspace: Path, tools: Path, extra: list[str] | None = None):
        self.transport = transport
        self.workspace = workspace
        self.tools = tools
        self.args = [
            "--workspace", str(workspace), "--tools", str(tools),
            "--allow", "Panic", "--allow", "Progress", "--allow", "Write(allowed/**)",
            *(extra or []), "mcp",
        ]
        self.env = {**os.environ, "TOOLHOST_CACHE_DIR": os.environ.get("TOOLHOST_CACHE_DIR", str(workspace / ".cache"))}
        self.process: subprocess.Popen[bytes] | None = None
        self.url: str | None = None
        # The bearer token of the HTTP server, read from the file it names on stderr.
        self.token: str | None = None

    def __enter__(self) -> Server:
        if self.transport == "http":
            self.process = subprocess.Popen(
                [TOOLHOST, *self.args, "--http", "127.0.0.1:0"],
                cwd=self.workspace, env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            assert self.process.stderr is not None
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                line = self.process.stderr.readline().decode()
                if not line:
                    raise RuntimeError(f"toolhost mcp --http exited: {self.process.wait()}")
                m = re.match(r"toolhost mcp: token in (.+)$", line.rstrip("\n"))
                if m:
                    self.token = Path(m.group(1)).read_text().strip()
                m = re.search(r"listening on (http://\S+)", line)
                if m:
                    self.url = m.group(1)
                    break
            assert self.url, "no listening line"
            assert self.token, "no token line before the listening line"
            # Keep draining stderr so the server never blocks on a full pipe.
            import threading

            threading.Thread(target=lambda: [None for _ in self.process.stderr], daemon=True).start()  # type: ignore[union-attr]
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)

    def client(self, token: str | None = "", **kwargs: Any) -> Client:
        """A client of this server; over HTTP it sends the server's token, or `token` when
        given (None: no Authorization header at all)."""
        kwargs.setdefault("mode", "legacy")
        if self.transport == "http":
            assert self.url is not None
            return Client(http_transport(self.url, self.token if token == "" else token), **kwargs)
        params = StdioServerParameters(command=TOOLHOST, args=self.args, env=self.env, cwd=str(self.workspace))
        return Client(params, **kwargs)


@contextlib.asynccontextmanager
async def http_transport(url: str, token: str | None):
    """The SDK's streamable HTTP transport, with `Authorization: Bearer TOKEN` on every request."""
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    async with create_mcp_http_client(headers=headers) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            yield streams


async def check_initialize_and_list(server: Server) -> None:
    async with server.client() as client:
        assert client.server_info is not None and client.server_info.name == "toolhost", client.server_info
        caps = client.server_capabilities
        assert caps.tools is not None and caps.tools.list_changed, caps
        tools = {t.name: t for t in (await client.list_tools()).tools}
        for name in ["Read", "Write", "Edit", "Glob", "Grep", "LS", "Sleep", "Progress", "Panic"]:
            assert name in tools, f"{name} missing from {sorted(tools)}"
        read, write = tools["Read"], tools["Write"]
        assert "file_path" in read.input_schema["properties"], read.input_schema
        assert read.description
        assert read.annotations is not None and read.annotations.read_only_hint is True
        assert read.annotations.idempotent_hint is True and read.annotations.destructive_hint is False
        assert write.annotations is not None and write.annotations.read_only_hint is False
        assert write.annotations.destructive_hint is True


async def check_auto_negotiation(server: Server) -> None:
    # The SDK's default probes server/discover first; toolhost speaks the handshake era, so the
    # client must fall back to initialize and work.
    async with server.client(mode="auto") as client:
        assert client.protocol_version == "2025-11-25", client.protocol_version
        result = await client.call_tool("Read", {"file_path": "hello.txt"})
        assert not result.is_error and "hello from the workspace" in text(result), result


async def check_calls(server: Server) -> None:
    async with server.client() as client:
        ok = await client.call_tool("Read", {"file_path": "hello.txt"})
        assert not ok.is_error and "hello from the workspace" in text(ok), ok

        bad = await client.call_tool("Read", {"file_path": 3})
        assert bad.is_error and "InputValidationError" in text(bad), bad

        trap = await client.call_tool("Panic", {})
        assert trap.is_error and "boom: the tool panicked on purpose" in text(trap), trap

        denied = await client.call_tool("Write", {"file_path": "notes/x.txt", "content": "no"})
        message = text(denied)
        assert denied.is_error and "add the rule" in message and "Write(" in message, message
        assert not (server.workspace / "notes" / "x.txt").exists()

        allowed = await client.call_tool("Write", {"file_path": "allowed/y.txt", "content": "yes"})
        assert not allowed.is_error, allowed
        assert (server.workspace / "allowed" / "y.txt").read_text() == "yes"

        try:
            await client.call_tool("NoSuchTool", {})
        except MCPError as e:
            assert e.error.code == -32602 and "NoSuchTool" in e.error.message, e.error
        else:
            raise AssertionError("an unknown tool must be a JSON-RPC error (-32602)")


async def check_elicitation(server: Server) -> None:
    asked: list[str] = []

    async def answer(decision: str):
        async def callback(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
            asked.append(params.message)
            if decision == "decline":
                return types.ElicitResult(action="decline")
            return types.ElicitResult(action="accept", content={"decision": decision})

        return callback

    async with server.client(elicitation_callback=await answer("allow once")) as client:
        result = await client.call_tool("Write", {"file_path": "asked/a.txt", "content": "a"})
        assert not result.is_error, result
        assert (server.workspace / "asked" / "a.txt").read_text() == "a"
        assert asked and "Write" in asked[-1], asked

    async with server.client(elicitation_callback=await answer("decline")) as client:
        result = await client.call_tool("Write", {"file_path": "asked/b.txt", "content": "b"})
        assert result.is_error and "denied by the user" in text(result), result
        assert not (server.workspace / "asked" / "b.txt").exists()


def leaves(e: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups, or `e` itself."""
    if isinstance(e, BaseExceptionGroup):
        return [leaf for inner in e.exceptions for leaf in leaves(inner)]
    return [e]


async def check_token(server: Server) -> None:
    for token, why in [(None, "without a token"), ("0" * 64, "with a wrong token")]:
        try:
            with anyio.fail_after(30):
                async with server.client(token=token) as client:
                    await client.list_tools()
        except Exception as e:  # noqa: BLE001 - the SDK wraps the refusal in task-group errors
            errors = [x for x in leaves(e) if isinstance(x, MCPError)]
            assert errors, f"{why}: not the server's refusal: {e!r}"
            message = errors[0].error.message
            assert "Unauthorized" in message and "Authorization: Bearer" in message, message
        else:
            raise AssertionError(f"the server answered {why}")
    async with server.client() as client:
        result = await client.call_tool("Read", {"file_path": "hello.txt"})
        assert not result.is_error and "hello from the workspace" in text(result), result


async def check_always_is_per_session(server: Server) -> None:
    """"Allow for this session" in session A lets A's later calls through without asking, even
    after a reload of the config; session B (no elicitation) is still denied."""
    asked: list[str] = []

    async def always(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        schema = params.requested_schema["properties"]["decision"]  # type: ignore[union-attr]
        choice = "allow for this session"
        assert choice in schema["enum"], schema
        return types.ElicitResult(action="accept", content={"decision": choice})

    async with server.client(elicitation_callback=always) as a:
        first = await a.call_tool("Write", {"file_path": "always/1.txt", "content": "1"})
        assert not first.is_error, first
        assert len(asked) == 1, asked
        second = await a.call_tool("Write", {"file_path": "always/2.txt", "content": "2"})
        assert not second.is_error and len(asked) == 1, (second, asked)

        async with server.client() as b:
            denied = await b.call_tool("Write", {"file_path": "always/b.txt", "content": "b"})
            message = text(denied)
            assert denied.is_error and "add the rule" in message, message
            assert not (server.workspace / "always" / "b.txt").exists()

        # A config change the tools can see: once Read of secret.txt is denied, the reload
        # has happened (the runtime was replaced).
        (server.workspace / "secret.txt").write_text("secret\n")
        (server.workspace / "toolhost.toml").write_text('[permissions]\ndeny = ["Read(secret.txt)"]\n')
        with anyio.fail_after(30):
            while True:
                read = await a.call_tool("Read", {"file_path": "secret.txt"})
                if read.is_error:
                    assert "denied" in text(read), read
                    break
                await anyio.sleep(0.2)
        third = await a.call_tool("Write", {"file_path": "always/3.txt", "content": "3"})
        assert not third.is_error, third
        assert len(asked) == 1, f"session A was asked again after the reload: {asked}"
        assert (server.workspace / "always" / "3.txt").read_text() == "3"


async def check_progress(server: Server) -> None:
    seen: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message))

    async with server.client() as client:
        result = await client.call_tool("Progress", {}, progress_callback=on_progress)
        assert not result.is_error and text(result) == "done", result
        assert [m for _, m in seen] == ["step 1", "step 2"], seen
        assert seen[0][0] < seen[1][0], seen


async def check_cancellation(server: Server) -> None:
    async with server.client() as client:
        started = time.monotonic()
        with anyio.move_on_after(1.0) as scope:
            await client.call_tool("Sleep", {"ms": 20000})
        assert scope.cancelled_caught, "the call should have been cancelled"
        # The interrupted Sleep no longer runs: an unsafe call (which must wait for every
        # running call) gets through at once, and the server keeps serving.
        result = await client.call_tool("Write", {"file_path": "allowed/after-cancel.txt", "content": "z"})
        assert not result.is_error, result
        assert time.monotonic() - started < 10, "the cancelled call kept running"


async def check_concurrency(server: Server) -> None:
    n, ms = 5, 1500
    async with server.client() as client:
        results: list[types.CallToolResult] = []

        async def sleep() -> None:
            results.append(await client.call_tool("Sleep", {"ms": ms}))

        started = time.monotonic()
        async with anyio.create_task_group() as group:
            for _ in range(n):
                group.start_soon(sleep)
        elapsed = time.monotonic() - started
        assert len(results) == n and all(not r.is_error for r in results), results
        # One after another they would take n * ms = 7.5 s.
        assert elapsed < n * ms / 1000 * 0.66, f"{n} concurrent {ms} ms sleeps took {elapsed:.2f} s"
        print(f"    {n} concurrent {ms} ms sleeps: {elapsed:.2f} s ({server.transport})")


async def check_list_changed(server: Server) -> None:
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with server.client(message_handler=on_message) as client:
        before = {t.name for t in (await client.list_tools()).tools}
        assert "Spin" not in before
        shutil.copy(TOOLS.parent / "extra" / "spin.wasm", server.tools / "spin.wasm")
        with anyio.fail_after(20):
            await changed.wait()
        after = {t.name for t in (await client.list_tools(cache_mode="bypass")).tools}
        assert "Spin" in after, after


# Checks of the HTTP transport alone.
HTTP_ONLY = {check_token}


async def run(name: str, check: Any, server: Server) -> None:
    label = f"{server.transport}: {name}"
    try:
        with anyio.fail_after(120):
            await check(server)
        RESULTS.append((label, None))
        print(f"ok   {label}", flush=True)
    except BaseException as e:  # noqa: BLE001 - every failure is reported, then the next check runs
        RESULTS.append((label, "".join(traceback.format_exception(e))))
        print(f"FAIL {label}\n{RESULTS[-1][1]}", flush=True)


async def main() -> None:
    checks = [
        ("initialize and tools/list", check_initialize_and_list),
        ("discover falls back to initialize", check_auto_negotiation),
        ("calls: success, schema failure, trap, denial, unknown tool", check_calls),
        ("ask through elicitation", check_elicitation),
        ("progress", check_progress),
        ("cancellation", check_cancellation),
        ("concurrent safe calls", check_concurrency),
        ("tools/list_changed after a new tool appears", check_list_changed),
        ("the bearer token is required over HTTP", check_token),
        ("allow for this session: not for another session, kept across a reload", check_always_is_per_session),
    ]
    for transport in ["stdio", "http"]:
        with tempfile.TemporaryDirectory() as tmp:
            workspace = Path(tmp) / "ws"
            workspace.mkdir()
            (workspace / "hello.txt").write_text("hello from the workspace\n")
            tools = Path(tmp) / "tools"
            shutil.copytree(TOOLS, tools)
            with Server(transport, workspace, tools) as server:
                for name, check in checks:
                    if check in HTTP_ONLY and transport != "http":
                        continue
                    await run(name, check, server)


if __name__ == "__main__":
    anyio.run(main)
    failed = sum(1 for _, e in RESULTS if e)
    print(f"{len(RESULTS) - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
