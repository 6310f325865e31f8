"""The S3 store under injected faults: nothing lost, nothing duplicated, the run never broken.

Extends tests/test_s3_faults.py (one fault kind at a time, each retried) and
tests/test_runner.py's memory-store outage to random mixes of faults and a real outage on
moto's HTTP server, always through `AgentRunner`.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pytest
from botocore.awsrequest import AWSPreparedRequest, AWSResponse
from botocore.httpsession import URLLib3Session
from urllib3.exceptions import ProtocolError

from s3claim import (
    AssistantMessage,
    ClaimCheckPolicy,
    ManualClock,
    Message,
    Scope,
    tool,
)
from s3claim.hosting import neutralise
from s3claim.s3 import RetryPolicy
from s3claim.s3._layout import is_claim_key
from s3claim.wording import STORE_UNAVAILABLE_MESSAGE
from tests._s3 import s3_response
from tests._strategies import PIECES
from tests.reliability._support import (
    FaultInjector,
    Rig,
    call,
    calls,
    done,
    fetch_every_window,
    markers_in,
    parse_checked_in,
    reassemble,
    refusal,
    runner,
    tool_replies,
    tool_texts,
)
from tests.reliability.conftest import make_rig

WORDS = ["contract", "clause", "party", "Zürich", "naïve", "契約", "👩‍⚖️", "\r\n", "\n\n", ". "]


def make_contents(count: int, seed: int, *, low: int, high: int) -> list[str]:
    """Distinct, forgery-free texts of mixed scripts, sized to need one to three windows."""
    rng = random.Random(seed)
    pool = PIECES + WORDS
    contents = []
    for i in range(count):
        size = rng.randint(low, high)
        parts = [f"result {i}: "]
        length = len(parts[0])
        while length < size:
            piece = rng.choice(pool)
            parts.append(piece)
            length += len(piece)
        text = "".join(parts)[:size]
        assert neutralise(text) == text
        contents.append(text)
    return contents


class _BrokenRaw:
    """A body stream that fails mid-read the way urllib3 does when a connection drops."""

    def stream(self, **_: Any) -> Any:
        raise ProtocolError("Connection broken: IncompleteRead")

    def read(self, *_: Any, **__: Any) -> bytes:
        raise ProtocolError("Connection broken: IncompleteRead")

    def close(self) -> None:
        pass


@pytest.mark.parametrize("damage", ["cut-short", "broken-stream"])
def test_a_body_that_breaks_mid_read_is_retried_not_served_or_leaked(
    s3_rig: Rig, damage: str
) -> None:
    """Found by the suite: the store read GetObject bodies through `with Body as b`, which
    yields botocore's raw urllib3 stream, skipping the length check (a short body became a
    non-retried "window length" error) and leaking urllib3's own exceptions."""
    content = "window text 契約 " * 500
    scope = Scope(tenant="acme", run="r")
    handle = s3_rig.store.put(scope, content, ttl_seconds=60)
    http = URLLib3Session()
    attempts: list[int] = []

    def once(request: AWSPreparedRequest, **_: Any) -> AWSResponse | None:
        attempts.append(1)
        if len(attempts) > 1:
            return None
        real = http.send(request)
        body = real.content
        headers = dict(real.headers.items())
        if damage == "broken-stream":
            return AWSResponse(request.url, real.status_code, headers, _BrokenRaw())
        return s3_response(real.status_code, body[: len(body) // 2], headers, request.url)

    s3_rig.client.meta.events.register("before-send.s3.GetObject", once)
    assert s3_rig.store.fetch(scope, handle, offset=100).text == content[100:4196]
    assert len(attempts) == 2


@pytest.mark.slow
def test_three_hundred_check_ins_survive_30_percent_faults_intact_and_unduplicated(
    clock: ManualClock, moto_endpoint: str
) -> None:
    rig = make_rig(
        "s3", clock, moto_endpoint, retry=RetryPolicy(attempts=12, initial_wait=0, max_wait=0)
    )
    faults = FaultInjector(rig.client, seed=7, rate=0.3)
    contents = make_contents(270, seed=11, low=1_100, high=9_000)
    policy = ClaimCheckPolicy(threshold_chars=1_024, head_chars=256)

    @tool
    def produce(n: int) -> str:
        """Return result n."""
        return contents[n]

    rng = random.Random(3)
    runs, per_run = 15, 20  # 300 check-ins; some repeat within a run (one claim)
    expected_objects = 0
    for run_no in range(runs):
        picks = [rng.randrange(len(contents)) for _ in range(per_run)]
        expected_objects += len(set(picks))
        check_ins = calls(*[("produce", f"p{i}", {"n": n}) for i, n in enumerate(picks)])
        result = runner(
            rig.store, [produce], [check_ins, fetch_every_window, done()], policy=policy
        ).run("go", tenant="acme", run_id=f"run-{run_no}")

        kinds = [e.kind for e in result.events]
        assert kinds.count("tool_result_stored") == per_run
        assert "tool_result_store_failed" not in kinds
        assert "claim_fetch_failed" not in kinds
        replies = tool_replies(result.messages)
        for i, n in enumerate(picks):
            marker = parse_checked_in(replies[f"p{i}"])
            assert contents[n].startswith(marker.head)
            assert marker.total == len(contents[n])
            assert reassemble(replies, marker) == contents[n]
        assert result.output == "done"

    faults.rate = 0.0  # the listing below is the test's, not the store's
    keys = [k for k in rig.object_keys() if is_claim_key(k)]  # not the indexes beside them
    assert len(keys) == len(set(keys)) == expected_objects
    # the faults really were a mix, before and after the server did the work
    assert sum(faults.injected.values()) > 0.2 * sum(faults.attempts.values())
    for fault in (
        "PutObject:landed-then-timeout",
        "PutObject:503-slowdown",
        "PutObject:reset",
        "GetObject:cut-body",
        "GetObject:400-request-timeout",
        "GetObject:read-timeout",
        "GetObject:500",
    ):
        assert faults.injected[fault] > 0, fault


def test_a_total_outage_degrades_the_run_and_the_same_run_recovers(
    clock: ManualClock, moto_endpoint: str
) -> None:
    rig = make_rig("s3", clock, moto_endpoint)
    faults = FaultInjector(rig.client, seed=5)
    before, during = "before the outage. " * 400, "during the outage. " * 400

    @tool
    def read(name: str) -> str:
        """Return a document."""
        return before if name == "before" else during

    def outage_starts(messages: Sequence[Message]) -> AssistantMessage:
        faults.outage = True
        (stored,) = markers_in(messages)
        return calls(
            ("read", "r2", {"name": "during"}),
            ("fetch_result", "f1", {"handle": stored.handle, "offset": 0}),
        )

    def outage_ends(messages: Sequence[Message]) -> AssistantMessage:
        faults.outage = False
        return call("read", "r3", name="during")

    steps = [call("read", "r1", name="before"), outage_starts, outage_ends, fetch_every_window]
    result = runner(rig.store, [read], [*steps, done()], max_tool_result_chars=2_000).run(
        "q", tenant="acme", run_id="r"
    )

    replies = tool_replies(result.messages)
    # during: check-in fell back to truncation, fetch answered with the retryable refusal
    assert (
        replies["r2"].startswith(during[:2_000]) and "cut off and not retrievable" in replies["r2"]
    )
    assert refusal(replies["f1"]) == {
        "error": "store_unavailable",
        "message": STORE_UNAVAILABLE_MESSAGE,
    }
    (failed,) = [e for e in result.events if e.kind == "tool_result_store_failed"]
    assert (failed.size_chars, failed.kept_chars, failed.error) == (
        len(during),
        2_000,
        "ClaimStoreError",
    )
    assert [e.kind for e in result.events].count("claim_fetch_failed") == 1
    assert sum(faults.injected.values()) >= 6  # every attempt of both requests failed
    # after: the same run stores again and reads back both claims whole
    markers = {m.handle: m for m in markers_in(result.messages)}
    assert len(markers) == 2
    assert sorted(reassemble(replies, m) for m in markers.values()) == sorted([before, during])
    assert result.output == "done"
    assert len(tool_texts(result.messages)) == 4 + 2 * 2  # r1, r2, f1, r3, two windows each
