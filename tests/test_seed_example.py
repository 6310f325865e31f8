"""The spec's example, as written, with a provider and a read_contract tool around it."""

from __future__ import annotations

import re
from collections.abc import Sequence

from s3claim import (
    AgentRunner,
    AssistantMessage,
    ClaimCheck,
    ClaimCheckPolicy,
    ManualClock,
    MemoryClaimCheckStore,
    Message,
    ScriptedProvider,
    ToolCall,
    ToolRegistry,
    claim_check_tool,
    tool,
)
from s3claim.cli.demo import contract

CONTRACT = contract()


@tool
def read_contract(name: str) -> str:
    """Return the full text of a named contract."""
    return CONTRACT


def _handle_in(messages: Sequence[Message]) -> str:
    match = re.search(r"handle='(claim:[0-9a-z]+)'", messages[-1].content or "")
    assert match, "the head's marker names a handle"
    return match.group(1)


def _counsel() -> ScriptedProvider:
    return ScriptedProvider(
        [
            AssistantMessage(
                tool_calls=(ToolCall(id="c1", name="read_contract", arguments={"name": "msa"}),)
            ),
            lambda messages: AssistantMessage(
                tool_calls=(
                    ToolCall(
                        id="c2",
                        name="fetch_result",
                        arguments={"handle": _handle_in(messages), "offset": 4096},
                    ),
                )
            ),
            AssistantMessage(content="Clause 1 sets the governing terms."),
        ]
    )


def test_the_spec_example_runs_as_written() -> None:
    clock = ManualClock(1_700_000_000)
    provider = _counsel()
    store = MemoryClaimCheckStore(clock=clock)
    registry = ToolRegistry((read_contract, claim_check_tool(store)))
    runner = AgentRunner(
        provider=provider,
        tools=registry.view(allow=("read_contract", "fetch_result"), agent="counsel"),
        claim_check=ClaimCheck(store=store),
    )

    result = runner.run("What governs the contract?", tenant="acme")

    assert result.output == "Clause 1 sets the governing terms."
    seen = result.messages[2].content
    assert len(CONTRACT) > 90_000
    head, marker = seen.rsplit("\n\n", 1)
    assert CONTRACT.startswith(head) and len(head) <= 512
    assert marker == (
        f"[{len(CONTRACT)} characters, {len(CONTRACT) - len(head)} not shown. "
        f"Call fetch_result with handle='{_handle_in(result.messages[:3])}' to read the rest.]"
    )
    window = result.messages[4].content
    assert window.startswith(CONTRACT[4096:8192])
    assert window.endswith(
        f"[characters 4096-8192 of {len(CONTRACT)}. Call fetch_result with "
        f"handle='{_handle_in(result.messages[:3])}' and offset=8192 to continue.]"
    )
    kinds = [event.kind for event in result.events]
    assert kinds == [
        "model_called",
        "tool_result_stored",
        "model_called",
        "claim_fetched",
        "model_called",
        "run_finished",
    ]


def test_the_per_tool_threshold_from_the_spec() -> None:
    store = MemoryClaimCheckStore(clock=ManualClock())
    claim_check = ClaimCheck(
        store=store, per_tool={"read_contract": ClaimCheckPolicy(threshold_chars=1_024)}
    )
    assert claim_check.policy_for("read_contract").threshold_chars == 1_024
    assert claim_check.policy_for("row_count").threshold_chars == 4096
