"""N concurrent simulated agent runs in one process, one store and one journal, one bucket.

Each run is `AgentRunner` with a scripted model (`model.SIMULATED_RUN`): two text tool results
and one JSON result checked in, two fetches by offset and one by JSON path, one search, six
journal saves, then a resume of the finished run.
Every S3 request is counted per logical operation: a context variable names the operation
in flight and botocore's `before-send` hook reads it on the thread that sends.

One cell per process, so peak memory is the cell's:
`python -m benchmarks.load.agent --url URL --bucket B --workers N --runs R [--pool P]`
prints one JSON object.
"""

from __future__ import annotations

import argparse
import contextvars
import json
import logging
import math
import re
import resource
import sys
import threading
import time
import traceback
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from s3claim import AgentRunner, ClaimCheck, ScriptedProvider, tool
from s3claim.claim_tools import claim_tools
from s3claim.cli.demo import contract
from s3claim.journal import RunRecord
from s3claim.messages import AssistantMessage, Message, ToolCall, ToolMessage
from s3claim.s3 import RetryPolicy, S3ClaimCheckStore, S3RunJournal
from s3claim.s3._config import make_client
from s3claim.scope import Scope
from s3claim.store import DEFAULT_FETCH_CHARS, PathRead, Window

__all__ = ["Counting", "build", "run_one"]

CONTRACT = contract()
INVENTORY = json.dumps(
    {"items": [{"id": i, "name": f"item {i}", "tags": ["a", "b", "c"]} for i in range(2000)]}
)
HANDLE = re.compile(r"claim:[0-9a-z]+")
KEY = "capacity-load-handle-key-0123456789abcdef"
_OP: contextvars.ContextVar[str | None] = contextvars.ContextVar("bench_op", default=None)


class Counting:
    """Requests per (logical operation, S3 operation), request bytes, latencies, connections."""

    def __init__(self) -> None:
        self.requests: Counter[tuple[str, str]] = Counter()
        self.request_bytes: Counter[str] = Counter()
        self.latency: defaultdict[str, list[float]] = defaultdict(list)
        self.connections = 0
        self.discarded = 0
        self._lock = threading.Lock()

    def attach(self, client: Any) -> None:
        client.meta.events.register("before-send.s3.*", self._on_send)

    def _on_send(self, request: Any, event_name: str, **_: Any) -> None:
        op = _OP.get() or "other"
        size = _body_size(request.body)
        with self._lock:
            self.requests[(op, event_name.rsplit(".", 1)[-1])] += 1
            self.request_bytes[op] += size

    @contextmanager
    def operation(self, name: str) -> Iterator[None]:
        token = _OP.set(name)
        began = time.perf_counter()
        try:
            yield
        finally:
            elapsed = time.perf_counter() - began
            _OP.reset(token)
            with self._lock:
                self.latency[name].append(elapsed)

    def per_operation(self) -> dict[str, dict[str, int]]:
        table: dict[str, dict[str, int]] = defaultdict(dict)
        for (op, s3_op), n in sorted(self.requests.items()):
            table[op][s3_op] = n
        return dict(table)


def _body_size(body: Any) -> int:
    if isinstance(body, bytes | bytearray):
        return len(body)
    if body is not None and hasattr(body, "seek") and hasattr(body, "tell"):
        here = body.tell()
        body.seek(0, 2)
        size: int = body.tell() - here
        body.seek(here)
        return size
    return 0


class _Connections(logging.Handler):
    """urllib3's debug lines: a new connection, or one thrown away because the pool was full."""

    def __init__(self, counting: Counting) -> None:
        super().__init__(logging.DEBUG)
        self._counting = counting

    def emit(self, record: logging.LogRecord) -> None:
        message = record.msg if isinstance(record.msg, str) else ""
        if message.startswith("Starting new HTTP"):
            self._counting.connections += 1
        elif message.startswith("Connection pool is full"):
            self._counting.discarded += 1


