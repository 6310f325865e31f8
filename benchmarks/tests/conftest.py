"""The benchmarks' own tests: a sealed environment and moto's server on 127.0.0.1.

Like tests/conftest.py, and on purpose apart from it: `benchmarks` never imports `tests`.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from devkit.servers import MotoServer, make_client


@pytest.fixture(autouse=True)
def _sealed_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sees the developer's AWS or s3claim configuration."""
    for name in list(os.environ):
        if name.startswith(("AWS_", "S3CLAIM_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)


@pytest.fixture(scope="session")
def moto() -> Iterator[MotoServer]:
    """moto's HTTP server in this process, for the session."""
    server = MotoServer()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def s3(moto: MotoServer) -> Any:
    """A one-attempt client for it."""
    return make_client(moto)


@pytest.fixture
def bucket(s3: Any) -> str:
    """A fresh, empty bucket of this test's own."""
    name = f"test-{uuid.uuid4().hex}"
    s3.create_bucket(Bucket=name)
    return name
