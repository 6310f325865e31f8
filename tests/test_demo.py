"""`s3claim demo`: memory, embedded S3, a real bucket, and a chat-completions server."""

from __future__ import annotations

import json
import re
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from typer.testing import CliRunner

from s3claim.cli import app
from s3claim.cli.demo import QUESTION, contract
from tests._chat_server import ChatServer, answer, serve, tool_call

runner = CliRunner()


def _demo(*args: str) -> dict[str, Any]:
    result = runner.invoke(app, ["demo", *args, "--json"])
    assert result.exit_code == 0, result.output
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def _prefill(events: list[dict[str, Any]]) -> list[int]:
    return [e["prefill_chars"] for e in events if e["kind"] == "model_called"]


@pytest.mark.parametrize("store", ["memory", "s3"])
def test_the_demo_prints_the_head_the_table_and_a_ratio_from_the_events(store: str) -> None:
    data = _demo("--store", store)
    with_cc, without = _prefill(data["events"]), _prefill(data["baseline_events"])
    ratio = sum(without) / sum(with_cc)
    assert ratio > 1
    assert data["ratio"] == pytest.approx(ratio)
    assert [t["with_claim_check"] for t in data["turns"]] == with_cc
    assert [t["without"] for t in data["turns"] if t["without"] is not None] == without

    result = runner.invoke(app, ["demo", "--store", store])

    assert result.exit_code == 0, result.output
    out = result.stdout
    text = contract()
    head, marker = data["seen"]["head"], data["seen"]["marker"]
    assert text.startswith(head) and len(head) <= 512
    assert marker.startswith(f"[{len(text)} characters, {len(text) - len(head)} not shown.")
    # verbatim: head, blank line, marker, exactly as the model got them (the handle differs
    # between the two runs: each demo has a key of its own)
    handle = data["events"][1]["handle"]
    printed = re.search(r"handle='(claim:[0-9a-z]+)'", out)
    assert printed is not None
    assert f"{head}\n\n{marker.replace(handle, printed.group(1))}\n" in out
    assert f"{ratio:.1f}×" in out
    assert f"{sum(with_cc):,}" in out and f"{sum(without):,}" in out
    for kind in ("model_called", "tool_result_stored", "claim_fetched", "run_finished"):
        assert kind in out
    assert "Baseline:" in out
    assert "The parties are Zoë Müller GmbH" in out
    if store == "s3":
        assert "embedded S3 (moto) at http://127.0.0.1:" in out


def test_the_json_document_has_everything_the_terminal_shows() -> None:
    data = _demo("--store", "memory")
    assert data["question"] == QUESTION
    assert data["contract_chars"] == len(contract())
    assert data["provider"] == "scripted"
    assert [e["kind"] for e in data["events"]] == [
        "model_called",
        "tool_result_stored",
        "model_called",
        "claim_fetched",
        "model_called",
        "claim_fetched",
        "model_called",
        "run_finished",
    ]
    assert [e["kind"] for e in data["baseline_events"]] == [
        "model_called",
        "model_called",
        "run_finished",
    ]
    assert "Zoë Müller GmbH" in data["answer"]
    assert data["baseline_error"] is None
    assert "best case" in data["baseline"]


def test_no_baseline() -> None:
    data = _demo("--store", "memory", "--no-baseline")
    assert data["ratio"] is None and data["baseline_events"] is None
    assert all(t["without"] is None for t in data["turns"])
    result = runner.invoke(app, ["demo", "--store", "memory", "--no-baseline"])
    assert result.exit_code == 0
    assert "not run" in result.stdout


def test_the_demo_on_a_real_bucket_forgets_its_claims(moto_endpoint: str) -> None:
    client = boto3.client("s3", endpoint_url=moto_endpoint)
    bucket = f"demo-{uuid.uuid4().hex}"
    client.create_bucket(Bucket=bucket)

    data = _demo("--bucket", bucket, "--endpoint-url", moto_endpoint)

    assert (data["store"], data["bucket"]) == (
        f"S3 at {moto_endpoint}",
        f"{bucket}, prefix claims/",
    )
    assert data["ratio"] > 1
    assert client.list_objects_v2(Bucket=bucket).get("KeyCount") == 0
    assert data["claims_lived"].startswith(f"In bucket {bucket}, under claims/, on S3 at ")
    assert "erased its run's claims" in data["claims_lived"]


