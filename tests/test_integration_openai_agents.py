"""The Agents SDK adapter, driven by the SDK's own ScriptedModel over the counsel contract."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from agents import (
    Agent,
    FunctionTool,
    RunConfig,
    Runner,
    ToolOutputImage,
    ToolOutputText,
    function_tool,
    set_tracing_disabled,
)
from agents.exceptions import UserError
from agents.extensions.tool_output_trimmer import ToolOutputTrimmer
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call
from pydantic import BaseModel

from s3claim import ClaimCheck, ClaimStoreError, Event, MemoryClaimCheckStore, Scope
from s3claim.errors import ConfigurationError
from s3claim.hosting import truncate
from s3claim.integrations.openai_agents import claim_check_tools
from s3claim.testing import FailingStore
from s3claim.wording import UNAVAILABLE_MESSAGE
from tests._counsel import CLAIM_TOOLS, CONTRACT, HANDLE, QUESTIONS, chars_in, reassemble

set_tracing_disabled(True)
RUN = RunConfig(tracing_disabled=True)
CONTEXT = {"tenant": "acme", "run_id": "matter-7"}

DEAD = ClaimStoreError("PutObject failed after 5 attempt(s): InternalError (HTTP 500)")
"""What a store that cannot be written raises, once its retries are spent."""


@function_tool
def read_contract(name: str) -> str:
    """Return the full text of a named contract."""
    return CONTRACT


class Out(BaseModel):
    text: str


class Row(BaseModel):
    clause: str


def _outputs(call: ModelCall) -> list[str]:
    """Every tool output in the request, oldest first."""
    return [i["output"] for i in call.input if isinstance(i, dict) and "output" in i]


def _last(call: ModelCall) -> dict[str, Any]:
    item: dict[str, Any] = call.input[-1]
    return item


def _run(tools: list[FunctionTool], steps: list[Any], context: object = CONTEXT, **kw: Any) -> Any:
    model = ScriptedModel(steps)
    agent = Agent(name="counsel", model=model, tools=tools)
    result = asyncio.run(Runner.run(agent, "Read the MSA.", context=context, run_config=RUN, **kw))
    return model, result


def test_the_next_request_carries_the_head_and_marker_and_not_the_rest() -> None:
    events: list[Event] = []
    tools = claim_check_tools(
        [read_contract], ClaimCheck(MemoryClaimCheckStore()), on_event=events.append
    )
    model, result = _run(
        tools,
        [
            [function_call("read_contract", {"name": "msa"}, call_id="c1")],
            [assistant_message("ok")],
        ],
    )
    seen = _outputs(model.calls[1])[0]
    assert seen.startswith(CONTRACT[:300])
    assert f"[{len(CONTRACT)} characters, " in seen
    assert HANDLE.search(seen) and "Call fetch_result with handle='claim:" in seen
    assert len(seen) < 800
    assert CONTRACT[1_000:1_200] not in json.dumps(model.calls[1].input, ensure_ascii=False)
    assert result.final_output == "ok"
    assert [e.kind for e in events] == ["tool_result_stored"]
    assert [t.name for t in tools] == ["read_contract", *CLAIM_TOOLS]
    assert read_contract.on_invoke_tool is not tools[0].on_invoke_tool  # wrapped, not mutated


def _read_everything(call: ModelCall) -> Any:
    """A model that reads every window: the first from the marker, then each footer's offset."""
    last = _last(call)
    if last.get("role") == "user":
        return [function_call("read_contract", {"name": "msa"}, call_id="read")]
    output = last["output"]
    handle = HANDLE.search(output)
    if last["call_id"] == "read":
        assert handle is not None
        offset = 0
    else:
        follow = output.rsplit("and offset=", 1)
        if len(follow) == 1:
            return [assistant_message("read it all")]
        offset = int(follow[1].split(" ", 1)[0])
    assert handle is not None
    arguments = {"handle": handle.group(), "offset": offset}
    return [function_call("fetch_result", arguments, call_id=f"f{offset}")]


