"""Measure: `search_result` beside eight hostile regexes at once (issue 21, finding 4).

Eight threads of a neighbour (another tenant) search a claim of 20,000 `a`s with `(a|aa)+b`,
which backtracks without end; while they hold every search slot the neighbour may hold (and
queue for more), two honest searches of a 9 Mi-character
contract start: the literal `term 1` (111,111 matches, which before issue 21 failed as
`pattern_too_costly` 3 times in 3 beside them) and a regex with ten matches. Each is timed
alone first. Memory store, one process, `Host.run`, as every host runs it.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

from benchmarks.context import Bench
from benchmarks.report import Section, Table
from benchmarks.stats import fmt_ms
from s3claim import ClaimCheck
from s3claim._reading._matching import (
    MAX_CONCURRENT_SEARCHES,
    MAX_SEARCHES_PER_TENANT,
    QUEUE_SECONDS,
)
from s3claim.hosting import Host
from s3claim.memory import MemoryClaimCheckStore
from s3claim.scope import Scope
from s3claim.tools import RunContext

__all__ = ["run"]

SCOPE = Scope(tenant="bench", run="fairness")
NEIGHBOUR = Scope(tenant="mallory", run="flood")
HOSTILE = "(a|aa)+b"
HONEST = {
    "literal `term 1`": ("term 1", False),
    "regex `term 1999\\d9\\.`": (r"term 1999\d9\.", True),
}


class _Watched(MemoryClaimCheckStore):
    """Says when a search starts reading: it holds a search slot by then."""

    def __init__(self) -> None:
        super().__init__()
        self.scans = threading.Semaphore(0)

    def scan(self, scope: Scope, handle: str, *, check_in_id: str | None = None) -> Iterator[str]:
        self.scans.release()
        return super().scan(scope, handle, check_in_id=check_in_id)


def _contract(clauses: int) -> str:
    return "".join(f"Clause {n}. The parties agree to term {n}.\n" for n in range(clauses))


def _search(
    store: _Watched, handle: str, pattern: str, is_regex: bool, scope: Scope = SCOPE
) -> dict[str, Any]:
    context = RunContext(scope=scope, agent="bench", emit=lambda event: None)
    wall, cpu = time.monotonic(), time.thread_time()
    answer = Host(ClaimCheck(store)).run(
        "search_result", {"handle": handle, "pattern": pattern, "regex": is_regex}, context
    )
    parsed: dict[str, Any] = json.loads(answer.text)
    parsed["_wall"], parsed["_cpu"] = time.monotonic() - wall, time.thread_time() - cpu
    return parsed


def _outcome(result: dict[str, Any]) -> str:
    if "error" in result:
        return str(result["error"])
    return f"{result['total_matches']:,} matches"


def run(bench: Bench) -> Section:
    store = _Watched()
    hostile = store.put(NEIGHBOUR, "a" * 20_000 + "!", ttl_seconds=3600)
    honest = store.put(SCOPE, _contract(200_000), ttl_seconds=3600)
    alone = {name: _search(store, honest, *spec) for name, spec in HONEST.items()}
    for _ in alone:
        store.scans.acquire()
    results: dict[str, dict[str, Any]] = {}

    def attack(i: int) -> None:
        results[f"hostile {i}"] = _search(store, hostile, HOSTILE, True, NEIGHBOUR)

    def honest_search(name: str) -> None:
        results[name] = _search(store, honest, *HONEST[name])

    attackers = [threading.Thread(target=attack, args=(i,)) for i in range(8)]
    for thread in attackers:
        thread.start()
    for _ in range(MAX_SEARCHES_PER_TENANT):  # the flood holds all it may, the rest queue
        store.scans.acquire()
    honest_threads = [threading.Thread(target=honest_search, args=(n,)) for n in HONEST]
    for thread in honest_threads:
        thread.start()
    for thread in [*attackers, *honest_threads]:
        thread.join()
    rows = []
    for name in HONEST:
        rows.append(
            [
                name,
                _outcome(alone[name]),
                fmt_ms(alone[name]["_cpu"]),
                fmt_ms(alone[name]["_wall"]),
                _outcome(results[name]),
                fmt_ms(results[name]["_cpu"]),
                fmt_ms(results[name]["_wall"]),
            ]
        )
    hostile_results = [results[f"hostile {i}"] for i in range(8)]
    outcomes = sorted({_outcome(r) for r in hostile_results})
    walls = sorted(r["_wall"] for r in hostile_results)
    cpus = sorted(r["_cpu"] for r in hostile_results)
    rows.append(
        [
            f"8 × hostile `{HOSTILE}`",
            "",
            "",
            "",
            " / ".join(f"{sum(_outcome(r) == o for r in hostile_results)} {o}" for o in outcomes),
            f"{fmt_ms(cpus[0])} – {fmt_ms(cpus[-1])}",
            f"{fmt_ms(walls[0])} – {fmt_ms(walls[-1])}",
        ]
    )
    failures = [
        f"the honest {name} failed beside eight hostile regexes ({_outcome(results[name])})"
        for name in HONEST
        if "error" in results[name]
    ]
    literal = next(iter(HONEST))
    under_attack, by_itself = fmt_ms(results[literal]["_wall"]), fmt_ms(alone[literal]["_wall"])
    return Section(
        title="Search beside hostile regexes",
        intro=(
            "Eight threads of another tenant search a claim of 20,000 `a`s with a regex that "
            f"backtracks without end; while they hold the {MAX_SEARCHES_PER_TENANT} search "
            f"slot{'s' if MAX_SEARCHES_PER_TENANT > 1 else ''} one tenant may (of "
            f"{MAX_CONCURRENT_SEARCHES} in the process) and queue for more, two honest "
            "searches of a 9 Mi-character contract start. Each honest search is first timed "
            "alone. A regex's budget is CPU time of its own thread (0.5 s plus 5 ns a "
            "character, 150 ns for one with an unbounded repetition, such as the hostile one, "
            "which is probed for where its tries run on); a literal has none. Memory store, "
            f"one process; a search that finds no free slot in {QUEUE_SECONDS:.0f} s is told "
            "`busy`."
        ),
        tables=[
            Table(
                title="Honest searches alone and beside eight hostile ones",
                headers=["search", "alone", "CPU", "wall", "under attack", "CPU", "wall"],
                rows=rows,
            )
        ],
        headlines=[
            "Beside eight hostile regexes of another tenant, the literal search `term 1` "
            f"(111,111 matches) returns {_outcome(results[literal])} in {under_attack} "
            f"(alone {by_itself}); before issue 21 it failed as pattern_too_costly 3 times in 3."
        ],
        budget_failures=failures,
    )
