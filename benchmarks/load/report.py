"""docs/capacity.md's two generated blocks and docs/capacity.png, from the load results.

`results_section` is the measured half (the block `load`), `costs_section` the model's tables
with the dollars the measured bytes imply (the block `costs`); both are `Section`s the one
renderer lays out, built from benchmarks/results/capacity.json by any run of the harness
(`python -m benchmarks --render` re-renders them without measuring).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.load.model import (
    CODING_RUN,
    COUNSEL_RUN,
    OPERATIONS,
    PRICES,
    PRICES_READ,
    SIMULATED_RUN,
    Scenario,
    cost_per_thousand,
)
from benchmarks.report import Section, Table

PLOT = "capacity.png"
WRITES_PER_PARTITION, READS_PER_PARTITION = 3500, 5500
_WRITES = {"PutObject", "CopyObject", "DeleteObjects"}
OPS = ("check_in", "check_in_json", "fetch", "fetch_path", "search", "journal_save", "resume")
PROXY_OPS = ("proxy_call_large", "proxy_fetch", "proxy_search")


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f}"


RETRYABLE = {"store_unavailable", "busy", "too_many_calls"}
"""Refusals that tell the model to try again later; any other refusal is an error."""


def _errors(row: dict[str, Any]) -> int:
    """Runs that failed, claims or journals lost, and refusals the model cannot retry."""
    wrong = sum(n for k, n in row["refusals"].items() if k not in RETRYABLE)
    return int(row.get("failed", 0) + wrong + row["lost"])


def _retryable(row: dict[str, Any]) -> str:
    said = {k: n for k, n in row["refusals"].items() if k in RETRYABLE}
    return ", ".join(f"{n:,} `{k}`" for k, n in sorted(said.items())) or "0"


def agreement(sweep: list[dict[str, Any]]) -> Table:
    """Model against measurement, per operation: requests per call in every cell."""
    rows = []
    for op in OPS:
        times = SIMULATED_RUN.operations[op]
        predicted = OPERATIONS[op].requests
        seen: set[str] = set()
        for row in sweep:
            got = row["per_operation"].get(op, {})
            calls = row["runs"] * times
            if op == "search":  # a search refused `busy` never reaches the store
                calls -= row["refusals"].get("busy", 0)
            seen.add(", ".join(f"{k} {v / calls:g}" for k, v in sorted(got.items())))
        want = ", ".join(f"{k} {v}" for k, v in sorted(predicted.items()))
        rows.append([op, want, " / ".join(sorted(seen)), "yes" if seen == {want} else "**no**"])
    return Table(
        title="Requests per operation: model and measurement",
        headers=["operation", "model (S3 requests)", "measured per call, every cell of the sweep",
                 "agree"],
        rows=rows,
        align_left=4,
    )  # fmt: skip


def sweep_table(rows: list[dict[str, Any]], server: str) -> Table:
    body = []
    for r in (r for r in rows if r["server"] == server):
        body.append([
            f"{r['workers']:,}", f"{r['runs']:,}", f"{r['runs_per_s']:.1f}",
            f"{r['requests_per_s']:.0f}",
            *(f"{_ms(r['p50'][op])}/{_ms(r['p99'][op])}" for op in OPS),
            str(_errors(r)), _retryable(r), f"{r['client_cpu'] / r['wall']:.2f}",
            f"{r['server_cpu'] / r['wall']:.2f}", f"{r['client_peak_rss_mb']:.0f}",
            f"{r['server_peak_rss_mb']:.0f}", f"{r['connections']:,}",
            f"{r['load_average']:.1f}",
        ])  # fmt: skip
    return Table(
        title=f"{server}: N concurrent runs, one store and one journal (latencies in ms)",
        headers=["N", "runs", "runs/s", "S3 req/s", *(f"{op} p50/p99" for op in OPS), "errors",
                 "retryable refusals", "client CPU", "server CPU", "client peak MB",
                 "server peak MB", "connections", "load avg"],
        rows=body,
    )  # fmt: skip


def pool_table(rows: list[dict[str, Any]]) -> Table:
    body = []
    for r in rows:
        past = "waits (s3claim)" if r.get("queues") else "opens one more (botocore)"
        body.append([str(r["pool"]), past, f"{r['runs_per_s']:.1f}", f"{r['requests']:,}",
                     f"{r['connections']:,}", f"{r['discarded']:,}",
                     _ms(r["p99"]["journal_save"]), str(r["failed"]), str(_errors(r))])  # fmt: skip
    return Table(
        title="Connection pool: before and after",
        headers=["pool", "past the pool", "runs/s", "S3 requests", "connections opened",
                 "thrown away", "journal_save p99 (ms)", "runs failed", "errors"],
        rows=body,
        align_left=2,
    )  # fmt: skip


def fleet_table(rows: list[dict[str, Any]]) -> Table:
    body = []
    for r in rows:
        per_run = ", ".join(f"{k} {v / r['runs']:g}" for k, v in sorted(r["s3_requests"].items()))
        body.append([
            str(r["size"]), str(r["runs"]), f"{r['runs_per_s']:.1f}", f"{r['calls_per_s']:.1f}",
            *(f"{_ms(r['p50'][op])}/{_ms(r['p99'][op])}" for op in PROXY_OPS), per_run,
            str(_errors(r)), ", ".join(f"{p['peak_rss_mb']:.0f}" for p in r["proxies"]),
            f"{r['load_average']:.1f}",
        ])  # fmt: skip
    return Table(
        title="A fleet of MCP proxies on one bucket (latencies in ms)",
        headers=["proxies", "runs", "runs/s", "calls/s",
                 *(f"{op.removeprefix('proxy_')} p50/p99" for op in PROXY_OPS),
                 "S3 requests per run", "errors", "peak MB per proxy", "load avg"],
        rows=body,
    )  # fmt: skip


def _said(refusals: dict[str, int]) -> str:
    if not refusals:
        return "nothing"
    kinds = ", ".join(f"{n} `{k}`" for k, n in sorted(refusals.items()))
    retryable = set(refusals) <= RETRYABLE
    return f"{kinds} ({'all retryable' if retryable else '**not all retryable**'})"


def chaos_notes(runs: dict[str, Any], fleet: dict[str, Any]) -> list[str]:
    injected = sum(runs["relay"]["injected"].values())
    total = sum(runs["relay"]["requests"].values())
    f_injected = sum(fleet["injected"].values())
    killed = fleet["killed"]
    return [
        f"Chaos, in one process, N = {runs['workers']}: {runs['runs']:,} runs; {injected} of "
        f"{total:,} S3 requests answered `503 SlowDown` ({dict(runs['relay']['injected'])}), "
        f"each retried by the store. Runs that failed: {runs['failed']}; journals or claims "
        f"lost: {runs['lost']} (the journals of the first 256 runs read back `answered` and "
        f"each of their claims fetched); what the model read as an error: "
        f"{_said(runs['refusals'])}.",
        f"Chaos, in a fleet of {fleet['size']}: {fleet['runs']} runs; {f_injected} S3 requests "
        f"answered SlowDown; proxy 1 SIGKILLed 3 s in (at {killed.get('peak_rss_mb', 0):.0f} "
        f"MB) and restarted on its port {killed.get('restarted_after_s', 0):.1f} s later. The "
        f"agents saw {fleet['failovers']} transport errors "
        f"({dict(fleet.get('transport_errors', {})) or 'none'}): each a retryable failure of "
        f"the call, sent again to the next instance. Errors the agents' model read: "
        f"{_said(fleet['refusals'])}; claims lost: {fleet['lost']} (of {fleet.get('verified', 0)} "
        "read back whole through the last instance). S3 requests per run: "
        + ", ".join(f"{k} {v / fleet['runs']:.2f}" for k, v in sorted(fleet["s3_requests"].items()))
        + f" (above the model's {_fleet_run_model()}: the requests answered SlowDown and "
        "sent again, and the calls the kill cut, sent again to the other instance).",
    ]


def _fleet_run_model() -> str:
    """What one MCP run of the fleet costs by the model: a large call, a fetch, a search."""
    total: Counter[str] = Counter()
    for op in PROXY_OPS:
        total.update(OPERATIONS[op].requests)
    return ", ".join(f"{n} {k}" for k, n in sorted(total.items()))


def costs_section(bytes_per: dict[str, float]) -> Section:
    """The model's tables: budgets, scenarios, rates per partition, dollars per 1,000 runs.

    `bytes_per`: request body bytes per operation, measured (the sweep's mean), for the
    per-GB charges of S3 Express One Zone.
    """
    budgets = []
    for b in OPERATIONS.values():
        reqs = " + ".join(f"{n} {k}" for k, n in b.requests.items()) or "0"
        if b.name in SIMULATED_RUN.operations:
            where = "make bench-load, benchmarks/tests/test_capacity_model.py"
        elif b.name.startswith("proxy_call_large") or b.name in PROXY_OPS:
            where = "make bench-load (the fleet, counted at the relay)"
        else:
            where = "tests/test_budgets.py, tests/test_s3_store.py"
        budgets.append([b.name, reqs, where, b.note])
    prices = "; ".join(
        f"{p.name}: PUT/COPY/POST/LIST ${p.tier1}, GET/HEAD ${p.tier2}"
        + (f", ${p.upload_gb}/GB uploaded, ${p.retrieval_gb}/GB retrieved" if p.upload_gb else "")
        + f", storage ${p.storage_gb_month}/GB-month ({p.source})"
        for p in PRICES
    )
    measured = ", ".join(f"{k} {v:,.0f} B" for k, v in sorted(bytes_per.items()))
    return Section(
        title="The model: S3 requests per operation",
        intro="",
        tables=[
            Table(["operation", "S3 requests", "measured here", "note"], budgets, align_left=4),
            Table(
                ["run", "operations", "S3 requests per run",
                 "runs/s one partition holds (writes / reads)",
                 *(f"$ per 1,000 runs, {p.name}" for p in PRICES)],
                [_scenario_row(s, bytes_per) for s in (SIMULATED_RUN, COUNSEL_RUN, CODING_RUN)],
                align_left=3,
            ),
        ],
        notes=[
            f"List prices read {PRICES_READ}, us-east-1, per 1,000 requests: {prices}. DELETE "
            "requests are free. Each run's objects are kept one day. Upload bytes per operation "
            f"are the sweep's measured means: {measured}; the coding run's operations are "
            "assumed to be the same sizes. Retrieval: a 4,096-character window per fetch, three "
            "per read by path, a whole text claim per search."
        ],
    )  # fmt: skip


def _scenario_row(scenario: Scenario, bytes_per: dict[str, float]) -> list[str]:
    reqs = scenario.requests
    writes = sum(n for k, n in reqs.items() if k in _WRITES)
    reads = sum(n for k, n in reqs.items() if k not in _WRITES)
    rate_w = WRITES_PER_PARTITION / writes if writes else float("inf")
    rate_r = READS_PER_PARTITION / reads if reads else float("inf")
    upload = sum(bytes_per.get(op, 0) * n for op, n in scenario.operations.items())
    # What stays: the claims, and one journal (each save replaces the one before).
    stored = upload - bytes_per.get("journal_save", 0) * (
        scenario.operations.get("journal_save", 1) - 1
    )
    # A window per fetch (three reads per path), and the whole claim per search: it streams.
    ops_of = scenario.operations
    retrieval = int(4096 * (ops_of.get("fetch", 0) + 3 * ops_of.get("fetch_path", 0))
                    + bytes_per.get("check_in", 0) * ops_of.get("search", 0))  # fmt: skip
    dollars = [
        cost_per_thousand(reqs, p, upload_bytes=int(upload), retrieval_bytes=retrieval,
                          stored_bytes=int(stored), stored_days=1.0)
        for p in PRICES
    ]  # fmt: skip
    ops = ", ".join(f"{n} {op}" for op, n in scenario.operations.items())
    total = ", ".join(f"{n} {k}" for k, n in sorted(reqs.items()))
    return [
        scenario.name,
        ops,
        total,
        f"{rate_w:,.0f} / {rate_r:,.0f}",
        *(f"${d:.4f}" for d in dollars),
    ]


def plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right, fleet) = plt.subplots(1, 3, figsize=(14, 4.2))
    for server, style in (("s3rver", "o-"), ("moto", "s--")):
        rows = [r for r in results["sweep"] if r["server"] == server]
        if not rows:
            continue
        ns = [r["workers"] for r in rows]
        left.plot(ns, [r["runs_per_s"] for r in rows], style, label=server)
        for op in ("journal_save", "fetch"):
            right.plot(ns, [r["p99"][op] * 1000 for r in rows], style, label=f"{server} {op}")
    for axis in (left, right):
        axis.set_xscale("log", base=4)
        axis.set_xlabel("concurrent runs in one process (N)")
        axis.legend(fontsize=8)
    left.set_ylim(bottom=0)
    left.set_ylabel(f"runs per second ({sum(SIMULATED_RUN.requests.values())} S3 requests each)")
    right.set_ylabel("p99 latency (ms)")
    right.set_yscale("log")
    sizes = [r["size"] for r in results["fleet"]]
    fleet.bar([str(s) for s in sizes], [r["runs_per_s"] for r in results["fleet"]])
    fleet.set_xlabel("mcp-proxy processes on one bucket")
    fleet.set_ylabel("agent runs per second (4 MCP calls each)")
    fig.suptitle(f"s3claim on one bucket, loopback, {results['machine']} (shared), "
                 f"{results['date']}")  # fmt: skip
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def results_section(results: dict[str, Any]) -> Section:
    """The measured half: model against measurement, the sweep, the pool, the fleet, chaos."""
    tables = [agreement(results["sweep"])]
    servers = [s for s in ("s3rver", "moto") if any(r["server"] == s for r in results["sweep"])]
    tables += [sweep_table(results["sweep"], server) for server in servers]
    if "pool" in results:
        tables.append(pool_table(results["pool"]))
    tables.append(fleet_table(results["fleet"]))
    chaos = "chaos_runs" in results and "fleet_chaos" in results
    return Section(
        title="Capacity: concurrent runs on one bucket",
        intro=(
            f"Measured {results['date']} on {results['machine']}, `make bench-load` in "
            f"{results['seconds'] / 60:.1f} minutes.\n\n"
            f"![throughput and p99 against N]({PLOT})"
        ),
        tables=tables,
        notes=chaos_notes(results["chaos_runs"], results["fleet_chaos"]) if chaos else [],
    )


def bytes_per_operation(sweep: list[dict[str, Any]]) -> dict[str, float]:
    """Mean request body bytes per call of each operation, over every cell."""
    sent: Counter[str] = Counter()
    calls: Counter[str] = Counter()
    for row in sweep:
        for op, times in SIMULATED_RUN.operations.items():
            sent[op] += row["request_bytes"].get(op, 0)
            calls[op] += row["runs"] * times
    return {op: sent[op] / calls[op] for op in calls if calls[op] and sent[op]}