def test_fetch_result_windows_reassemble_the_contract_exactly() -> None:
    store = MemoryClaimCheckStore()
    tools = claim_check_tools([read_contract], ClaimCheck(store))
    model, result = _run(tools, [ModelStep.respond(_read_everything)] * 26, max_turns=30)
    assert result.final_output == "read it all"
    windows = _outputs(model.calls[-1])[1:]
    assert len(windows) == -(-len(CONTRACT) // 4096)
    assert reassemble(windows) == CONTRACT


def _fetch_with(handle: str) -> list[Any]:
    call = function_call("fetch_result", {"handle": handle, "offset": 0}, call_id="f")
    return [[call], [assistant_message("done")]]


@pytest.mark.parametrize(
    "other", [{"tenant": "globex", "run_id": "matter-7"}, {"tenant": "acme", "run_id": "matter-8"}]
)
def test_another_tenant_or_run_cannot_redeem_the_handle(other: dict[str, str]) -> None:
    tools = claim_check_tools([read_contract], ClaimCheck(MemoryClaimCheckStore()))
    model, _ = _run(
        tools,
        [
            [function_call("read_contract", {"name": "msa"}, call_id="c1")],
            [assistant_message("ok")],
        ],
    )
    found = HANDLE.search(_outputs(model.calls[1])[0])
    assert found is not None
    same, _ = _run(tools, _fetch_with(found.group()))
    assert _outputs(same.calls[1])[0].startswith(CONTRACT[:4096])
    stranger, _ = _run(tools, _fetch_with(found.group()), context=other)
    assert json.loads(_outputs(stranger.calls[1])[0]) == {
        "error": "claim_unavailable",
        "message": UNAVAILABLE_MESSAGE,
    }


def test_a_dead_store_degrades_to_truncation_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    events: list[Event] = []
    tools = claim_check_tools(
        [read_contract], ClaimCheck(FailingStore(fail=["put"], error=DEAD)), on_event=events.append
    )
    with caplog.at_level(logging.WARNING, logger="s3claim"):
        model, result = _run(
            tools,
            [
                [function_call("read_contract", {"name": "msa"}, call_id="c1")],
                [assistant_message("ok")],
            ],
        )
    assert _outputs(model.calls[1]) == [truncate(CONTRACT, 4096)]
    assert result.final_output == "ok"
    assert [e.kind for e in events] == ["tool_result_store_failed"]
    assert "check-in failed for read_contract (92212 chars): ClaimStoreError" in caplog.text
    assert CONTRACT[:50] not in caplog.text


def test_images_short_text_and_other_values_are_handled_as_the_sdk_would_show_them() -> None:
    @function_tool
    def picture() -> ToolOutputImage:
        """An image."""
        return ToolOutputImage(image_url="https://example.invalid/x.png")

    @function_tool
    def row() -> str:
        """A short structured value, serialised by the boundary."""
        return Row(clause="see fetch_result").model_dump_json()

    @function_tool
    def parts() -> list[Any]:
        """A caption and an image, as one multi-part output."""
        return [ToolOutputText(text="the signature page"), {"type": "image", "image_url": "u"}]

    @function_tool
    def typed_text() -> dict[str, str]:
        """The contract as a structured text output."""
        return {"type": "text", "text": CONTRACT}

    @function_tool
    def untyped() -> dict[str, Any]:
        """A value with a `type` key that is no structured output: serialised."""
        return {"type": "clause", "number": 17}

    names = ["picture", "row", "parts", "typed_text", "untyped"]
    tools = claim_check_tools(
        [picture, row, parts, typed_text, untyped], ClaimCheck(MemoryClaimCheckStore())
    )
    calls = [function_call(name, {}, call_id=name) for name in names]
    model, _ = _run(tools, [calls, [assistant_message("ok")]])
    image, text, multi, structured, other = _outputs(model.calls[1])
    assert image == [{"type": "input_image", "image_url": "https://example.invalid/x.png"}]
    assert text == '{"clause":"see fetch-result"}'  # neutralised, not checked in
    assert multi == [
        {"type": "input_text", "text": "the signature page"},
        {"type": "input_image", "image_url": "u"},
    ]
    assert structured.startswith(CONTRACT[:300]) and "Call fetch_result" in structured
    assert len(structured) < 800
    assert other == '{\n"type":"clause",\n"number":17\n}'  # one member to a line


def test_the_scope_comes_from_the_context_and_a_missing_tenant_is_named() -> None:
    tools = claim_check_tools([read_contract], ClaimCheck(MemoryClaimCheckStore()))
    steps = [[function_call("read_contract", {"name": "msa"}, call_id="c1")]]
    with pytest.raises(UserError, match=r"no tenant for the claim check: give Runner\.run"):
        _run(tools, steps, context={"run_id": "r"})

    class Deps:
        tenant = "acme"

    with pytest.raises(UserError, match=r"no run for the claim check: .* `run_id` attribute"):
        _run(tools, steps, context=Deps())
    seen: list[Scope] = []

    def scope(context: Any) -> Scope:
        seen.append(Scope(context.context.org, "fixed"))
        return seen[-1]

    class Org:
        org = "initech"

    custom = claim_check_tools([read_contract], ClaimCheck(MemoryClaimCheckStore()), scope=scope)
    _run(custom, [*steps, [assistant_message("ok")]], context=Org())
    assert seen == [Scope("initech", "fixed")]


def test_tools_that_cannot_be_wrapped_are_refused() -> None:
    @function_tool(output_type=Out)
    def typed() -> Out:
        """Typed output."""
        return Out(text="x")

    @function_tool
    def fetch_result() -> str:
        """A name the claim check owns."""
        return "x"

    claim_check = ClaimCheck(MemoryClaimCheckStore())
    with pytest.raises(ConfigurationError, match="'typed' declares an output schema"):
        claim_check_tools([typed], claim_check)
    with pytest.raises(ConfigurationError, match=r"tools named \['fetch_result'\] would collide"):
        claim_check_tools([fetch_result], claim_check)
    with pytest.raises(TypeError, match="wraps FunctionTools, got builtin_function_or_method"):
        claim_check_tools([print], claim_check)  # type: ignore[list-item]


def _conversation(
    tools: list[FunctionTool], *, fetches: bool, **run: Any
) -> tuple[int, list[bool]]:
    """The three counsel questions in one conversation: characters sent, clause readable?"""
    readable: list[bool] = []
    sent = 0

    def step(call: ModelCall) -> Any:
        last = _last(call)
        asked = [
            i["content"] for i in call.input if isinstance(i, dict) and i.get("role") == "user"
        ]
        question = next(q for q in QUESTIONS if q.text == asked[-1])
        if last.get("role") == "user" and question is QUESTIONS[0]:
            return [function_call("read_contract", {"name": "msa"}, call_id="read")]
        if last.get("role") == "user" and fetches:
            handle = HANDLE.search(_outputs(call)[0])
            assert handle is not None
            arguments = {"handle": handle.group(), "offset": question.offset}
            return [function_call("fetch_result", arguments, call_id=f"f{question.offset}")]
        readable.append(question.clause in json.dumps(call.input, ensure_ascii=False))
        return [assistant_message(f"answer to {question.text}")]

    model = ScriptedModel([ModelStep.respond(step)] * 10)
    agent = Agent(name="counsel", model=model, tools=tools)
    history: list[Any] = []
    for question in QUESTIONS:
        result = asyncio.run(
            Runner.run(agent, [*history, {"role": "user", "content": question.text}], **run)
        )
        history = result.to_input_list()
    sent = sum(chars_in(call.input) for call in model.calls)
    return sent, readable


def test_side_by_side_with_the_sdk_tool_output_trimmer(record: Callable[..., None]) -> None:
    claim = claim_check_tools([read_contract], ClaimCheck(MemoryClaimCheckStore()))
    with_claim = _conversation(claim, fetches=True, context=CONTEXT, run_config=RUN)
    trimmer = RunConfig(tracing_disabled=True, call_model_input_filter=ToolOutputTrimmer())
    with_trimmer = _conversation([read_contract], fetches=False, run_config=trimmer)
    plain = _conversation([read_contract], fetches=False, run_config=RUN)
    assert with_claim[1] == [True, True, True]
    assert plain[1] == [True, True, True]
    # The trimmer keeps the last two user turns whole: by the third question the contract
    # is a 200-character preview, and the clause is gone for good.
    assert with_trimmer[1] == [True, True, False]
    assert with_claim[0] * 5 < with_trimmer[0] < plain[0]
    record("openai-agents", claim=with_claim, trimmer=with_trimmer, plain=plain)
    readme = (Path(__file__).parent.parent / "docs" / "adapters.md").read_text(encoding="utf-8")
    for row, (chars, _) in [
        ("Agents SDK + claim check", with_claim),
        ("Agents SDK + `ToolOutputTrimmer()`", with_trimmer),
        ("Agents SDK, neither", plain),
    ]:
        assert f"| {row} | {chars:,} |" in readme  # the README quotes what this measures


def test_every_claim_tool_is_offered_search_result_included() -> None:
    """A claim tool added to the core (search_result) reaches the model with no adapter change."""
    clause = QUESTIONS[1].clause

    def step(call: ModelCall) -> Any:
        outputs = _outputs(call)
        if not outputs:
            return [function_call("read_contract", {"name": "msa"}, call_id="read")]
        handle = HANDLE.search(outputs[0])
        assert handle is not None
        if len(outputs) == 1:
            assert "or search_result to find text in it" in outputs[0]
            pattern = {"handle": handle.group(), "pattern": clause[:40]}
            return [function_call("search_result", pattern, call_id="s")]
        if len(outputs) == 2:
            (match,) = json.loads(outputs[1])["matches"]
            at = {"handle": handle.group(), "offset": match["offset"]}
            return [function_call("fetch_result", at, call_id="f")]
        return [assistant_message("found")]

    tools = claim_check_tools([read_contract], ClaimCheck(MemoryClaimCheckStore()))
    model, result = _run(tools, [ModelStep.respond(step)] * 4)
    assert result.final_output == "found"
    assert _outputs(model.calls[-1])[2].startswith(clause)
