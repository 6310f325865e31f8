"""Measure: offload by the turn (issue 37), multi-turn sessions side by side.

Four sessions of real tool output (a 5 MB build log with its error at 60% and a stack trace at
its end, a 495 KB JSON API response, the 92 KB counsel contract, a documentation page as a
scraper returns it, `git log --stat` of this repository, ten source files read at once), with
parallel calls and repeated reads, each replayed under every system. One scripted model drives
them all: it makes the session's calls, then answers each question from what it can see, or
reads on with the tools the system gives it (s3claim: `fetch_result` by line, end or path and
`search_result`; the peers: grep, lines by offset and the file's end, as their read tools do),
and never from anything else. A question counts as answered exactly when the witness (the
line or the JSON member, verbatim) is in what the model was sent.

Per session and system: characters sent summed over every request, the largest request, tool
executions, read calls, the share of each request that repeats the previous request's prefix
(what a provider's prompt cache can serve), and whether every question was answered exactly.

The s3claim arms run through `AgentRunner` itself (the turn budget and repeat reads are the
runner's); the other arms through a plain loop that places each result as that system's code
does (thresholds and previews from their sources, tokens at four characters) and offers its
read tools. The masking baseline keeps results inline and clears those older than two turns,
as observation masking does; a question about a cleared result calls its tool again.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from benchmarks.context import Bench
from benchmarks.peers.documents import documents
from benchmarks.report import Section, Table
from benchmarks.stats import fmt_int
from s3claim.claim_tools import claim_tools
from s3claim.claimcheck import ClaimCheck
from s3claim.memory import MemoryClaimCheckStore
from s3claim.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from s3claim.policy import ClaimCheckPolicy
from s3claim.runner import AgentRunner
from s3claim.tools import Tool, tool

__all__ = ["SYSTEMS", "replay", "run", "sessions"]

ROOT = Path(__file__).resolve().parents[2]
PINNED = "ff7b4ea0920c27ad0b01723394963c8e58f5ed27"
"""The commit the repository's own documents are read at, so every run reads the same text."""
CHARS_PER_TOKEN = 4
SYSTEM_PROMPT = "You are a careful engineer. Answer from the tools' results, verbatim."
TRUNCATE_AT = 16_384
MASK_AFTER_TURNS = 2


# -- documents -----------------------------------------------------------------------------


