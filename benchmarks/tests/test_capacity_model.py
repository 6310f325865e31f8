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
from devkit.servers import MotoServer
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
    assert wire == SIMULATED_RUN.requests == Counter({"PutObject": 12, "GetObject": 7})


def test_cost_counts_tier_one_and_tier_two_requests_and_not_deletes() -> None:
    price = PRICES[0]
    requests = Counter({"PutObject": 1000, "GetObject": 1000, "DeleteObjects": 1000})
    assert cost_per_thousand(requests, price) == (1000 * price.tier1 + 1000 * price.tier2)


def test_the_default_client_keeps_a_pool_for_every_worker_thread() -> None:
    # The MCP proxy runs store calls on anyio's worker threads: 40 at once by default.
    client = make_client(endpoint_url="http://127.0.0.1:9", region="us-east-1")
    assert client.meta.config.max_pool_connections == MAX_POOL_CONNECTIONS >= 40


def _connections_opened(moto: MotoServer, *, queue_past_pool: bool) -> int:
    """New connections 32 threads open through a pool of 4, 4 requests each, on moto."""
    import logging
    import threading

    client = make_client(
        endpoint_url=moto.url,
        region="us-east-1",
        credentials=("testing", "testing"),
        max_pool_connections=4,
        queue_past_pool=queue_past_pool,
    )
    client.create_bucket(Bucket=f"pool-{queue_past_pool}".lower())
    opened: list[str] = []

    class Opened(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if str(record.msg).startswith("Starting new HTTP"):
                opened.append(record.name)

    log = logging.getLogger("urllib3.connectionpool")
    handler, level = Opened(), log.level
    log.addHandler(handler)
    log.setLevel(logging.DEBUG)
    start = threading.Barrier(32)

    def work() -> None:
        start.wait()
        for _ in range(4):
            client.list_objects_v2(Bucket=f"pool-{queue_past_pool}".lower())

    try:
        threads = [threading.Thread(target=work) for _ in range(32)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        log.removeHandler(handler)
        log.setLevel(level)
    return len(opened)


def test_requests_past_the_pool_wait_for_a_connection_instead_of_opening_one(
    moto: MotoServer,
) -> None:
    # 1,024 runs in one process opened one connection each and drowned the server in read
    # timeouts (docs/capacity.md); queued, they share the pool's connections.
    assert _connections_opened(moto, queue_past_pool=True) <= 4
    assert _connections_opened(moto, queue_past_pool=False) > 4  # botocore's own
