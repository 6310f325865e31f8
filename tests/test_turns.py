"""The turn budget and the window-aware threshold: the plan and the runner (the adapters' running
total: tests/test_knobs_in_adapters.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from pydantic import ValidationError
from pydantic_ai.toolsets import FunctionToolset

from s3claim import (
    AgentRunner,
    AssistantMessage,
    ClaimCheck,
    ClaimCheckPolicy,
    ConfigurationError,
    Event,
    MemoryClaimCheckStore,
    MemoryRunJournal,
    Message,
    ScriptedProvider,
    ToolCall,
    ToolRegistry,
    claim_check_tool,
    tool,
)
from s3claim.events import ToolResultStored
from s3claim.handles import HandleKey
from s3claim.integrations.pydantic_ai import ClaimCheckToolset
from s3claim.providers import OpenAICompatibleProvider
from s3claim.turns import RunningTurn, TurnResult, kept_chars, plan_turn, shrinks
from s3claim.wording import MARKER_SEEN
from tests.conftest import StoreUnderTest

BUDGET = ClaimCheckPolicy(turn_budget_chars=20_000)
KEY = HandleKey("one key, so that two stores derive the same handles")


def part(chars: int, seed: int) -> str:
    """`chars` characters of sentences, distinct per seed (so no two claims dedupe)."""
    line = f"Part {seed}: the parties agree to clause {seed}.\n"
    return (line * (chars // len(line) + 1))[:chars]


# -- the plan: a pure function of sizes and policies ---------------------------------------


def test_ten_results_of_4000_with_a_budget_of_20000_check_in_the_first_by_call_order() -> None:
    results = [TurnResult(4_000, BUDGET)] * 10
    plan = plan_turn(results)
    # Each check-in leaves at most kept_chars: the fewest that bring 40,000 to 20,000.
    kept = kept_chars(4_000, BUDGET)
    needed = next(k for k in range(11) if 40_000 - k * (4_000 - kept) <= 20_000)
    assert needed == 7  # 4,000 each, at most 785 left of each
    assert plan == dict.fromkeys(range(needed), "turn_budget")
    assert plan_turn(results) == plan  # the same inputs, the same choice


def test_the_largest_go_first_ties_by_call_order_and_the_threshold_still_rules() -> None:
    policy = ClaimCheckPolicy(turn_budget_chars=10_000)
    sizes = (1_000, 4_000, 3_000, 5_000, 2_000, 3_000, 100)
    plan = plan_turn([TurnResult(s, policy) for s in sizes])
    # 5,000 is over the threshold; then 4,000, then the first of the two 3,000s fits the turn.
    assert plan == {3: "threshold", 1: "turn_budget", 2: "turn_budget"}
    # Without a budget only the threshold decides (the spec's behaviour).
    assert plan_turn([TurnResult(s, ClaimCheckPolicy()) for s in sizes]) == {3: "threshold"}


def test_a_result_no_larger_than_its_head_and_marker_is_never_checked_in() -> None:
    policy = ClaimCheckPolicy(turn_budget_chars=100)
    tiny = kept_chars(700, policy)
    assert not shrinks(tiny, policy) and shrinks(tiny + 1, policy)
    assert plan_turn([TurnResult(tiny, policy)] * 10) == {}  # over budget, and nothing shrinks
    assert plan_turn([TurnResult(tiny, policy), TurnResult(tiny + 1, policy)]) == {1: "turn_budget"}


def test_errors_and_settled_results_count_but_are_never_chosen() -> None:
    policy = ClaimCheckPolicy(turn_budget_chars=5_000)
    results = [
        TurnResult(4_000),
        TurnResult(3_000, policy, settled=True),
        TurnResult(2_000, policy),
    ]
    assert plan_turn(results) == {2: "turn_budget"}
    # The smallest budget of the turn's policies is the turn's.
    assert plan_turn([TurnResult(2_500, policy)] * 2) == {}  # 5,000 fits 5,000
    tight = ClaimCheckPolicy(turn_budget_chars=4_000)
    assert plan_turn([TurnResult(2_500, policy), TurnResult(2_500, tight)]) == {0: "turn_budget"}


def test_a_running_total_checks_in_what_would_take_the_turn_past_its_budget() -> None:
    turn = RunningTurn()
    policy = ClaimCheckPolicy(turn_budget_chars=5_000)
    assert turn.take(3_000, policy) is None
    assert turn.take(3_000, policy) == "turn_budget"
    assert turn.take(5_000, policy) == "threshold"
    assert turn.take(100, policy) is None  # it would not shrink
    assert turn.chars == 3_000 + kept_chars(3_000, policy) + kept_chars(5_000, policy) + 100


def test_the_room_share_lowers_the_threshold_never_raises_it() -> None:
    policy = ClaimCheckPolicy(max_share_of_room=0.25, context_window_chars=20_000)
    assert plan_turn([TurnResult(3_000, policy)], used_chars=0) == {}
    assert plan_turn([TurnResult(3_000, policy)], used_chars=9_000) == {0: "room"}  # 0.25 × 11,000
    # The turn's earlier results take room too.
    assert plan_turn([TurnResult(3_000, policy)] * 2, used_chars=6_000) == {1: "room"}
    roomy = ClaimCheckPolicy(max_share_of_room=1, context_window_chars=10**9)
    assert plan_turn([TurnResult(4_096, roomy)]) == {0: "threshold"}
    # A window from the host (the provider's) when the policy names none.
    share = ClaimCheckPolicy(max_share_of_room=0.25)
    assert plan_turn([TurnResult(3_000, share)], used_chars=9_000, window_chars=20_000) == {
        0: "room"
    }
    assert plan_turn([TurnResult(3_000, share)], used_chars=9_000) == {}


@pytest.mark.parametrize(
    ("settings", "error"),
    [
        ({"max_share_of_room": 0}, "greater than 0"),
        ({"max_share_of_room": 1.5}, "less than or equal to 1"),
        ({"max_share_of_room": True}, "valid number"),
        ({"turn_budget_chars": 0}, "greater than 0"),
        ({"context_window_chars": 100_000}, "does nothing without max_share_of_room"),
    ],
)
def test_the_knobs_are_validated_at_construction(settings: dict[str, Any], error: str) -> None:
    with pytest.raises(ValidationError, match=error):
        ClaimCheckPolicy(**settings)


def test_a_room_share_without_a_window_is_refused_where_it_cannot_work() -> None:
    store = MemoryClaimCheckStore()
    share = ClaimCheck(store, per_tool={"read": ClaimCheckPolicy(max_share_of_room=0.25)})
    with pytest.raises(ConfigurationError, match="how large the model's context window is"):
        AgentRunner(
            provider=ScriptedProvider([]), tools=[claim_check_tool(store)], claim_check=share
        )
    with pytest.raises(ConfigurationError, match="never sees the conversation"):
        ClaimCheckToolset(FunctionToolset([]), share)
    with pytest.raises(ConfigurationError, match="context_window_chars must be a positive"):
        OpenAICompatibleProvider("http://127.0.0.1:1/v1", "m", context_window_chars=0)


def test_a_forced_check_in_says_why_and_a_threshold_one_reads_as_before() -> None:
    forced = ToolResultStored(
        tool="t", agent="a", handle="h", size_chars=1, inline_chars=1, reason="turn_budget"
    )
    assert forced.model_dump()["reason"] == "turn_budget"
    assert "reason" not in forced.model_copy(update={"reason": "threshold"}).model_dump()


# -- the runner: a turn's calls together -----------------------------------------------------


@tool
def read_part(chars: int, seed: int) -> str:
    """Return a part of the record."""
    return part(chars, seed)


def calls(*sizes: int, turn: int = 1) -> AssistantMessage:
    return AssistantMessage(
        tool_calls=tuple(
            ToolCall(
                id=f"t{turn}c{i}", name="read_part", arguments={"chars": s, "seed": 10 * turn + i}
            )
            for i, s in enumerate(sizes)
        )
    )


def runner(store: Any, policy: ClaimCheckPolicy, steps: list[Any], **kwargs: Any) -> AgentRunner:
    provider_window = kwargs.pop("provider_window", None)
    return AgentRunner(
        provider=ScriptedProvider(steps, context_window_chars=provider_window),
        tools=ToolRegistry((read_part, claim_check_tool(store))).view(agent="counsel"),
        claim_check=ClaimCheck(store, policy=policy),
        **kwargs,
    )


def tool_texts(messages: Sequence[Message]) -> list[str]:
    return [m.content for m in messages if m.role == "tool"]


def stored(events: Sequence[Event]) -> list[ToolResultStored]:
    return [e for e in events if isinstance(e, ToolResultStored)]


@pytest.mark.parametrize("store_under_test", ["memory", "s3"], indirect=True)
def test_the_runner_checks_a_turn_in_largest_first_until_it_fits(
    store_under_test: StoreUnderTest,
) -> None:
    store = store_under_test.store
    done = AssistantMessage(content="done")
    result = runner(store, BUDGET, [calls(*[4_000] * 10), done]).run("q", tenant="t", run_id="r")
    texts = tool_texts(result.messages)
    # Each check-in is measured exactly (about 600 characters, not at its longest): six bring
    # the turn under 20,000, and no seventh is made.
    assert all(MARKER_SEEN.search(t) for t in texts[:6])
    assert texts[6:] == [part(4_000, seed) for seed in (16, 17, 18, 19)]  # passed whole
    assert 4 * 4_000 < sum(map(len, texts)) <= 20_000
    assert [(e.reason, e.size_chars) for e in stored(result.events)] == [("turn_budget", 4_000)] * 6
    assert store_under_test.count() == 6


def test_a_resumed_turn_makes_the_same_choices_byte_for_byte() -> None:
    class Crash(BaseException):
        """The process dying while the turn's tools run."""

    crashing = [True]

    @tool
    def read_part(chars: int, seed: int) -> str:
        """Return a part of the record."""
        if seed == 19 and crashing:
            crashing.clear()
            raise Crash
        return part(chars, seed)

    def agent(store: MemoryClaimCheckStore, journal: MemoryRunJournal) -> AgentRunner:
        steps = [calls(*[4_000] * 10), AssistantMessage(content="done")]
        return AgentRunner(
            provider=ScriptedProvider(steps),
            tools=ToolRegistry((read_part, claim_check_tool(store))).view(agent="counsel"),
            claim_check=ClaimCheck(store, policy=BUDGET),
            journal=journal,
        )

    store = MemoryClaimCheckStore(handle_key=KEY)
    journal = MemoryRunJournal(store=store)
    with pytest.raises(Crash):
        agent(store, journal).run("q", tenant="t", run_id="r")
    resumed = agent(store, journal).resume(tenant="t", run_id="r")
    other = MemoryClaimCheckStore(handle_key=KEY)
    straight = agent(other, MemoryRunJournal(store=other)).run("q", tenant="t", run_id="r")
    assert resumed.messages == straight.messages
    assert [m.model_dump_json() for m in resumed.messages] == [
        m.model_dump_json() for m in straight.messages
    ]
    assert stored(resumed.events) == stored(straight.events)