def _git(*args: str) -> str:
    done = subprocess.run(  # noqa: S603  (git, our own repository)
        ["git", *args],  # noqa: S607  (git from PATH, as make itself finds it)
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


@cache
def texts() -> dict[str, str]:
    """Every document a session's tools return, by the tool call that returns it."""
    by_name = {d.name: d for d in documents()}
    out = {
        "build.log": by_name["log"].text,
        "orders": by_name["json-pretty"].text,
        "contract": by_name["contract"].text,
        "git log": _git("log", "--stat", "-n", "150", PINNED),
        "docs/reading.md": _git("show", f"{PINNED}:docs/reading.md"),
        "pyproject.toml": _git("show", f"{PINNED}:pyproject.toml"),
        "customer": json.dumps(
            {"id": "cus-acme", "name": "Acme Corp", "tier": "gold", "since": "2019-04-02"},
            indent=2,
        ),
    }
    for path in small_files():
        out[path] = _git("show", f"{PINNED}:{path}")
    return out


@cache
def small_files() -> tuple[str, ...]:
    """Ten of the package's source files of 2,500 to 4,000 characters, in path order: each
    under the default threshold alone, 30,000 characters and more together."""
    listing = _git("ls-tree", "-r", "-l", PINNED, "s3claim/").splitlines()
    sized = []
    for row in listing:
        meta, path = row.split("\t")
        size = int(meta.split()[3])
        if path.endswith(".py") and 2_500 <= size < 4_000:
            sized.append(path)
    return tuple(sorted(sized)[:10])


def line_of(name: str, pattern: str) -> str:
    """The first line of a document matching `pattern` (the witness a question names)."""
    for line in texts()[name].splitlines():
        if re.search(pattern, line):
            return line
    raise AssertionError(f"no line of {name} matches {pattern!r}")


# -- sessions ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Question:
    """What the model must find in the result of `source`, and how it would look for it."""

    source: str
    kind: str
    """`line` (a regex), `tail` (the result's end) or `member` (a JSON member, by pointer)."""
    pattern: str = ""
    pointer: str = ""

    @property
    def witness(self) -> str:
        text = texts()[self.source]
        if self.kind == "line":
            return line_of(self.source, self.pattern)
        if self.kind == "tail":
            return text.rstrip("\n").rsplit("\n", 1)[-1]
        value: Any = json.loads(text)
        for part in self.pointer.strip("/").split("/"):
            value = value[int(part)] if isinstance(value, list) else value[part]
        return json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n    ")


@dataclass(frozen=True)
class Turn:
    calls: tuple[str, ...]
    """The documents read this turn, in parallel (one tool call each)."""
    questions: tuple[Question, ...] = ()


@dataclass(frozen=True)
class Session:
    name: str
    prompt: str
    turns: tuple[Turn, ...]


def _sessions() -> tuple[Session, ...]:
    log, orders = "build.log", "orders"
    files = small_files()
    return (
        Session(
            "build failure",
            "The nightly build failed: find the error, the exception and the commit to blame.",
            (
                Turn(
                    (log, "git log", "pyproject.toml"),
                    (
                        Question(log, "line", r" ERROR "),
                        Question(log, "tail"),
                        Question("git log", "line", r"Revert the longest-first order"),
                    ),
                ),
                Turn((log,), (Question(log, "line", r" FATAL "),)),
                Turn(("pyproject.toml",), (Question("pyproject.toml", "line", r"(?m)^timeout"),)),
            ),
        ),
        Session(
            "API audit",
            "Audit the orders API response for one customer and one record.",
            (
                Turn(
                    (orders, "customer"),
                    (
                        Question(orders, "member", pointer="/items/1499"),
                        Question("customer", "line", r'"tier"'),
                    ),
                ),
                Turn((orders,), (Question(orders, "member", pointer="/items/811"),)),
            ),
        ),
        Session(
            "contract and docs",
            "Review the contract's termination terms against the reading guide.",
            (
                Turn(
                    ("contract", "docs/reading.md"),
                    (
                        Question("contract", "line", r"for convenience"),
                        Question("docs/reading.md", "line", r"(?m)^## "),
                    ),
                ),
                Turn(("contract",), (Question("contract", "tail"),)),
            ),
        ),
        Session(
            "ten files",
            "Read these ten modules and say where the handle prefix is defined.",
            (
                Turn(files, (Question(files[6], "line", r"(?m)^(def|class) "),)),
                Turn(("pyproject.toml",), (Question("pyproject.toml", "line", r"(?m)^timeout"),)),
            ),
        ),
    )


@cache
def sessions() -> tuple[Session, ...]:
    return _sessions()


# -- what the model sees -------------------------------------------------------------------


_NUMBERED = re.compile(r"^ *\d+\t", re.MULTILINE)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for each in value.values():
            yield from _strings(each)
    elif isinstance(value, list):
        for each in value:
            yield from _strings(each)


def readable(content: str) -> str:
    """A tool result as the model reads it: JSON decoded, `cat -n` line numbers set aside."""
    plain = _NUMBERED.sub("", content)
    try:
        decoded = json.loads(content)
    except ValueError:
        return plain
    return plain + "\n" + "\n".join(_strings(decoded))


def wire(messages: Sequence[Message]) -> str:
    """One request as sent: every message serialised, in order."""
    return "\n".join(m.model_dump_json() for m in messages)


def common_prefix(a: str, b: str) -> int:
    n, low, high = min(len(a), len(b)), 0, min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    while low < high:  # the longest equal prefix, by halves
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


# -- the scripted model --------------------------------------------------------------------


@dataclass
class Stats:
    requests: list[int] = field(default_factory=list)
    cached: list[int] = field(default_factory=list)
    kept_whole: int = 0
    """Requests that began with the whole of the request before them (nothing rewritten)."""
    executions: int = 0
    reads: int = 0
    answered: int = 0
    questions: int = 0
    previous: str = ""

    def saw(self, request: str) -> None:
        if self.previous:
            self.cached.append(common_prefix(request, self.previous))
            self.kept_whole += request.startswith(self.previous)
        self.requests.append(len(request))
        self.previous = request


class SessionModel:
    """Plays a session: the turn's calls at once, then reads on until each question's witness
    is in view (at most three reads a question), then the next turn; then an answer."""

    def __init__(
        self, session: Session, stats: Stats, view: Callable[[list[Message]], list[Message]]
    ):
        self.session = session
        self.stats = stats
        self.view = view
        self.turn = -1
        self.pending: list[tuple[Question, int]] = []  # (question, reads so far)
        self.last: dict[Question, str] = {}  # a question's latest read call
        self.sources: dict[str, str] = {}  # document -> id of the latest call that read it
        self.counter = 0

    def _id(self) -> str:
        self.counter += 1
        return f"call_{self.counter}"

    def complete(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]]
    ) -> AssistantMessage:
        shown = self.view(list(messages))
        self.stats.saw(wire(shown))
        names = {t["function"]["name"] for t in tools}
        seen = "\n".join(readable(m.content) for m in shown if isinstance(m, ToolMessage))
        still: list[tuple[Question, int]] = []
        for question, reads in self.pending:
            if question.witness in seen:
                self.stats.answered += 1
            elif reads < 3:
                still.append((question, reads))
        self.pending = still
        if self.pending:
            calls = []
            for index, (question, reads) in enumerate(self.pending):
                call = self._read(question, reads, shown, names)
                self.pending[index] = (question, reads + 1)
                if call is not None:
                    self.last[question] = call.id
                    calls.append(call)
            if calls:
                return AssistantMessage(tool_calls=tuple(calls))
            self.pending = []  # nothing more to try: those questions stay unanswered
        self.turn += 1
        if self.turn >= len(self.session.turns):
            return AssistantMessage(content="done")
        turn = self.session.turns[self.turn]
        self.stats.questions += len(turn.questions)
        self.pending = [(q, 0) for q in turn.questions]
        return AssistantMessage(tool_calls=tuple(self._document(name) for name in turn.calls))

    def _document(self, name: str) -> ToolCall:
        call = ToolCall(id=self._id(), name=_tool_name(name), arguments=_arguments(name))
        self.sources[name] = call.id
        return call

    def _result(self, shown: list[Message], name: str) -> str | None:
        wanted = self.sources.get(name)
        for message in shown:
            if isinstance(message, ToolMessage) and message.tool_call_id == wanted:
                return message.content
        return None

    def _read(
        self, q: Question, reads: int, shown: list[Message], names: set[str]
    ) -> ToolCall | None:
        result = self._result(shown, q.source)
        if result is None or result == CLEARED:  # masked: call the tool again to see it
            return self._document(q.source) if reads == 0 else None
        if "fetch_result" in names:
            return self._read_claim(q, reads, shown, result)
        if "grep" in names:
            return self._read_file(q, reads, shown, result)
        return None

    def _last_result(self, shown: list[Message]) -> str:
        tool_messages = [m for m in shown if isinstance(m, ToolMessage)]
        return tool_messages[-1].content if tool_messages else ""

    def _read_claim(
        self, q: Question, reads: int, shown: list[Message], result: str
    ) -> ToolCall | None:
        found = re.search(r"claim:[0-9a-f]{33}", result)
        if found is None:
            return None
        handle = found.group(0)
        if q.kind == "tail" and reads == 0:
            return self._call("fetch_result", handle=handle, from_end=True, lines=20)
        if q.kind == "member" and reads == 0:
            return self._call("fetch_result", handle=handle, path=q.pointer)
        if q.kind == "line":
            if reads == 0:
                return self._call("search_result", handle=handle, pattern=q.pattern, regex=True)
            line = _first_match_line(self._by_id(shown, self.last.get(q, "")))
            if line is not None and reads == 1:
                return self._call("fetch_result", handle=handle, line=line, lines=1)
        return None

    def _read_file(
        self, q: Question, reads: int, shown: list[Message], result: str
    ) -> ToolCall | None:
        found = re.search(r"saved to ([^\s;]+)", result)
        if found is None:
            return None
        path = found.group(1)
        if q.kind == "tail" and reads == 0:
            return self._call("tail", path=path, lines=20)
        if q.kind == "line" and reads == 0:
            return self._call("grep", path=path, pattern=q.pattern)
        if q.kind == "member":
            if reads == 0:  # the record's first line names it: its "id", unique in the file
                first = q.witness.split("\n")[1].strip()
                return self._call("grep", path=path, pattern=re.escape(first))
            numbers = re.findall(
                r"^ *(\d+)\t", self._by_id(shown, self.last.get(q, "")), re.MULTILINE
            )
            if numbers and reads == 1:
                size = q.witness.count("\n") + 1
                return self._call("read_file", path=path, offset=int(numbers[0]) - 2, limit=size)
        return None

    def _call(self, name: str, **arguments: Any) -> ToolCall:
        call = ToolCall(id=self._id(), name=name, arguments=arguments)
        self.stats.reads += 1
        return call

    @staticmethod
    def _by_id(shown: list[Message], call_id: str) -> str:
        for message in shown:
            if isinstance(message, ToolMessage) and message.tool_call_id == call_id:
                return message.content
        return ""


