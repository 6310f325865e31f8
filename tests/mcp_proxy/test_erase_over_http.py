"""A proxy on the memory store erases a tenant while it runs (issue 48, item 16): no other
process reaches its claims, so `s3claim forget --proxy URL` sends it a request signed with
the shared S3CLAIM_HANDLE_KEY, and the proxy answers with the erasure's signed receipt."""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import Client
from typer.testing import CliRunner

from devkit.mcp_upstream import document
from s3claim.cli import app
from s3claim.erasure import ERASE_SIGNATURE_HEADER, EraseRequest, ErasureReceipt, verify_receipt
from s3claim.handles import HandleKey
from s3claim.wording import UNAVAILABLE_MESSAGE
from tests.mcp_proxy._support import handle_of, http_proxy, read_all, text_of

KEY = "an erase test key of 32 characters"
REFUSED = f'{{"error": "claim_unavailable", "message": "{UNAVAILABLE_MESSAGE}"}}'
runner = CliRunner()


@pytest.fixture(scope="module")
def proxy(sealed_module: None) -> Iterator[str]:
    env = {**os.environ, "S3CLAIM_HANDLE_KEY": KEY}
    with http_proxy("--tenant", "acme", "--threshold-chars", "2000", env=env) as served:
        yield served.url


def _checked_in(url: str, chars: int) -> str:
    async def go() -> str:
        async with Client(url) as client:
            handle = handle_of(text_of(await client.call_tool("big", {"chars": chars})))
            assert (await read_all(client, handle))[0] == document(chars)
            return handle

    return anyio.run(go)


def _fetched(url: str, handle: str) -> str:
    async def go() -> str:
        async with Client(url) as client:
            return text_of(await client.call_tool("fetch_result", {"handle": handle}))

    return anyio.run(go)


def _forget(url: str, *args: str) -> object:
    return runner.invoke(app, ["forget", "--tenant", "acme", "-y", "--proxy", url, *args])


def test_forget_through_the_proxy_erases_its_memory_store_and_signs_a_receipt(
    proxy: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    handle = _checked_in(proxy, 6_000)
    path = tmp_path / "receipt.json"

    monkeypatch.setenv("S3CLAIM_HANDLE_KEY", "another key of 32 characters too")
    refused = _forget(proxy, "--receipt", str(path))
    assert refused.exit_code == 2, refused.output  # type: ignore[attr-defined]
    assert refused.output.strip().endswith(  # type: ignore[attr-defined]
        "refused: erase refused: not signed under this server's S3CLAIM_HANDLE_KEY"
    )
    assert _fetched(proxy, handle) != REFUSED  # nothing erased

    monkeypatch.setenv("S3CLAIM_HANDLE_KEY", KEY)
    done = _forget(proxy, "--receipt", str(path), "--json")
    assert done.exit_code == 0, done.output  # type: ignore[attr-defined]
    assert json.loads(done.stdout) == {  # type: ignore[attr-defined]
        "tenant": "acme", "run": None, "proxy": proxy, "removed": 1, "receipt": str(path),
    }  # fmt: skip
    assert _fetched(proxy, handle) == REFUSED
    signed = path.read_text(encoding="utf-8")
    assert verify_receipt(signed, KEY)
    receipt = ErasureReceipt.from_json(signed)
    assert (receipt.store, receipt.claims, receipt.remaining) == ("memory", 1, 0)
    assert receipt.tenant == HandleKey(KEY).tenant_tag("acme")
    verified = runner.invoke(app, ["verify-receipt", str(path), "--tenant", "acme"])
    assert verified.exit_code == 0, verified.output


def _post(url: str, body: bytes, signature: str) -> tuple[int, str]:
    base = url.rsplit("/mcp", 1)[0]
    request = urllib.request.Request(
        f"{base}/erase", data=body, headers={ERASE_SIGNATURE_HEADER: signature}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_a_request_unsigned_stale_or_malformed_is_one_line_and_erases_nothing(proxy: str) -> None:
    handle = _checked_in(proxy, 5_000)
    key = HandleKey(KEY)
    stale, stale_mac = EraseRequest(tenant="acme", at=time.time() - 3_600).signed(key)
    bad_name, bad_mac = EraseRequest(tenant="", at=time.time()).signed(key)
    fresh, _ = EraseRequest(tenant="acme", at=time.time()).signed(key)
    for body, signature, status, said in (
        (fresh, "0" * 64, 403, "erase refused: not signed under this server's"),
        (fresh, "", 403, "erase refused: not signed under this server's"),
        (stale, stale_mac, 403, "erase refused: signed more than 60 s from the server's time"),
        (bad_name, bad_mac, 400, "erase refused: the tenant or the run is not a name"),
        (b"x" * 5_000, "0" * 64, 413, "an erase request is at most 4096 bytes"),
    ):
        code, text = _post(proxy, body, signature)
        assert (code, text.count("\n")) == (status, 1) and text.startswith(said), text
        assert "acme" not in text
    assert _fetched(proxy, handle) != REFUSED  # still there


def test_a_proxy_that_drew_its_own_key_refuses_every_erase_request(
    sealed_module: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {k: v for k, v in os.environ.items() if k != "S3CLAIM_HANDLE_KEY"}
    with http_proxy("--tenant", "acme", "--threshold-chars", "2000", env=env) as served:
        handle = _checked_in(served.url, 5_000)
        monkeypatch.setenv("S3CLAIM_HANDLE_KEY", KEY)
        refused = _forget(served.url)
        assert refused.exit_code == 2 and "not signed under" in refused.output  # type: ignore[attr-defined]
        assert _fetched(served.url, handle) != REFUSED


def test_forget_through_a_proxy_nobody_serves_is_unavailable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from devkit.servers import free_port

    monkeypatch.setenv("S3CLAIM_HANDLE_KEY", KEY)
    gone = _forget(f"http://127.0.0.1:{free_port()}")
    assert gone.exit_code == 3 and "cannot reach the proxy at 127.0.0.1:" in gone.output  # type: ignore[attr-defined]
    mixed = _forget("http://127.0.0.1:9", "--bucket", "b")
    assert mixed.exit_code == 2 and "give no bucket options" in mixed.output  # type: ignore[attr-defined]
    wrong = _forget("127.0.0.1:9")
    assert wrong.exit_code == 2 and "--proxy takes the proxy's URL" in wrong.output  # type: ignore[attr-defined]
