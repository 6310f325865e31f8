"""Two HTTP proxy processes on one moto-backed bucket: a handle minted through one is
redeemed through the other, also after the first is gone. And a store fault at check-in."""

from __future__ import annotations

import os
import uuid
from typing import Any

import anyio
import pytest
from mcp import Client

from devkit.mcp_upstream import document
from s3claim.mcp import RUN_META_KEY
from s3claim.s3._provision import provision_bucket
from tests._s3 import moto_client
from tests.mcp_proxy._support import handle_of, http_proxy, read_all, received, text_of


def _environment(moto_endpoint: str, bucket: str) -> dict[str, str]:
    return {
        **os.environ,
        "S3CLAIM_BUCKET": bucket,
        "S3CLAIM_ENDPOINT_URL": moto_endpoint,
        "S3CLAIM_HANDLE_KEY": "one-key-for-every-proxy-0123456789",
    }


def test_a_handle_minted_through_one_proxy_is_redeemed_through_another(moto_endpoint: str) -> None:
    bucket = f"mcp-{uuid.uuid4().hex}"
    provision_bucket(moto_client(moto_endpoint), bucket, prefix="claims/", day_classes=(1, 7, 30))
    env = _environment(moto_endpoint, bucket)
    expected = document(20_000, seed=5)
    minted: dict[str, Any] = {}

    async def mint(url: str) -> None:
        async with Client(url) as client:
            result = await client.call_tool("big", {"chars": 20_000, "seed": 5})
            minted["tenant_run"] = handle_of(text_of(result))
            named = await client.call_tool(
                "big", {"chars": 20_000, "seed": 5}, meta={RUN_META_KEY: "conversation-7"}
            )
            minted["named_run"] = handle_of(text_of(named))
            minted["upstream_pid"] = int(text_of(await client.call_tool("pid", {})))

    async def redeem(url: str) -> None:
        async with Client(url) as client:
            whole, windows = await read_all(client, minted["tenant_run"])
            assert whole == expected
            meta = {RUN_META_KEY: "conversation-7"}
            assert (await read_all(client, minted["named_run"], meta=meta))[0] == expected
            assert expected not in received(*windows)

    with (
        http_proxy("--tenant", "acme", env=env) as first,
        http_proxy("--tenant", "acme", env=env) as second,
    ):
        assert "store: s3" in "".join(first.stderr)  # the default with S3CLAIM_BUCKET set
        anyio.run(mint, first.url)
        anyio.run(redeem, second.url)
        first.stop()  # SIGTERM: a graceful stop that also ends its stdio upstream
        assert first.process.returncode == 0
        with pytest.raises(ProcessLookupError):
            os.kill(minted["upstream_pid"], 0)
        anyio.run(redeem, second.url)  # the instance that minted is gone


def test_a_store_fault_at_check_in_truncates_with_a_warning(moto_endpoint: str) -> None:
    bucket = f"gone-{uuid.uuid4().hex}"  # there at start (the probe), deleted before the call
    moto_client(moto_endpoint).create_bucket(Bucket=bucket)
    env = _environment(moto_endpoint, bucket)
    text = document(10_000)

    async def scenario(url: str) -> None:
        async with Client(url) as client:
            result = await client.call_tool("big", {"chars": 10_000})
            shown = text_of(result)
            assert shown.startswith(text[:4_096])
            assert shown.endswith("[10000 characters, 5904 cut off and not retrievable.]")
            assert not result.is_error

    with http_proxy("--tenant", "acme", env=env) as proxy:
        moto_client(moto_endpoint).delete_bucket(Bucket=bucket)
        anyio.run(scenario, proxy.url)
    log = "".join(proxy.stderr)
    assert "WARNING check-in failed for big (10000 chars): ClaimStoreError" in log
    assert text[:40] not in log