def test_a_bucket_the_demo_cannot_use_is_one_line_before_any_run(moto_endpoint: str) -> None:
    result = runner.invoke(
        app, ["demo", "--bucket", "no-such-bucket", "--endpoint-url", moto_endpoint]
    )
    assert result.exit_code == 2, result.output
    assert result.stdout == ""  # no run began: no head, no table
    assert result.stderr.count("\n") == 1 and "'no-such-bucket'" in result.stderr, result.stderr
    assert result.stderr.startswith("s3claim: error: ")


@pytest.mark.parametrize("store", ["s3", "memory"])
def test_the_demo_ends_with_where_the_claims_lived_and_what_to_run_next(store: str) -> None:
    from s3claim.cli.demo._closing import command_name

    result = runner.invoke(app, ["demo", "--store", store], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines[:5]), lines[:5]
    if store == "s3":  # the store and its bucket on lines of their own, whole at 80 columns
        assert re.fullmatch(r"Store: embedded S3 \(moto\) at http://127\.0\.0\.1:\d+", lines[1])
        assert re.fullmatch(r"Bucket: s3claim-demo-[0-9a-f]{12}, prefix claims/", lines[2])
    closing = lines[[i for i, line in enumerate(lines) if "Where the claims lived" in line][-1] :]
    lived = " ".join(closing[1 : closing.index("Next:")])
    if store == "s3":
        bucket = lines[2].split()[1].rstrip(",")
        assert lived.startswith(f"In bucket {bucket}, under claims/, on an embedded S3 (moto")
    else:
        assert lived.startswith("In the demo's own memory (MemoryClaimCheckStore)")
    assert "nothing is left behind" in lived
    steps = [line.strip() for line in closing[closing.index("Next:") + 1 :]]
    command = command_name()
    assert steps[0] == f"{command} demo --failover"
    assert steps[2] == f"{command} demo --provider openai --base-url URL --model NAME"
    assert steps[-2:] == [
        "README.md (Library quickstart)",
        "the claim check in your own agent, in Python",
    ]
    data = _demo("--store", store)
    assert [step["command"] for step in data["next"]] == steps[::2]
    words, shown = data["claims_lived"].split(), lived.split()
    assert words[3:] == shown[3:]  # each run has a bucket of its own (the third word on S3)


def test_the_command_to_type_next_is_this_install_s() -> None:
    from s3claim.cli.demo._closing import command_name

    script = Path(sys.executable).parent / "s3claim"
    assert command_name() in {"s3claim", str(script), str(script.relative_to(Path.cwd()))}


def test_an_endpoint_without_a_bucket_is_a_configuration_error() -> None:
    result = runner.invoke(app, ["demo", "--endpoint-url", "http://127.0.0.1:9"])
    assert result.exit_code == 2
    assert result.stderr == "s3claim: error: --endpoint-url needs --bucket (or S3CLAIM_BUCKET)\n"


def test_without_moto_the_demo_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    from s3claim.extras import install_command

    monkeypatch.setitem(sys.modules, "moto", None)  # import fails as if not installed
    result = runner.invoke(app, ["demo"])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert install_command("demo") in result.stderr
    assert "(or run with --store memory, or --bucket for a real bucket)" in result.stderr
    assert runner.invoke(app, ["demo", "--store", "memory"]).exit_code == 0


@pytest.fixture
def server() -> Iterator[ChatServer]:
    yield from serve()


