"""Link reads sit inside the one set of bounds (issue 46): 60 clients asking a window of 4 Mi
characters and never reading took `s3claim serve` from 270 to 1,673 MiB, and the proxy's
`/claims/` from 123 to 890 MiB with `--max-calls 8`. Each read takes a slot of the link's
tenant and holds what it may buffer until its last byte is sent, so the servers hold no more
than the bounds allow, refuse the rest at once (503, one line), and serve another tenant
meanwhile.
"""

from __future__ import annotations

import os
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest

from s3claim import S3ClaimCheckStore, Scope
from s3claim.links import link
from s3claim.s3 import RetryPolicy
from tests._s3 import moto_client
from tests._slow_clients import stalled_readers, status_of
from tests.test_links import KEY, serve_links

READERS = 60
WINDOW = 4 * 1024 * 1024  # characters: the most one read may ask
MAX_READ_BYTES = 64 * 1024 * 1024
SCOPE = Scope("acme", "r-1")
OTHER = Scope("globex", "r-1")
TEXT = "".join(f"{n:>9} the parties agree to term {n}.\n" for n in range(120_000))  # ASCII


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"/proc/{pid}/status has no VmRSS")


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


@pytest.fixture(scope="module")
def store(sealed_module: None, moto_endpoint: str) -> S3ClaimCheckStore:
    client = moto_client(moto_endpoint)
    bucket = f"bounds-{uuid.uuid4().hex}"
    client.create_bucket(Bucket=bucket)
    return S3ClaimCheckStore(
        bucket, handle_key=KEY, client=client, retry=RetryPolicy(initial_wait=0, max_wait=0)
    )


def test_sixty_stalled_readers_hold_no_more_than_the_bounds_on_serve(
    store: S3ClaimCheckStore, moto_endpoint: str
) -> None:
    assert len(TEXT) > WINDOW
    env = {
        **os.environ,
        "S3CLAIM_BUCKET": store.bucket.name,
        "S3CLAIM_ENDPOINT_URL": moto_endpoint,
        "S3CLAIM_HANDLE_KEY": KEY,
    }
    mine, theirs = (
        store.put(SCOPE, TEXT, ttl_seconds=3600),
        store.put(OTHER, TEXT, ttl_seconds=3600),
    )
    flags = ("--max-calls", "64", "--max-read-bytes", str(MAX_READ_BYTES))
    with serve_links(env, *flags) as (base, log, pid):
        url = link(store, mine, scope=SCOPE, base_url=base) + f"?offset=0&length={WINDOW}"
        other = link(store, theirs, scope=OTHER, base_url=base) + "?offset=0&length=100"
        assert get(url) == (200, TEXT[:WINDOW].encode())  # warm: every module imported
        before = rss_mib(pid)
        peak = before
        with stalled_readers(url, READERS) as socks:
            deadline = time.monotonic() + 4
            while time.monotonic() < deadline:
                peak = max(peak, rss_mib(pid))
                time.sleep(0.05)
            assert get(other) == (200, TEXT[:100].encode())  # another tenant is served
            statuses = [status_of(sock) for sock in socks]
        held = statuses.count(200)
        print(f"serve: {held} of {READERS} held, RSS {before:.0f} -> {peak:.0f} MiB")
        assert sorted(set(statuses)) == [200, 503]
        # Each window reserves its UTF-8 at the longest (4 bytes a character): 16 MiB, all of
        # one tenant's share of the 64 MiB (a quarter, with links of any tenant).
        assert held == MAX_READ_BYTES // 4 // (4 * WINDOW) == 1
        assert not any("Traceback" in line for line in log)
        assert peak - before <= 2 * MAX_READ_BYTES / 2**20


def test_sixty_stalled_readers_on_the_proxys_claims_share_its_bounds(
    sealed_module: None, tmp_path: Path
) -> None:
    """The gateway over HTTP with `--max-calls 8`: its link reads take the slots its calls
    take, and their bytes the same budget (`--max-read-bytes`, 64 MiB by default)."""
    from tests.mcp_proxy._support import PYTHON, UPSTREAM, http_proxy
    from tests.mcp_proxy.test_links_gateway import _link_to

    config = tmp_path / "gateway.toml"
    config.write_text(f'[upstreams.dev]\ncommand = "{PYTHON}"\nargs = ["{UPSTREAM}"]\n')
    options = (
        "--tenant", "acme", "--store", "memory", "--memory-max-bytes", str(64 * 2**20),
        "--max-calls", "8", "--references", "--config", str(config),
    )  # fmt: skip
    with http_proxy(*options, "--threshold-chars", "2000", upstream_argv=()) as proxy:
        url = _link_to(proxy, WINDOW + 1000) + f"?offset=0&length={WINDOW}"
        status, body = get(url)
        assert status == 200 and len(body.decode()) == WINDOW  # warm
        pid = proxy.process.pid
        before = rss_mib(pid)
        peak = before
        with stalled_readers(url, READERS) as socks:
            deadline = time.monotonic() + 4
            while time.monotonic() < deadline:
                peak = max(peak, rss_mib(pid))
                time.sleep(0.05)
            statuses = [status_of(sock) for sock in socks]
        held = statuses.count(200)
        print(f"proxy: {held} of {READERS} held, RSS {before:.0f} -> {peak:.0f} MiB")
        assert sorted(set(statuses)) == [200, 503]
        assert held <= MAX_READ_BYTES // (4 * WINDOW)
        assert peak - before <= 2 * MAX_READ_BYTES / 2**20
    assert not any("Traceback" in line for line in proxy.stderr), "".join(proxy.stderr)[-3000:]
