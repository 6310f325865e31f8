"""The conformance suite's fixture server, on the SDK 2.3 low-level `Server`.

`@modelcontextprotocol/conformance` calls fixed tool, resource and prompt names; this server
answers each as the suite's scenario descriptions say. `python _conformance_upstream.py`
serves stdio; `--http PORT` serves streamable HTTP on 127.0.0.1 (what the suite tests
directly, and what the proxy's HTTP upstream is). `--listed-as SCHEME` lists its resources
under `SCHEME://` rather than `test://` (and reads both), so that two fixtures can sit behind
one gateway, which refuses a URI two upstreams list; the suite reads the `test://` URIs
through each upstream's own endpoint.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata

PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAE"
    "hQGAhKmMIQAAAABJRU5ErkJggg=="
)
WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA="
_NONE = {"type": "object", "properties": {}}


def _tool(name: str, description: str, schema: dict[str, Any] | None = None) -> types.Tool:
    return types.Tool(name=name, description=description, input_schema=schema or _NONE)


def _string_args(*names: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {n: {"type": "string"} for n in names},
        "required": list(names),
    }


TOOLS = [
    _tool("test_simple_text", "Returns simple text"),
    _tool("test_image_content", "Returns an image"),
    _tool("test_audio_content", "Returns audio"),
    _tool("test_embedded_resource", "Returns an embedded resource"),
    _tool("test_multiple_content_types", "Returns text, an image and a resource"),
    _tool("test_tool_with_logging", "Logs three messages while it runs"),
    _tool("test_tool_with_progress", "Reports progress while it runs"),
    _tool("test_error_handling", "Always fails"),
    _tool("test_sampling", "Asks the client's model", _string_args("prompt")),
    _tool("test_elicitation", "Asks the user", _string_args("message")),
    _tool("test_elicitation_sep1034_defaults", "Asks the user, with defaults"),
    _tool("test_elicitation_sep1330_enums", "Asks the user, with enums"),
    _tool("test_reconnection", "Closes its SSE stream before answering"),
    _tool(
        "json_schema_2020_12_tool",
        "Tool with JSON Schema 2020-12 features",
        {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
                }
            },
            "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
            "additionalProperties": False,
        },
    ),
]


def _text(text: str, *, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=error)


async def _log(ctx: Any, text: str) -> None:
    notification = types.LoggingMessageNotification(
        params=types.LoggingMessageNotificationParams(level="info", data=text)
    )
    await ctx.session.send_notification(notification, related_request_id=ctx.request_id)


async def _elicit(ctx: Any, message: str, schema: dict[str, Any]) -> types.ElicitResult:
    request = types.ElicitRequest(
        params=types.ElicitRequestFormParams(message=message, requested_schema=schema)
    )
    metadata = ServerMessageMetadata(related_request_id=ctx.request_id)
    return await ctx.session.send_request(request, types.ElicitResult, metadata=metadata)


_DEFAULTS_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "default": "John Doe"},
        "age": {"type": "integer", "default": 30},
        "score": {"type": "number", "default": 95.5},
        "status": {
            "type": "string",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "default": True},
    },
}
_ENUMS_SCHEMA = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {
            "type": "string",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
}


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    args = params.arguments or {}
    name = params.name
    if name == "test_simple_text":
        return _text("This is a simple text response for testing.")
    if name == "test_image_content":
        return types.CallToolResult(content=[types.ImageContent(data=PNG, mime_type="image/png")])
    if name == "test_audio_content":
        return types.CallToolResult(content=[types.AudioContent(data=WAV, mime_type="audio/wav")])
    if name == "test_embedded_resource":
        resource = types.TextResourceContents(
            uri="test://embedded-resource",
            mime_type="text/plain",
            text="This is an embedded resource content.",
        )
        return types.CallToolResult(content=[types.EmbeddedResource(resource=resource)])
    if name == "test_multiple_content_types":
        resource = types.TextResourceContents(
            uri="test://mixed-content-resource",
            mime_type="application/json",
            text='{"test":"data","value":123}',
        )
        return types.CallToolResult(
            content=[
                types.TextContent(text="Multiple content types test:"),
                types.ImageContent(data=PNG, mime_type="image/png"),
                types.EmbeddedResource(resource=resource),
            ]
        )
    if name == "test_tool_with_logging":
        await _log(ctx, "Tool execution started")
        await anyio.sleep(0.05)
        await _log(ctx, "Tool processing data")
        await anyio.sleep(0.05)
        await _log(ctx, "Tool execution completed")
        return _text("Tool with logging executed successfully")
    if name == "test_tool_with_progress":
        for step in (0, 50, 100):
            await ctx.session.report_progress(step, 100, f"step {step}")
            if step < 100:
                await anyio.sleep(0.05)
        return _text("Tool with progress executed successfully")
    if name == "test_error_handling":
        return _text("This tool intentionally returns an error for testing", error=True)
    if name == "test_sampling":
        request = types.CreateMessageRequest(
            params=types.CreateMessageRequestParams(
                messages=[
                    types.SamplingMessage(
                        role="user", content=types.TextContent(text=args.get("prompt", ""))
                    )
                ],
                max_tokens=100,
            )
        )
        metadata = ServerMessageMetadata(related_request_id=ctx.request_id)
        answer = await ctx.session.send_request(
            request, types.CreateMessageResult, metadata=metadata
        )
        said = answer.content.text if isinstance(answer.content, types.TextContent) else ""
        return _text(f"LLM response: {said}")
    if name == "test_elicitation":
        schema = {
            "type": "object",
            "properties": {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"},
            },
            "required": ["username", "email"],
        }
        answer = await _elicit(ctx, args.get("message", ""), schema)
        return _text(f"User response: action={answer.action}, content={answer.content}")
    if name in ("test_elicitation_sep1034_defaults", "test_elicitation_sep1330_enums"):
        schema = _DEFAULTS_SCHEMA if name.endswith("defaults") else _ENUMS_SCHEMA
        answer = await _elicit(ctx, "Please review and update the form fields", schema)
        return _text(f"Elicitation completed: action={answer.action}, content={answer.content}")
    if name == "test_reconnection":
        if ctx.close_sse_stream is not None:
            await ctx.close_sse_stream()
        await anyio.sleep(0.1)
        return _text("Reconnection test completed")
    if name == "json_schema_2020_12_tool":
        return _text(f"received {json.dumps(args, sort_keys=True)}")
    raise MCPError(types.INVALID_PARAMS, f"unknown tool {name}")


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


RESOURCES = [
    types.Resource(
        uri="test://static-text",
        name="static-text",
        description="A static text resource",
        mime_type="text/plain",
    ),
    types.Resource(
        uri="test://static-binary",
        name="static-binary",
        description="A static binary resource",
        mime_type="image/png",
    ),
    types.Resource(
        uri="test://watched-resource",
        name="watched-resource",
        description="A resource to subscribe to",
        mime_type="text/plain",
    ),
]


SCHEME = "test"  # what the listings say (--listed-as)


def _listed(uri: str) -> str:
    return f"{SCHEME}://{uri.removeprefix('test://')}"


async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
    listed = [r.model_copy(update={"uri": _listed(r.uri)}) for r in RESOURCES]
    return types.ListResourcesResult(resources=listed)


async def list_templates(ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
    template = types.ResourceTemplate(
        uri_template=_listed("test://template/{id}/data"),
        name="template",
        description="Data for an id",
        mime_type="application/json",
    )
    return types.ListResourceTemplatesResult(resource_templates=[template])


async def read_resource(
    ctx: Any, params: types.ReadResourceRequestParams
) -> types.ReadResourceResult:
    asked = params.uri
    listed = f"{SCHEME}://"
    uri = f"test://{asked[len(listed) :]}" if asked.startswith(listed) else asked
    if uri == "test://static-text":
        text = "This is the content of the static text resource."
        contents: Any = types.TextResourceContents(uri=asked, mime_type="text/plain", text=text)
    elif uri == "test://static-binary":
        contents = types.BlobResourceContents(uri=asked, mime_type="image/png", blob=PNG)
    elif uri == "test://watched-resource":
        contents = types.TextResourceContents(uri=asked, mime_type="text/plain", text="watched")
    elif uri.startswith("test://template/") and uri.endswith("/data"):
        ident = uri[len("test://template/") : -len("/data")]
        data = {"id": ident, "templateTest": True, "data": f"Data for ID: {ident}"}
        text = json.dumps(data, separators=(",", ":"))
        contents = types.TextResourceContents(uri=asked, mime_type="application/json", text=text)
    else:
        raise MCPError(types.INVALID_PARAMS, f"no resource {uri}")
    return types.ReadResourceResult(contents=[contents])


async def subscribe(ctx: Any, params: Any) -> types.EmptyResult:
    return types.EmptyResult()


PROMPTS = [
    types.Prompt(name="test_simple_prompt", description="A simple prompt"),
    types.Prompt(
        name="test_prompt_with_arguments",
        description="A prompt with arguments",
        arguments=[
            types.PromptArgument(name="arg1", description="First argument", required=True),
            types.PromptArgument(name="arg2", description="Second argument", required=True),
        ],
    ),
    types.Prompt(
        name="test_prompt_with_embedded_resource",
        description="A prompt with an embedded resource",
        arguments=[types.PromptArgument(name="resourceUri", description="URI", required=True)],
    ),
    types.Prompt(name="test_prompt_with_image", description="A prompt with an image"),
]


async def list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
    return types.ListPromptsResult(prompts=PROMPTS)


def _user(content: Any) -> types.PromptMessage:
    return types.PromptMessage(role="user", content=content)


async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
    args = params.arguments or {}
    if params.name == "test_simple_prompt":
        messages = [_user(types.TextContent(text="This is a simple prompt for testing."))]
    elif params.name == "test_prompt_with_arguments":
        text = f"Prompt with arguments: arg1='{args.get('arg1')}', arg2='{args.get('arg2')}'"
        messages = [_user(types.TextContent(text=text))]
    elif params.name == "test_prompt_with_embedded_resource":
        resource = types.TextResourceContents(
            uri=args.get("resourceUri", "test://embedded"),
            mime_type="text/plain",
            text="Embedded resource content for testing.",
        )
        messages = [
            _user(types.EmbeddedResource(resource=resource)),
            _user(types.TextContent(text="Please process the embedded resource above.")),
        ]
    elif params.name == "test_prompt_with_image":
        messages = [
            _user(types.ImageContent(data=PNG, mime_type="image/png")),
            _user(types.TextContent(text="Please analyze the image above.")),
        ]
    else:
        raise MCPError(types.INVALID_PARAMS, f"no prompt {params.name}")
    return types.GetPromptResult(messages=messages)


async def complete(ctx: Any, params: types.CompleteRequestParams) -> types.CompleteResult:
    options = ["paris", "park", "party"]
    values = [v for v in options if v.startswith(params.argument.value)]
    return types.CompleteResult(
        completion=types.Completion(values=values, total=len(values), has_more=False)
    )


async def set_level(ctx: Any, params: Any) -> types.EmptyResult:
    return types.EmptyResult()


class _Fixture(Server[Any]):
    def create_initialization_options(self, *args: Any, **kwargs: Any) -> Any:
        options = NotificationOptions(tools_changed=True, resources_changed=True)
        return super().create_initialization_options(options, *args[1:], **kwargs)


def server() -> Server[Any]:
    app = _Fixture(
        "s3claim-conformance-fixture",
        version="1.0.0",
        instructions="The conformance suite's fixture server.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_subscribe_resource=subscribe,
        on_unsubscribe_resource=subscribe,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_completion=complete,
    )
    app.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)
    return app


async def _stdio(app: Server[Any]) -> None:
    async with stdio_server() as (read, write):
        await app.run(read, write, app.create_initialization_options())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, help="serve streamable HTTP on 127.0.0.1:PORT")
    parser.add_argument("--listed-as", default="test", help="the scheme its listings use")
    args = parser.parse_args()
    global SCHEME
    SCHEME = args.listed_as
    app = server()
    if args.http is None:
        anyio.run(_stdio, app)
        return
    import uvicorn

    uvicorn.run(
        app.streamable_http_app(host="127.0.0.1"),
        host="127.0.0.1",
        port=args.http,
        log_level="warning",
    )


if __name__ == "__main__":
    main()
