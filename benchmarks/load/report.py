"""docs/capacity.md's measured half and docs/capacity.png, from benchmarks/results/capacity.json.

`python -m benchmarks.load.report` re-renders them from the last run without measuring.
"""

from __future__ import annotations

import json
import re
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

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "capacity.md"
PLOT = ROOT / "docs" / "capacity.png"
RESULTS = ROOT / "benchmarks" / "results" / "capacity.json"
BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"
MODEL_BEGIN, MODEL_END = "<!-- model:begin -->", "<!-- model:end -->"
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


def agreement(sweep: list[dict[str, Any]]) -> list[str]:
    """Model against measurement, per operation: requests per call in every cell."""
    lines = ["| operation | model (S3 requests) | measured per call, every cell of the sweep | "
             "agree |", "|---|---|---|---|"]  # fmt: skip
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
        lines.append(f"| {op} | {want} | {' / '.join(sorted(seen))} | "
                     f"{'yes' if seen == {want} else '**no**'} |")  # fmt: skip
    return lines


def sweep_table(rows: list[dict[str, Any]], server: str) -> list[str]:
    head = " | ".join(f"{op} p50/p99" for op in OPS)
    lines = [f"| N | runs | runs/s | S3 req/s | {head} (ms) | errors | retryable refusals | "
             "client CPU | server CPU | client peak MB | server peak MB | connections | "
             "load avg |",
             "|" + "---|" * (12 + len(OPS))]  # fmt: skip
    for r in (r for r in rows if r["server"] == server):
        lat = " | ".join(f"{_ms(r['p50'][op])}/{_ms(r['p99'][op])}" for op in OPS)
        lines.append(
            f"| {r['workers']:,} | {r['runs']:,} | {r['runs_per_s']:.1f} | "
            f"{r['requests_per_s']:.0f} | {lat} | {_errors(r)} | {_retryable(r)} | "
            f"{r['client_cpu'] / r['wall']:.2f} | {r['server_cpu'] / r['wall']:.2f} | "
            f"{r['client_peak_rss_mb']:.0f} | {r['server_peak_rss_mb']:.0f} | "
            f"{r['connections']:,} | {r['load_average']:.1f} |"
        )
    return lines


