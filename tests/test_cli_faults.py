"""One fault, one exit code, whichever command meets it (issue 48, item 5).

Each command runs against each fault of docs/operations.md's exit-code table, in-process
against moto's HTTP server (a missing bucket, a provisioned one) and a loopback port nothing
listens on, and must exit with the code that table gives, its one line on stderr naming the
fault. The codes are read from the page, so the table and the commands cannot drift apart.
"""

from __future__ import annotations

import re
import socket
import uuid
from pathlib import Path
from typing import Any

import boto3
import pytest
from typer.testing import CliRunner

from s3claim.cli import app
from s3claim.handles import HandleKey
from s3claim.memory import MemoryClaimCheckStore
from s3claim.s3._provision import provision_bucket
from tests.mcp_proxy._support import PYTHON, UPSTREAM

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()
KEY = "k" * 32
HANDLE = "claim:1" + "0" * 32
TENANT_RUN = ["--tenant", "t", "--run", "r"]
COMMANDS: dict[str, list[str]] = {
    "put": ["put", *TENANT_RUN],
    "fetch": ["fetch", *TENANT_RUN, HANDLE],
    "search": ["search", *TENANT_RUN, HANDLE, "x"],
    "link": ["link", *TENANT_RUN, HANDLE, "--base-url", "http://127.0.0.1:8765"],
    "ls": ["ls", "--tenant", "t"],
    "runs": ["runs", "--tenant", "t"],
    "audit": ["audit", "--tenant", "t"],
    "forget": ["forget", "--tenant", "t", "--yes"],
    "doctor": ["doctor"],
    "serve": ["serve", "--listen", "127.0.0.1:0"],
    "mcp-proxy": ["mcp-proxy", "--tenant", "t", "--store", "s3", "--", PYTHON, UPSTREAM],
    "demo": ["demo", "--store", "s3", "--no-baseline"],
}
FAULTS = {  # the table's fault -> what stderr names
    "no bucket named": "--bucket or S3CLAIM_BUCKET",
    "no handle key": "S3CLAIM_HANDLE_KEY is not set",
    "no AWS credentials": "no AWS credentials found",
    "no such bucket": "does not exist (or is in another account)",
    "the store unreachable or unavailable": "cannot reach S3 at http://127.0.0.1:",
}
NOT_MET = {
    ("no bucket named", "demo"): "without a bucket the demo runs on an embedded S3",
    ("no handle key", "demo"): "the demo makes a key of its own",
    ("no handle key", "doctor"): "doctor reads the bucket's configuration, not claims",
}


def codes() -> dict[str, int]:
    """docs/operations.md's exit-code table: fault -> code."""
    page = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    section = page.split("## Exit codes\n", 1)[1].split("\n## ", 1)[0]
    return {f: int(c) for f, c in re.findall(r"^\| ([^|`]+?) \| `(\d)` \|", section, re.M)}


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.fixture
def provisioned(moto_endpoint: str) -> str:
    name = f"faults-{uuid.uuid4().hex}"
    provision_bucket(
        boto3.client("s3", endpoint_url=moto_endpoint),
        name,
        prefix="claims/",
        day_classes=(1, 7, 30),
    )
    return name


def _environment(
    fault: str, moto_endpoint: str, bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {
        "S3CLAIM_BUCKET": bucket,
        "S3CLAIM_ENDPOINT_URL": moto_endpoint,
        "S3CLAIM_HANDLE_KEY": KEY,
    }
    if fault == "no bucket named":
        del env["S3CLAIM_BUCKET"]
    elif fault == "no handle key":
        del env["S3CLAIM_HANDLE_KEY"]
    elif fault == "no such bucket":
        env["S3CLAIM_BUCKET"] = f"missing-{uuid.uuid4().hex}"
    elif fault == "the store unreachable or unavailable":
        env["S3CLAIM_ENDPOINT_URL"] = f"http://127.0.0.1:{closed_port()}"
    elif fault == "no AWS credentials":
        monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)  # it caches what it resolved
        monkeypatch.delenv("AWS_ACCESS_KEY_ID")
        monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
        monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    for name, value in env.items():
        monkeypatch.setenv(name, value)


