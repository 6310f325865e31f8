"""Each store request on the wire, counted into the telemetry operation it serves.

botocore event hooks on the store's client: `before-send` is one HTTP request and the bytes
it sends (the store's requests are one attempt each: s3claim owns the retries), `after-call`
the bytes the answer carries. Outside an s3claim operation the hooks count nothing, so a
caller's own calls on a shared client are left alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from s3claim.telemetry import count_request

__all__ = ["count_requests"]


def count_requests(client: Any) -> None:
    """Register the counting hooks on `client` (once, however many stores share it)."""
    events = client.meta.events
    events.register("before-send.s3", _sent, unique_id="s3claim-count-sent")
    events.register("after-call.s3", _received, unique_id="s3claim-count-received")


def _length(headers: Mapping[str, Any] | None) -> int:
    value = headers.get("Content-Length") if headers is not None else None
    try:
        return int(value) if value is not None else 0
    except (TypeError, ValueError):
        return 0


def _sent(request: Any = None, **_: Any) -> None:  # returning None: botocore sends it
    count_request(requests=1, sent=_length(getattr(request, "headers", None)))


def _received(http_response: Any = None, **_: Any) -> None:
    count_request(received=_length(getattr(http_response, "headers", None)))