def _first_match_line(search: str) -> int | None:
    try:
        decoded = json.loads(search)
    except ValueError:
        return None
    matches = decoded.get("matches") or []
    return int(matches[0]["line"]) if matches and "line" in matches[0] else None


def _tool_name(document: str) -> str:
    if document in ("build.log",):
        return "read_log"
    if document == "orders":
        return "get_orders"
    if document == "customer":
        return "get_customer"
    if document == "git log":
        return "git_log"
    if document == "contract":
        return "read_contract"
    if document == "docs/reading.md":
        return "fetch_page"
    return "open_file"


def _arguments(document: str) -> dict[str, Any]:
    tool_name = _tool_name(document)
    if tool_name in ("read_log", "open_file"):
        return {"path": document}
    if tool_name == "fetch_page":
        return {"url": "https://example.org/s3claim/docs/reading"}
    if tool_name == "get_orders":
        return {"page": 1}
    if tool_name == "get_customer":
        return {"id": "cus-acme"}
    return {}


def _document_of(name: str, arguments: dict[str, Any]) -> str:
    if name in ("read_log", "open_file"):
        return str(arguments["path"])
    return {
        "get_orders": "orders",
        "get_customer": "customer",
        "git_log": "git log",
        "read_contract": "contract",
        "fetch_page": "docs/reading.md",
    }[name]


