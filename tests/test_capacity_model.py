"""The capacity model (benchmarks/load/model.py, quoted by docs/capacity.md) against the wire.

One simulated run of `make bench-load`, on moto's HTTP server, counted per logical operation
with botocore hooks: every operation sends exactly the S3 requests the model says, so the
cost and rate figures built on the model are the store's own.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from benchmarks.load.agent import Counting, build, run_one
from benchmarks.load.model import OPERATIONS, PRICES, SIMULATED_RUN, cost_per_thousand
from s3claim.s3._config import MAX_POOL_CONNECTIONS, make_client


def test_a_simulated_run_sends_exactly_what_the_model_says(s3: Any, bucket: str) -> None:
    counting = Counting()
    store, journal = build(s3, bucket, counting)
    done = run_one(store, journal, "acme")
    assert done["refusals"] == [] and len(done["handles"]) == 3
    measured = counting.per_operation()
    predicted = {
        op: {s3_op: n * times for s3_op, n in OPERATIONS[op].requests.items()}
        for op, times in SIMULATED_RUN.operations.items()
    }
    assert measured == predicted
    wire: Counter[str] = Counter()
    for (_, s3_op), n in counting.requests.items():
        wire[s3_op] += n
    assert wire == SIMULATED_RUN.requests == Counter({"PutObject": 10, "GetObject": 7})


def test_cost_counts_tier_one_and_tier_two_requests_and_not_deletes() -> None:
    price = PRICES[0]
    requests = Counter({"PutObject": 1000, "GetObject": 1000, "DeleteObjects": 1000})
    assert cost_per_thousand(requests, price) == (1000 * price.tier1 + 1000 * price.tier2)


def test_the_default_client_keeps_a_pool_for_every_worker_thread() -> None:
    # The MCP proxy runs store calls on anyio's worker threads: 40 at once by default.
    client = make_client(endpoint_url="http://127.0.0.1:9", region="us-east-1")
    assert client.meta.config.max_pool_connections == MAX_POOL_CONNECTIONS >= 40
