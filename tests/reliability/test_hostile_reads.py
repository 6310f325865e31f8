"""Hostile claims read every way, through every host, on both stores.

Six claims built to break a reader (CRLF, no final newline, a single 1 MiB line, JSON nested
100,000 deep, JSON whose keys need the `~0`/`~1` escapes, text that only looks like JSON) are
checked in by a tool of each host (the runner, LangChain, the OpenAI Agents SDK, pydantic-ai,
the MCP proxy, the async face), with a tail in the preview, on the memory store and on S3
over moto's HTTP server. Then each host's model reads them by offset, line, from the end and
by path, with hostile arguments (a huge `line`, invalid pointers, addresses that cannot be
served), and searches them. On S3, each call's requests are counted: an argument refused as
such sends none, and a line past what any claim holds costs one HEAD.

What the model reads back is compared with a reference written here from the definitions
(a line ends at `\\n`; whole lines up to the window; the last window from a line start), not
with what a store answers: the footers and notes are `s3claim.wording`'s, the numbers in
them are this file's. Each host (driven by `tests._hosts.drive`) runs its script in short
runs (the check-ins, then the reads, one tool call a turn), so the suite stays fast however
many cases it has. Every case
runs through the runner and the async face (the two faces of the stores); the hosts that only
relay a call (the three frameworks and the MCP proxy) run one case of each kind: each tool,
addressing mode, kind of answer and refusal, and a line past any claim.

Last, a tool's *value* nested 100,000 deep (a structure, not text): no serialiser carries it,
and the model is told so.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest
from botocore.config import Config

from s3claim import (
    AgentRunner,
    AssistantMessage,
    ClaimCheck,
    ClaimCheckPolicy,
    ClaimCheckStore,
    MemoryClaimCheckStore,
    RetryPolicy,
    S3ClaimCheckStore,
    Scope,
    ScriptedProvider,
    ToolCall,
    claim_tools,
    tool,
)
from s3claim._reading._head import extract_head, extract_tail
from s3claim.messages import ToolMessage
from s3claim.store import DEFAULT_FETCH_CHARS
from s3claim.wording import (
    HANDLE_SEEN,
    NOT_JSON_MESSAGE,
    end_note,
    footer,
    line_footer,
    long_line_footer,
    marker,
    past_end_note,
    path_footer,
    path_members,
)
from tests._hosts import Call, drive, one_a_turn

POLICY = ClaimCheckPolicy(tail_chars=200)  # every preview here has a tail
HEAD_CHARS = POLICY.head_chars
TAIL_CHARS = POLICY.tail_chars

# -- the claims (built once) -----------------------------------------------------------------

CRLF = "".join(f"clause {n}: the parties agree to term {n}.\r\n" for n in range(1, 600))
NO_NEWLINE = "".join(f"row {n}: ok\n" for n in range(1, 1000)) + "row 1000: the last, no newline"
ONE_LINE = ("ABCDEFGHIJKLMNOPQRSTUVWXYZ" * 40_330)[: 1024 * 1024]  # 1 MiB, no newline at all
DEEP = "[" * 100_000 + "]" * 100_000
KEYS_VALUE: dict[str, Any] = {
    "a/b": 1,
    "c~d": [10, 20],
    "~1": "a key that is the escape itself",
    "/": "a key that is one slash",
    "m~n/o": True,
    "": "the empty key",
    "items": [{"id": n, "name": f"record {n}", "pad": "x" * 20} for n in range(200)],
}
KEYS = json.dumps(KEYS_VALUE, indent=1)
LOOKS_LIKE_JSON = "[not json] " * 500  # starts like an array: indexed, refused, kept as text
CLAIMS = {
    "crlf": CRLF,
    "no_newline": NO_NEWLINE,
    "one_line": ONE_LINE,
    "deep": DEEP,
    "keys": KEYS,
    "looks_like_json": LOOKS_LIKE_JSON,
}


# -- the reference -----------------------------------------------------------------------------


def starts_of(text: str) -> list[int]:
    """Where each line starts (a line ends at `\\n`; a break at the very end starts none)."""
    if not text:
        return []
    return [0] + [m.end() for m in re.finditer("\n", text) if m.end() < len(text)]


def lines_in(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def by_offset(text: str, handle: str, offset: int, limit: int = DEFAULT_FETCH_CHARS) -> str:
    window = text[offset : offset + limit]
    end = offset + len(window)
    total, lines = len(text), lines_in(text)
    if end < total:
        more = footer(offset=offset, next_offset=end, total_chars=total, handle=handle)
        return f"{window}\n\n{more}"
    if not window:
        return past_end_note(total_chars=total, total_lines=lines, offset=offset)
    note = end_note(offset=offset, end=end, total_chars=total, total_lines=lines)
    return f"{window}\n\n{note}"


def by_line(text: str, handle: str, line: int, limit: int = DEFAULT_FETCH_CHARS) -> str:
    starts, total, lines = starts_of(text), len(text), lines_in(text)
    if line > len(starts):
        return past_end_note(total_chars=total, total_lines=lines, line=line)
    start = starts[line - 1]
    window = text[start : start + limit]
    whole = True
    if start + len(window) < total:  # more follows: whole lines only
        cut = window.rfind("\n")
        if cut >= 0:
            window = window[: cut + 1]
        else:
            whole = False
    end, last = start + len(window), line + lines_in(window) - 1
    if end == total:
        note = end_note(
            offset=start,
            end=end,
            total_chars=total,
            total_lines=lines,
            first_line=line,
            last_line=last,
        )
    elif whole:
        note = line_footer(
            first_line=line,
            last_line=last,
            total_lines=lines,
            offset=start,
            end=end,
            total_chars=total,
            next_line=last + 1,
            handle=handle,
        )
    else:
        note = long_line_footer(
            line=line, total_lines=lines, offset=start, end=end, total_chars=total, handle=handle
        )
    return f"{window}\n\n{note}"


def from_end(text: str, handle: str, limit: int = DEFAULT_FETCH_CHARS) -> str:
    start = max(0, len(text) - limit)
    if start > 0 and text[start - 1] != "\n":
        cut = text.find("\n", start)
        if 0 <= cut < len(text) - 1:  # a line starts inside the window: begin there
            start = cut + 1
    note = end_note(
        offset=start,
        end=len(text),
        total_chars=len(text),
        total_lines=lines_in(text),
        first_line=lines_in(text[: start + 1]),
        last_line=lines_in(text),
    )
    return f"{text[start:]}\n\n{note}"


MEMBERS = [  # each key of KEYS_VALUE as a pointer names it, written out by hand
    ("a/b", "/a~1b", "number"),
    ("c~d", "/c~0d", "array"),
    ("~1", "/~01", "string"),
    ("/", "/~1", "string"),
    ("m~n/o", "/m~0n~1o", "boolean"),
    ("", "/", "string"),
    ("items", "/items", "array"),
]


def document_members(text: str, handle: str, limit: int) -> str:
    """A read of the whole KEYS document: its first window, every key with its span (found
    here by decoding the value after the key), and the way on."""
    decoder = json.JSONDecoder()
    rows = []
    for key, pointer, kind in MEMBERS:
        start = text.index(json.dumps(key) + ": ") + len(json.dumps(key) + ": ")
        _, end = decoder.raw_decode(text, start)
        rows.append((pointer, kind, start, end))
    members = path_members(pointer="", kind="object", count=7, start=0, end=len(text), rows=rows)
    more = path_footer(pointer="", shown_end=limit, end=len(text), handle=handle)
    return f"{text[:limit]}\n\n{members}\n\n{more}"


# -- the cases: (claim, arguments, what the model reads) ---------------------------------------


@dataclass(frozen=True)
class Exactly:
    """The whole answer, from (claim text, handle)."""

    answer: Callable[[str, str], str]


@dataclass(frozen=True)
class Framed:
    """An answer too long to write out: how it starts and how it ends."""

    starts: Callable[[str, str], str]
    ends: Callable[[str, str], str]


@dataclass(frozen=True)
class Refused:
    """An error result: its kind, a phrase of its message, and whether it is decided from
    the arguments alone (then an S3 store sees no request at all)."""

    error: str
    says: str
    sends_nothing: bool = False


@dataclass(frozen=True)
class Found:
    """A search: where its first match starts in the claim (its line follows from that)."""

    at: Callable[[str], int]


@dataclass(frozen=True)
class Case:
    id: str
    claim: str
    arguments: dict[str, Any]
    expect: Exactly | Framed | Refused | Found
    tool: str = "fetch_result"


def _cases() -> list[Case]:
    cases: list[Case] = []

    def add(
        claim: str, arguments: dict[str, Any], expect: Exactly | Framed | Refused | Found
    ) -> None:
        name = ",".join(f"{k}={v!r:.14}" for k, v in arguments.items())
        tool = "search_result" if isinstance(expect, Found) else "fetch_result"
        cases.append(Case(f"{claim}:{name}", claim, arguments, expect, tool))

    gap = {name: len(extract_head(text, HEAD_CHARS)) for name, text in CLAIMS.items()}
    for name in CLAIMS:  # the marker's offset, then the footers on, then past the end
        for offset in (gap[name], gap[name] + DEFAULT_FETCH_CHARS, 10**30):
            add(name, {"offset": offset}, Exactly(lambda t, h, o=offset: by_offset(t, h, o)))
        add(name, {"from_end": True}, Exactly(lambda t, h: from_end(t, h)))
        add(name, {"from_end": True, "limit": 7}, Exactly(lambda t, h: from_end(t, h, 7)))
        last = lines_in(CLAIMS[name])
        huge = (last - 1, last, last + 1, 2**32, 2**32 + 2, 2**63, 10**30)
        for line in sorted({1, 2, *huge} - {0}):
            add(name, {"line": line}, Exactly(lambda t, h, n=line: by_line(t, h, n)))
    for line in (300, 598, 599):  # CRLF: `\r\n` is one break and its `\r` stays in the line
        add(
            "crlf",
            {"line": line, "limit": 100},
            Exactly(lambda t, h, n=line: by_line(t, h, n, 100)),
        )
    add("no_newline", {"line": 999, "limit": 40}, Exactly(lambda t, h: by_line(t, h, 999, 40)))
    add("one_line", {"line": 1, "limit": 9}, Exactly(lambda t, h: by_line(t, h, 1, 9)))
    add(
        "one_line",
        {"offset": len(ONE_LINE) - 4096},
        Exactly(lambda t, h: by_offset(t, h, len(t) - 4096)),
    )
    for pointer, value in [
        ("/a~1b", "1"),
        ("/c~0d/1", "20"),
        ("/~01", '"a key that is the escape itself"'),
        ("/~1", '"a key that is one slash"'),
        ("/m~0n~1o", "true"),
        ("/", '"the empty key"'),
        ("/items/199/name", '"record 199"'),
    ]:
        add("keys", {"path": pointer}, Exactly(lambda t, h, v=value: v))
    items = KEYS.index('"items": [') + len('"items": ')
    add("keys", {"path": "", "limit": 20}, Exactly(lambda t, h: document_members(t, h, 20)))
    add(  # the whole document: its first window, its seven keys, and the way on by offset
        "keys",
        {"path": ""},
        Framed(
            lambda t, h: t[:4096] + f"\n\n[the document: object of 7 keys, characters 0-{len(t)}.",
            lambda t, h: (
                f"[the document goes on to character {len(t)}. Call fetch_result with "
                f"handle='{h}' and offset=4096 to continue.]"
            ),
        ),
    )
    add(
        "keys",
        {"path": "/items", "limit": 50},
        Framed(
            lambda t, h: (
                t[items : items + 50] + f"\n\n[/items: array of 200 elements, characters {items}-"
            ),
            lambda t, h: (
                f"Call fetch_result with handle='{h}' and offset={items + 50} to continue.]"
            ),
        ),
    )
    for pointer, says in [
        ("a~1b", "starting with '/'"),
        ("#/items", "starting with '/'"),
        ("/a~2b", "'~0' (for ~) or '~1' (for /)"),
        ("/c~", "'~0' (for ~) or '~1' (for /)"),
        ("/items/~", "'~0' (for ~) or '~1' (for /)"),
    ]:
        add("keys", {"path": pointer}, Refused("invalid_arguments", says, sends_nothing=True))
    for arguments, says in [  # refused before any store sees them, whoever hosts the call
        ({"line": 0}, "line"),
        ({"line": -(10**30)}, "line"),
        ({"line": "2"}, "line"),
        ({"line": 2, "from_end": True}, "drop line"),
        ({"path": "/a~1b", "offset": 0, "line": 1}, "drop offset"),  # beside path alone: a page
        ({"path": "/a~1b", "limit": 0}, "limit"),
    ]:
        add("keys", arguments, Refused("invalid_arguments", says, sends_nothing=True))
    for pointer, says in [
        ("/items/200", "array of 200 elements (numbered 0 to 199), and '200' is not one"),
        ("/items/01", "and '01' is not one of them"),
        ("/items/-", "and '-' is not one of them"),
        ("/items/" + "9" * 40, "is not one of them"),
        ("/nope", "the document (an object) has no key 'nope'"),
        ("/a~1b/0", "/a~1b is a number, which has no members"),
        ("/c~0d/2", "/c~0d is an array of 2 elements"),
        ("/items" + "/0" * 50_000, "/items/0 (an object) has no key '0'"),  # 100,000 characters
    ]:
        add("keys", {"path": pointer}, Refused("no_such_path", says))
    for arguments, error, says in [  # offset beside path: a page of the members, from that one
        ({"path": "/a~1b", "offset": 1}, "invalid_arguments", "/a~1b is a number, which has no"),
        ({"path": "/items", "offset": 200}, "no_such_path", "200 elements (offsets 0 to 199)"),
        ({"path": "/items", "offset": 10**30}, "no_such_path", "200 elements (offsets 0 to"),
    ]:
        add("keys", arguments, Refused(error, says))
    for name in ("crlf", "no_newline", "one_line", "deep", "looks_like_json"):
        for pointer in ("", "/0"):  # the model reads the tools' names as they are
            add(name, {"path": pointer}, Refused("not_json", NOT_JSON_MESSAGE))
    for name, pattern in [
        ("crlf", "clause 300:"),
        ("crlf", "term 599.\r\n"),
        ("no_newline", "the last, no newline"),
        ("one_line", ONE_LINE[-40:]),
        ("deep", "[]"),
        ("keys", '"~1"'),
        ("looks_like_json", "json] [not"),
    ]:
        add(name, {"pattern": pattern}, Found(lambda t, p=pattern: t.index(p)))
    for name, pattern in [  # one match anchored at the start and 26,000 characters long
        ("one_line", r"\A(?:[A-Z]{26}){1000}"),
        ("deep", r"\[\]{2}"),
        ("crlf", r"term 42\.\r\nclause 43:"),  # `\r` is a character of the line
    ]:
        found = Found(lambda t, p=pattern: re.search(p, t).start())  # type: ignore[union-attr]
        add(name, {"pattern": pattern, "regex": True}, found)
    assert len({c.id for c in cases}) == len(cases)  # an id names one call's answer
    return cases


CASES = _cases()


def _kind(case: Case) -> tuple[str, ...]:
    """What a case exercises: its tool, addressing mode, kind of answer or refusal."""
    expect = case.expect
    refusal = expect.error if isinstance(expect, Refused) else ""
    huge = "huge" if _huge(case) else ""
    return (case.tool, ",".join(sorted(case.arguments)), type(expect).__name__, refusal, huge)


def _huge(case: Case) -> bool:
    return case.arguments.get("line") in (2**32 + 2, 2**63, 10**30)


def _one_of_each_kind() -> tuple[Case, ...]:
    first: dict[tuple[str, ...], Case] = {}
    for case in CASES:
        first.setdefault(_kind(case), case)
    return tuple(first.values())


KINDS = _one_of_each_kind()
FULL_HOSTS = ("runner", "async")
"""The hosts every case runs through; the others, which relay calls, run `KINDS`."""


def cases_of(host: str) -> tuple[Case, ...]:
    return tuple(CASES) if host in FULL_HOSTS else KINDS


# -- the stores --------------------------------------------------------------------------------


@dataclass
class StoreRig:
    kind: str
    store: ClaimCheckStore
    client: Any = None
    sent: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, client: Any) -> None:
        def sent(event_name: str, **_: Any) -> None:
            with self._lock:
                self.sent.append(event_name.rsplit(".", 1)[-1])

        client.meta.events.register("before-send.s3.*", sent)

    def requests(self) -> int:
        with self._lock:
            return len(self.sent)


def _store_rig(kind: str, endpoint: str) -> StoreRig:
    if kind == "memory":
        return StoreRig(kind, MemoryClaimCheckStore())
    client = boto3.client(  # credentials of its own: it outlives the test that makes it
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(retries={"total_max_attempts": 1}, s3={"addressing_style": "path"}),
    )
    bucket = f"hostile-{uuid.uuid4().hex}"
    client.create_bucket(Bucket=bucket)
    store = S3ClaimCheckStore(
        bucket,
        handle_key="test-handle-key-0123456789",
        client=client,
        retry=RetryPolicy(attempts=3, initial_wait=0, max_wait=0),
    )
    rig = StoreRig(kind, store, client)
    rig.count(client)
    return rig


# -- the hosts ---------------------------------------------------------------------------------


def give(name: str) -> str:
    """Return one of the hostile claims."""
    return CLAIMS[name]


HOSTS = ("runner", "langchain", "openai_agents", "pydantic_ai", "mcp_proxy", "async")
STORES = ("memory", "s3")
TENANT = "acme"


@dataclass
class Outcome:
    """One host on one store: what each check-in showed, each claim's handle, each answer."""

    rig: StoreRig
    scope: Scope
    previews: dict[str, str]
    handles: dict[str, str]
    answers: dict[str, str]
    requests: dict[str, int]