CLEARED = "[older tool result cleared]"


# -- the systems ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Peer:
    """A system that saves a long result to a file and leaves a preview: its numbers."""

    threshold: int
    """Characters: a longer result is saved (tokens at four characters)."""
    head: int = 0
    tail: int = 0
    head_lines: int = 0
    tail_lines: int = 0
    turn_budget: int | None = None
    """Characters across one turn's results: the largest are saved first until it fits."""

    def preview(self, text: str, path: str) -> str:
        lines = text.split("\n")
        parts = [text[: self.head]] if self.head else []
        if self.head_lines:
            parts.append("\n".join(lines[: self.head_lines]))
        parts.append(
            f"[output of {len(text):,} characters saved to {path}; read it with grep, "
            "read_file or tail]"
        )
        if self.tail_lines:
            parts.append("\n".join(lines[-self.tail_lines :]))
        if self.tail:
            parts.append(text[-self.tail :])
        return "\n".join(parts)

    def place(self, results: list[tuple[str, str]]) -> list[str]:
        """Each (path, text) of one turn as it enters the conversation."""
        saved = {i for i, (_, text) in enumerate(results) if len(text) > self.threshold}
        if self.turn_budget is not None:
            size = lambda i: len(results[i][1])  # noqa: E731
            placed = lambda: sum(  # noqa: E731
                len(self.preview(t, p)) if i in saved else len(t)
                for i, (p, t) in enumerate(results)
            )
            for i in sorted(range(len(results)), key=lambda i: (-size(i), i)):
                if placed() <= self.turn_budget:
                    break
                saved.add(i)
        return [
            self.preview(text, path) if i in saved else text
            for i, (path, text) in enumerate(results)
        ]


