"""The fleet load generator of `make bench-load` survives a proxy SIGKILLed under it.

Agents hold MCP sessions on two `s3claim mcp-proxy --listen` processes over one moto bucket;
the first proxy is SIGKILLed between two rounds of runs. Its agents' next calls fail at the
transport, are counted as such and sent to the other instance; every run completes, and
nothing reaches the agents' model as an error. (Before, the killed session's cancelled task
group surfaced in the agent's task as `CancelledError` and ended the whole load.)
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections import Counter
from typing import Any

import pytest

from benchmarks.load.fleet import Proxy, _Agent, _one_run, new_stats, verify
from devkit.servers import MotoServer
from s3claim.s3._provision import provision_bucket


@pytest.mark.slow
def test_agents_move_to_the_live_proxy_when_theirs_is_sigkilled(moto: MotoServer, s3: Any) -> None:
    bucket = f"fleet-{uuid.uuid4().hex}"
    provision_bucket(s3, bucket, prefix="claims/", day_classes=(1,))
    env = {
        **os.environ,
        "S3CLAIM_BUCKET": bucket,
        "S3CLAIM_ENDPOINT_URL": moto.url,
        "S3CLAIM_HANDLE_KEY": "one-key-for-every-proxy-0123456789",
    }
    proxies = [Proxy(env), Proxy(env)]
    stats = new_stats()

    async def load() -> list[tuple[str, str, int]]:
        agents = [_Agent([p.url for p in proxies], i, stats) for i in range(4)]
        minted = [await _one_run(a, i, stats) for i, a in enumerate(agents)]  # sessions open
        proxies[0].kill()
        minted += await asyncio.gather(*(_one_run(a, 10 + i, stats) for i, a in enumerate(agents)))
        for a in agents:
            await a.close()
        return minted

    try:
        minted = asyncio.run(load())
        assert stats["runs"] == 8 and stats["refusals"] == Counter()
        # Agents 0 and 2 were on the killed proxy: each saw its call fail once, then moved.
        assert stats["failovers"] == 2 and set(stats["transport_errors"]) == {"_Gone"}
        assert asyncio.run(verify([proxies[1].url], minted)) == 0  # every claim reads back
    finally:
        for p in proxies:
            p.stop()
