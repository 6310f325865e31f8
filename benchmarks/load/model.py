"""The capacity model: S3 requests per operation, the scenarios built from them, and prices.

Budgets are the store's own (s3claim/s3/_store.py, _paths.py, _journal.py, _erase.py
docstrings) and are what `benchmarks/tests/test_capacity_model.py` and `make bench-load`
measure with botocore hooks. `fetch_result` reads by `offset` (`fetch`) or by JSON `path`
(`fetch_path`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

__all__ = [
    "CODING_RUN",
    "COUNSEL_RUN",
    "OPERATIONS",
    "PRICES",
    "PRICES_READ",
    "SIMULATED_RUN",
    "Budget",
    "Price",
    "Scenario",
    "cost_per_thousand",
]


@dataclass(frozen=True)
class Budget:
    """S3 requests one logical operation sends on the happy path, by S3 operation."""

    name: str
    requests: dict[str, int]
    note: str

    @property
    def total(self) -> int:
        return sum(self.requests.values())


OPERATIONS: dict[str, Budget] = {
    b.name: b
    for b in (
        Budget(
            "check_in",
            {"PutObject": 2},
            "new text of two lines or more: the claim (one conditional PUT) and its index "
            "(`.index`: its line starts); a one-line text is the claim's PUT alone",
        ),
        Budget(
            "check_in_again",
            {"PutObject": 1, "HeadObject": 1, "CopyObject": 1},
            "same content, same run, another process: 412, a HEAD for the check-in, expiry and "
            "tool standing, then an in-place copy keeping them (no body); with an index, one "
            "PUT and one copy more; 0 requests in the process that wrote it while its expiry "
            "covers the new TTL (one copy of each object once it does not)",
        ),
        Budget("fetch", {"GetObject": 1}, "offset=: one ranged GET of width x limit bytes"),
        Budget(
            "fetch_past_end",
            {"GetObject": 1, "HeadObject": 1},
            "a window at or past the end: 416 carries no metadata, so one HEAD",
        ),
        Budget(
            "check_in_json",
            {"PutObject": 2},
            "a JSON result: the claim and its index (`.index`: its structure, and its line "
            "starts when it has lines), one PUT each",
        ),
        Budget(
            "fetch_path",
            {"GetObject": 3},
            "path=: the index's head, one entry or listing of it, then the value's window; "
            "at most 3 ranged GETs on any document (tests/test_json_path_budgets.py)",
        ),
        Budget(
            "fetch_line",
            {"GetObject": 2},
            "line=N: the index block holding line N's start, then the window (line 1: the "
            "window alone); tests/test_line_budgets.py",
        ),
        Budget(
            "fetch_end",
            {"GetObject": 1},
            "from_end=true: one suffix range, no length needed first; tests/test_line_budgets.py",
        ),
        Budget("search", {"GetObject": 1}, "one streaming GET per claim (+1 per cut stream)"),
        Budget("journal_save", {"PutObject": 1}, "one conditional PUT per model turn"),
        Budget("resume", {"GetObject": 1}, "one GET of the journal, whatever the run's length"),
        Budget(
            "run_with_id",
            {"HeadObject": 1},
            "AgentRunner.run(run_id=...) checks the id is free: one HEAD",
        ),
        Budget(
            "forget",
            {"ListObjectVersions": 1, "DeleteObjects": 1},
            "per 1,000 versions under the tenant or run prefix",
        ),
        Budget("proxy_call_small", {}, "an upstream result under the threshold passes through"),
        Budget(
            "proxy_call_large",
            {"PutObject": 2},
            "an upstream result checked in: the claim and, for text of two lines or more, its "
            "line index",
        ),
        Budget("proxy_fetch", {"GetObject": 1}, "fetch_result (or resources/read of a claim)"),
        Budget("proxy_search", {"GetObject": 1}, "search_result"),
    )
}


@dataclass(frozen=True)
class Scenario:
    """A run as a count of logical operations."""

    name: str
    operations: dict[str, int]
    assumption: str
    requests: Counter[str] = field(init=False)

    def __post_init__(self) -> None:
        total: Counter[str] = Counter()
        for op, times in self.operations.items():
            for s3_op, n in OPERATIONS[op].requests.items():
                total[s3_op] += n * times
        object.__setattr__(self, "requests", total)


SIMULATED_RUN = Scenario(
    "simulated run (make bench-load)",
    {
        "check_in": 2,
        "check_in_json": 1,
        "fetch": 2,
        "fetch_path": 1,
        "search": 1,
        "journal_save": 6,
        "resume": 1,
    },
    "3 tool results checked in (the 92,212-character contract, a run-specific log and a "
    "117,791-character JSON inventory), 2 fetches by offset, 1 by JSON path, 1 search, "
    "6 model turns each saved, then a resume of the finished run",
)
COUNSEL_RUN = Scenario(
    "counsel scenario",
    {"check_in": 1, "fetch": 2, "journal_save": 4},
    "the contract checked in once, fetched at sections 17.1 and 19.2, 4 model turns saved",
)
CODING_RUN = Scenario(
    "100-turn coding-agent run",
    {"check_in": 30, "fetch": 40, "search": 10, "journal_save": 100, "resume": 1, "forget": 1},
    "assumed, not measured: 100 turns saved, 30 oversized tool results (file reads, test "
    "logs), 40 fetches, 10 searches, one resume after a restart, the run forgotten at the end",
)


@dataclass(frozen=True)
class Price:
    """List prices in USD, us-east-1, per 1,000 requests (and per GB where charged)."""

    name: str
    tier1: float
    """PUT, COPY, POST, LIST."""
    tier2: float
    """GET, HEAD and the rest."""
    upload_gb: float
    retrieval_gb: float
    storage_gb_month: float
    source: str


PRICES_READ = "2026-12-02"
"""When the prices below were read from their sources."""
PRICES = (
    Price(
        "S3 Standard",
        tier1=0.005,
        tier2=0.0004,
        upload_gb=0.0,
        retrieval_gb=0.0,
        storage_gb_month=0.023,
        source="https://aws.amazon.com/s3/pricing/ (us-east-1, first 50 TB a month)",
    ),
    Price(
        "S3 Express One Zone",
        tier1=0.00113,
        tier2=0.00003,
        upload_gb=0.0032,
        retrieval_gb=0.0006,
        storage_gb_month=0.11,
        source="https://aws.amazon.com/s3/faqs/ (the S3 Express One Zone pricing examples, "
        "us-east-1)",
    ),
)
_TIER1 = {"PutObject", "CopyObject", "ListObjectVersions", "ListObjectsV2"}
_FREE = {"DeleteObjects", "DeleteObject"}  # DELETE requests are not charged


def cost_per_thousand(
    requests: Counter[str],
    price: Price,
    *,
    upload_bytes: int = 0,
    retrieval_bytes: int = 0,
    stored_bytes: int = 0,
    stored_days: float = 0.0,
) -> float:
    """USD for 1,000 runs that each send `requests`, move these bytes and keep `stored_bytes`
    for `stored_days` (lifecycle collects whole days: at least one)."""
    dollars = 0.0
    for op, n in requests.items():
        if op in _FREE:
            continue
        dollars += n * (price.tier1 if op in _TIER1 else price.tier2) / 1000
    gib = 1024**3
    dollars += upload_bytes / gib * price.upload_gb + retrieval_bytes / gib * price.retrieval_gb
    dollars += stored_bytes / gib * price.storage_gb_month * stored_days / 30
    return dollars * 1000
