"""What every study is handed: the profile (sizes, repeats), the servers, where to write."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.baselines import NaiveS3Store
from devkit.documents import KiB, MiB
from devkit.servers import Endpoint, MotoServer, make_client, start_timing_server
from s3claim.handles import HandleKey
from s3claim.s3 import RetryPolicy, S3ClaimCheckStore

__all__ = ["FULL", "QUICK", "Bench", "Profile"]

NO_WAIT = RetryPolicy(initial_wait=0, max_wait=0)
TTL = 3600


@dataclass(frozen=True)
class Profile:
    name: str
    fetch_sizes: tuple[int, ...]
    fetch_repeats: int
    """Timed fetches per window for s3claim; the naive store gets `naive_repeats(size)`."""
    checkin_sizes: tuple[int, ...]
    """Characters of the texts a check-in is timed with (ASCII: as many bytes)."""
    forget_claims: int
    forget_repeats: int
    concurrency_chars: int
    concurrency_fetches: int
    """Fetches per thread count for s3claim; the naive store does a tenth (at least 8)."""
    memory_chars: int
    search_chars: int

    def naive_repeats(self, chars: int) -> int:
        """Whole-object GETs get expensive: fewer repeats as the document grows (at least 3)."""
        if chars >= 16 * MiB:
            return 3
        if chars >= 1 * MiB:
            return max(3, self.fetch_repeats // 2)
        return self.fetch_repeats


FULL = Profile(
    name="full",
    fetch_sizes=(64 * KiB, 1 * MiB, 16 * MiB, 64 * MiB),
    fetch_repeats=15,
    checkin_sizes=(100_000, 1_000_000, 16_000_000),
    forget_claims=10_000,
    forget_repeats=3,
    concurrency_chars=16 * MiB,
    concurrency_fetches=480,
    memory_chars=64 * MiB,
    search_chars=64 * MiB,
)

QUICK = Profile(
    name="quick",
    fetch_sizes=(64 * KiB, 1 * MiB),
    fetch_repeats=9,
    checkin_sizes=(100_000, 1_000_000),
    forget_claims=1_000,
    forget_repeats=1,
    concurrency_chars=1 * MiB,
    concurrency_fetches=96,
    memory_chars=1 * MiB,
    search_chars=4 * MiB,
)


@dataclass
class Bench:
    """The servers start on first use (a study of a real model needs no S3) and stop with
    `stop`; `results` is where studies save what they measured, `out` where pages go."""

    profile: Profile
    key: HandleKey
    results: Path
    out: Path
    model_python: Path | None = None
    """The interpreter of the model venv (`make bench-model` builds it)."""
    wide_ctx: int = 0
    """The model study's inline run in a window this wide (0: none)."""
    timing_caveat: str | None = None
    """Why the timing server is not s3rver, when it is not."""
    timing_used: bool = False
    """Whether the timing server was handed out since the harness last cleared this."""
    _servers: dict[str, Endpoint] = field(default_factory=dict, repr=False)

    @property
    def moto(self) -> MotoServer:
        """moto's server in this process: requests and bytes are counted on it."""
        if "moto" not in self._servers:
            self._servers["moto"] = MotoServer()
        server = self._servers["moto"]
        assert isinstance(server, MotoServer)
        return server

    @property
    def timing(self) -> Endpoint:
        """s3rver, a child process streaming from disk: latencies are timed on it."""
        if "timing" not in self._servers:
            self._servers["timing"], self.timing_caveat = start_timing_server()
        self.timing_used = True
        return self._servers["timing"]

    def stop(self) -> None:
        for server in self._servers.values():
            server.stop()
        self._servers.clear()

    def stores(
        self, endpoint: Endpoint, *, pool: int = 10
    ) -> tuple[Any, str, S3ClaimCheckStore, NaiveS3Store]:
        """A fresh bucket on the endpoint, with an s3claim store and a naive store on it."""
        client = make_client(endpoint, pool=pool)
        bucket = f"bench-{uuid.uuid4().hex[:12]}"
        client.create_bucket(Bucket=bucket)
        store = S3ClaimCheckStore(bucket, handle_key=self.key, client=client, retry=NO_WAIT)
        return client, bucket, store, NaiveS3Store(bucket, client=client)


def empty_bucket(client: Any, bucket: str) -> None:
    """Delete what a measure left, so the next one starts without it in memory or on disk."""
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for item in page.get("Contents", []):
            client.delete_object(Bucket=bucket, Key=item["Key"])
    client.delete_bucket(Bucket=bucket)