def test_the_demo_against_a_chat_completions_server(
    server: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    server.replies = [
        tool_call("read_contract", '{"name": "msa"}', "call_1"),
        answer("Zoë Müller GmbH and Łukasz Nowak S.A."),
        tool_call("read_contract", '{"name": "msa"}', "call_1"),
        answer("Zoë Müller GmbH and Łukasz Nowak S.A., from the whole text."),
    ]
    data = _demo("--store", "memory", "--provider", "openai", "--base-url", server.url,
                 "--model", "qwen2.5:7b")  # fmt: skip

    assert data["provider"] == f"qwen2.5:7b at {server.url}"
    assert data["answer"] == "Zoë Müller GmbH and Łukasz Nowak S.A."
    assert len(server.received) == 4
    assert {r.headers["Authorization"] for r in server.received} == {"Bearer sk-local"}
    claimed_tools = [t["function"]["name"] for t in server.received[0].body["tools"]]
    baseline_tools = [t["function"]["name"] for t in server.received[2].body["tools"]]
    assert claimed_tools == ["read_contract", "fetch_result"]
    assert baseline_tools == ["read_contract"]
    assert data["ratio"] == pytest.approx(
        sum(_prefill(data["baseline_events"])) / sum(_prefill(data["events"]))
    )
    assert "chose its own turns" in data["baseline"]


def test_a_refused_baseline_is_reported_and_the_demo_still_succeeds(server: ChatServer) -> None:
    server.replies = [
        tool_call("read_contract", '{"name": "msa"}', "call_1"),
        answer("done"),
        tool_call("read_contract", '{"name": "msa"}', "call_1"),
        lambda _body: (
            400,
            b'{"error": {"message": "exceeds the available context size", '
            b'"type": "exceed_context_size_error"}}',
        ),
    ]
    args = ["demo", "--store", "memory", "--provider", "openai", "--base-url", server.url,
            "--model", "m"]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    words = " ".join(result.stdout.split())  # rich wraps long lines
    assert "the whole-contract run failed" in words
    assert "exceed_context_size_error" in words


def test_the_openai_provider_needs_a_url_and_a_model_and_a_reachable_server() -> None:
    result = runner.invoke(app, ["demo", "--store", "memory", "--provider", "openai"])
    assert result.exit_code == 2
    assert "--base-url and --model" in result.stderr
    bad = ["demo", "--provider", "openai", "--base-url", "ftp://x", "--model", "m"]
    assert runner.invoke(app, bad).exit_code == 2
    gone = ["demo", "--store", "memory", "--provider", "openai", "--model", "m",
            "--base-url", "http://127.0.0.1:9/v1"]  # fmt: skip
    result = runner.invoke(app, gone)
    assert result.exit_code == 3
    assert result.stderr.startswith("s3claim: error: model server: cannot reach")
    assert "Traceback" not in result.output


def _openai_demo(url: str, *extra: str) -> list[str]:
    return ["demo", "--store", "memory", "--provider", "openai", "--base-url", url,
            "--model", "m", *extra]  # fmt: skip


def test_a_model_that_never_reads_the_contract_gets_no_ratio_and_is_told_so(
    server: ChatServer,
) -> None:
    server.replies = [answer("I have no contract."), answer("Nor have I.")] * 2
    data = _demo(*_openai_demo(server.url, "--max-tokens", "64")[1:])
    assert {r.body["max_tokens"] for r in server.received} == {64}
    assert data["ratio"] is None
    assert data["read_contract"] == {"with_claim_check": False, "without": False}
    assert data["seen"] is None
    assert data["no_comparison"].startswith(
        "No comparison: the model never called read_contract in either run"
    )

    result = runner.invoke(app, _openai_demo(server.url))

    assert result.exit_code == 0, result.output
    words = " ".join(result.stdout.split())
    assert "the model never called read_contract in either run" in words
    assert "the characters:" not in words and "×" not in words
    assert "(the model never called read_contract)" in words


def test_a_ratio_needs_both_runs_to_have_read_the_contract(server: ChatServer) -> None:
    server.replies = [
        answer("I answer without reading."),
        tool_call("read_contract", '{"name": "msa"}', "call_1"),
        answer("Read it whole."),
    ]
    data = _demo(*_openai_demo(server.url)[1:])
    assert data["read_contract"] == {"with_claim_check": False, "without": True}
    assert data["ratio"] is None
    reason = data["no_comparison"]
    assert "never called read_contract with the claim check, so nothing was checked in" in reason
    server.replies = [
        tool_call("read_contract", '{"name": "msa"}', "call_1"),
        answer("Read the head."),
        tool_call("read_contract", '{"name": "nope", "extra": 1}', "call_1"),  # refused
        answer("Could not read it."),
    ]
    data = _demo(*_openai_demo(server.url)[1:])
    assert data["read_contract"] == {"with_claim_check": True, "without": False}
    assert data["ratio"] is None
    reason = data["no_comparison"]
    assert "without the claim check, so that run never held the contract" in reason
    assert _demo("--store", "memory")["no_comparison"] is None  # scripted: both read