class MeasuredStore(S3ClaimCheckStore):
    counting: Counting

    def put(self, scope: Scope, content: str, *, ttl_seconds: int, tool: str | None = None) -> str:
        # A JSON result is written with its structure index: an operation of its own.
        op = "check_in_json" if content.lstrip()[:1] in ("{", "[") else "check_in"
        with self.counting.operation(op):
            return super().put(scope, content, ttl_seconds=ttl_seconds, tool=tool)

    def fetch(
        self,
        scope: Scope,
        handle: str,
        offset: int = 0,
        limit: int = DEFAULT_FETCH_CHARS,
        *,
        check_in_id: str | None = None,
    ) -> Window:
        if _OP.get() == "fetch_path":  # the answer's window of a read by path: the path's
            return super().fetch(scope, handle, offset, limit, check_in_id=check_in_id)
        with self.counting.operation("fetch"):
            return super().fetch(scope, handle, offset, limit, check_in_id=check_in_id)

    def read_path(
        self,
        scope: Scope,
        handle: str,
        pointer: str,
        *,
        limit: int = DEFAULT_FETCH_CHARS,
        first: int = 0,
        check_in_id: str | None = None,
    ) -> PathRead:
        with self.counting.operation("fetch_path"):
            return super().read_path(
                scope, handle, pointer, limit=limit, first=first, check_in_id=check_in_id
            )

    def scan(self, scope: Scope, handle: str, *, check_in_id: str | None = None) -> Iterator[str]:
        began = time.perf_counter()
        token = _OP.set("search")
        try:
            pieces = super().scan(scope, handle, check_in_id=check_in_id)
        finally:
            _OP.reset(token)
        return self._timed(pieces, began)

    def _timed(self, pieces: Iterator[str], began: float) -> Iterator[str]:
        token = _OP.set("search")
        try:
            yield from pieces
        finally:
            _OP.reset(token)
            with self.counting._lock:
                self.counting.latency["search"].append(time.perf_counter() - began)


class MeasuredJournal(S3RunJournal):
    counting: Counting

    def save(self, scope: Scope, record: RunRecord, *, replaces: str | None) -> str:
        with self.counting.operation("journal_save"):
            return super().save(scope, record, replaces=replaces)

    def load(self, scope: Scope) -> Any:
        with self.counting.operation("resume"):
            return super().load(scope)


def _section(number: str) -> int:
    return CONTRACT.index(f"\n{number} ") // DEFAULT_FETCH_CHARS * DEFAULT_FETCH_CHARS


def _handle(messages: Sequence[Message], index: int) -> str:
    found = [m for m in messages if isinstance(m, ToolMessage) and HANDLE.search(m.content)]
    match = HANDLE.search(found[index].content)
    assert match is not None
    return match.group(0)


def _script() -> list[Any]:
    def call(name: str, **arguments: Any) -> AssistantMessage:
        return AssistantMessage(
            tool_calls=(ToolCall(id=uuid.uuid4().hex, name=name, arguments=arguments),)
        )

    def then(name: str, claim: int = 0, **arguments: Any) -> Any:
        def step(messages: Sequence[Message]) -> AssistantMessage:
            return call(name, handle=_handle(messages, claim), **arguments)

        return step

    first = AssistantMessage(
        tool_calls=(
            ToolCall(id="c1", name="read_contract", arguments={}),
            ToolCall(id="c2", name="read_log", arguments={}),
            ToolCall(id="c3", name="read_inventory", arguments={}),
        )
    )
    return [
        first,
        then("fetch_result", offset=_section("17.1")),
        then("search_result", pattern="governing law", ignore_case=True),
        then("fetch_result", offset=_section("19.2")),
        then("fetch_result", claim=2, path="/items/1499/name"),
        AssistantMessage(content="Section 17.1 and 19.2, as quoted; item 1499 found."),
    ]


def build(client: Any, bucket: str, counting: Counting) -> tuple[MeasuredStore, MeasuredJournal]:
    """One store and one journal on one client, shared by every run of the process."""
    policy = RetryPolicy()
    store = MeasuredStore(bucket, handle_key=KEY, client=client, retry=policy)
    journal = MeasuredJournal(bucket, handle_key=KEY, client=client, retry=policy)
    store.counting = journal.counting = counting
    counting.attach(client)
    return store, journal


def run_one(store: MeasuredStore, journal: MeasuredJournal, tenant: str) -> dict[str, Any]:
    """One simulated run and its resume; what the model was told that was an error."""
    run_log = f"{uuid.uuid4().hex}\n" * 400  # unique per run: a claim of its own

    @tool
    def read_contract() -> str:
        """The contract under review."""
        return CONTRACT

    @tool
    def read_log() -> str:
        """This run's build log."""
        return run_log

    @tool
    def read_inventory() -> str:
        """The inventory, as JSON."""
        return INVENTORY

    runner = AgentRunner(
        provider=ScriptedProvider(_script()),
        tools=[read_contract, read_log, read_inventory, *claim_tools(store)],
        claim_check=ClaimCheck(store),
        journal=journal,
        max_turns=8,
    )
    result = runner.run("Where are governing law and notices?", tenant=tenant)
    resumed = runner.resume(tenant=tenant, run_id=result.scope.run)
    assert resumed.output == result.output
    handles = sorted({h for m in result.messages if isinstance(m, ToolMessage)
                      for h in HANDLE.findall(m.content)})  # fmt: skip
    return {
        "tenant": tenant,
        "run": result.scope.run,
        "handles": handles,
        "refusals": _refusals(result.messages),
    }