def _tokens(n: int) -> int:
    return n * CHARS_PER_TOKEN


PEERS: dict[str, Peer] = {
    # Claude Code: results over 50,000 characters go to a file, 2 KB of preview stay.
    "Claude Code": Peer(threshold=50_000, head=2_000),
    # TrueForge (LargeToolResponse.ts): 6,000 tokens a result, 10,000 a turn, 100 + 100 preview.
    "TrueForge": Peer(threshold=_tokens(6_000), head=100, tail=100, turn_budget=_tokens(10_000)),
    # pydantic-ai-harness ToolOutputLimits: spill over 10,000 characters, about 1,000 shown.
    "pydantic-ai-harness": Peer(threshold=10_000, head=1_000),
    # Deep Agents FilesystemMiddleware: 20,000 tokens, a preview of 5 + 5 lines.
    "Deep Agents": Peer(threshold=_tokens(20_000), head_lines=5, tail_lines=5),
    # Strands ContextOffloader: 2,500 tokens, a 1,000-token preview.
    "Strands": Peer(threshold=_tokens(2_500), head=_tokens(1_000)),
}


def _read_tool(files: dict[str, str], call: ToolCall) -> str:
    """grep, read_file and tail over a saved result, numbered as `cat -n` numbers lines."""
    text = files.get(str(call.arguments.get("path")))
    if text is None:
        return "error: no such file"
    lines = text.split("\n")
    if call.name == "grep":
        pattern = re.compile(str(call.arguments["pattern"]))
        hits = [f"{n:6d}\t{line}" for n, line in enumerate(lines, 1) if pattern.search(line)]
        return "\n".join(hits[:20]) or "no matches"
    if call.name == "tail":
        count = int(call.arguments["lines"])
        start = max(0, len(lines) - count)
        return "\n".join(f"{n:6d}\t{line}" for n, line in enumerate(lines[start:], start + 1))
    offset, limit = int(call.arguments["offset"]), int(call.arguments["limit"])
    chosen = lines[offset : offset + limit]
    return "\n".join(f"{n:6d}\t{line}" for n, line in enumerate(chosen, offset + 1))


