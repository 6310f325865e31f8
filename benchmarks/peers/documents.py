"""The three documents of the side-by-side, and the three tasks on each, with exact answers.

- `contract`: the counsel contract (`s3claim.cli.demo.contract`), with the needle clause of
  the search measure (13.2, termination for convenience) put in;
- `json-pretty` and `json-minified`: one API response of 2,000 order records, indented
  (one field a line) and on one line, the way a JSON API returns it;
- `log`: a 5 MB application log, one ERROR line at 60% of it and a stack trace at its end.

Every document is built from a fixed seed: the same run always measures the same text.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Literal

from s3claim.cli.demo import contract

__all__ = ["DOCUMENTS", "Document", "Task", "documents"]

TAIL_CHARS = 2_000
RECORDS = 2_000
RECORD_INDEX = 1_499  # the 1,500th record
LOG_LINE = 37_500
CLAUSE_ORDINAL = 37
CUSTOMER = "Ærø Fjord Shipping ApS"
"""The one record the find task names (no other record has this customer)."""
NEEDLE_CLAUSE = (
    "13.2 Either Party may terminate this Agreement for convenience on ninety (90) days' "
    "written notice to the other Party, without liability for the termination itself.\n\n"
)
ERROR_LINE_MARK = " ERROR "

Kind = Literal["contract", "json", "log"]


@dataclass(frozen=True)
class Task:
    """One question: what the scripted policies are told, and the exact answer."""

    id: Literal["find", "tail", "position"]
    title: str
    expected: str
    spec: dict[str, Any] = field(default_factory=dict)
    """What a policy is given (JSON): the needle, the clause label, the record, the line."""
    unit: Literal["line", "record", "text"] = "text"
    """How an answer is compared: a line or a text byte for byte, a record as parsed JSON."""


@dataclass(frozen=True)
class Document:
    name: str
    kind: Kind
    title: str
    text: str
    tasks: tuple[Task, ...]


def _contract() -> Document:
    base = contract()
    at = base.index("13.2 ")
    text = base[:at] + NEEDLE_CLAUSE + base[at:].replace("13.2 ", "13.2a ", 1)
    clause = list(re.finditer(r"^(\d+\.\d+) [^\n]*", text, re.MULTILINE))[CLAUSE_ORDINAL - 1]
    needle_line = NEEDLE_CLAUSE.rstrip("\n")
    tasks = (
        Task(
            "find",
            "find the termination-for-convenience clause",
            needle_line,
            {"needle": "for convenience", "unit": "line"},
            "line",
        ),
        Task("tail", f"read the last {TAIL_CHARS:,} characters", text[-TAIL_CHARS:]),
        Task(
            "position",
            f"read clause {CLAUSE_ORDINAL} (section {clause.group(1)})",
            clause.group(0),
            {"label": clause.group(1), "needle": f"{clause.group(1)} ", "unit": "line"},
            "line",
        ),
    )
    return Document("contract", "contract", "the counsel contract", text, tasks)


_STATUSES = ("paid", "pending", "shipped", "refunded", "cancelled")
_CUSTOMERS = (
    "Zoë Müller GmbH",
    "Łukasz Nowak S.A.",
    "Søren Holm ApS",
    "José Núñez y Cía.",
    "株式会社東京",
    "Ōsaka Logistics K.K.",
    "Acme Corp",
    "Globex Ltd",
)


@cache
def _response() -> dict[str, Any]:
    rng = random.Random("s3claim-bench-peers-json")  # noqa: S311  (data, not secrets)
    items = []
    for index in range(RECORDS):
        items.append(
            {
                "id": f"ord-{rng.getrandbits(40):010x}",
                "customer": CUSTOMER if index == 811 else rng.choice(_CUSTOMERS),
                "status": rng.choice(_STATUSES),
                "amount": round(rng.uniform(5, 5000), 2),
                "currency": rng.choice(("EUR", "USD", "PLN", "JPY")),
                "items": rng.randint(1, 40),
                "created_at": f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T"
                f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00Z",
                "note": " ".join(
                    rng.choice(("rush", "gift", "b2b", "repeat", "vip", "-")) for _ in range(3)
                ),
            }
        )
    return {"items": items, "count": RECORDS, "next_page": None}


def _json(name: str, *, pretty: bool) -> Document:
    response = _response()
    if pretty:
        text = json.dumps(response, indent=2, ensure_ascii=False)
    else:
        text = json.dumps(response, ensure_ascii=False, separators=(",", ":"))
    items = response["items"]
    found = next(r for r in items if r["customer"] == CUSTOMER)
    spec_find = {"needle": CUSTOMER, "unit": "record"}
    tasks = (
        Task("find", f"find the order of {CUSTOMER}", json.dumps(found), spec_find, "record"),
        Task("tail", f"read the last {TAIL_CHARS:,} characters", text[-TAIL_CHARS:]),
        Task(
            "position",
            f"read record {RECORD_INDEX + 1:,} (items[{RECORD_INDEX}])",
            json.dumps(items[RECORD_INDEX]),
            {"index": RECORD_INDEX, "pointer": f"/items/{RECORD_INDEX}", "unit": "record"},
            "record",
        ),
    )
    layout = "pretty-printed" if pretty else "minified, one line"
    return Document(name, "json", f"{RECORDS:,} records, {layout}", text, tasks)


_PATHS = ("/api/v1/orders", "/api/v1/customers", "/api/v1/invoices", "/healthz", "/api/v1/search")
_TRACE = """Traceback (most recent call last):
  File "/srv/app/worker.py", line 214, in run
    result = self.handle(job)
  File "/srv/app/worker.py", line 188, in handle
    return self.pipeline.execute(job.payload)
  File "/srv/app/pipeline.py", line 97, in execute
    step.apply(context)
  File "/srv/app/steps/settle.py", line 61, in apply
    ledger.post(context.entries, idempotency_key=context.key)
  File "/srv/app/ledger/client.py", line 143, in post
    response = self._session.post(url, json=body, timeout=self.timeout)
  File "/srv/app/ledger/client.py", line 77, in _request
    raise LedgerUnavailable(f"ledger answered {status} after {attempts} attempts")
