"""A fixture server whose resource listings the test writes on its command line (stdio).

`--name N` labels what it answers (a read of `u` is `N read u`); `--list URI` lists one
resource (in order, before the rest), `--fresh COUNT` lists COUNT more of its own
(`file:///N/fresh/<i>.txt`), `--template T` lists one resource template. Its tools:
`links` answers with resource links (`count` of its own, `file:///N/link/<i>.txt`, then each
of `uris`), `also_list` adds a URI to its listing from then on, and `heard` is every URI it
was asked to read.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

_OBJECT = {"type": "object"}
TOOLS = [
    types.Tool(name="links", input_schema=_OBJECT),
    types.Tool(name="also_list", input_schema=_OBJECT),
    types.Tool(name="heard", input_schema=_OBJECT),
]


def fresh(name: str, index: int) -> str:
    return f"file:///{name}/fresh/{index}.txt"


def server(name: str, listed: list[str], templates: list[str]) -> Server[Any]:
    heard: list[str] = []

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=[types.Resource(uri=uri, name=f"r{i}") for i, uri in enumerate(listed)]
        )

    async def list_templates(ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(uri_template=t, name=f"t{i}")
                for i, t in enumerate(templates)
            ]
        )

    async def read_resource(
        ctx: Any, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        heard.append(params.uri)
        text = types.TextResourceContents(uri=params.uri, text=f"{name} read {params.uri}")
        return types.ReadResourceResult(contents=[text])

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        args = params.arguments or {}
        content: list[types.ContentBlock] = [types.TextContent(text="ok")]
        if params.name == "links":
            own = [f"file:///{name}/link/{i}.txt" for i in range(int(args.get("count", 0)))]
            for uri in [*own, *args.get("uris", [])]:
                content.append(types.ResourceLink(uri=uri, name="link"))
        elif params.name == "also_list":
            listed.append(str(args["uri"]))
        elif params.name == "heard":
            content = [types.TextContent(text=json.dumps(heard))]
        return types.CallToolResult(content=content)

    return Server(
        f"lister-{name}",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
    )


async def _stdio(app: Server[Any]) -> None:
    async with stdio_server() as (read, write):
        await app.run(read, write, app.create_initialization_options())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", default="lister")
    parser.add_argument("--list", action="append", default=[], help="list this URI")
    parser.add_argument("--fresh", type=int, default=0, help="list this many URIs more")
    parser.add_argument("--template", action="append", default=[], help="list this template")
    args = parser.parse_args()
    listed = [*args.list, *(fresh(args.name, i) for i in range(args.fresh))]
    anyio.run(_stdio, server(args.name, listed, args.template))


if __name__ == "__main__":
    main()