RUN_CALLS = 20
"""Calls a run makes, one a turn, before the next run in the same scope goes on."""


def _run(
    host: str, rig: StoreRig, claim_check: ClaimCheck, calls: list[Call]
) -> tuple[list[str], list[int]]:
    """Each call's answer, and how many store requests it sent (S3), counted between the
    model's turns (or around each call, for the hosts without a model)."""
    marks: list[int] = []
    script = one_a_turn(*calls)

    def model(outputs: Sequence[str]) -> Sequence[Call]:
        marks.append(rig.requests())
        return script(outputs)

    run = drive(host, [give], model, claim_check=claim_check, scope=Scope(TENANT, f"{host}-run"))
    assert len(run.answers) == len(calls) and not any(a.retry for a in run.answers)
    return run.texts, [b - a for a, b in itertools.pairwise(marks)]


class World:
    """The stores and each host's two runs, made on first use and shared by the module."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self.rigs: dict[str, StoreRig] = {}
        self.outcomes: dict[tuple[str, str], Outcome] = {}

    def rig(self, kind: str) -> StoreRig:
        if kind not in self.rigs:
            self.rigs[kind] = _store_rig(kind, self.endpoint)
        return self.rigs[kind]

    def outcome(self, host: str, store: str) -> Outcome:
        if (host, store) not in self.outcomes:
            self.outcomes[host, store] = self._play(host, self.rig(store))
        return self.outcomes[host, store]

    def _play(self, host: str, rig: StoreRig) -> Outcome:
        claim_check = ClaimCheck(rig.store, policy=POLICY)
        names = list(CLAIMS)
        shown, _ = _run(host, rig, claim_check, [("give", {"name": n}) for n in names])
        previews = dict(zip(names, shown, strict=True))
        handles = {}
        for name, preview in previews.items():
            found = HANDLE_SEEN.search(preview)
            assert found is not None, f"{name} was not checked in: {preview[:300]!r}"
            handles[name] = found.group(1)
        cases = cases_of(host)
        calls: list[Call] = [(c.tool, {"handle": handles[c.claim], **c.arguments}) for c in cases]
        answers, requests = [], []
        for at in range(0, len(calls), RUN_CALLS):  # short runs: each turn resends the history
            got, sent = _run(host, rig, claim_check, calls[at : at + RUN_CALLS])
            answers += got
            requests += sent
        return Outcome(
            rig,
            Scope(TENANT, f"{host}-run"),
            previews,
            handles,
            {c.id: a for c, a in zip(cases, answers, strict=True)},
            {c.id: r for c, r in zip(cases, requests, strict=True)},
        )


@pytest.fixture(scope="module")
def world(moto_endpoint: str) -> World:
    return World(moto_endpoint)


EVERY_HOST = pytest.mark.parametrize("host", list(HOSTS))
EVERY_STORE = pytest.mark.parametrize("store", STORES)


# -- check-in: every hostile claim stored exactly, its preview a head, a marker, a tail -------


@EVERY_STORE
@EVERY_HOST
@pytest.mark.parametrize("claim", list(CLAIMS))
def test_a_hostile_claim_checks_in_with_its_head_marker_and_tail(
    world: World, host: str, store: str, claim: str
) -> None:
    outcome = world.outcome(host, store)
    text, handle, preview = CLAIMS[claim], outcome.handles[claim], outcome.previews[claim]
    head = extract_head(text, HEAD_CHARS)
    tail = extract_tail(text[len(head) :], TAIL_CHARS)
    lines = {
        marker(
            total_chars=len(text),
            shown_chars=len(head),
            handle=handle,
            searchable=searchable,
            tail_chars=len(tail),
        )
        for searchable in (True, False)
    }
    assert tail and preview in {f"{head}\n\n{line}\n\n{tail}" for line in lines}
    # what the store holds is the claim, exactly (the boundary found nothing to rewrite)
    assert outcome.rig.store.fetch(outcome.scope, handle, 0, 2**21).text == text


def test_the_tails_end_where_the_claims_end() -> None:
    """The tails the previews above carry, claim by claim: CRLF whole lines with their `\\r`,
    the last line without its newline, the end of one long line."""
    tails = {
        n: extract_tail(t[len(extract_head(t, HEAD_CHARS)) :], TAIL_CHARS)
        for n, t in CLAIMS.items()
    }
    assert tails["crlf"].startswith("clause ") and tails["crlf"].endswith("term 599.\r\n")
    assert tails["no_newline"].endswith("\nrow 1000: the last, no newline")
    assert ONE_LINE.endswith(tails["one_line"]) and 0 < len(tails["one_line"]) <= TAIL_CHARS
    assert set(tails["deep"]) == {"]"}


# -- reads: every mode, every hostile argument ---------------------------------------------------


@pytest.mark.parametrize(
    ("host", "store", "case"),
    [(h, s, c) for s in STORES for h in HOSTS for c in cases_of(h)],
    ids=[f"{h}-{s}-{c.id}" for s in STORES for h in HOSTS for c in cases_of(h)],
)
def test_a_hostile_read_answers_what_the_reference_says(
    world: World, host: str, store: str, case: Case
) -> None:
    outcome = world.outcome(host, store)
    text, handle = CLAIMS[case.claim], outcome.handles[case.claim]
    answer, expect = outcome.answers[case.id], case.expect
    if isinstance(expect, Found):
        found, at = json.loads(answer), expect.at(text)
        first = found["matches"][0]
        assert (first["offset"], first["line"]) == (at, text.count("\n", 0, at) + 1), answer
    elif isinstance(expect, Refused):
        refusal = json.loads(answer)
        assert refusal["error"] == expect.error and expect.says in refusal["message"], answer
        if expect.sends_nothing and store == "s3":
            assert outcome.requests[case.id] == 0
    elif isinstance(expect, Framed):
        assert answer.startswith(expect.starts(text, handle)), answer[-400:]
        assert answer.endswith(expect.ends(text, handle)), answer[-400:]
    else:
        assert answer == expect.answer(text, handle)
    if store == "s3" and "line" in case.arguments:  # any line: at most an index GET and a window
        assert outcome.requests[case.id] <= 2, case.id


@EVERY_HOST
def test_a_huge_line_costs_one_head_on_s3(world: World, host: str) -> None:
    """A line past what any claim could hold is answered from the claim's length alone: one
    HEAD, never a range past the index."""
    outcome = world.outcome(host, "s3")
    huge = [c for c in cases_of(host) if _huge(c)]
    assert len(huge) == (3 * len(CLAIMS) if host in FULL_HOSTS else 1)
    assert {c.id: outcome.requests[c.id] for c in huge} == {c.id: 1 for c in huge}


# -- a value nested 100,000 deep, returned as a structure ---------------------------------------


def _nested(depth: int, leaf: Any) -> Any:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("leaf", "says"),
    [
        (1, "returned a value nested too deep to serialise as JSON"),
        ("\ud800", "returned a value holding text that is not valid Unicode (a lone surrogate)"),
    ],
    ids=["deep", "deep-lone-surrogate"],
)
def test_a_structure_nested_100_000_deep_is_a_clear_refusal_not_a_recursion_error(
    leaf: Any, says: str
) -> None:
    """A tool's value, not its text: no serialiser carries 100,000 levels (pydantic stops at
    a few hundred), so the model is told why, the run goes on and nothing is stored. The
    adapters and the MCP proxy serialise through `text_of`, the runner through its tool."""
    from s3claim.errors import ToolError
    from s3claim.hosting import text_of

    deep = _nested(100_000, leaf)

    @tool
    def nested() -> list[Any]:
        """Return a structure nested 100,000 deep."""
        return deep  # type: ignore[no-any-return]

    store = MemoryClaimCheckStore()
    runner = AgentRunner(
        provider=ScriptedProvider(
            [
                AssistantMessage(tool_calls=(ToolCall(id="n", name="nested", arguments={}),)),
                AssistantMessage(content="done"),
            ]
        ),
        tools=(nested, *claim_tools(store)),
        claim_check=ClaimCheck(store),
    )
    result = runner.run("read", tenant="acme", run_id="r")
    (answer,) = [m.content for m in result.messages if isinstance(m, ToolMessage)]
    assert json.loads(answer) == {"error": "invalid_result", "message": f"tool 'nested' {says}"}
    assert result.output == "done" and len(store) == 0
    assert "tool_failed" not in [e.kind for e in result.events]
    with pytest.raises(ToolError) as refused:
        text_of(deep, tool="nested")
    assert refused.value.message == f"tool 'nested' {says}"
