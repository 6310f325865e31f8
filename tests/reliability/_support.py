"""Shared machinery of the reliability suite: rigs, a seeded fault injector, scripted runs.

Faults go through botocore's `before-send` hook, which fires once per HTTP attempt: a handler
that returns an `AWSResponse` replaces the server's answer, one that raises stands in for a
broken connection, and None lets the request through to moto. "Landed" faults first forward
the request to the server themselves, so S3 did the work and only the answer is lost: the
case where a retried write meets its own earlier success.
"""

from __future__ import annotations

import json
import random
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from botocore.awsrequest import AWSPreparedRequest, AWSResponse
from botocore.exceptions import ConnectionClosedError, ReadTimeoutError
from botocore.httpsession import URLLib3Session

from s3claim import (
    DEFAULT_FETCH_CHARS,
    AgentRunner,
    AssistantMessage,
    ClaimCheck,
    ClaimCheckPolicy,
    ClaimCheckStore,
    HandleKey,
    ManualClock,
    MemoryClaimCheckStore,
    Message,
    Scope,
    ScriptedProvider,
    Tool,
    ToolCall,
    ToolRegistry,
    claim_check_tool,
)
from tests._s3 import s3_error, s3_response

MARKER = re.compile(
    r"\n\n\[(\d+) characters, (\d+) not shown\. Call fetch_result with "
    r"handle='(claim:[0-9a-z]+)' to read the rest\.\]\Z"
)
FOOTER = re.compile(
    r"\n\n\[characters (\d+)-(\d+) of (\d+)\. Call fetch_result with "
    r"handle='(claim:[0-9a-z]+)' and offset=(\d+) to continue\.\]\Z"
)
KEY_LAYOUT = re.compile(r"claims/[0-9a-f]{32}/[0-9a-f]{32}/[124][0-9a-f]{32}")


# -- clients and rigs ------------------------------------------------------------------------


class CountingMemoryStore(MemoryClaimCheckStore):
    """The memory store, counting the calls that reach its claims (the S3 rig counts HTTP
    requests): a put, and every claim opened for reading (`ranges`)."""

    def __init__(self, *, clock: ManualClock, handle_key: HandleKey) -> None:
        super().__init__(clock=clock, handle_key=handle_key)
        self.calls: Counter[str] = Counter()

    def put(self, scope: Scope, content: str, *, ttl_seconds: int, tool: str | None = None) -> str:
        self.calls["put"] += 1
        return super().put(scope, content, ttl_seconds=ttl_seconds, tool=tool)

    def ranges(self, scope: Scope, handle: str, *, check_in_id: str | None = None) -> Any:
        self.calls["ranges"] += 1
        return super().ranges(scope, handle, check_in_id=check_in_id)


@dataclass
class Rig:
    """One store under test, and what it takes to look behind it."""

    kind: str
    store: ClaimCheckStore
    clock: ManualClock
    key: HandleKey
    client: Any = None
    bucket: str = ""
    sent: Counter[str] = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        if self.client is not None:
            self.client.meta.events.register("before-send.s3.*", self._count)

    def _count(self, event_name: str, **_: Any) -> None:
        with self._lock:
            self.sent[event_name.rsplit(".", 1)[-1]] += 1

    def requests(self) -> int:
        """HTTP requests sent (S3), or calls that reached the store (memory)."""
        if isinstance(self.store, CountingMemoryStore):
            return sum(self.store.calls.values())
        with self._lock:
            return sum(self.sent.values())

    def object_keys(self) -> list[str]:
        if self.client is None:
            return []
        keys: list[str] = []
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket):
            keys += [o["Key"] for o in page.get("Contents", [])]
        return keys

    def claims_held(self) -> int:
        if isinstance(self.store, MemoryClaimCheckStore):
            return len(self.store)
        return len(self.object_keys())


# -- faults ----------------------------------------------------------------------------------


BEFORE_FAULTS = ("500", "503-slowdown", "400-request-timeout", "reset", "read-timeout")
"""Faults decided before the request leaves: the server never sees it."""
LANDED_OPS = frozenset({"PutObject", "CopyObject", "DeleteObjects", "HeadObject"})
"""Operations that may also fail after the server did the work (the answer is lost)."""


