"""Claim references through every host, on both stores: a model passes a claim to a tool.

The cases live in one class; each host (the runner, the three framework adapters, the MCP
proxy) is a subclass that names its driver in `tests._hosts`, which plays a scripted model's
turns through it. Every host must hand the tool exactly what the reference names, refuse what
the claim tools refuse (the tool then does not run), and keep the content out of the
conversation.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Any, ClassVar

import pytest

from s3claim import (
    AgentRunner,
    AssistantMessage,
    ClaimCheck,
    ClaimCheckStore,
    Event,
    MemoryClaimCheckStore,
    MemoryRunJournal,
    RetryPolicy,
    S3ClaimCheckStore,
    Scope,
    ScriptedProvider,
    ToolCall,
    claim_tools,
    tool,
)
from s3claim.messages import ToolMessage
from s3claim.tools import RunContext
from s3claim.wording import (
    LINKS_UNAVAILABLE_MESSAGE,
    REFERENCE_DESCRIPTION,
    REFERENCE_LINK_DESCRIPTION,
    UNAVAILABLE_MESSAGE,
)
from tests._counsel import CONTRACT, HANDLE
from tests._hosts import Call, Model, drive, one_a_turn, resolved_arguments, turns

SCOPE = Scope(tenant="acme", run="r-1")
SEEN: list[Any] = []
LINES = "".join(f"line {n}\r\n" if n % 3 == 0 else f"line {n}\n" for n in range(1, 301))
RECORDS = json.dumps({"items": [{"id": n, "name": f"record {n}"} for n in range(500)]})


def read_contract(name: str) -> str:
    """Return the full text of a named contract."""
    return CONTRACT


def word_count(text: str) -> int:
    """Count the words in a text."""
    SEEN.append(text)
    return len(text.split())


def fields(record: dict[str, Any]) -> int:
    """Count the fields of a record."""
    SEEN.append(record)
    return len(record)


def report(texts: list[str]) -> int:
    """Count the characters of several texts."""
    SEEN.append(texts)
    return sum(len(t) for t in texts)


FUNCTIONS = (read_contract, word_count, fields, report)


@pytest.fixture(params=["memory", "s3"])
def store(request: pytest.FixtureRequest) -> ClaimCheckStore:
    if request.param == "memory":
        return MemoryClaimCheckStore()
    from tests._s3 import moto_client

    client = moto_client(request.getfixturevalue("moto_endpoint"))
    bucket = f"ref-{uuid.uuid4().hex}"
    client.create_bucket(Bucket=bucket)
    return S3ClaimCheckStore(
        bucket,
        handle_key="test-handle-key-0123456789",
        client=client,
        retry=RetryPolicy(initial_wait=0, max_wait=0),
    )


def refusal(text: str) -> dict[str, str]:
    value: dict[str, str] = json.loads(text)
    assert set(value) == {"error", "message"}, text[:200]
    return value


class ReferenceContract:
    """The cases. A host names its driver; `run` answers the tool outputs the model read, in
    order, and keeps what it was told of each tool (`descriptions`)."""

    host: ClassVar[str]

    @pytest.fixture(autouse=True)
    def _setup(self, store: ClaimCheckStore) -> None:
        SEEN.clear()
        self.store = store
        self.events: list[Event] = []
        self.claim_check = ClaimCheck(store, references=True, max_reference_chars=100_000)

    def run(self, model: Model) -> list[str]:
        ran = drive(
            self.host,
            FUNCTIONS,
            model,
            claim_check=self.claim_check,
            scope=SCOPE,
            on_event=self.events.append,
        )
        self.descriptions = ran.descriptions
        return ran.texts

    def passed(self) -> list[tuple[str, str, int]]:
        return [(e.tool, e.handle, e.chars) for e in self.events if e.kind == "claim_passed"]

    def test_the_counsel_model_passes_the_contract_by_reference(self) -> None:
        sent: list[Call] = []

        def by_reference(outputs: Sequence[str]) -> dict[str, str]:
            head = outputs[-1]
            found = HANDLE.search(head)
            assert found is not None and '{"$claim": "' in head  # the marker says how
            sent.append(("word_count", {"text": {"$claim": found.group()}}))
            return {"$claim": found.group()}

        outputs = self.run(
            turns([("read_contract", {"name": "msa"})], [("word_count", {"text": by_reference})])
        )
        assert outputs[1] == str(len(CONTRACT.split()))  # the right count
        assert SEEN == [CONTRACT]  # the tool got the contract, exactly
        assert len(outputs[0]) < 1_000  # the model read the head and marker only ...
        assert len(json.dumps(sent)) < 100  # ... and sent the reference only
        handle = sent[0][1]["text"]["$claim"]
        assert self.passed() == [("word_count", handle, len(CONTRACT))]

    def test_the_model_reads_one_line_about_references_in_each_tools_description(self) -> None:
        self.descriptions: dict[str, str] = {}
        self.run(one_a_turn(("word_count", {"text": "a b c"})))
        assert SEEN == ["a b c"]  # plain arguments pass as they are
        for name in ("read_contract", "word_count", "fields", "report"):
            assert self.descriptions[name].endswith(REFERENCE_DESCRIPTION), name
            assert self.descriptions[name].count(REFERENCE_DESCRIPTION) == 1
        assert REFERENCE_DESCRIPTION not in self.descriptions["fetch_result"]

    def test_narrowed_references_deliver_exactly_their_slice(self) -> None:
        text = self.store.put(SCOPE, CONTRACT, ttl_seconds=60)
        lines = self.store.put(SCOPE, LINES, ttl_seconds=60)
        records = self.store.put(SCOPE, RECORDS, ttl_seconds=60)
        self.run(
            one_a_turn(
                ("word_count", {"text": {"$claim": text, "offset": 50_000, "length": 777}}),
                ("word_count", {"text": {"$claim": lines, "line": 3, "lines": 2}}),
                ("fields", {"record": {"$claim": records, "path": "/items/321"}}),
                ("report", {"texts": [{"$claim": text, "length": 5}, "and", {"$claim": lines}]}),
            )
        )
        assert [
            CONTRACT[50_000:50_777],
            "line 3\r\nline 4\n",
            {"id": 321, "name": "record 321"},
            [CONTRACT[:5], "and", LINES],
        ] == SEEN
        record = json.dumps({"id": 321, "name": "record 321"})  # its characters in the claim
        assert [chars for *_, chars in self.passed()] == [777, 15, len(record), 5, len(LINES)]

    def test_an_unredeemable_handle_is_the_uniform_refusal_and_the_tool_does_not_run(
        self,
    ) -> None:
        theirs = self.store.put(Scope("acme", "r-2"), CONTRACT, ttl_seconds=60)
        for handle in (theirs, "claim:1" + "0" * 32, "nonsense"):
            (text,) = self.run(one_a_turn(("word_count", {"text": {"$claim": handle}})))
            assert refusal(text) == {"error": "claim_unavailable", "message": UNAVAILABLE_MESSAGE}
        assert SEEN == []
        assert [e.kind for e in self.events] == ["claim_unavailable"] * 3

    def test_a_link_reference_hands_the_tool_a_url_its_code_reads_the_claim_from(self) -> None:
        from starlette.testclient import TestClient

        from s3claim.links import LinkKey
        from s3claim.links.server import links_app

        base = "http://127.0.0.1:9"
        self.claim_check = ClaimCheck(self.store, references=True, link_base_url=base)
        handle = self.store.put(SCOPE, CONTRACT, ttl_seconds=600)
        (said,) = self.run(one_a_turn(("word_count", {"text": {"$claim": handle, "as": "link"}})))
        (url,) = SEEN
        assert said == "1" and url.startswith(f"{base}/claims/")  # one word: the URL
        assert SCOPE.tenant not in url and SCOPE.run not in url
        opened = LinkKey(self.store.handle_key).open(url.rsplit("/", 1)[1])  # type: ignore[attr-defined]
        assert opened is not None and (opened.handle, opened.scope) == (handle, SCOPE)
        with TestClient(links_app(self.store)) as http:  # type: ignore[arg-type]
            assert http.get(url.removeprefix(base)).text == CONTRACT
        assert self.passed() == [("word_count", handle, 0)]  # no character passed
        assert self.descriptions["word_count"].endswith(REFERENCE_LINK_DESCRIPTION)

    def test_a_link_reference_is_refused_where_links_are_not_configured(self) -> None:
        handle = self.store.put(SCOPE, CONTRACT, ttl_seconds=60)
        (text,) = self.run(one_a_turn(("word_count", {"text": {"$claim": handle, "as": "link"}})))
        assert refusal(text) == {"error": "links_unavailable", "message": LINKS_UNAVAILABLE_MESSAGE}
        assert SEEN == []

    @pytest.mark.parametrize(
        ("reference", "says"),
        [
            ({"offset": -1}, "offset"),
            ({"length": "5"}, "length"),
            ({"line": 0}, "line"),
            ({"whence": 3}, "whence"),
            ({"offset": 0, "line": 1}, "one way"),
            ({"offset": 20, "path": ""}, "a claim reference delivers characters"),
            ({"length": {"$claim": "x"}}, "another reference"),
            ({"path": ["/items"]}, "another reference"),
            ({"as": "link", "offset": 3}, "whole claim"),
            ({"as": "file"}, "as"),
        ],
    )
    def test_malformed_references_are_refused_before_any_read(
        self, reference: dict[str, Any], says: str
    ) -> None:
        handle = self.store.put(SCOPE, CONTRACT, ttl_seconds=60)
        (text,) = self.run(one_a_turn(("word_count", {"text": {"$claim": handle, **reference}})))
        answer = refusal(text)
        assert answer["error"] == "invalid_arguments" and says in answer["message"]
        assert SEEN == [] and self.events == []

    def test_the_arguments_themselves_cannot_be_a_reference(self) -> None:
        handle = self.store.put(SCOPE, CONTRACT, ttl_seconds=60)
        (text,) = self.run(one_a_turn(("word_count", {"$claim": handle})))
        answer = refusal(text)
        assert answer["error"] == "invalid_arguments" and "parameter" in answer["message"]
        assert SEEN == [] and self.events == []

    def test_a_handle_of_the_wrong_type_is_refused(self) -> None:
        (text,) = self.run(one_a_turn(("word_count", {"text": {"$claim": 42}})))
        assert refusal(text)["error"] == "invalid_arguments" and SEEN == []

    def test_what_a_call_resolves_is_bounded(self) -> None:
        big = self.store.put(SCOPE, CONTRACT * 2, ttl_seconds=60)  # 184k > 100k
        small = self.store.put(SCOPE, CONTRACT, ttl_seconds=60)
        for reference in (
            {"text": {"$claim": big}},
            {"text": {"$claim": small, "length": 10**12}},
            {"texts": [{"$claim": small}, {"$claim": small}]},  # each fits, both do not
        ):
            name = "report" if "texts" in reference else "word_count"
            (text,) = self.run(one_a_turn((name, reference)))
            answer = refusal(text)
            assert answer["error"] == "reference_too_large" and "100000" in answer["message"]
        assert SEEN == []

    def test_lines_past_the_bound_are_refused_whatever_the_lines_hold(self) -> None:
        """JSON lines whose records hold escaped newlines (a backslash and an n): ten of them
        are 300,000 characters, past the call's 100,000. They were once delivered cut to the
        3 that fit, as the check counted the two characters `\\n` for line breaks."""
        record = json.dumps({"msg": "step failed\n  at frame\n" * 1_100})  # ~29,700 chars
        lines = [f"{record}\n" for _ in range(12)]
        handle = self.store.put(SCOPE, "".join(lines), ttl_seconds=60)
        (text,) = self.run(
            one_a_turn(("word_count", {"text": {"$claim": handle, "line": 1, "lines": 10}}))
        )
        answer = refusal(text)
        assert answer["error"] == "reference_too_large" and "100000" in answer["message"]
        assert SEEN == []
        (text,) = self.run(
            one_a_turn(("word_count", {"text": {"$claim": handle, "line": 2, "lines": 3}}))
        )
        assert ["".join(lines[1:4])] == SEEN  # three lines fit: exactly those

    def test_an_offset_past_the_end_reads_empty_as_a_fetch_would(self) -> None:
        handle = self.store.put(SCOPE, CONTRACT, ttl_seconds=60)
        (text,) = self.run(
            one_a_turn(("word_count", {"text": {"$claim": handle, "offset": 10**30, "length": 5}}))
        )
        assert (text, SEEN) == ("0", [""])

    def test_the_resolved_arguments_are_validated_as_the_tools_own(self) -> None:
        records = self.store.put(SCOPE, RECORDS, ttl_seconds=60)
        # A path to a number, given to a tool that takes a string: refused as any bad argument.
        (text,) = self.run(
            one_a_turn(("word_count", {"text": {"$claim": records, "path": "/items/3/id"}}))
        )
        assert text != "1" and SEEN == []  # refused by the host's own validation

    def test_a_resolved_value_is_never_resolved_again(self) -> None:
        inner = self.store.put(SCOPE, CONTRACT, ttl_seconds=60)
        outer = self.store.put(SCOPE, json.dumps({"a": {"$claim": inner}}), ttl_seconds=60)
        self.run(one_a_turn(("fields", {"record": {"$claim": outer, "path": "/a"}})))
        assert [{"$claim": inner}] == SEEN  # handed over as it is: one pass, no second read
        assert [e.kind for e in self.events] == ["claim_passed"]


# -- the runner's own: off by default, the journal, the descriptions, the boundary ------------


def _count_by_reference(claim_check: ClaimCheck, **runner: Any) -> Any:
    def count(messages: Any) -> AssistantMessage:
        found = HANDLE.search(messages[-1].content)
        assert found is not None
        arguments = {"text": {"$claim": found.group()}}
        return AssistantMessage(
            tool_calls=(ToolCall(id="2", name="word_count", arguments=arguments),)
        )

    provider = ScriptedProvider(
        [
            AssistantMessage(
                tool_calls=(ToolCall(id="1", name="read_contract", arguments={"name": "msa"}),)
            ),
            count,
            AssistantMessage(content="done"),
        ]
    )
    return AgentRunner(
        provider=provider,
        tools=[*(tool(f) for f in FUNCTIONS), *claim_tools(claim_check.store)],
        claim_check=claim_check,
        **runner,
    )


def test_references_are_off_by_default_and_the_spec_is_unchanged() -> None:
    SEEN.clear()
    claim_check = ClaimCheck(MemoryClaimCheckStore())
    runner = _count_by_reference(claim_check)
    result = runner.run("count", tenant="acme")
    head, answer = [m.content for m in result.messages if isinstance(m, ToolMessage)]
    assert '"$claim"' not in head  # the spec's marker
    assert refusal(answer)["error"] == "invalid_arguments" and SEEN == []
    assert all(REFERENCE_DESCRIPTION not in s["function"]["description"] for s in runner._schemas())


def test_the_model_is_told_in_the_marker_and_in_every_tools_description() -> None:
    runner = _count_by_reference(ClaimCheck(MemoryClaimCheckStore(), references=True))
    described = {s["function"]["name"]: s["function"]["description"] for s in runner._schemas()}
    for name in ("read_contract", "word_count", "fields", "report"):
        assert described[name].endswith(f"\n\n{REFERENCE_DESCRIPTION}")
    assert REFERENCE_DESCRIPTION not in described["fetch_result"]  # it takes a handle
    assert "\n" not in REFERENCE_DESCRIPTION  # one line


def test_the_journal_records_the_reference_never_the_content() -> None:
    journal = MemoryRunJournal()
    claim_check = ClaimCheck(MemoryClaimCheckStore(), references=True)
    result = _count_by_reference(claim_check, journal=journal).run(
        "count", tenant="acme", run_id="j-1"
    )
    assert result.output == "done"
    recorded = journal.load(Scope("acme", "j-1")).record
    dumped = recorded.model_dump_json()
    assert CONTRACT[20_000:20_300] not in dumped  # neither the call nor an event holds it
    calls_made = [
        c for m in recorded.messages if isinstance(m, AssistantMessage) for c in m.tool_calls
    ]
    assert "$claim" in calls_made[1].arguments["text"]
    (passed,) = [e for e in recorded.events if e.kind == "claim_passed"]
    assert passed.model_dump() == {
        "kind": "claim_passed",
        "tool": "word_count",
        "handle": calls_made[1].arguments["text"]["$claim"],
        "chars": len(CONTRACT),
    }


def test_a_tool_that_returns_a_reference_has_it_neutralised() -> None:
    from s3claim.hosting import result_text

    store = MemoryClaimCheckStore()
    handle = store.put(SCOPE, CONTRACT, ttl_seconds=60)

    @tool
    def forge() -> dict[str, Any]:
        """Return what looks like a reference."""
        return {"$claim": handle}

    text = result_text(forge, forge.call({}, None))  # type: ignore[arg-type]
    assert '"$claim"' not in text and "claim:" not in text
    assert json.loads(text) == {"-claim": handle.replace("claim:", "claim-")}
    from s3claim.hosting import neutralise

    assert neutralise('{"\uff04claim": 1}') == '{"-claim": 1}'  # a look-alike too


def test_a_reference_nested_past_the_depth_bound_is_refused_not_passed_on() -> None:
    from s3claim.errors import ToolError

    store = MemoryClaimCheckStore()
    deep: Any = {"$claim": store.put(SCOPE, CONTRACT, ttl_seconds=60)}
    for _ in range(300):
        deep = [deep]
    context = RunContext(scope=SCOPE, agent="a", emit=lambda _: None)
    with pytest.raises(ToolError, match="deeper than"):
        resolved_arguments(
            {"texts": deep},
            claim_check=ClaimCheck(store, references=True),
            tool="report",
            context=context,
        )


def test_max_reference_chars_is_checked_at_construction() -> None:
    from s3claim.errors import ConfigurationError

    for bad in (0, -1, True, 1.5):
        with pytest.raises(ConfigurationError, match="max_reference_chars"):
            ClaimCheck(MemoryClaimCheckStore(), max_reference_chars=bad)  # type: ignore[arg-type]


# -- the hosts: each names its driver (`tests._hosts.DRIVERS`) ------------------------------


class TestRunner(ReferenceContract):
    host = "runner"


class TestOpenAIAgents(ReferenceContract):
    host = "openai_agents"


class TestLangChain(ReferenceContract):
    host = "langchain"


class TestPydanticAI(ReferenceContract):
    host = "pydantic_ai"


class TestMcpProxy(ReferenceContract):
    """The model is the MCP client here: each turn is one tools/call through the proxy."""

    host = "mcp_proxy"
