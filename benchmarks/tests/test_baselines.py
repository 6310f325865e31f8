"""The naive store the benchmarks compare with does what it says, and costs what it says.

Its budgets are pinned so that a comparison with it stays honest: a whole-object GET for
every window, and one DeleteObject per key after the listing.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from benchmarks.baselines import NaiveS3Store
from devkit.documents import document
from devkit.servers import MotoServer, Wire
from s3claim import DEFAULT_FETCH_CHARS, Scope

SCOPE = Scope(tenant="acme", run="run-1")


def test_the_naive_baseline_moves_the_whole_object_on_every_fetch(s3: Any, bucket: str) -> None:
    naive, wire = NaiveS3Store(bucket, client=s3), Wire.attach(s3)
    text = document(200_000, "utf8")
    handle = naive.put(SCOPE, text, ttl_seconds=3600)
    for offset in (0, 100_000, 200_000 - DEFAULT_FETCH_CHARS):
        wire.clear()
        assert naive.fetch(SCOPE, handle, offset=offset).text == text[offset : offset + 4096]
        assert dict(wire.requests) == {"GetObject": 1}
        assert dict(wire.response_bytes) == {"GetObject": len(text.encode("utf-8"))}


@pytest.mark.parametrize("claims", [1, 1001])
def test_the_naive_erasure_lists_then_deletes_key_by_key(
    moto: MotoServer, s3: Any, bucket: str, claims: int
) -> None:
    naive, wire = NaiveS3Store(bucket, client=s3), Wire.attach(s3)
    prefix = naive.key_prefix(SCOPE)
    moto.seed(bucket, [f"{prefix}{n:08d}" for n in range(claims)], b"x")

    assert naive.forget(tenant="acme") == claims

    pages = math.ceil(claims / 1000)
    assert dict(wire.requests) == {"ListObjectsV2": pages, "DeleteObject": claims}
    assert s3.list_objects_v2(Bucket=bucket)["KeyCount"] == 0
