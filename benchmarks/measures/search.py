"""Measure: `search_result`, on a large claim and in the counsel scenario.

1. One literal search of a large claim on the timing server (s3rver, which streams from
   disk): throughput, requests, and tracemalloc's peak while it runs, beside the naive way
   another S3 offloader searches (GET the whole object, decode it, match line by line).
2. A needle question in the counsel scenario: the contract with a termination-for-convenience
   clause in section 13.2, found three ways: `search_result` and one window, paging with
   `fetch_result` alone until the clause turns up, and the whole contract inline.
"""

from __future__ import annotations

import gc
import itertools
import json
import re
import time
import tracemalloc
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from benchmarks.context import TTL, Bench, empty_bucket
from benchmarks.report import Section, Table
from benchmarks.stats import fmt_bytes, fmt_int, fmt_ms, fmt_ratio
from devkit.documents import document, label
from devkit.servers import Wire
from s3claim.claim_tools import claim_check_tool, claim_search_tool
from s3claim.claimcheck import ClaimCheck
from s3claim.cli.demo import SYSTEM, contract, read_contract_tool
from s3claim.events import ModelCalled
from s3claim.hosting import Host
from s3claim.memory import MemoryClaimCheckStore
from s3claim.messages import AssistantMessage, Message, ToolCall, ToolMessage
from s3claim.providers import ScriptedProvider, Step
from s3claim.runner import AgentRunner, RunResult
from s3claim.scope import Scope
from s3claim.tools import RunContext, ToolRegistry
from s3claim.wording import CONTINUE_SEEN, HANDLE_SEEN, MARKER_SEEN

__all__ = ["run"]

SCOPE = Scope(tenant="bench", run="search")
NEEDLE = "for convenience"
CLAUSE = (
    "13.2 Either Party may terminate this Agreement for convenience on ninety (90) days' "
    "written notice to the other Party, without liability for the termination itself.\n\n"
)
QUESTION = "Which clause governs termination for convenience, and what notice does it need?"


# -- 1. a large claim ---------------------------------------------------------------------------


def _naive_search(naive: Any, handle: str, needle: str) -> int:
    """Another offloader's way: the whole object, decoded, matched line by line."""
    text = naive.fetch(SCOPE, handle, offset=0, limit=10**12).text
    return sum(line.count(needle) for line in text.splitlines())


def _ours(store: Any, handle: str, needle: str) -> int:
    """`search_result` as every host runs it: the matches counted, a page of them returned."""
    context = RunContext(scope=SCOPE, agent="bench", emit=lambda event: None)
    arguments = {"handle": handle, "pattern": needle}
    answer = Host(ClaimCheck(store)).run("search_result", arguments, context)
    total: int = json.loads(answer.text)["total_matches"]
    return total


def _peak(call: Callable[[], object]) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        call()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak


