"""Measure 3: erase a tenant holding N claims (10,000 in the full run).

The claims are seeded straight into moto's in-process backend (the objects are what forget
meets, however they arrived), each store in a bucket of its own, with another tenant's claims
beside them that must survive. The erasure itself goes over HTTP: s3claim's
ListObjectVersions + DeleteObjects in batches of 1,000, against the naive listing and one
DeleteObject per key. Time is also split by operation, because moto's ListObjectVersions
deep-copies every object in the bucket on every call, which no real S3 does.
"""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

from benchmarks.context import Bench, empty_bucket
from benchmarks.report import Section, Table
from benchmarks.stats import fmt_int, fmt_ms, fmt_ratio, median, time_once
from devkit.servers import Wire
from s3claim.scope import Scope

__all__ = ["run"]

TENANT, OTHER = "doomed", "kept"
_RUNS = 100  # the tenant's claims spread over this many runs
_KEPT = 50
_BODY = "x".encode("utf-32-le")
_STORES = ("s3claim", "naive")


def _keys(prefixes: list[str], count: int) -> list[str]:
    """Named as claims are (a width digit, 32 hex): an erasure counts claims by their keys."""
    return [f"{prefixes[i % len(prefixes)]}1{uuid.UUID(int=i).hex}" for i in range(count)]


def _once(bench: Bench, name: str, claims: int) -> tuple[float, Counter[str], dict[str, float]]:
    """Seed a fresh bucket, forget the tenant over HTTP: (seconds, requests, seconds per op)."""
    client, bucket, store, naive = bench.stores(bench.moto)
    wire = Wire.attach(client)
    target: Any = store if name == "s3claim" else naive
    key = bench.key

    def prefix(scope: Scope) -> str:
        if name == "naive":
            return naive.key_prefix(scope)
        return f"claims/{key.tenant_tag(scope.tenant)}/{key.run_tag(scope)}/"

    try:
        doomed = [prefix(Scope(TENANT, f"run-{r}")) for r in range(_RUNS)]
        bench.moto.seed(bucket, _keys(doomed, claims), _BODY)
        bench.moto.seed(bucket, _keys([prefix(Scope(OTHER, "run-0"))], _KEPT), _BODY)
        removed: list[int] = []
        seconds = time_once(lambda: removed.append(target.forget(tenant=TENANT)))
        if removed != [claims]:
            raise AssertionError(f"{name} forgot {removed}, expected {claims}")
        requests, per_op = Counter(wire.requests), dict(wire.seconds)
        left = client.list_objects_v2(Bucket=bucket).get("KeyCount", 0)
        if left != _KEPT:
            raise AssertionError(f"{name} left {left} objects, not the other tenant's {_KEPT}")
        return seconds, requests, per_op
    finally:
        empty_bucket(client, bucket)


def run(bench: Bench) -> Section:
    claims = bench.profile.forget_claims
    samples: dict[str, list[float]] = {name: [] for name in _STORES}
    requests: dict[str, Counter[str]] = {}
    per_op: dict[str, dict[str, float]] = {}
    for _ in range(bench.profile.forget_repeats):
        for name in _STORES:
            seconds, requests[name], per_op[name] = _once(bench, name, claims)
            samples[name].append(seconds)

    def total(name: str) -> int:
        return sum(requests[name].values())

    def detail(name: str) -> str:
        return ", ".join(
            f"{n:,} × {op} ({fmt_ms(per_op[name][op])})" for op, n in sorted(requests[name].items())
        )

    t_ours, t_theirs = median(samples["s3claim"]), median(samples["naive"])
    rows = [
        [name, detail(name), fmt_int(total(name)), fmt_ms(t), fmt_int(claims / t)]
        for name, t in (("s3claim", t_ours), ("naive", t_theirs))
    ]
    ratio = total("naive") / total("s3claim")
    deletes = per_op["s3claim"]["DeleteObjects"] / requests["s3claim"]["DeleteObjects"]
    return Section(
        title="Forget a tenant",
        intro=(
            f"`forget(tenant=...)` of a tenant holding {claims:,} claims over {_RUNS} runs, "
            f"beside another tenant's {_KEPT} that must stay, on moto's HTTP server; each store "
            f"in its own bucket. Median of {bench.profile.forget_repeats}; objects seeded into "
            "moto's backend, the erasure over HTTP. In brackets: time spent in each operation "
            "(last run)."
        ),
        tables=[
            Table(
                headers=["store", "by operation (time in it)", "requests", "time", "claims/s"],
                rows=rows,
                align_left=2,
            )
        ],
        notes=[
            f"Requests: naive / s3claim = {fmt_ratio(ratio)}; time on moto: "
            f"{fmt_ratio(t_theirs / t_ours)}.",
            "Most of s3claim's time on moto is moto's ListObjectVersions, which deep-copies "
            "every object in the bucket on each call; one DeleteObjects of 1,000 keys took "
            f"{fmt_ms(deletes)}. On S3 every request is a network round trip: the naive "
            f"erasure's {total('naive'):,} sequential requests are what grows.",
        ],
        headlines=[
            f"Forgetting a tenant with {claims:,} claims: s3claim sends {total('s3claim')} "
            f"requests against the naive {total('naive'):,} ({fmt_ratio(ratio)} fewer) and "
            f"finishes {fmt_ratio(t_theirs / t_ours)} faster on moto.",
        ],
    )
