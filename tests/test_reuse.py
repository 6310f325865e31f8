"""Repeat reads answered from their claim (`s3claim.reuse`), through the runner, on the memory
store and the S3 store on moto: no second execution, an answer naming the earlier result's
handle and call, ended by a write, expired after the window or with the claim, scoped to the
run. tests/test_reuse_reference.py has the answer through every host and in two processes."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import pytest

from s3claim import (
    AgentRunner,
    AssistantMessage,
    ClaimCheck,
    ClaimCheckPolicy,
    ConfigurationError,
    Message,
    RunResult,
    ScriptedProvider,
    ToolCall,
    claim_check_tool,
    tool,
)
from s3claim.events import ResultReused
from s3claim.reuse import RepeatReads, arguments_key, check_reuse
from s3claim.wording import HANDLE_SEEN, REUSED_SEEN, reused_reference
from tests.conftest import StoreUnderTest

BOTH = pytest.mark.parametrize("store_under_test", ["memory", "s3"], indirect=True)
MEMORY = pytest.mark.parametrize("store_under_test", ["memory"], indirect=True)
WINDOW = 300
CALLS: list[str] = []
IDS = itertools.count()
"""Call ids, unique in a test (as a model's are), so a repeat's answer can name its call."""


def contract(name: str) -> str:
    return f"Contract {name}. " + "The parties agree to the terms of this clause.\n" * 200


@tool(reuse_seconds=WINDOW)
def read_contract(name: str, pages: int = 0) -> str:
    """Return a contract (about 9,000 characters)."""
    CALLS.append("read_contract")
    return contract(name) if name != "short" else "a short contract"


@tool(read_only=True)
def list_contracts() -> str:
    """Names of the contracts: read-only, never reused."""
    CALLS.append("list_contracts")
    return "msa, nda"


@tool
def amend_contract(name: str) -> str:
    """Change a contract: not read-only."""
    CALLS.append("amend_contract")
    return "amended"


@pytest.fixture(autouse=True)
def _calls() -> None:
    global IDS
    CALLS.clear()
    IDS = itertools.count()


def calls(*named: tuple[str, dict[str, Any]]) -> AssistantMessage:
    """One model turn calling each tool with its arguments."""
    return AssistantMessage(
        tool_calls=tuple(
            ToolCall(id=f"c{next(IDS)}", name=name, arguments=arguments)
            for name, arguments in named
        )
    )


def read(name: str = "msa", **more: Any) -> tuple[str, dict[str, Any]]:
    return ("read_contract", {"name": name, **more})


def runner(sut: StoreUnderTest, steps: Sequence[AssistantMessage], **policy: Any) -> AgentRunner:
    store = sut.store
    return AgentRunner(
        provider=ScriptedProvider([*steps, AssistantMessage(content="done")]),
        tools=[read_contract, list_contracts, amend_contract, claim_check_tool(store)],
        claim_check=ClaimCheck(store, policy=ClaimCheckPolicy(**policy)),
    )


def tool_texts(messages: Sequence[Message]) -> list[str]:
    return [m.content or "" for m in messages if m.role == "tool"]


def handle_of(text: str) -> str:
    found = HANDLE_SEEN.search(text)
    assert found is not None, "no handle in the text"
    return found.group(1)


def naming(text: str, call_id: str) -> str:
    """The answer to a repeat of the call `call_id`, whose result the model read as `text`."""
    return reused_reference(handle=handle_of(text), call_id=call_id, tool=None)


def reuses(result: RunResult) -> list[ResultReused]:
    return [e for e in result.events if isinstance(e, ResultReused)]


@BOTH
def test_a_repeat_read_is_answered_from_its_claim_without_running_the_tool(
    store_under_test: StoreUnderTest,
) -> None:
    steps = [calls(read()), calls(read(), read("nda")), calls(read())]
    result = runner(store_under_test, steps).run("q", tenant="t", run_id="r")
    first, again, other, third = tool_texts(result.messages)
    assert CALLS == ["read_contract", "read_contract"]  # msa once, nda once
    # Both repeats name the first call (c0) and its handle, in under 200 characters.
    assert again == third == naming(first, "c0") and len(again) < 200
    assert f"handle='{handle_of(first)}'" in again and "'c0'" in again
    assert REUSED_SEEN.fullmatch(again) and not REUSED_SEEN.fullmatch(other)
    assert handle_of(other) != handle_of(first) and len(other) > 400
    events = reuses(result)
    assert [(e.tool, e.handle, e.chars) for e in events] == [
        ("read_contract", handle_of(first), len(again))
    ] * 2


@BOTH
def test_a_call_of_a_tool_that_is_not_read_only_ends_reuse_in_the_run(
    store_under_test: StoreUnderTest,
) -> None:
    steps = [
        calls(read()),
        calls(("list_contracts", {})),  # read-only: reuse goes on
        calls(read()),
        calls(("amend_contract", {"name": "msa"})),  # a write: the next read runs
        calls(read()),
        calls(read()),  # ... and is remembered again
    ]
    result = runner(store_under_test, steps).run("q", tenant="t", run_id="r")
    texts = tool_texts(result.messages)
    assert CALLS == ["read_contract", "list_contracts", "amend_contract", "read_contract"]
    assert texts[2] == naming(texts[0], "c0") and texts[4] == texts[0]
    assert texts[5] == naming(texts[4], "c4") and len(reuses(result)) == 2


@BOTH
def test_a_read_is_reused_only_inside_its_window_and_its_claims_ttl(
    store_under_test: StoreUnderTest,
) -> None:
    clock = store_under_test.clock

    def advance(seconds: int) -> Any:
        def step(messages: Sequence[Message]) -> AssistantMessage:
            clock.advance(seconds)
            return calls(read())

        return step

    result = runner(
        store_under_test, [calls(read()), advance(WINDOW - 1), advance(1), advance(1)]
    ).run("q", tenant="t", run_id="r")
    texts = tool_texts(result.messages)
    assert CALLS == ["read_contract"] * 2  # at the window's end, the tool runs again
    assert texts[1] == naming(texts[0], "c0") and texts[2] == texts[0]
    assert texts[3] == naming(texts[2], "c2")  # the call of the run that read it anew

    CALLS.clear()  # a claim that lives shorter than the window ends reuse with it
    result = runner(store_under_test, [calls(read()), advance(60)], ttl_seconds=60).run(
        "q", tenant="t", run_id="r2"
    )
    assert CALLS == ["read_contract"] * 2 and reuses(result) == []


@BOTH
def test_reuse_is_scoped_to_the_run(store_under_test: StoreUnderTest) -> None:
    agent = runner(store_under_test, [calls(read()), calls(read())])
    agent.run("q", tenant="t", run_id="one")
    assert CALLS == ["read_contract"]
    other = runner(store_under_test, [calls(read())]).run("q", tenant="t", run_id="two")
    tenant = runner(store_under_test, [calls(read())]).run("q", tenant="u", run_id="one")
    assert CALLS == ["read_contract"] * 3 and reuses(other) == reuses(tenant) == []


@BOTH
def test_a_claim_no_longer_held_runs_the_tool_again(store_under_test: StoreUnderTest) -> None:
    store = store_under_test.store

    def erase(messages: Sequence[Message]) -> AssistantMessage:
        store.forget(tenant="t")  # right to erasure, mid-run: the handle would be dead
        return calls(read())

    result = runner(store_under_test, [calls(read()), erase]).run("q", tenant="t", run_id="r")
    assert CALLS == ["read_contract"] * 2 and reuses(result) == []
    first, again = tool_texts(result.messages)
    assert again == first


@MEMORY
def test_only_checked_in_results_and_the_same_arguments_are_reused(
    store_under_test: StoreUnderTest,
) -> None:
    steps = [
        calls(read("short")),
        calls(read("short")),  # passed whole: no claim to answer from, it runs again
        calls(read(pages=1)),
        calls(("read_contract", {"pages": 1, "name": "msa"})),  # the same, in another order
        calls(read(pages=2)),
    ]
    result = runner(store_under_test, steps).run("q", tenant="t", run_id="r")
    texts = tool_texts(result.messages)
    assert CALLS == ["read_contract"] * 4
    assert texts[0] == texts[1] == "a short contract"
    assert texts[3] == naming(texts[2], "c2") and not REUSED_SEEN.fullmatch(texts[4])


@MEMORY
def test_with_no_tool_declaring_a_window_the_run_is_as_before(
    store_under_test: StoreUnderTest,
) -> None:
    plain = tool(read_contract.function, name="read_contract")
    store = store_under_test.store
    agent = AgentRunner(
        provider=ScriptedProvider([calls(read()), calls(read()), AssistantMessage(content="ok")]),
        tools=[plain, claim_check_tool(store)],
        claim_check=ClaimCheck(store),
    )
    result = agent.run("q", tenant="t", run_id="r")
    assert CALLS == ["read_contract"] * 2 and not agent.host.remembers_reads
    first, again = tool_texts(result.messages)
    assert first == again and not plain.read_only


@MEMORY
def test_what_is_remembered_is_bounded_and_ends_with_the_run(
    store_under_test: StoreUnderTest,
) -> None:
    check = ClaimCheck(store_under_test.store)
    reads = RepeatReads(check, max_runs=2, max_reads=2)
    agent = runner(store_under_test, [calls(read("a"), read("b"), read("c")), calls(read("a"))])
    agent.host._reads = reads
    agent.run("q", tenant="t", run_id="r")
    assert CALLS == ["read_contract"] * 4  # "a" was the oldest of three: forgotten
    assert len(reads) == 0  # the run is over


def test_the_key_is_canonical_json_hashed_and_arguments_are_never_kept() -> None:
    one = arguments_key("read", {"b": [1, {"y": 2, "x": "é"}], "a": None})
    assert one == arguments_key("read", '{"a": null, "b": [1, {"x": "é", "y": 2}]}')
    assert one != arguments_key("other", {"a": None, "b": [1, {"x": "é", "y": 2}]})
    assert one is not None and len(one) == 64 and "read" not in one
    assert arguments_key("read", "not json") is None
    assert arguments_key("read", {"nan": float("nan")}) is None


def test_windows_are_whole_seconds_and_imply_read_only() -> None:
    assert read_contract.read_only and read_contract.reuse_seconds == WINDOW
    assert amend_contract.read_only is False and amend_contract.reuse_seconds == 0
    for bad in (-1, 1.5, True):
        with pytest.raises(ConfigurationError, match="reuse_seconds must be a whole number"):
            tool(reuse_seconds=bad)  # type: ignore[arg-type]
        with pytest.raises(ConfigurationError, match=r"reuse\['x'\] must be a whole number"):
            check_reuse({"x": bad})  # type: ignore[dict-item]
    assert check_reuse({"x": 0, "y": 5}) == {"y": 5}
    assert claim_check_tool(object()).read_only  # type: ignore[arg-type]


class _Stops:
    """The script up to `at` model calls, then the process "dies" (the provider raises)."""

    def __init__(self, steps: Sequence[AssistantMessage], at: int) -> None:
        self._inner = ScriptedProvider([*steps, AssistantMessage(content="done")])
        self._left = at

    def complete(self, messages: Sequence[Message], tools: Any) -> AssistantMessage:
        if self._left == 0:
            raise KeyboardInterrupt
        self._left -= 1
        return self._inner.complete(messages, tools)


@BOTH
def test_a_resumed_run_answers_its_repeats_as_the_uninterrupted_run_did(
    store_under_test: StoreUnderTest,
) -> None:
    """Another instance resuming from the journal remembers the reads its conversation shows
    (dated by their claims' expiry): the repeat after the resume does not run the tool, and
    the conversation is byte for byte the uninterrupted run's (each handle names its own
    run). A write before the stop is replayed too: the read before it is not remembered."""
    from s3claim import MemoryRunJournal

    steps = [
        calls(read("nda")),
        calls(("amend_contract", {"name": "nda"})),
        calls(read()),
        calls(("list_contracts", {})),
        calls(read(), read("nda")),
    ]
    store = store_under_test.store

    def build(provider: Any, journal: MemoryRunJournal | None) -> AgentRunner:
        return AgentRunner(
            provider=provider,
            tools=[read_contract, list_contracts, amend_contract, claim_check_tool(store)],
            claim_check=ClaimCheck(store),
            journal=journal,
        )

    whole = build(ScriptedProvider([*steps, AssistantMessage(content="done")]), None)
    expected = whole.run("q", tenant="t", run_id="whole")
    assert CALLS.count("read_contract") == 3  # nda, msa, nda again (after the write)
    CALLS.clear()
    journal = MemoryRunJournal()
    with pytest.raises(KeyboardInterrupt):
        build(_Stops(steps, at=4), journal).run("q", tenant="t", run_id="stopped")
    CALLS.clear()
    # A fresh runner: nothing in memory, only the journal and the store.
    again = build(ScriptedProvider([*steps, AssistantMessage(content="done")]), journal)
    resumed = again.resume(tenant="t", run_id="stopped")
    # list_contracts' result was not recorded (the stop came first): it runs again; then nda
    # runs (its read came before the write) and msa is reused.
    assert CALLS == ["list_contracts", "read_contract"]
    texts, want = tool_texts(resumed.messages), tool_texts(expected.messages)
    assert texts[-2] == naming(texts[2], "c2")  # named by the call the journal kept
    assert [HANDLE_SEEN.sub("", t) for t in texts] == [HANDLE_SEEN.sub("", t) for t in want]