def test_the_table_lists_every_fault_the_commands_are_run_against() -> None:
    table = codes()
    assert set(FAULTS) <= set(table)
    assert table["none"] == 0 and table["a check that ran failed"] == 1


MET = [(f, c) for f in FAULTS for c in COMMANDS if (f, c) not in NOT_MET]


@pytest.mark.parametrize(("fault", "command"), MET, ids=[f"{c}-{f}" for f, c in MET])
def test_every_command_meets_each_fault_with_the_tables_code_and_one_line(
    command: str,
    fault: str,
    moto_endpoint: str,
    provisioned: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _environment(fault, moto_endpoint, provisioned, monkeypatch)
    result = runner.invoke(app, COMMANDS[command], input="some content")
    assert result.exit_code == codes()[fault], (result.stdout, result.stderr)
    stderr: str = result.stderr
    assert stderr.startswith("s3claim: error: ") and stderr.count("\n") == 1, stderr
    assert FAULTS[fault] in stderr, stderr


def test_what_a_fault_does_not_reach(
    moto_endpoint: str, provisioned: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Doctor needs no key; keygen and verify-receipt send no request (an unreachable
    endpoint does not reach them), and verify-receipt's one fault is the key's."""
    _environment("no handle key", moto_endpoint, provisioned, monkeypatch)
    assert runner.invoke(app, ["doctor"]).exit_code == 0
    receipt = tmp_path / "receipt.json"
    erased = MemoryClaimCheckStore(handle_key=HandleKey(KEY)).erase(tenant="t")
    receipt.write_text(erased.to_json(), encoding="utf-8")
    missing = runner.invoke(app, ["verify-receipt", str(receipt)])
    assert missing.exit_code == codes()["no handle key"]
    assert missing.stderr.count("\n") == 1 and FAULTS["no handle key"] in missing.stderr
    _environment("the store unreachable or unavailable", moto_endpoint, "b", monkeypatch)
    assert runner.invoke(app, ["verify-receipt", str(receipt)]).exit_code == 0
    assert runner.invoke(app, ["keygen"]).exit_code == 0


@pytest.mark.parametrize(
    ("fault", "argv", "needle"),
    [
        ("a claim unavailable or damaged", ["fetch", *TENANT_RUN, HANDLE], "claim unavailable"),
        ("a claim unavailable or damaged", ["search", *TENANT_RUN, HANDLE, "x"], "unavailable"),
        (
            "a claim unavailable or damaged",
            ["link", *TENANT_RUN, HANDLE, "--base-url", "http://127.0.0.1:8765"],
            "claim unavailable",
        ),
        ("the prompt declined", ["forget", "--tenant", "t"], "Aborted"),
        ("the upstream cannot be started", ["mcp-proxy", "--tenant", "t", "--", "/no/such"], ""),
        ("a usage or configuration mistake", ["fetch", *TENANT_RUN, "claim:nope"], "not a handle"),
        (
            "the model server unavailable",
            ["demo", "--store", "memory", "--provider", "openai", "--model", "m", "--no-baseline"],
            "model server",
        ),
    ],
)
def test_the_faults_of_one_command_have_the_tables_code(
    fault: str,
    argv: list[str],
    needle: str,
    moto_endpoint: str,
    provisioned: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _environment("none", moto_endpoint, provisioned, monkeypatch)
    if argv[0] == "demo":
        argv = [*argv, "--base-url", f"http://127.0.0.1:{closed_port()}/v1"]
    result: Any = runner.invoke(app, argv, input="n\n")
    assert result.exit_code == codes()[fault], (result.stdout, result.stderr)
    assert needle in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
