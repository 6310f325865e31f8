"""A call's claim references are bounded in number, not only in characters: each costs a read
(a GET on S3), so 1,000 one-character references were 1,000 GETs before the tool ran."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from s3claim import ClaimCheck, RunContext, S3ClaimCheckStore, Scope, ToolError
from s3claim.references import MAX_REFERENCES
from tests._hosts import resolved_arguments
from tests._s3 import moto_client

SCOPE = Scope(tenant="acme", run="r-1")


@pytest.fixture
def counted(moto_endpoint: str) -> tuple[S3ClaimCheckStore, list[str]]:
    client = moto_client(moto_endpoint)
    bucket = f"refs-{uuid.uuid4().hex}"
    client.create_bucket(Bucket=bucket)
    store = S3ClaimCheckStore(bucket, handle_key="test-handle-key-0123456789", client=client)
    sent: list[str] = []
    client.meta.events.register("before-send.s3", lambda request, **_: sent.append(request.method))
    return store, sent


def _resolve(store: S3ClaimCheckStore, arguments: dict[str, Any]) -> Any:
    claim_check = ClaimCheck(store, references=True)
    context = RunContext(scope=SCOPE, agent="a", emit=lambda _: None)
    return resolved_arguments(arguments, claim_check=claim_check, tool="report", context=context)


def test_a_call_holding_more_references_than_the_bound_is_refused_before_any_read(
    counted: tuple[S3ClaimCheckStore, list[str]],
) -> None:
    store, sent = counted
    handle = store.put(SCOPE, "x" * 5_000, ttl_seconds=60)
    sent.clear()
    many = [{"$claim": handle, "offset": n, "length": 1} for n in range(1_000)]
    with pytest.raises(ToolError) as refused:
        _resolve(store, {"texts": many})
    assert refused.value.code == "too_many_references"
    assert f"at most {MAX_REFERENCES}" in refused.value.message and "1000" in refused.value.message
    assert sent == []  # not one GET


def test_as_many_references_as_the_bound_are_read(
    counted: tuple[S3ClaimCheckStore, list[str]],
) -> None:
    store, sent = counted
    handle = store.put(SCOPE, "".join(chr(65 + n % 26) for n in range(5_000)), ttl_seconds=60)
    sent.clear()
    most = [{"$claim": handle, "offset": n, "length": 1} for n in range(MAX_REFERENCES)]
    resolved = _resolve(store, {"texts": most})
    assert resolved == {"texts": [chr(65 + n % 26) for n in range(MAX_REFERENCES)]}
    assert 0 < len(sent) <= 2 * MAX_REFERENCES


def test_the_docs_name_the_bound() -> None:
    from pathlib import Path

    said = (Path(__file__).parents[1] / "docs" / "references.md").read_text(encoding="utf-8")
    assert f"`s3claim.references.MAX_REFERENCES` ({MAX_REFERENCES})" in " ".join(said.split())
