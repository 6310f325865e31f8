"""The run journal: what recording a run costs, and what resuming it costs.

Counted with botocore's event hooks on the journal's own client (`Wire`), on moto's HTTP
server: PUTs per model turn for the counsel scenario; requests before the first model call
when a run of 4 to 256 turns is resumed on a fresh runner; and the journal object's size
against the UTF-8 size of the conversation it holds, for two contract sizes. The same
functions (`devkit.journal_costs`) back tests/journal/test_budgets.py, which asserts the
issue's budgets on them.
"""

from __future__ import annotations

import uuid

from benchmarks.context import Bench, empty_bucket
from benchmarks.report import Section, Table
from benchmarks.stats import fmt_int
from devkit.journal_costs import record_counsel, resume_cost
from devkit.servers import make_client

__all__ = ["run"]

RESUME_TURNS = (4, 16, 64, 256)
CONTRACT_SIZES = (91_800, 1_000_000)


def run(bench: Bench) -> Section:
    store_client = make_client(bench.moto)
    journal_client = make_client(bench.moto)
    bucket = f"bench-{uuid.uuid4().hex[:12]}"
    store_client.create_bucket(Bucket=bucket)
    try:
        counsel = [
            record_counsel(store_client, journal_client, bucket, bench.key, contract_chars=n)
            for n in CONTRACT_SIZES
        ]
        resumes = {n: resume_cost(journal_client, bucket, bench.key, turns=n) for n in RESUME_TURNS}
    finally:
        empty_bucket(store_client, bucket)
    recording = [
        [
            fmt_int(c.contract_chars),
            str(c.model_calls),
            str(c.journal_requests["PutObject"]),
            ", ".join(f"{n} × {op}" for op, n in sorted(c.journal_requests.items())),
            fmt_int(c.journal_bytes),
            fmt_int(c.conversation_bytes),
            f"{c.ratio:.2f}×",
        ]
        for c in counsel
    ]
    resuming = [
        [str(n), str(sum(r.values())), ", ".join(f"{k} × {op}" for op, k in sorted(r.items()))]
        for n, r in resumes.items()
    ]
    worst_ratio = max(c.ratio for c in counsel)
    most = max(sum(r.values()) for r in resumes.values())
    return Section(
        title="Run journal",
        intro=(
            "The counsel scenario recorded to an S3 run journal (on a client of its own, on "
            "moto), and runs of 4 to 256 turns resumed on a fresh runner. Budgets: one PUT per "
            "model turn; at most 2 requests before a resume calls the model; journal bytes at "
            "most 1.5× the UTF-8 size of the final conversation's text."
        ),
        tables=[
            Table(
                title="Recording the counsel scenario",
                headers=[
                    "contract chars",
                    "model calls",
                    "PUTs",
                    "journal requests",
                    "journal bytes",
                    "conversation bytes",
                    "journal / conversation",
                ],
                rows=recording,
            ),
            Table(
                title="Resuming: journal requests before the first model call",
                headers=["turns recorded", "requests", "by operation"],
                rows=resuming,
            ),
        ],
        notes=[
            "The journal holds what the model saw (heads, markers, the windows it fetched) and "
            "the run's events, so its size follows the conversation, not the contract. Tool "
            "calls a resume runs again make their own requests (a fetch_result is one GET), "
            "counted on the store's client, not here.",
        ],
        headlines=[
            f"Run journal: one PUT per model turn; a resume reads a run of any length with "
            f"{most} request before calling the model; the counsel journal is "
            f"{worst_ratio:.2f}× its conversation's UTF-8 size at either contract size.",
        ],
    )
