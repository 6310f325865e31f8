"""Bad input gets one line, not a traceback (issue 21, finding 6).

Every configuration error is one line on stderr and exit 2 (endpoint URLs, day classes, TTLs,
timeouts); JSON that s3claim did not write is parsed with its nesting bounded; a damaged
object is told to the model in a way that does not invite it to try again forever.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import uuid
from typing import Any

import boto3
import pytest
from typer.testing import CliRunner

import s3claim.safejson as _json
from s3claim import (
    ClaimStoreError,
    ConfigurationError,
    MemoryClaimCheckStore,
    OpenAICompatibleProvider,
    ProviderError,
    RunContext,
    S3ClaimCheckStore,
    Scope,
    ToolError,
    claim_check_tool,
    claim_search_tool,
)
from s3claim.cli import app
from s3claim.providers._openai_compatible import INVALID_ARGUMENTS_KEY, decode_arguments
from s3claim.s3._config import check_day_classes, make_client
from tests._hosts import claim_answer
from tests._s3 import moto_client

runner = CliRunner()
DEEP = "[" * 100_000 + "]" * 100_000
SCOPE = Scope(tenant="acme", run="r-1")
ENV = {"S3CLAIM_BUCKET": "b", "S3CLAIM_HANDLE_KEY": "k" * 32}


def one_line(result: Any, *needles: str) -> str:
    assert result.exit_code == 2, result.output
    stderr: str = result.stderr
    assert stderr.startswith("s3claim: error: ") and stderr.count("\n") == 1, stderr
    assert "Traceback" not in result.output
    for needle in needles:
        assert needle in stderr, stderr
    return stderr


# -- endpoint URLs ---------------------------------------------------------------------------

BAD_ENDPOINTS = {
    "127.0.0.1:5000": "scheme",
    "not-a-url": "scheme",
    "ftp://x": "scheme",
    "http://": "host",
    "http://:9000": "host",
    "https://host:port": "port",
    "http://[::1": "not a valid URL",
}


@pytest.mark.parametrize("endpoint", list(BAD_ENDPOINTS))
def test_a_bad_endpoint_url_is_one_line_and_exit_2(endpoint: str) -> None:
    result = runner.invoke(
        app, ["ls", "--tenant", "t"], env={**ENV, "S3CLAIM_ENDPOINT_URL": endpoint}
    )
    one_line(result, "S3CLAIM_ENDPOINT_URL", BAD_ENDPOINTS[endpoint])
    option = runner.invoke(app, ["ls", "--tenant", "t", "--endpoint-url", endpoint], env=ENV)
    one_line(option, "--endpoint-url", BAD_ENDPOINTS[endpoint])
    with pytest.raises(ConfigurationError, match=BAD_ENDPOINTS[endpoint]):
        make_client(endpoint_url=endpoint)


@pytest.mark.parametrize("region", ["bad region!", "-us-east-1", "a" * 64])
def test_a_region_botocore_refuses_is_one_line_and_exit_2(region: str) -> None:
    result = runner.invoke(app, ["ls", "--tenant", "t"], env={**ENV, "S3CLAIM_REGION": region})
    one_line(result, "region is not an AWS region name")
    assert region not in result.stderr


def test_a_bad_endpoint_from_a_fresh_process_is_one_line_and_exit_2() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "s3claim", "ls", "--tenant", "t"],
        capture_output=True,
        env={**os.environ, **ENV, "S3CLAIM_ENDPOINT_URL": "127.0.0.1:5000"},
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr.decode().count("\n") == 1 and b"Traceback" not in result.stderr


# -- day classes and TTLs ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("classes", "needle"),
    [
        ("[1000000000000]", "at most 36500"),
        ("[36501]", "at most 36500"),
        ("[0]", "positive"),
        ("[" + ", ".join(str(n) for n in range(1, 102)) + "]", "at most 100 day classes"),
        ("[[[[[[1]]]]]]", "S3CLAIM_TTL_DAY_CLASSES"),
        ("[" * 30_000 + "]" * 30_000, "nested deeper"),
    ],
)
def test_day_classes_out_of_range_are_one_line_and_exit_2(classes: str, needle: str) -> None:
    result = runner.invoke(
        app, ["ls", "--tenant", "t"], env={**ENV, "S3CLAIM_TTL_DAY_CLASSES": classes}
    )
    one_line(result, "S3CLAIM_TTL_DAY_CLASSES", needle)


def test_day_classes_are_refused_by_range_in_the_library_too() -> None:
    assert check_day_classes((1, 36_500)) == (1, 36_500)
    with pytest.raises(ConfigurationError, match="at most 36500"):
        S3ClaimCheckStore("b", handle_key="k" * 32, ttl_day_classes=(1, 10**12))


@pytest.mark.parametrize("ttl", [0, -1, 1.5, True, "60"])
def test_a_bad_ttl_is_a_configuration_error(ttl: Any) -> None:
    with pytest.raises(ConfigurationError, match="ttl_seconds"):
        MemoryClaimCheckStore().put(SCOPE, "x", ttl_seconds=ttl)
    with pytest.raises(ValueError, match="ttl_seconds"):  # and still a ValueError
        MemoryClaimCheckStore().put(SCOPE, "x", ttl_seconds=ttl)


# -- timeouts ----------------------------------------------------------------------------------


@pytest.mark.parametrize("timeout", [math.inf, math.nan, 0, -1, 1e300])
def test_a_provider_timeout_must_be_a_sane_number_of_seconds(timeout: float) -> None:
    with pytest.raises(ConfigurationError, match="timeout"):
        OpenAICompatibleProvider("http://127.0.0.1:1/v1", "m", timeout=timeout)


def test_the_demo_with_an_infinite_timeout_is_one_line_and_exit_2() -> None:
    argv = ["demo", "--store", "memory", "--provider", "openai", "--timeout", "inf"]
    argv += ["--base-url", "http://127.0.0.1:1/v1", "--model", "m", "--no-baseline"]
    one_line(runner.invoke(app, argv), "timeout")


# -- JSON s3claim did not write: nesting bounded ------------------------------------------------


def test_json_nested_beyond_the_bound_is_a_value_error_not_a_recursion_error() -> None:
    with pytest.raises(_json.JSONTooDeepError) as too_deep:
        _json.loads(DEEP)
    assert isinstance(too_deep.value, json.JSONDecodeError)  # callers already catch this
    with pytest.raises(_json.JSONTooDeepError):
        _json.loads(DEEP.encode())
    honest = "[" * _json.MAX_DEPTH + "]" * _json.MAX_DEPTH
    assert _json.loads(honest) == json.loads(honest)
    text = json.dumps({"a": ["[[[[" * 200, {"b": "]]]}"}]})  # brackets in strings don't count
    assert _json.loads(text) == json.loads(text)


def test_tool_arguments_nested_too_deep_are_a_refusal_the_model_reads() -> None:
    store = MemoryClaimCheckStore()
    context = RunContext(scope=SCOPE, agent="a", emit=lambda event: None)
    answer = claim_answer(claim_check_tool(store), '{"handle": ' + DEEP + "}", context)
    assert answer.is_error and json.loads(answer.text)["error"] == "invalid_arguments"
    assert "nest" in json.loads(answer.text)["message"]
    assert INVALID_ARGUMENTS_KEY in decode_arguments('{"a": ' + DEEP + "}")


def test_a_model_server_reply_nested_too_deep_is_a_provider_error() -> None:
    provider = OpenAICompatibleProvider("http://127.0.0.1:1/v1", "m")
    with pytest.raises(ProviderError, match="not JSON"):
        provider._parse(DEEP.encode())


def test_an_mcp_result_nested_too_deep_is_not_a_crash() -> None:
    from s3claim.mcp._results import _repeats  # the dev extra has mcp

    assert _repeats({"a": 1}, [DEEP]) is False


# -- a damaged object: not "try again" forever ---------------------------------------------


def test_a_damaged_claim_is_told_to_the_model_as_the_uniform_refusal(moto_endpoint: str) -> None:
    client = moto_client(moto_endpoint)
    bucket = f"damaged-{uuid.uuid4().hex}"
    client.create_bucket(Bucket=bucket)
    store = S3ClaimCheckStore(bucket, handle_key="k" * 32, client=client)
    handle = store.put(SCOPE, "Clause. " * 1000, ttl_seconds=3600)
    (key,) = [o["Key"] for o in client.list_objects_v2(Bucket=bucket)["Contents"]]
    head = client.head_object(Bucket=bucket, Key=key)
    metadata = {**head["Metadata"], "s3claim-encoding": "utf-32-le"}  # not the handle's width
    client.copy_object(
        Bucket=bucket,
        Key=key,
        CopySource={"Bucket": bucket, "Key": key},
        Metadata=metadata,
        MetadataDirective="REPLACE",
    )
    with pytest.raises(ClaimStoreError) as damaged:
        store.fetch(SCOPE, handle)
    assert damaged.value.reason == "damaged"
    events: list[Any] = []
    context = RunContext(scope=SCOPE, agent="a", emit=events.append)
    for claim_tool, arguments in (
        (claim_check_tool(store), {"handle": handle}),
        (claim_search_tool(store), {"handle": handle, "pattern": "Clause"}),
    ):
        answer = json.loads(claim_answer(claim_tool, arguments, context).text)
        assert answer == {
            "error": "claim_unavailable",
            "message": "claim unavailable: expired, never stored, or not in this scope",
        }
    assert [e.kind for e in events] == ["claim_fetch_failed", "claim_search_failed"]


def test_a_store_that_refuses_this_process_does_not_invite_retries(moto_endpoint: str) -> None:
    client = boto3.client("s3", endpoint_url=moto_endpoint)
    store = S3ClaimCheckStore(f"missing-{uuid.uuid4().hex}", handle_key="k" * 32, client=client)
    context = RunContext(scope=SCOPE, agent="a", emit=lambda event: None)
    handle = MemoryClaimCheckStore().put(SCOPE, "x", ttl_seconds=60)
    answer = json.loads(claim_answer(claim_check_tool(store), {"handle": handle}, context).text)
    assert answer["error"] == "store_unavailable"
    assert "try again" not in answer["message"] and "will not help" in answer["message"]


# -- what a model reads of a bad name: no stray location ----------------------------------


def test_a_scope_the_client_names_out_of_bounds_is_refused_by_what_it_gave() -> None:
    """A name out of bounds was refused as `1: String should ...` (issue 48, item 6): the
    model reads where the name came from, never a positional index or a `value:`."""
    from s3claim.mcp import RUN_META_KEY, Scoping  # the dev extra has mcp

    stdio, http = Scoping.for_stdio("acme"), Scoping.for_http(None, tenant_header="x-tenant")
    calls = [
        (stdio, {RUN_META_KEY: ""}, None, "_meta s3claim/run: String should have at least 1"),
        (stdio, {RUN_META_KEY: "r" * 1025}, None, "_meta s3claim/run: String should have at most"),
        (http, None, {"x-tenant": "t" * 1025}, "the x-tenant header: String should have at most"),
    ]
    for scoping, meta, headers, said in calls:
        with pytest.raises(ToolError) as refused:
            scoping.scope(meta=meta, headers=headers)
        assert refused.value.code == "invalid_scope"
        assert refused.value.message.startswith(said), refused.value.message
    with pytest.raises(ValueError, match=r"^invalid scope: tenant: String should have at most"):
        Scoping.for_stdio("t" * 1025)


@pytest.mark.parametrize(
    "arguments",
    [{"handle": 5}, {"handle": "claim:1" + "0" * 32, "offset": -1}, {}, {"bogus": 1}],
)
def test_a_claim_tools_refusal_names_the_argument_the_model_gave(arguments: Any) -> None:
    store = MemoryClaimCheckStore()
    context = RunContext(scope=SCOPE, agent="a", emit=lambda event: None)
    for claim_tool in (claim_check_tool(store), claim_search_tool(store)):
        answer = json.loads(claim_answer(claim_tool, arguments, context).text)
        assert answer["error"] == "invalid_arguments"
        named = answer["message"].split(":", 1)[0]
        assert named in {*arguments, "handle", "pattern"}, answer["message"]
