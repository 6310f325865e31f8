"""A repeat read answered from its claim is one `s3claim.reuses` point, named by tool, and
nothing in the telemetry holds the arguments that keyed it."""

from __future__ import annotations

from s3claim import (
    AgentRunner,
    AssistantMessage,
    ClaimCheck,
    MemoryClaimCheckStore,
    ScriptedProvider,
    ToolCall,
    claim_check_tool,
    tool,
)
from s3claim.telemetry import names
from tests.telemetry.conftest import Telemetry

SECRET_PATH = "matters/7-secret-settlement.txt"


@tool(reuse_seconds=60)
def read_file(path: str) -> str:
    """A file of about 8,000 characters."""
    return "The parties settle. " * 400


def test_each_reuse_is_counted_by_tool(telemetry: Telemetry) -> None:
    store = MemoryClaimCheckStore()
    read = AssistantMessage(
        tool_calls=(ToolCall(id="r", name="read_file", arguments={"path": SECRET_PATH}),)
    )
    AgentRunner(
        provider=ScriptedProvider([read, read, read, AssistantMessage(content="ok")]),
        tools=[read_file, claim_check_tool(store)],
        claim_check=ClaimCheck(store),
    ).run("q", tenant="t")
    assert telemetry.total(names.REUSES, tool="read_file") == 2
    assert SECRET_PATH not in telemetry.everything()
