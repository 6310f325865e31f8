"""A tiny MCP server for the proxy's trace tests: it tells what `_meta` each call carried.

`meta` answers the call's `_meta` as JSON; `big` answers 20,000 characters (checked in by the
proxy) that begin with the same JSON. Stdio by default; `--http PORT` for streamable HTTP.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import anyio
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp_types import CallToolRequestParams, CallToolResult, ListToolsResult, TextContent, Tool

SECRET = "Zephyr-Quokka-7731 is the confidential clause."


async def call_tool(ctx: Any, params: CallToolRequestParams) -> CallToolResult:
    meta = json.dumps(dict(params.meta or {}), sort_keys=True)
    if params.name == "meta":
        return CallToolResult(content=[TextContent(text=meta)])
    body = (f"{SECRET}\n\n" * 500)[:20_000]
    return CallToolResult(content=[TextContent(text=f"{meta}\n\n{body}")])


async def list_tools(ctx: Any, params: Any) -> ListToolsResult:
    schema = {"type": "object"}
    return ListToolsResult(
        tools=[Tool(name="meta", input_schema=schema), Tool(name="big", input_schema=schema)]
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int)
    args = parser.parse_args()
    app: Server[Any] = Server("meta-upstream", on_list_tools=list_tools, on_call_tool=call_tool)
    if args.http is None:

        async def serve() -> None:
            async with stdio_server() as (read, write):
                await app.run(read, write, app.create_initialization_options())

        anyio.run(serve)
        return
    import uvicorn

    uvicorn.run(
        app.streamable_http_app(host="127.0.0.1"), host="127.0.0.1", port=args.http,
        log_level="warning",
    )  # fmt: skip


if __name__ == "__main__":
    main()
