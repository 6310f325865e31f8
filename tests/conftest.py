"""Shared fixtures: a sealed environment and a real moto S3 server on 127.0.0.1."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


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
