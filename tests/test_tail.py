"""The optional tail of the preview (`ClaimCheckPolicy(tail_chars=...)`): a build log's error
stays in the conversation beside its head, cut where the text pauses, and the marker between
them says which characters are hidden, so a read by offset fills exactly the gap."""

from __future__ import annotations

import re

import pytest
import regex
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from s3claim import (
    AgentRunner,
    AssistantMessage,
    ClaimCheck,
    ClaimCheckPolicy,
    Scope,
    ScriptedProvider,
    ToolCall,
    ToolRegistry,
    claim_check_tool,
    tool,
)
from s3claim._reading._head import extract_tail
from s3claim.wording import MARKER_SEEN, marker
from tests.conftest import StoreUnderTest

SCOPE = Scope(tenant="acme", run="build-7")
LOG = "".join(f"step {n}: compiled module_{n}.py ok\n" for n in range(3000)) + (
    "Traceback (most recent call last):\n"
    '  File "app.py", line 12, in <module>\n'
    "ValueError: the build failed at the last step\n"
)
GAP = re.compile(
    r"\[(\d+) characters, (\d+) not shown\. They are characters (\d+)-(\d+); the last (\d+) "
    r"follow this line\. Call fetch_result with handle='(claim:[0-9a-z]+)' and offset=(\d+) to "
    r"read them\.\]"
)


def test_the_default_preview_is_the_specs_head_and_marker() -> None:
    """And a preview with a tail still reads as a marker to whatever recognises one."""
    assert MARKER_SEEN.match(marker(total_chars=10, shown_chars=4, handle="claim:x", tail_chars=2))
    assert ClaimCheckPolicy().tail_chars == 0
    assert extract_tail(LOG, 0) == ""
    assert marker(total_chars=10, shown_chars=4, handle="claim:x") == (
        "[10 characters, 6 not shown. Call fetch_result with handle='claim:x' to read the rest.]"
    )


def test_a_log_keeps_its_error_and_a_read_by_offset_fills_the_gap(
    store_under_test: StoreUnderTest,
) -> None:
    store = store_under_test.store
    checked = ClaimCheck(store, policy=ClaimCheckPolicy(tail_chars=200)).check_in(
        LOG, tool="build", scope=SCOPE
    )
    assert checked.handle is not None
    head, line, tail = checked.text.split("\n\n")
    found = GAP.fullmatch(line)
    assert found is not None, line
    total, hidden, start, end, tail_len, handle, offset = found.groups()
    assert (int(total), handle) == (len(LOG), checked.handle)
    assert int(start) == int(offset) == len(head) and int(end) == len(LOG) - len(tail)
    assert int(tail_len) == len(tail) and int(hidden) == int(end) - int(start)
    assert LOG.startswith(head) and LOG.endswith(tail)
    assert tail.startswith("step ") and tail.endswith("at the last step\n")  # whole lines
    assert "ValueError: the build failed" in tail and len(tail) <= 200
    gap, at = [], int(start)
    while at < int(end):
        window = store.fetch(SCOPE, checked.handle, at, 4096)
        gap.append(window.text)
        at += len(window.text)
    assert head + "".join(gap)[: int(hidden)] + tail == LOG


def test_the_runner_shows_the_tail_and_the_model_reads_the_gap(
    store_under_test: StoreUnderTest,
) -> None:
    @tool
    def build() -> str:
        """Run the build."""
        return LOG

    def read_gap(messages: list[object]) -> AssistantMessage:
        found = GAP.search(str(getattr(messages[-1], "content", "")))
        assert found is not None
        arguments = {"handle": found.group(6), "offset": int(found.group(7))}
        return AssistantMessage(
            tool_calls=(ToolCall(id="g", name="fetch_result", arguments=arguments),)
        )

    store = store_under_test.store
    check = ClaimCheck(store, per_tool={"build": ClaimCheckPolicy(tail_chars=120)})
    runner = AgentRunner(
        provider=ScriptedProvider(
            [
                AssistantMessage(tool_calls=(ToolCall(id="b", name="build", arguments={}),)),
                read_gap,
                AssistantMessage(content="done"),
            ]
        ),
        tools=ToolRegistry((build, claim_check_tool(store))).view(agent="ci"),
        claim_check=check,
    )
    result = runner.run("why did the build fail?", tenant="acme", run_id="build-7")
    preview, window = [m.content for m in result.messages if m.role == "tool"]
    assert preview.endswith("ValueError: the build failed at the last step\n")
    head = preview.split("\n\n")[0]
    assert window.startswith(LOG[len(head) : len(head) + 4096])
    stored = [e for e in result.events if e.kind == "tool_result_stored"]
    assert len(stored) == 1


@pytest.mark.parametrize(
    ("head", "tail", "message"),
    [
        (512, 3584, r"head_chars \+ tail_chars \(512 \+ 3584\) must be smaller than threshold"),
        (512, -1, "tail_chars\n  Input should be greater than or equal to 0"),
        (4096, 0, r"head_chars \(4096\) must be smaller than threshold_chars \(4096\)"),
    ],
)
def test_a_preview_as_large_as_the_threshold_is_refused(head: int, tail: int, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        ClaimCheckPolicy(head_chars=head, tail_chars=tail)


@given(
    text=st.text(st.sampled_from("ab .\n\u00e9\u0301\U0001f44d\u3002"), max_size=300),
    tail_chars=st.integers(1, 80),
)
def test_a_tail_is_a_suffix_within_its_allowance_cut_where_the_text_pauses(
    text: str, tail_chars: int
) -> None:
    tail = extract_tail(text, tail_chars)
    assert text.endswith(tail) and len(tail) <= tail_chars
    if len(text) <= tail_chars:
        assert tail == text
        return
    cut = len(text) - len(tail)
    clusters = {m.start() for m in regex.finditer(r"\X", text)} | {len(text)}
    assert cut in clusters  # whole clusters only
    first = len(text) - tail_chars - 1
    pauses = [
        m.end()
        for m in regex.finditer(r"\s+|\u3002(?!\s)", text, pos=first)
        if m.end() < len(text) and m.end() in clusters and m.end() > first
    ]
    if pauses and tail:  # a pause in reach: the tail starts right after one, never mid-word
        assert text[cut - 1].isspace() or text[cut - 1] == "\u3002"
        assert not tail[0].isspace()