READ_SCHEMAS = [
    {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
    for name in ("grep", "read_file_lines", "tail")
]
READ_SCHEMAS[1]["function"]["name"] = "read_file"


def _document_schemas(session: Session) -> list[dict[str, Any]]:
    names = sorted({_tool_name(d) for t in session.turns for d in t.calls})
    return [
        {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
        for n in names
    ]


def _masked(messages: list[Message]) -> list[Message]:
    """Observation masking: a tool result older than `MASK_AFTER_TURNS` model turns is
    replaced (what a host that clears old results sends)."""
    later = 0
    out: list[Message] = []
    for message in reversed(messages):
        if isinstance(message, AssistantMessage):
            later += 1
        if isinstance(message, ToolMessage) and later >= MASK_AFTER_TURNS:
            message = message.model_copy(update={"content": CLEARED})
        out.append(message)
    return out[::-1]


def replay_plain(
    session: Session,
    place: Callable[[list[tuple[str, str]]], list[str]],
    *,
    reads: bool = False,
    masking: bool = False,
) -> Stats:
    """A session through a host that places each turn's results with `place`."""
    stats = Stats()
    model = SessionModel(session, stats, _masked if masking else list)
    schemas = _document_schemas(session) + (READ_SCHEMAS if reads else [])
    messages: list[Message] = [
        SystemMessage(content=SYSTEM_PROMPT),
        UserMessage(content=session.prompt),
    ]
    files: dict[str, str] = {}
    for _ in range(200):
        reply = model.complete(messages, schemas)
        messages.append(reply)
        if not reply.tool_calls:
            return stats
        fresh: list[tuple[int, str, str]] = []
        answers: dict[int, str] = {}
        for index, call in enumerate(reply.tool_calls):
            if call.name in ("grep", "read_file", "tail"):
                answers[index] = _read_tool(files, call)
            else:
                stats.executions += 1
                path = f"/tool_results/{call.id}.txt"
                text = texts()[_document_of(call.name, call.arguments)]
                files[path] = text
                fresh.append((index, path, text))
        for (index, _, _), shown in zip(fresh, place([(p, t) for _, p, t in fresh]), strict=True):
            answers[index] = shown
        messages.extend(
            ToolMessage(tool_call_id=call.id, name=call.name, content=answers[i])
            for i, call in enumerate(reply.tool_calls)
        )
    raise AssertionError(f"{session.name}: the scripted model did not finish")


def _document_tools(stats: Stats, **options: Any) -> list[Tool]:
    """The session's tools for `AgentRunner`, counting their executions."""

    def read(name: str, arguments: dict[str, Any]) -> str:
        stats.executions += 1
        return texts()[_document_of(name, arguments)]

    def read_log(path: str) -> str:
        """A log file's text."""
        return read("read_log", {"path": path})

    def open_file(path: str) -> str:
        """A file's text."""
        return read("open_file", {"path": path})

    def get_orders(page: int) -> str:
        """One page of the orders API, as JSON."""
        return read("get_orders", {"page": page})

    def get_customer(id: str) -> str:
        """One customer, as JSON."""
        return read("get_customer", {"id": id})

    def git_log() -> str:
        """`git log --stat` of the repository."""
        return read("git_log", {})

    def read_contract() -> str:
        """The contract under review."""
        return read("read_contract", {})

    def fetch_page(url: str) -> str:
        """A web page as text."""
        return read("fetch_page", {"url": url})

    functions = (read_log, open_file, get_orders, get_customer, git_log, read_contract, fetch_page)
    return [tool(**options)(f) if options else tool(f) for f in functions]


def replay_s3claim(
    session: Session,
    claim_check: Callable[[MemoryClaimCheckStore], ClaimCheck],
    **tool_options: Any,
) -> Stats:
    """A session through `AgentRunner` with the claim check `claim_check(store)` builds."""
    stats = Stats()
    store = MemoryClaimCheckStore()
    runner = AgentRunner(
        provider=SessionModel(session, stats, list),
        tools=[*_document_tools(stats, **tool_options), *claim_tools(store)],
        claim_check=claim_check(store),
        max_turns=200,
        system=SYSTEM_PROMPT,
    )
    runner.run(session.prompt, tenant="bench", run_id="session")
    return stats


def _inline(results: list[tuple[str, str]]) -> list[str]:
    return [text for _, text in results]


def _truncated(results: list[tuple[str, str]]) -> list[str]:
    return [
        text
        if len(text) <= TRUNCATE_AT
        else text[:TRUNCATE_AT] + f"\n[truncated: {len(text) - TRUNCATE_AT:,} characters not shown]"
        for _, text in results
    ]


def _defaults(store: MemoryClaimCheckStore) -> ClaimCheck:
    return ClaimCheck(store)


def _tuned(store: MemoryClaimCheckStore) -> ClaimCheck:
    return ClaimCheck(store, policy=TUNED_POLICY, per_tool=TUNED_PER_TOOL)


TUNED_POLICY = ClaimCheckPolicy(turn_budget_chars=16_384)
TUNED_PER_TOOL: dict[str, ClaimCheckPolicy] = {
    "read_log": ClaimCheckPolicy.for_logs(),
    "get_orders": ClaimCheckPolicy.for_json(),
}
TUNED_TOOLS: dict[str, Any] = {"reuse_seconds": 300}


def replay(session: Session, system: str) -> Stats:
    """One session through one system (a name of `SYSTEMS`)."""
    if system == "inline":
        return replay_plain(session, _inline)
    if system == f"truncation at {TRUNCATE_AT:,}":
        return replay_plain(session, _truncated)
    if system == f"masking after {MASK_AFTER_TURNS} turns":
        return replay_plain(session, _inline, masking=True)
    if system == "s3claim (spec defaults)":
        return replay_s3claim(session, _defaults)
    if system == "s3claim (turn budget, reuse, presets)":
        return replay_s3claim(session, _tuned, **TUNED_TOOLS)
    return replay_plain(session, PEERS[system].place, reads=True)


SYSTEMS = (
    "inline",
    f"truncation at {TRUNCATE_AT:,}",
    "s3claim (spec defaults)",
    "s3claim (turn budget, reuse, presets)",
    *PEERS,
    f"masking after {MASK_AFTER_TURNS} turns",
)


# -- the section ---------------------------------------------------------------------------


def run(bench: Bench) -> Section:
    del bench  # in memory: nothing of the profile applies
    rows: list[list[str]] = []
    totals: dict[str, list[Stats]] = {s: [] for s in SYSTEMS}
    for session in sessions():
        for system in SYSTEMS:
            stats = replay(session, system)
            totals[system].append(stats)
            rows.append(_row(session.name, system, stats))
    return Section(
        title="Sessions side by side",
        intro=(
            "Multi-turn sessions of real tool output replayed under each system (issue 37). "
            "Characters sent: every request summed, as serialised; cached prefix: the share "
            "of each request after the first that repeats the previous request's start."
        ),
        tables=[
            Table(
                headers=[
                    "session",
                    "system",
                    "characters sent",
                    "largest request",
                    "tool executions",
                    "read calls",
                    "cached prefix",
                    "earlier request kept whole",
                    "answers exact",
                ],
                rows=rows,
                align_left=2,
            )
        ],
        notes=[
            "The tuned s3claim arm: `ClaimCheckPolicy(turn_budget_chars=16_384)` for every "
            "tool, `ClaimCheckPolicy.for_logs()` for the log, `ClaimCheckPolicy.for_json()` for "
            "the API, and `reuse_seconds=300` on every document tool.",
            "Cached prefix: the share of each request after the first that repeats the "
            "previous request's start, characters over characters; a system whose requests "
            "are small has the larger share of new text in each. Earlier request kept whole: "
            "requests that begin with the whole of the request before them (nothing rewritten).",
            "The s3claim arms run through `AgentRunner`; the others through a plain loop that "
            "places results as their code does (thresholds and previews from their sources, "
            f"tokens at {CHARS_PER_TOKEN} characters) and reads with grep, lines and tail.",
            f"Masking clears a result once {MASK_AFTER_TURNS} later model turns have passed; "
            "a question about a cleared result calls its tool again.",
        ],
        headlines=_headlines(totals),
    )


def _row(session: str, system: str, stats: Stats) -> list[str]:
    return [
        session,
        system,
        fmt_int(sum(stats.requests)),
        fmt_int(max(stats.requests)),
        str(stats.executions),
        str(stats.reads),
        f"{_cached(stats):.1%}",
        f"{stats.kept_whole}/{len(stats.requests) - 1}",
        f"{stats.answered}/{stats.questions}",
    ]


def _cached(stats: Stats) -> float:
    later = sum(stats.requests[1:])
    return sum(stats.cached) / later if later else 1.0


def _headlines(totals: dict[str, list[Stats]]) -> list[str]:
    """Per session, the fewest characters sent with every answer exact, and the tuned arm."""
    tuned = "s3claim (turn budget, reuse, presets)"
    lines = []
    for at, session in enumerate(sessions()):
        exact = [s for s in SYSTEMS if totals[s][at].answered == totals[s][at].questions]
        best = min(exact, key=lambda s: sum(totals[s][at].requests))
        ours = totals[tuned][at]
        mine = (
            f"{tuned}: {fmt_int(sum(ours.requests))} characters, {ours.answered}/"
            f"{ours.questions} exact, {ours.executions} tool executions"
        )
        if best == tuned:
            lines.append(f"{session.name}: the fewest characters with every answer exact, {mine}.")
        else:
            lines.append(
                f"{session.name}: the fewest characters with every answer exact, {best} "
                f"({fmt_int(sum(totals[best][at].requests))}); {mine}."
            )
    return lines
