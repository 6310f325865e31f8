"""A prefix the cache keeps (issue 37): what s3claim adds to a conversation is a pure function
of the result, the tool, the policy and the scope, and it never changes a message it placed.

Each instance is a process (`tests._replay_child`) on one bucket of moto's server, with every
knob of issue 37 on (a turn budget, repeat reads, the log and JSON previews): two instances
replaying one run send the model byte-identical requests, each request starts with the whole
of the one before it, and a run stopped mid-way and resumed by another instance ends with the
conversation the uninterrupted run had, byte for byte.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from s3claim.wording import REUSED_SEEN
from tests._s3 import moto_client

ROOT = Path(__file__).resolve().parents[1]
CHILD_SECONDS = 60


@pytest.fixture
def bucket(moto_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> str:
    name = f"stable-prefix-{uuid.uuid4().hex}"
    moto_client(moto_endpoint).create_bucket(Bucket=name)
    for variable, value in {
        "S3CLAIM_BUCKET": name,
        "S3CLAIM_HANDLE_KEY": "the-key-every-instance-shares",
        "S3CLAIM_ENDPOINT_URL": moto_endpoint,
        "S3CLAIM_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(variable, value)
    return name


def instance(*args: str, expect: int = 0) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "tests._replay_child", *args],
        cwd=ROOT,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=CHILD_SECONDS,
        check=False,
    )
    assert done.returncode == expect, done.stderr[-3000:]
    return json.loads(done.stdout) if expect == 0 else {}


def tool_contents(messages: list[str]) -> list[str]:
    """The tool messages' texts of a serialised conversation."""
    parsed = [json.loads(m) for m in messages]
    return [m["content"] for m in parsed if m.get("role") == "tool"]


def test_two_instances_replaying_one_run_send_the_model_the_same_bytes(bucket: str) -> None:
    first, second = instance("run", "r-1"), instance("run", "r-1")
    assert first["requests"] == second["requests"]
    assert first["messages"] == second["messages"]
    requests = first["requests"]
    assert len(requests) == 6
    assert (
        first["reused"] == 3
    )  # the log and m1.py in turn 2; in turn 5 the log (read anew after the write)
    for earlier, later in itertools.pairwise(requests):
        assert later.startswith(earlier)  # nothing placed is ever changed
    # Every knob is at work in what was sent: files under the threshold checked in for the
    # turn's budget (six handles: the log, the orders, the four files), the log's picked
    # error line, the JSON's root listing, and the reuse line.
    assert requests[1].count("handle='claim:") == 6
    assert "line 1801: 12:30:00 ERROR step 1800: the linker could not find -lssl" in requests[1]
    assert "/items array, characters 13-" in requests[1] and "[Same call" in requests[2]
    # Each repeat is answered by reference (issue 47): its call's id and handle, not the
    # preview again, the same bytes in both instances.
    repeats = [c for c in tool_contents(first["messages"]) if REUSED_SEEN.fullmatch(c)]
    assert len(repeats) == 3 and all(len(c) < 200 for c in repeats)
    assert "call 'read_log-0'" in repeats[0] and "call 'open_file-3'" in repeats[1]


def test_a_run_resumed_by_another_instance_ends_as_the_uninterrupted_run(bucket: str) -> None:
    whole = instance("run", "r-2")
    instance("run", "r-2", "--journal", "--stop-after", "4", expect=9)
    resumed = instance("resume", "r-2")
    assert resumed["messages"] == whole["messages"]
    assert resumed["reused"] >= 2  # the repeats after the resume are answered from claims
