"""The sessions, the questions and the one scripted model every system's loop runs.

Standard library only: the peers' venvs import it. A session is a few turns; each turn calls
tools for documents (in parallel), then asks questions whose witness is verbatim in a
document: a line holding a literal, the document's last lines, or a JSON member's exact text
(by pointer). `Script` plays a session against one system: it is handed each request as that
system's framework built it (`Request`: the system prompt, the tool definitions, the
conversation's parts, the tool results in view) and answers with the next calls. A question
counts as answered exactly when its witness is in a tool result the model was sent, as the
model reads it (`Reader.plain`: the system's line numbers set aside); until then the model
reads on with the system's own read tools (`Reader.read`, at most three reads a question),
and never from anything else.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Literal, Protocol

from benchmarks.heldout import text

__all__ = [
    "SESSIONS",
    "Call",
    "Question",
    "Reader",
    "Request",
    "Script",
    "Session",
    "Turn",
    "document_call",
    "json_span",
    "tool_of",
]

SYSTEM_PROMPT = "You are a careful engineer. Answer from the tools' results, verbatim."
READS_PER_QUESTION = 3


def tool_of(document: str) -> str:
    """The tool that returns a document: its name is what a per-tool policy is keyed by."""
    if document.endswith(".log"):
        return "read_log"
    if document.endswith(".json"):
        return "get_json"
    return "open_file"


DOCUMENT_TOOLS = {
    "read_log": "A log file's text, whole.",
    "get_json": "A JSON document, as the service returns it.",
    "open_file": "A text file's contents, whole.",
}
"""Each document tool's description; every one takes `path` (the document's name)."""


def json_span(document: str, pointer: str) -> tuple[int, int]:
    """Where the value at `pointer` (RFC 6901) in the JSON `document` starts and ends."""
    decoder = json.JSONDecoder()
    space = re.compile(r"[ \t\n\r]*")

    def skip(at: int) -> int:
        found = space.match(document, at)
        return found.end() if found else at

    at = skip(0)
    for raw in pointer.strip("/").split("/") if pointer.strip("/") else []:
        part = raw.replace("~1", "/").replace("~0", "~")
        opening = document[at]
        at = skip(at + 1)
        index = 0
        while True:
            if opening == "{":
                key, at = decoder.raw_decode(document, at)
                at = skip(skip(at) + 1)  # past the colon
                hit = key == part
            else:
                hit = str(index) == part
            if hit:
                break
            _, at = decoder.raw_decode(document, at)
            at = skip(skip(at) + 1)  # past the comma
            index += 1
    _, end = decoder.raw_decode(document, at)
    return at, end


@dataclass(frozen=True)
class Question:
    """What the model must find in `source` (a held-out document's file name)."""

    source: str
    kind: Literal["line", "tail", "member"]
    needle: str = ""
    """line: a literal the line holds (its first line holding it is the witness); member: a
    literal on the member's first line, found nowhere else in the document."""
    pointer: str = ""
    lines: int = 0
    """tail: how many of the document's last lines."""

    @property
    def witness(self) -> str:
        document = text(self.source)
        if self.kind == "tail":
            return "\n".join(document.rstrip("\n").split("\n")[-self.lines :])
        if self.kind == "member":
            start, end = json_span(document, self.pointer)
            return document[start:end]
        return next(line for line in document.split("\n") if self.needle in line)

    @property
    def reach(self) -> int:
        """Lines from the one holding `needle` to the witness's last: what a line reader reads
        from where its search found the needle (a record's worth)."""
        document = text(self.source)
        start = document.rfind("\n", 0, document.index(self.needle)) + 1
        end = document.index(self.witness, start) + len(self.witness)
        return document.count("\n", start, end) + 1


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

    @property
    def questions(self) -> int:
        return sum(len(t.questions) for t in self.turns)


TEST_LOG, DPKG, NEWS = "cpython-test_statistics.log", "dpkg.log", "cpython-3.11.2-NEWS.txt"
ENDPOINTS, CFN, GPL = "botocore-endpoints.json", "cfn-aws-s3-bucket.json", "GPL-3"
TUTOR_JA, TUTOR_RU = "vim-tutor.ja.utf-8", "vim-tutor.ru.utf-8"


@cache
def sessions() -> tuple[Session, ...]:
    q = Question
    return (
        Session(
            "CI triage",
            "CPython's test run failed: which test, what assertion, and is it a known change?",
            (
                Turn(
                    (TEST_LOG, NEWS),
                    (
                        q(TEST_LOG, "line", "FAIL: test_center_not_at_mean"),
                        q(TEST_LOG, "line", "AssertionError: "),
                        q(TEST_LOG, "tail", lines=3),
                        q(NEWS, "line", "gh-issue-101400"),
                    ),
                ),
                Turn((TEST_LOG,), (q(TEST_LOG, "line", "FAILED (failures="),)),
                Turn((NEWS,), (q(NEWS, "line", "CVE-2022-42919"),)),
            ),
        ),
        Session(
            "package audit",
            "Audit what dpkg installed on this machine, and the licence the tools ship under.",
            (
                Turn(
                    (DPKG, GPL),
                    (
                        q(DPKG, "line", " install vim:amd64 "),
                        q(DPKG, "line", " status installed python3.11:amd64 "),
                        q(DPKG, "tail", lines=3),
                        q(GPL, "line", "15. Disclaimer of Warranty."),
                    ),
                ),
                Turn((DPKG,), (q(DPKG, "line", " upgrade "),)),
                Turn((GPL,), (q(GPL, "line", "END OF TERMS AND CONDITIONS"),)),
            ),
        ),
        Session(
            "endpoint lookup",
            "Which endpoints does botocore know for these services, and with which variants?",
            (
                Turn(
                    (ENDPOINTS,),
                    (
                        q(
                            ENDPOINTS,
                            "member",
                            '"api.iotwireless" : {',
                            pointer="/partitions/0/services/api.iotwireless",
                        ),
                        q(ENDPOINTS, "line", '"hostname" : "athena-fips.us-east-1.amazonaws.com"'),
                        q(
                            ENDPOINTS,
                            "member",
                            '"regionRegex" : ',
                            pointer="/partitions/0/regionRegex",
                        ),
                    ),
                ),
                Turn(
                    (ENDPOINTS,),
                    (
                        q(
                            ENDPOINTS,
                            "member",
                            '"cloudtrail" : {',
                            pointer="/partitions/0/services/cloudtrail/endpoints/fips-us-east-1",
                        ),
                    ),
                ),
            ),
        ),
        Session(
            "template review",
            "Review a template's S3 bucket against the resource schema CloudFormation publishes.",
            (
                Turn(
                    (CFN,),
                    (
                        q(CFN, "member", '"primaryIdentifier": [', pointer="/primaryIdentifier"),
                        q(CFN, "line", '"typeName": "AWS::S3::Bucket"'),
                        q(CFN, "line", "Object Lock"),
                    ),
                ),
                Turn(
                    (CFN,),
                    (
                        q(
                            CFN,
                            "member",
                            '"handlers": {',
                            pointer="/handlers/delete",
                        ),
                    ),
                ),
            ),
        ),
        Session(
            "translation review",
            "Check the Japanese and Russian Vim tutors against each other, lesson by lesson.",
            (
                Turn(
                    (TUTOR_JA, TUTOR_RU),
                    (
                        q(TUTOR_JA, "line", "レッスン 1.1:"),
                        q(TUTOR_RU, "line", "Урок 1.1:"),
                        q(TUTOR_JA, "line", "レッスン 1 要約"),
                        q(TUTOR_RU, "line", "РЕЗЮМЕ УРОКА 2"),
                    ),
                ),
                Turn((TUTOR_RU,), (q(TUTOR_RU, "tail", lines=3),)),
                Turn((TUTOR_JA,), (q(TUTOR_JA, "tail", lines=3),)),
            ),
        ),
    )


SESSIONS = sessions


# -- the model ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    id: str
    tool: str
    arguments: dict[str, Any]


def document_call(call_id: str, document: str) -> Call:
    return Call(call_id, tool_of(document), {"path": document})


@dataclass(frozen=True)
class Request:
    """One request as a framework built it for its model."""

    system: str
    tools: Sequence[dict[str, Any]]
    """Each tool as the framework describes it to the model: name, description, schema."""
    parts: Sequence[str]
    """The conversation's parts in order: the prompt, the model's text and calls (name and
    arguments as JSON), every tool result."""
    results: Sequence[tuple[str, str]]
    """The tool results in the conversation, (call id, text), in order."""

    @property
    def conversation_chars(self) -> int:
        return sum(len(p) for p in self.parts)

    @property
    def whole_chars(self) -> int:
        return len(self.system) + self.tools_chars + self.conversation_chars

    @property
    def tools_chars(self) -> int:
        return sum(len(json.dumps(t, ensure_ascii=False, sort_keys=True)) for t in self.tools)


def call_part(call: Call) -> str:
    """A call as the conversation counts it: its name and its arguments as JSON."""
    return call.tool + json.dumps(call.arguments, ensure_ascii=False)


class Reader(Protocol):
    """One system's read tools, as the model uses them."""

    def plain(self, result: str) -> str:
        """A tool result as the model reads it (the system's line numbers set aside)."""
        ...

    def read(self, question: Question, attempt: int, result: str, earlier: str) -> Call | None:
        """The next read for `question` (`attempt` from 0), given the result the document's
        tool left in the conversation and this question's previous read's result (or "")."""
        ...


@dataclass
class Figures:
    conversation: list[int] = field(default_factory=list)
    whole: list[int] = field(default_factory=list)
    tools: int = 0
    """Characters of the tool definitions in the first request."""
    reads: int = 0
    answered: int = 0
    questions: int = 0


class Script:
    """Plays a session: the turn's calls at once, then reads on until each question's witness
    is in view, then the next turn; then a final answer."""

    def __init__(self, session: Session, reader: Reader) -> None:
        self.session = session
        self.reader = reader
        self.figures = Figures()
        self.turn = -1
        self.pending: list[tuple[Question, int]] = []
        self.last: dict[Question, str] = {}
        self.sources: dict[str, str] = {}
        self.counter = 0

    def _id(self) -> str:
        self.counter += 1
        return f"call_{self.counter}"

    def respond(self, request: Request) -> list[Call] | str:
        """The calls to make next, or the final answer."""
        figures = self.figures
        if not figures.whole:
            figures.tools = request.tools_chars
        figures.conversation.append(request.conversation_chars)
        figures.whole.append(request.whole_chars)
        by_id = dict(request.results)
        seen = "\n".join(t for _, r in request.results for t in (r, self.reader.plain(r)) if t)
        still = []
        for question, reads in self.pending:
            if question.witness in seen:
                figures.answered += 1
            elif reads < READS_PER_QUESTION:
                still.append((question, reads))
        self.pending = still
        calls: list[Call] = []
        for index, (question, reads) in enumerate(self.pending):
            result = by_id.get(self.sources.get(question.source, ""), "")
            earlier = by_id.get(self.last.get(question, ""), "")
            call = self.reader.read(question, reads, result, earlier)
            self.pending[index] = (question, reads + 1)
            if call is not None:
                call = Call(self._id(), call.tool, call.arguments)
                self.last[question] = call.id
                figures.reads += 1
                calls.append(call)
        if calls:
            return calls
        self.pending = []  # nothing more to try: those questions stay unanswered
        self.turn += 1
        if self.turn >= len(self.session.turns):
            return "done"
        turn = self.session.turns[self.turn]
        figures.questions += len(turn.questions)
        self.pending = [(q, 0) for q in turn.questions]
        out = []
        for document in turn.calls:
            call = document_call(self._id(), document)
            self.sources[document] = call.id
            out.append(call)
        return out

    def result(self, system: str, **counts: int) -> dict[str, Any]:
        """The session's figures for `system`, as JSON; `counts`: executions, store requests
        and bytes, as the side counted them."""
        f = self.figures
        return {
            "session": self.session.name,
            "system": system,
            "conversation": sum(f.conversation),
            "whole": sum(f.whole),
            "largest": max(f.whole),
            "tools": f.tools,
            "turns": len(f.whole),
            "reads": f.reads,
            "answered": f.answered,
            "questions": f.questions,
            **counts,
        }


def first_number(pattern: str, result: str) -> int | None:
    """The first line number a read's result shows, by `pattern` (one group, the number)."""
    found = re.search(pattern, result, re.MULTILINE)
    return int(found.group(1)) if found else None