def pool_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["| pool | past the pool | runs/s | S3 requests | connections opened | "
             "thrown away | journal_save p99 (ms) | runs failed | errors |",
             "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in rows:
        past = "waits (s3claim)" if r.get("queues") else "opens one more (botocore)"
        lines.append(f"| {r['pool']} | {past} | {r['runs_per_s']:.1f} | {r['requests']:,} | "
                     f"{r['connections']:,} | {r['discarded']:,} | "
                     f"{_ms(r['p99']['journal_save'])} | {r['failed']} | "
                     f"{_errors(r)} |")  # fmt: skip
    return lines


def fleet_table(rows: list[dict[str, Any]]) -> list[str]:
    head = " | ".join(f"{op.removeprefix('proxy_')} p50/p99" for op in PROXY_OPS)
    lines = [
        f"| proxies | runs | runs/s | calls/s | {head} (ms) | S3 requests per run | "
        "errors | peak MB per proxy | load avg |",
        "|" + "---|" * (8 + len(PROXY_OPS)),
    ]
    for r in rows:
        lat = " | ".join(f"{_ms(r['p50'][op])}/{_ms(r['p99'][op])}" for op in PROXY_OPS)
        per_run = ", ".join(f"{k} {v / r['runs']:g}" for k, v in sorted(r["s3_requests"].items()))
        peaks = ", ".join(f"{p['peak_rss_mb']:.0f}" for p in r["proxies"])
        lines.append(f"| {r['size']} | {r['runs']} | {r['runs_per_s']:.1f} | "
                     f"{r['calls_per_s']:.1f} | {lat} | {per_run} | {_errors(r)} | {peaks} | "
                     f"{r['load_average']:.1f} |")  # fmt: skip
    return lines


def _said(refusals: dict[str, int]) -> str:
    if not refusals:
        return "nothing"
    kinds = ", ".join(f"{n} `{k}`" for k, n in sorted(refusals.items()))
    retryable = set(refusals) <= RETRYABLE
    return f"{kinds} ({'all retryable' if retryable else '**not all retryable**'})"


def chaos_lines(runs: dict[str, Any], fleet: dict[str, Any]) -> list[str]:
    injected = sum(runs["relay"]["injected"].values())
    total = sum(runs["relay"]["requests"].values())
    f_injected = sum(fleet["injected"].values())
    killed = fleet["killed"]
    return [
        f"- In one process, N = {runs['workers']}: {runs['runs']:,} runs; {injected} of "
        f"{total:,} S3 requests answered `503 SlowDown` ({dict(runs['relay']['injected'])}), "
        f"each retried by the store. Runs that failed: {runs['failed']}; journals or claims "
        f"lost: {runs['lost']} (the journals of the first 256 runs read back `answered` and "
        f"each of their claims fetched); what the model read as an error: "
        f"{_said(runs['refusals'])}.",
        f"- Fleet of {fleet['size']}: {fleet['runs']} runs; {f_injected} S3 requests answered "
        f"SlowDown; proxy 1 SIGKILLed 3 s in (at {killed.get('peak_rss_mb', 0):.0f} MB) and "
        f"restarted on its port {killed.get('restarted_after_s', 0):.1f} s later. The agents "
        f"saw {fleet['failovers']} transport errors "
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


def model_lines(bytes_per: dict[str, float]) -> list[str]:
    """The model's tables: budgets, scenarios, rates per partition, dollars per 1,000 runs.

    `bytes_per`: request body bytes per operation, measured (the sweep's mean), for the
    per-GB charges of S3 Express One Zone.
    """
    lines = [MODEL_BEGIN, "", "| operation | S3 requests | measured here | note |",
             "|---|---|---|---|"]  # fmt: skip
    for b in OPERATIONS.values():
        reqs = " + ".join(f"{n} {k}" for k, n in b.requests.items()) or "0"
        if b.name in SIMULATED_RUN.operations:
            where = "make bench-load, tests/test_capacity_model.py"
        elif b.name.startswith("proxy_call_large") or b.name in PROXY_OPS:
            where = "make bench-load (the fleet, counted at the relay)"
        else:
            where = "tests/test_budgets.py, tests/test_s3_store.py"
        lines.append(f"| {b.name} | {reqs} | {where} | {b.note} |")
    lines += ["", "| run | operations | S3 requests per run | runs/s one partition holds "
              "(writes / reads) | " + " | ".join(f"$ per 1,000 runs, {p.name}" for p in PRICES)
              + " |", "|---|---|---|---|" + "---|" * len(PRICES)]  # fmt: skip
    for scenario in (SIMULATED_RUN, COUNSEL_RUN, CODING_RUN):
        lines.append(_scenario_row(scenario, bytes_per))
    lines += ["", f"List prices read {PRICES_READ}, us-east-1, per 1,000 requests: "
              + "; ".join(f"{p.name}: PUT/COPY/POST/LIST ${p.tier1}, GET/HEAD ${p.tier2}"
                          + (f", ${p.upload_gb}/GB uploaded, ${p.retrieval_gb}/GB retrieved"
                             if p.upload_gb else "")
                          + f", storage ${p.storage_gb_month}/GB-month ({p.source})"
                          for p in PRICES)
              + ". DELETE requests are free. Each run's objects are kept one day. Upload "
              "bytes per operation are the sweep's measured means: "
              + ", ".join(f"{k} {v:,.0f} B" for k, v in sorted(bytes_per.items()))
              + "; the coding run's operations are assumed to be the same sizes. Retrieval: "
              "a 4,096-character window per fetch, three per read by path, a whole text "
              "claim per search.",
              "", MODEL_END]  # fmt: skip
    return lines


def _scenario_row(scenario: Scenario, bytes_per: dict[str, float]) -> str:
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
    return (
        f"| {scenario.name} | {ops} | {total} | {rate_w:,.0f} / {rate_r:,.0f} | "
        + " | ".join(f"${d:.4f}" for d in dollars)
        + " |"
    )


def plot(results: dict[str, Any]) -> None:
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
    fig.savefig(PLOT, dpi=110)


def write(results: dict[str, Any]) -> None:
    lines = [BEGIN, "", f"Measured {results['date']} on {results['machine']}, "
             f"`make bench-load` in {results['seconds'] / 60:.1f} minutes.", "",
             "### Requests per operation: model and measurement", "",
             *agreement(results["sweep"]), ""]  # fmt: skip
    for server in ("s3rver", "moto"):
        lines += [f"### {server}: N concurrent runs, one store and one journal", "",
                  *sweep_table(results["sweep"], server), ""]  # fmt: skip
    lines += ["### Connection pool: before and after", "", *pool_table(results["pool"]), "",
              "### A fleet of MCP proxies on one bucket", "", *fleet_table(results["fleet"]),
              "", "### Chaos", "", *chaos_lines(results["chaos_runs"], results["fleet_chaos"]),
              "", "![throughput and p99 against N](capacity.png)", "", END]  # fmt: skip
    text = DOC.read_text()
    block = "\n".join(lines)
    text = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: block, text, flags=re.S)
    model = "\n".join(model_lines(bytes_per_operation(results["sweep"])))
    text = re.sub(re.escape(MODEL_BEGIN) + ".*?" + re.escape(MODEL_END), lambda _: model, text,
                  flags=re.S)  # fmt: skip
    DOC.write_text(text)
    plot(results)


def bytes_per_operation(sweep: list[dict[str, Any]]) -> dict[str, float]:
    """Mean request body bytes per call of each operation, over every cell."""
    sent: Counter[str] = Counter()
    calls: Counter[str] = Counter()
    for row in sweep:
        for op, times in SIMULATED_RUN.operations.items():
            sent[op] += row["request_bytes"].get(op, 0)
            calls[op] += row["runs"] * times
    return {op: sent[op] / calls[op] for op in calls if calls[op] and sent[op]}


def totals(row: dict[str, Any]) -> Counter[str]:
    wire: Counter[str] = Counter()
    for by_s3 in row["per_operation"].values():
        wire.update(by_s3)
    return wire


if __name__ == "__main__":
    write(json.loads(RESULTS.read_text()))