ledger.errors.LedgerUnavailable: ledger answered 503 after 5 attempts
"""


def _log() -> Document:
    rng = random.Random("s3claim-bench-peers-log")  # noqa: S311
    target = 5_000_000
    lines: list[str] = []
    size = 0
    second = 0
    error_at = None
    while size < target - len(_TRACE) - 200:
        second += rng.randint(0, 2)
        stamp = (
            f"2026-03-14T{(second // 3600) % 24:02d}:{(second // 60) % 60:02d}:{second % 60:02d}"
        )
        stamp += f".{rng.randint(0, 999):03d}Z"
        if error_at is None and size >= target * 0.6:
            error_at = len(lines)
            line = (
                f"{stamp} ERROR [worker-7] settlement failed for order ord-3f9a17c2e4: ledger "
                f"timeout after 30000 ms request_id={rng.getrandbits(64):016x}"
            )
        else:
            level = "WARN " if rng.random() < 0.02 else "INFO "
            line = (
                f"{stamp} {level} [worker-{rng.randint(1, 16)}] {rng.choice(('GET', 'POST'))} "
                f"{rng.choice(_PATHS)} status={rng.choice((200, 200, 200, 201, 204, 404))} "
                f"duration_ms={rng.randint(1, 900)} request_id={rng.getrandbits(64):016x}"
            )
        lines.append(line)
        size += len(line) + 1
    lines.append(f"{stamp} FATAL [worker-7] unhandled exception, shutting down")
    text = "\n".join(lines) + "\n" + _TRACE
    assert error_at is not None
    assert len(lines) > LOG_LINE
    assert text.count(ERROR_LINE_MARK) == 1
    tasks = (
        Task(
            "find",
            "find the ERROR line",
            lines[error_at],
            {"needle": "ERROR", "unit": "line"},
            "line",
        ),
        Task("tail", f"read the last {TAIL_CHARS:,} characters", text[-TAIL_CHARS:]),
        Task(
            "position",
            f"read line {LOG_LINE:,}",
            lines[LOG_LINE - 1],
            {"line": LOG_LINE, "unit": "line"},
            "line",
        ),
    )
    return Document("log", "log", "a 5 MB application log", text, tasks)


@cache
def documents() -> tuple[Document, ...]:
    return (
        _contract(),
        _json("json-pretty", pretty=True),
        _json("json-minified", pretty=False),
        _log(),
    )


DOCUMENTS = ("contract", "json-pretty", "json-minified", "log")