@pytest.mark.parametrize("where", ["policy", "provider"])
def test_a_late_result_is_checked_in_for_the_room_an_early_one_of_its_size_passes(
    where: str,
) -> None:
    store = MemoryClaimCheckStore()
    if where == "policy":
        policy = ClaimCheckPolicy(max_share_of_room=0.25, context_window_chars=20_000)
        window = None
    else:
        policy, window = ClaimCheckPolicy(max_share_of_room=0.25), 20_000
    steps = [calls(3_000, turn=n) for n in range(1, 5)] + [AssistantMessage(content="done")]
    result = runner(store, policy, steps, provider_window=window).run("q", tenant="t")
    texts = tool_texts(result.messages)
    # Turns 1-3 find room for 3,000 (a quarter of 20,000 less what came before); turn 4 does not.
    assert [bool(MARKER_SEEN.search(t)) for t in texts] == [False, False, False, True]
    assert [e.reason for e in stored(result.events)] == ["room"]


def test_the_room_never_checks_in_later_than_the_threshold() -> None:
    store = MemoryClaimCheckStore()
    policy = ClaimCheckPolicy(max_share_of_room=1, context_window_chars=10**9)
    steps = [calls(4_096, 4_095), AssistantMessage(content="done")]
    result = runner(store, policy, steps).run("q", tenant="t")
    first, second = tool_texts(result.messages)
    assert MARKER_SEEN.search(first) and second == part(4_095, 11)
    assert [e.reason for e in stored(result.events)] == ["threshold"]
