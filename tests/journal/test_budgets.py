"""The run journal's budgets, counted with botocore event hooks on moto's HTTP server.

One PUT per model turn; a resume reads a run of any length with at most 2 requests before it
calls the model; the counsel journal is at most 1.5x the UTF-8 size of the conversation it
holds, whatever the contract's size. `make bench` publishes the same figures, from the same
functions (`devkit.journal_costs`).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from devkit.journal_costs import record_counsel, resume_cost
from s3claim import HandleKey
from tests._s3 import moto_client


@pytest.fixture
def clients(moto_endpoint: str) -> tuple[Any, Any, str]:
    """A store client and a journal client of its own, on one fresh bucket."""
    store_client, journal_client = moto_client(moto_endpoint), moto_client(moto_endpoint)
    bucket = f"budget-{uuid.uuid4().hex}"
    store_client.create_bucket(Bucket=bucket)
    return store_client, journal_client, bucket


def test_recording_costs_one_put_per_turn_and_holds_no_more_than_the_model_saw(
    clients: tuple[Any, Any, str],
) -> None:
    store_client, journal_client, bucket = clients
    key = HandleKey.generate()

    small, large = (
        record_counsel(store_client, journal_client, bucket, key, contract_chars=chars)
        for chars in (91_800, 1_000_000)
    )

    assert large.contract_chars > 10 * small.contract_chars
    for counsel in (small, large):
        assert counsel.model_calls == 4
        # one PUT per model call, and one HEAD before the first: is the run id free?
        assert dict(counsel.journal_requests) == {"PutObject": 4, "HeadObject": 1}
        assert counsel.journal_bytes <= 1.5 * counsel.conversation_bytes, counsel
    # heads and windows, not the contract: the journal does not grow with it
    assert abs(large.journal_bytes - small.journal_bytes) < 0.01 * small.journal_bytes


@pytest.mark.parametrize("turns", [4, 64])
def test_resume_reads_a_run_of_any_length_in_one_request(
    clients: tuple[Any, Any, str], turns: int
) -> None:
    _, journal_client, bucket = clients

    before_the_model = resume_cost(journal_client, bucket, HandleKey.generate(), turns=turns)

    assert dict(before_the_model) == {"GetObject": 1}  # the budget is 2