def _large(bench: Bench) -> tuple[Table, list[str], list[str]]:
    chars = bench.profile.search_chars
    rows: list[list[str]] = []
    headlines: list[str] = []
    notes: list[str] = []
    for charset in ("ascii", "bmp"):
        text = document(chars, charset)
        utf8 = len(text.encode("utf-8"))
        needle = text[chars // 2 : chars // 2 + 12]  # a phrase that occurs, many times over
        client, bucket, store, naive = bench.stores(bench.timing)
        wire = Wire.attach(client)
        try:
            ours_handle = store.put(SCOPE, text, ttl_seconds=TTL)
            theirs_handle = naive.put(SCOPE, text, ttl_seconds=TTL)
            del text
            counts = {
                _ours(store, ours_handle, needle),
                _naive_search(naive, theirs_handle, needle),
            }
            wire.clear()
            began = time.perf_counter()
            found = _ours(store, ours_handle, needle)
            ours_s = time.perf_counter() - began
            requests, got = wire.total_requests, wire.total_response_bytes
            began = time.perf_counter()
            _naive_search(naive, theirs_handle, needle)
            theirs_s = time.perf_counter() - began
            ours_peak = _peak(partial(_ours, store, ours_handle, needle))
            theirs_peak = _peak(partial(_naive_search, naive, theirs_handle, needle))
        finally:
            empty_bucket(client, bucket)
        if len(counts) != 1:
            notes.append(f"! {charset}: the naive count differs from s3claim's: {counts}")
        rate, naive_rate = utf8 / ours_s / 1e6, utf8 / theirs_s / 1e6
        rows.append(
            [
                "ASCII" if charset == "ascii" else "Japanese + Russian",
                fmt_int(found),
                fmt_ms(ours_s),
                f"{rate:,.0f} MB/s",
                fmt_int(requests),
                fmt_bytes(got),
                fmt_bytes(ours_peak),
                fmt_ms(theirs_s),
                f"{naive_rate:,.0f} MB/s",
                fmt_bytes(theirs_peak),
                fmt_ratio(theirs_peak / ours_peak),
            ]
        )
        headlines.append(
            f"{'ASCII' if charset == 'ascii' else 'Japanese + Russian'}: {rate:,.0f} MB/s in "
            f"{fmt_int(requests)} GET, peak {fmt_bytes(ours_peak)} (naive: {naive_rate:,.0f} "
            f"MB/s, peak {fmt_bytes(theirs_peak)})"
        )
    table = Table(
        title=f"A literal search of a {label(chars)}-character claim on {bench.timing.name}",
        headers=[
            "text",
            "matches",
            "s3claim",
            "MB/s",
            "GETs",
            "bytes",
            "s3claim peak",
            "naive",
            "naive MB/s",
            "naive peak",
            "naive / s3claim peak",
        ],
        rows=rows,
    )
    summary = [
        f"Searching a {label(chars)}-character claim on {bench.timing.name}: "
        + "; ".join(headlines)
        + ". Budget: at least 50 MB/s, under 16 MiB of peak memory, one GET per 8 MiB + 1."
    ]
    return table, summary, notes


# -- 2. the needle question -----------------------------------------------------------------


def _needle_contract() -> str:
    text = contract()
    at = text.index("13.2 ")
    return text[:at] + CLAUSE + text[at:].replace("13.2 ", "13.2a ", 1)


def _last(messages: Sequence[Message]) -> str:
    last = messages[-1]
    assert isinstance(last, ToolMessage)
    return last.content


_IDS = itertools.count(1)


def _call(tool_name: str, /, **arguments: Any) -> AssistantMessage:
    call = ToolCall(id=f"call_{next(_IDS)}", name=tool_name, arguments=arguments)
    return AssistantMessage(tool_calls=(call,))


def _answer(messages: Sequence[Message]) -> AssistantMessage:
    """The clause and its notice, from what the model was shown (or that it was not shown)."""
    seen = "\n".join(m.content for m in messages if isinstance(m, ToolMessage))
    found = re.search(
        r"(\d+\.\d+) Either Party may terminate this Agreement for convenience on (.+?) "
        r"written notice",
        seen,
    )
    text = f"Section {found.group(1)}: {found.group(2)} written notice." if found else "Not found."
    return AssistantMessage(content=text)


def _search_script() -> list[Step]:
    def search(messages: Sequence[Message]) -> AssistantMessage:
        handle = HANDLE_SEEN.search(_last(messages))
        assert handle
        return _call("search_result", handle=handle.group(1), pattern=NEEDLE)

    def fetch(messages: Sequence[Message]) -> AssistantMessage:
        hit = json.loads(_last(messages))["matches"][0]["offset"]
        handle = HANDLE_SEEN.search(next(m.content for m in messages if isinstance(m, ToolMessage)))
        assert handle
        return _call("fetch_result", handle=handle.group(1), offset=max(0, hit - 200))

    return [_call("read_contract", name="msa"), search, fetch, _answer]


def _paging_script() -> Callable[[Sequence[Message]], AssistantMessage]:
    """Read, then follow each footer until the needle is in view, then answer."""

    def step(messages: Sequence[Message]) -> AssistantMessage:
        if len(messages) <= 2:
            return _call("read_contract", name="msa")
        last = _last(messages)
        if NEEDLE in last:
            return _answer(messages)
        handle = HANDLE_SEEN.search(last)
        assert handle
        shown, footer = MARKER_SEEN.search(last), CONTINUE_SEEN.search(last)
        if shown:
            offset = int(shown.group(1)) - int(shown.group(2))
        else:
            assert footer, "the needle was not found before the end"
            offset = int(footer.group(1))
        return _call("fetch_result", handle=handle.group(1), offset=offset)

    return step


class _EveryTurn:
    """A provider that plays one function of the conversation on every turn."""

    def __init__(self, step: Callable[[Sequence[Message]], AssistantMessage]) -> None:
        self._step = step

    def complete(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]]
    ) -> AssistantMessage:
        return self._step(messages)


