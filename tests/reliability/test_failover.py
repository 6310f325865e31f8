"""Failover: a process killed mid-run loses nothing it handed out; a new one reads it all.

tests/test_s3_store.py shows a handle minted by one healthy process redeemed by another.
Here the writer is an agent run that is SIGKILLed in the middle of its loop, and the same
run carries on in another process, reading every window of every claim through its runner.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from s3claim import AgentRunner, ClaimCheck, ScriptedProvider, ToolRegistry, claim_check_tool
from s3claim.s3 import S3ClaimCheckStore
from tests._s3 import moto_client
from tests.reliability._support import (
    done,
    fetch_all,
    parse_checked_in,
    reassemble,
    tool_replies,
)

ROOT = Path(__file__).resolve().parents[2]
TENANT, RUN = "tenant/with slashes", "run-7"
REPORTS = 6


@pytest.mark.slow
def test_a_run_killed_mid_loop_is_read_back_whole_by_another_process(
    monkeypatch: pytest.MonkeyPatch, moto_endpoint: str
) -> None:
    bucket = f"failover-{os.getpid()}-{id(monkeypatch)}"
    moto_client(moto_endpoint).create_bucket(Bucket=bucket)
    monkeypatch.setenv("S3CLAIM_BUCKET", bucket)
    monkeypatch.setenv("S3CLAIM_HANDLE_KEY", "the-key-every-instance-shares")
    monkeypatch.setenv("S3CLAIM_ENDPOINT_URL", moto_endpoint)
    monkeypatch.setenv("S3CLAIM_REGION", "us-east-1")

    child = subprocess.Popen(
        [sys.executable, "-m", "tests.reliability._failover_child", TENANT, RUN],
        cwd=ROOT,
        env=dict(os.environ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        lines = [child.stdout.readline() for _ in range(REPORTS)]
        os.kill(child.pid, signal.SIGKILL)  # mid-run: it was already checking in the next
        rest, errors = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == -signal.SIGKILL, errors
    # every complete report counts, including any written between the read and the kill
    reports = [
        json.loads(line) for line in [*lines, *rest.splitlines()] if line.rstrip().endswith("}")
    ]
    assert len(reports) >= REPORTS, errors
    assert [r["n"] for r in reports] == list(range(len(reports)))

    # another instance: a new store and client, the same bucket, key, tenant and run
    store = S3ClaimCheckStore.from_settings()
    markers = [parse_checked_in(r["text"]) for r in reports]
    assert [m.handle for m in markers] == [r["handle"] for r in reports]
    runner = AgentRunner(
        provider=ScriptedProvider([fetch_all(markers), done()]),
        tools=ToolRegistry((claim_check_tool(store),)).view(),
        claim_check=ClaimCheck(store),
    )
    result = runner.run("carry on", tenant=TENANT, run_id=RUN)

    replies = tool_replies(result.messages)
    for report, marker in zip(reports, markers, strict=True):
        content = reassemble(replies, marker)
        assert hashlib.sha256(content.encode()).hexdigest() == report["sha256"]
        assert content.startswith(marker.head)
        assert len(content) == marker.total
    assert [e.kind for e in result.events].count("claim_fetched") == sum(
        -(-m.total // 4096) for m in markers
    )
    assert result.output == "done"