class FaultInjector:
    """Fails a seeded random share of a client's HTTP attempts, or all of them in an outage.

    Deterministic for a single-threaded caller: one `random.Random(seed)` draws every decision.
    """

    def __init__(self, client: Any, *, seed: int, rate: float = 0.0) -> None:
        self.rate = rate
        self.outage = False
        self.attempts: Counter[str] = Counter()
        self.injected: Counter[str] = Counter()  # "Operation:fault" -> times
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self._http = URLLib3Session()
        client.meta.events.register("before-send.s3.*", self._on_send)

    def _choose(self, operation: str) -> str | None:
        with self._lock:
            self.attempts[operation] += 1
            if self.outage:
                fault: str | None = self._random.choice(BEFORE_FAULTS)
            elif self._random.random() < self.rate:
                kinds = list(BEFORE_FAULTS)
                if operation in LANDED_OPS:
                    kinds += ["landed-then-timeout", "landed-then-reset"] * 2
                if operation == "GetObject":
                    kinds += ["cut-body"] * 2
                fault = self._random.choice(kinds)
            else:
                fault = None
            if fault is not None:
                self.injected[f"{operation}:{fault}"] += 1
            return fault

    def _on_send(
        self, request: AWSPreparedRequest, event_name: str, **_: Any
    ) -> AWSResponse | None:
        fault = self._choose(event_name.rsplit(".", 1)[-1])
        url = request.url
        if fault is None:
            return None
        if fault == "500":
            return s3_error(500, "InternalError")
        if fault == "503-slowdown":
            return s3_error(503, "SlowDown")
        if fault == "400-request-timeout":
            return s3_error(400, "RequestTimeout")
        if fault == "reset":
            raise ConnectionClosedError(endpoint_url=url)
        if fault == "read-timeout":
            raise ReadTimeoutError(endpoint_url=url)
        real = self._http.send(request)  # the server does the work...
        body = real.content
        if fault == "landed-then-timeout":
            raise ReadTimeoutError(endpoint_url=url)  # ...and the answer is lost
        if fault == "landed-then-reset":
            raise ConnectionClosedError(endpoint_url=url)
        # cut-body: the answer starts, then the stream ends early
        cut = body[: len(body) // 2] if 200 <= real.status_code < 300 and body else body
        return s3_response(real.status_code, cut, dict(real.headers.items()), url)


# -- scripted runs ---------------------------------------------------------------------------


def call(tool_name: str, call_id: str = "c1", /, **arguments: Any) -> AssistantMessage:
    return AssistantMessage(tool_calls=(ToolCall(id=call_id, name=tool_name, arguments=arguments),))


def calls(*items: tuple[str, str, dict[str, Any]]) -> AssistantMessage:
    return AssistantMessage(
        tool_calls=tuple(ToolCall(id=i, name=n, arguments=a) for n, i, a in items)
    )


def done(text: str = "done") -> AssistantMessage:
    return AssistantMessage(content=text)


def tool_texts(messages: Sequence[Message]) -> list[str]:
    return [m.content for m in messages if m.role == "tool"]


def tool_replies(messages: Sequence[Message]) -> dict[str, str]:
    """Tool results by the id of the call they answer."""
    return {m.tool_call_id: m.content for m in messages if m.role == "tool"}


@dataclass(frozen=True)
class Marker:
    head: str
    total: int
    hidden: int
    handle: str


def parse_checked_in(text: str) -> Marker:
    """Split a checked-in result into its head and the marker's numbers and handle."""
    found = MARKER.search(text)
    assert found is not None, "no marker at the end of the tool result"
    head = text[: found.start()]
    marker = Marker(head, int(found.group(1)), int(found.group(2)), found.group(3))
    assert marker.hidden == marker.total - len(head)
    return marker


def markers_in(messages: Sequence[Message]) -> list[Marker]:
    return [parse_checked_in(t) for t in tool_texts(messages) if MARKER.search(t)]


def fetch_all(markers: Iterable[Marker]) -> AssistantMessage:
    """One assistant turn asking for every window of every claim."""
    items = [
        ("fetch_result", f"{m.handle}@{offset}", {"handle": m.handle, "offset": offset})
        for m in markers
        for offset in range(0, m.total, DEFAULT_FETCH_CHARS)
    ]
    return calls(*items)


def fetch_every_window(messages: Sequence[Message]) -> AssistantMessage:
    """A step: read back every claim whose marker is in the conversation so far."""
    return fetch_all({m.handle: m for m in markers_in(messages)}.values())


def reassemble(replies: dict[str, str], marker: Marker) -> str:
    """The windows of one claim, footers checked and stripped, joined in order."""
    parts: list[str] = []
    offsets = range(0, marker.total, DEFAULT_FETCH_CHARS)
    for offset in offsets:
        text = replies[f"{marker.handle}@{offset}"]
        assert not text.startswith('{"error"'), text
        footer = FOOTER.search(text)
        end = min(offset + DEFAULT_FETCH_CHARS, marker.total)
        if end < marker.total:
            assert footer is not None, f"window at {offset} has no footer"
            assert footer.groups() == (
                str(offset),
                str(end),
                str(marker.total),
                marker.handle,
                str(end),
            )
            text = text[: footer.start()]
        else:  # the last window: no footer, an end note (`s3claim.wording.end_note`)
            assert footer is None
            note = END_NOTE.search(text)
            assert note is not None, f"the last window at {offset} has no end note"
            assert note.groups() == (str(offset), str(end), str(marker.total)), note.group()
            text = text[: note.start()]
        assert len(text) == end - offset
        parts.append(text)
    return "".join(parts)


END_NOTE = re.compile(
    r"\n\n\[end of the result \(fetch_result\): characters (\d+)-(\d+) of (\d+)[^\n]*\]\Z"
)


def refusal(text: str) -> dict[str, str]:
    """A tool error as the model reads it; fails if the text is not one."""
    value = json.loads(text)
    assert isinstance(value, dict) and set(value) == {"error", "message"}, text
    return value


def runner(
    store: ClaimCheckStore,
    tools: Sequence[Tool],
    steps: Sequence[AssistantMessage | Callable[[Sequence[Message]], AssistantMessage]],
    *,
    policy: ClaimCheckPolicy | None = None,
    **kwargs: Any,
) -> AgentRunner:
    registry = ToolRegistry((*tools, claim_check_tool(store)))
    return AgentRunner(
        provider=ScriptedProvider(steps),
        tools=registry.view(agent="agent"),
        claim_check=ClaimCheck(store, policy=policy),
        **kwargs,
    )
