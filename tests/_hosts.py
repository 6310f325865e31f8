"""The host's steps as single calls, for tests that drive one step alone: a claim tool's
answer, and a call's references resolved (each through `Host`, as every host runs them)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from s3claim import ClaimCheck, RunContext, Tool, ToolError
from s3claim.hosting import Host, ToolAnswer


def claim_answer(tool: Tool, arguments: Mapping[str, Any] | str, context: RunContext) -> ToolAnswer:
    """What a host answers for a call of the claim tool `tool` (`Host.run`)."""
    assert tool.redeems is not None, f"{tool.name} is no claim tool"
    return Host(ClaimCheck(tool.redeems)).run(tool, arguments, context)


def resolved_arguments(
    arguments: Mapping[str, Any], *, claim_check: ClaimCheck, tool: str, context: RunContext
) -> Mapping[str, Any]:
    """The arguments a host hands `tool`, references resolved (`Host.begin`); the refusal the
    model would read instead, raised as the `ToolError` it renders."""
    call = Host(claim_check).begin(tool, arguments, context)
    if call.answer is not None:
        refusal = json.loads(call.answer.text)
        raise ToolError(refusal["error"], refusal["message"])
    assert not isinstance(call.arguments, str)
    return call.arguments