def _refusals(messages: Sequence[Message]) -> list[str]:
    """Tool results that are errors or lost check-ins: what the model read as a failure."""
    said: list[str] = []
    for m in messages:
        if not isinstance(m, ToolMessage):
            continue
        if "not retrievable" in m.content:
            said.append("check_in_lost")
        elif m.content.startswith('{"error"'):
            said.append(json.loads(m.content)["error"])
    return said


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--bucket", required=True)
    parser.add_argument("--credentials", default="S3RVER:S3RVER")
    parser.add_argument("--workers", type=int, required=True)
    parser.add_argument("--runs", type=int, required=True, help="runs per worker")
    parser.add_argument("--pool", type=int, default=None, help="max_pool_connections")
    parser.add_argument("--no-queue", action="store_true", help="botocore's discarding pool")
    args = parser.parse_args(argv)

    counting = Counting()
    urllib3_log = logging.getLogger("urllib3.connectionpool")
    urllib3_log.setLevel(logging.DEBUG)
    urllib3_log.addHandler(_Connections(counting))
    urllib3_log.propagate = False
    key, secret = args.credentials.split(":", 1)
    pool = {} if args.pool is None else {"max_pool_connections": args.pool}
    client = make_client(
        endpoint_url=args.url,
        region="us-east-1",
        credentials=(key, secret),
        queue_past_pool=not args.no_queue,
        **pool,
    )
    store, journal = build(client, args.bucket, counting)

    done: list[dict[str, Any]] = []
    failures: list[str] = []
    start = threading.Barrier(args.workers + 1)

    def worker(index: int) -> None:
        start.wait()
        for _ in range(args.runs):
            try:
                done.append(run_one(store, journal, f"tenant-{index % 64}"))
            except Exception as exc:  # counted: a run that did not complete
                where = [f"{f.name}:{f.lineno}" for f in traceback.extract_tb(exc.__traceback__)
                         if "s3claim" in f.filename][-4:]  # fmt: skip
                failures.append(f"{type(exc).__name__}: {str(exc)[:120]} at {' < '.join(where)}")

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(args.workers)]
    for t in threads:
        t.start()
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    start.wait()
    began = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - began
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    measured = counting.per_operation()
    requests = sum(counting.requests.values())
    lost = _verify(store, journal, done)
    print(json.dumps({
        "workers": args.workers,
        "runs": len(done),
        "failed_runs": failures[:10],
        "failed": len(failures),
        "refusals": dict(Counter(r for d in done for r in d["refusals"])),
        "lost": lost,
        "wall": wall,
        "runs_per_s": len(done) / wall,
        "requests": requests,
        "requests_per_s": requests / wall,
        "per_operation": measured,
        "request_bytes": dict(counting.request_bytes),
        "p50": {op: percentile(v, 0.50) for op, v in counting.latency.items()},
        "p99": {op: percentile(v, 0.99) for op, v in counting.latency.items()},
        "client_cpu": (cpu1.ru_utime + cpu1.ru_stime) - (cpu0.ru_utime + cpu0.ru_stime),
        "client_peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "connections": counting.connections,
        "discarded": counting.discarded,
    }))  # fmt: skip


def _verify(store: S3ClaimCheckStore, journal: S3RunJournal, done: list[dict[str, Any]]) -> int:
    """After the load (not counted): every journal answered, every claim readable."""
    lost = 0
    plain_store = S3ClaimCheckStore(store.bucket, handle_key=KEY, client=store.client)
    plain_journal = S3RunJournal(journal.bucket, handle_key=KEY, client=journal.client)
    token = _OP.set("verify")
    try:
        for d in done[:256]:  # a sample: verification is not load
            scope = Scope(d["tenant"], d["run"])
            try:
                if plain_journal.load(scope).record.status != "answered":
                    lost += 1
                for handle in d["handles"]:
                    if plain_store.fetch(scope, handle, limit=16).total_chars <= 0:
                        lost += 1
            except Exception:  # unreadable counts as lost
                lost += 1
    finally:
        _OP.reset(token)
    return lost


if __name__ == "__main__":
    sys.setswitchinterval(0.005)  # the interpreter's default; stated, not tuned
    main()
