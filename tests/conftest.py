"""Shared fixtures: a sealed environment and real S3 servers on 127.0.0.1.

Two servers, started once per session: moto's (AWS-shaped: versions, conditional writes,
tagging) and s3rver's (npm; file-backed, no versioning API, ignores conditional writes and
tags), so the behaviour suites prove the store on an S3-compatible server that lacks what
AWS has, not only on one that imitates AWS.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import settings

from s3claim import ClaimCheckStore, ManualClock, MemoryClaimCheckStore
from tests._strategies import CI

if CI:
    settings.load_profile("ci")  # registered in tests/_strategies.py, beside `examples`


@pytest.fixture(autouse=True)
def _sealed_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sees the developer's AWS or s3claim configuration."""
    seal(monkeypatch)


@pytest.fixture(scope="module")
def sealed_module() -> Iterator[None]:
    """The same seal for a module-scoped fixture, set up before any test's: one that starts a
    process for a module's tests to share depends on it."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        seal(monkeypatch)
        yield


def seal(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("AWS_", "S3CLAIM_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    """One moto HTTP server for the session, bound to loopback on a free port."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture(scope="session")
def s3rver() -> Iterator[Any]:
    """One s3rver for the session (installed from npm into devkit/.node on first use)."""
    if shutil.which("npm") is None:
        pytest.skip("s3rver is installed with npm, and npm is not on PATH: install Node.js")
    from devkit.servers import S3rver

    server = S3rver()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def s3rver_client(s3rver: Any) -> Any:
    """A one-attempt client for s3rver, on its own credentials."""
    from devkit.servers import make_client

    return make_client(s3rver)


@pytest.fixture
def s3(moto_endpoint: str) -> Any:
    """A client for the moto server that makes one attempt per call, like the store's own."""
    from tests._s3 import moto_client

    return moto_client(moto_endpoint)


@pytest.fixture
def bucket(s3: Any) -> str:
    """A fresh, empty bucket of this test's own."""
    name = f"test-{uuid.uuid4().hex}"
    s3.create_bucket(Bucket=name)
    return name


@dataclass
class StoreUnderTest:
    """A store and the clock it reads, with a way to count what it holds."""

    store: ClaimCheckStore
    clock: ManualClock
    kind: str
    bucket: str | None = None

    def count(self) -> int:
        """Claims held: entries in memory, claims' objects in the bucket (not the indexes
        beside them)."""
        if isinstance(self.store, MemoryClaimCheckStore):
            return len(self.store)
        from s3claim.s3._layout import is_claim_key

        client = self.store.client  # type: ignore[attr-defined]
        pages = client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket)
        return sum(is_claim_key(item["Key"]) for page in pages for item in page.get("Contents", []))


@pytest.fixture(params=["memory", "s3", "s3rver"])
def store_under_test(request: pytest.FixtureRequest) -> StoreUnderTest:
    """Each store in turn: memory, then S3 on moto's and on s3rver's HTTP server.

    Each S3 store gets a bucket of its own.
    """
    clock = ManualClock()
    if request.param == "memory":
        return StoreUnderTest(MemoryClaimCheckStore(clock=clock), clock, "memory")
    from s3claim import RetryPolicy, S3ClaimCheckStore
    from tests._s3 import moto_client

    if request.param == "s3rver":
        client = request.getfixturevalue("s3rver_client")
    else:
        client = moto_client(request.getfixturevalue("moto_endpoint"))
    bucket = f"sut-{uuid.uuid4().hex}"
    client.create_bucket(Bucket=bucket)
    store = S3ClaimCheckStore(
        bucket,
        handle_key="test-handle-key-0123456789",
        client=client,
        clock=clock,
        retry=RetryPolicy(initial_wait=0, max_wait=0),
    )
    return StoreUnderTest(store, clock, request.param, bucket)


_SIDE_BY_SIDE: list[str] = []


@pytest.fixture
def record() -> Any:
    """Keeps a side-by-side figure for the summary at the end of the run (`make test`)."""

    def add(framework: str, **rows: tuple[int, list[bool]]) -> None:
        for name, (chars, readable) in rows.items():
            clauses = ", ".join("yes" if r else "NO" for r in readable)
            _SIDE_BY_SIDE.append(
                f"{framework:14} {name:9} {chars:>9,} characters sent; clause readable: {clauses}"
            )

    return add


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _SIDE_BY_SIDE:
        terminalreporter.section("counsel scenario, 3 questions: claim check vs built-ins")
        for line in _SIDE_BY_SIDE:
            terminalreporter.write_line(line)


# The longest files run first (longest first: test-seconds under `make test`, 2026-12-08), so
# that none trails at the end of the run: under pytest-xdist (`make test`, with
# `--no-loadscope-reorder`) a file goes whole to one worker, in collection order. The Terraform
# apply is minutes of the provider's waiters and little CPU; the lifecycle file is 40 client
# cycles of the MCP proxy.
FIRST = (
    "tests/test_terraform.py",  # 172 s
    "tests/mcp_proxy/test_lifecycle.py",  # 127 s
    "tests/mcp_proxy/test_cli_mcp.py",  # 65 s
    "tests/test_packaging.py",  # 63 s
    "tests/test_search.py",  # 60 s
    "tests/test_cli_subprocess.py",  # 51 s
    "tests/mcp_proxy/test_findings.py",  # 50 s
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        path = item.path.relative_to(item.config.rootpath).as_posix()
        return FIRST.index(path) if path in FIRST else len(FIRST)

    items.sort(key=rank)  # stable: the rest keep their order