def _needle(_: Bench) -> tuple[Table, list[str]]:
    text = _needle_contract()
    store = MemoryClaimCheckStore()
    read_contract = read_contract_tool(text)
    registry = ToolRegistry((read_contract, claim_check_tool(store), claim_search_tool(store)))
    runs: dict[str, RunResult] = {}
    runs["search_result + one window"] = AgentRunner(
        provider=ScriptedProvider(_search_script()),
        tools=registry.view(),
        claim_check=ClaimCheck(store),
        system=SYSTEM,
    ).run(QUESTION, tenant="bench")
    runs["fetch_result alone, paging"] = AgentRunner(
        provider=_EveryTurn(_paging_script()),
        tools=registry.view(allow=("read_contract", "fetch_result")),
        claim_check=ClaimCheck(store),
        system=SYSTEM,
        max_turns=40,
    ).run(QUESTION, tenant="bench")
    runs["whole contract inline"] = AgentRunner(
        provider=ScriptedProvider([_call("read_contract", name="msa"), _answer]),
        tools=registry.view(allow=("read_contract",)),
        max_tool_result_chars=len(text),
        system=SYSTEM,
    ).run(QUESTION, tenant="bench")
    sent = {
        name: sum(e.prefill_chars for e in r.events if isinstance(e, ModelCalled))
        for name, r in runs.items()
    }
    best = sent["search_result + one window"]
    rows = [
        [
            name,
            fmt_int(sum(isinstance(e, ModelCalled) for e in r.events)),
            fmt_int(sent[name]),
            fmt_ratio(sent[name] / best),
            r.output or "(no answer)",
        ]
        for name, r in runs.items()
    ]
    table = Table(
        title=f"The needle question on the {len(text):,}-character contract: {QUESTION!r}",
        headers=["how", "model turns", "characters sent", "× search", "answer"],
        rows=rows,
    )
    headline = (
        f"The needle question (section 13.2 of the contract): search_result and one window "
        f"send the model {fmt_int(best)} characters over "
        f"{sum(isinstance(e, ModelCalled) for e in runs['search_result + one window'].events)} "
        f"turns; paging with fetch_result alone "
        f"{fmt_ratio(sent['fetch_result alone, paging'] / best)} as many; the whole contract "
        f"inline {fmt_ratio(sent['whole contract inline'] / best)}."
    )
    return table, [headline]


def run(bench: Bench) -> Section:
    large, large_headlines, notes = _large(bench)
    needle, needle_headlines = _needle(bench)
    return Section(
        title="Search inside a claim",
        intro=(
            "`search_result` streams the claim from the store in 1 MiB reads and matches "
            "beside it; only the matches (offset, line and a 200-character snippet) reach the "
            "conversation. Peak memory is tracemalloc's, in this process (the server is a "
            "child process)."
        ),
        tables=[large, needle],
        notes=notes,
        headlines=[*large_headlines, *needle_headlines],
    )
