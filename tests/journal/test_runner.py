"""AgentRunner with a journal: what is recorded when, resume, and who may write.

In-process, on the memory journal and store: a "crash" here is an exception no code in the
loop catches, raised by a journal wrapper just before or just after a save lands. The same
crashes by SIGKILL, in another process, on S3, are in tests/reliability/test_journal_failover.py.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from s3claim import (
    AgentRunner,
    AssistantMessage,
    ClaimCheck,
    ClaimStoreError,
    ConfigurationError,
    HandleKey,
    ManualClock,
    MemoryClaimCheckStore,
    MemoryRunJournal,
    Message,
    RunConflictError,
    RunJournal,
    RunNotFoundError,
    Scope,
    ScriptedProvider,
    ToolCall,
    ToolRegistry,
    claim_check_tool,
    tool,
)
from s3claim.events import RunResumed
from s3claim.journal import JournalEntry, RunRecord
from s3claim.wording import RUN_NOT_FOUND_MESSAGE

TENANT, RUN = "acme", "run-1"
SCOPE = Scope(TENANT, RUN)
KEY = HandleKey("a handle key every agent here shares")  # so handles match across agents
DOCUMENT = "".join(f"Section {n}. The parties agree to item {n}.\n\n" for n in range(400))


class Crash(BaseException):
    """The process dying: nothing in the loop catches it."""


class Spy:
    """A journal wrapper: counts saves, keeps what was saved, and can crash around save n."""

    def __init__(self, inner: RunJournal, *, crash: tuple[str, int] | None = None) -> None:
        self.inner = inner
        self.saved: list[RunRecord] = []
        self.crash = crash

    def exists(self, scope: Scope) -> bool:
        return self.inner.exists(scope)

    def load(self, scope: Scope) -> JournalEntry:
        return self.inner.load(scope)

    def save(self, scope: Scope, record: RunRecord, *, replaces: str | None) -> str:
        n = len(self.saved) + 1
        if self.crash == ("before", n):
            raise Crash
        version = self.inner.save(scope, record, replaces=replaces)
        self.saved.append(record)
        if self.crash == ("after", n):
            raise Crash
        return version


class Agent:
    """A counsel-like agent: reads a document (checked in), fetches a window, takes a note,
    answers from what it saw. Counts every tool call it serves, across runners."""

    def __init__(self) -> None:
        self.clock = ManualClock()
        self.store = MemoryClaimCheckStore(clock=self.clock, handle_key=KEY)
        self.journal = MemoryRunJournal(clock=self.clock)
        self.ran: Counter[str] = Counter()

        @tool
        def read(name: str) -> str:
            """Read a document."""
            self.ran["read"] += 1
            return DOCUMENT

        @tool
        def note(text: str) -> str:
            """Take a note."""
            self.ran["note"] += 1
            return f"noted: {text}"

        self.tools = ToolRegistry((read, note, claim_check_tool(self.store))).view(agent="a")

    def script(self) -> list[Any]:
        def fetch(messages: Sequence[Message]) -> AssistantMessage:
            handle = (messages[-1].content or "").split("handle='")[1].split("'")[0]
            return _call("f", "fetch_result", handle=handle, offset=512)

        def answer(messages: Sequence[Message]) -> AssistantMessage:
            seen = sum(len(m.content or "") for m in messages if m.role == "tool")
            return AssistantMessage(content=f"I read {seen} characters.")

        return [_call("r", "read", name="msa"), fetch, _call("n", "note", text="ok"), answer]

    def runner(
        self, journal: RunJournal | None = None, steps: list[Any] | None = None, **kw: Any
    ) -> AgentRunner:
        return AgentRunner(
            provider=ScriptedProvider(self.script() if steps is None else steps),
            tools=self.tools,
            claim_check=ClaimCheck(self.store),
            journal=self.journal if journal is None else journal,
            **kw,
        )


def _call(call_id: str, name: str, /, **arguments: Any) -> AssistantMessage:
    return AssistantMessage(tool_calls=(ToolCall(id=call_id, name=name, arguments=arguments),))


def refuse_calls(_messages: Sequence[Message]) -> AssistantMessage:
    raise AssertionError("the model was called")


@pytest.fixture
def agent() -> Agent:
    return Agent()


def test_each_reply_is_recorded_once_before_its_tools_run(agent: Agent) -> None:
    spy = Spy(agent.journal)
    seen_by_tools: list[RunRecord] = []

    @tool
    def look(n: int) -> str:
        """Look at the journal from inside a tool call."""
        seen_by_tools.append(agent.journal.load(SCOPE).record)
        return f"looked {n}"

    steps = [_call("l1", "look", n=1), _call("l2", "look", n=2), AssistantMessage(content="ok")]
    runner = AgentRunner(provider=ScriptedProvider(steps), tools=[look], journal=spy)

    result = runner.run("q", tenant=TENANT, run_id=RUN)

    assert [r.turns for r in spy.saved] == [1, 2, 3]  # one save per model call
    assert [r.status for r in spy.saved] == ["running", "running", "answered"]
    for turn, record in enumerate(seen_by_tools, start=1):  # the reply was already recorded
        assert record.turns == turn
        assert [c.id for c in record.unanswered()] == [f"l{turn}"]
    final = agent.journal.load(SCOPE).record
    assert final.messages == result.messages
    assert final.events == result.events
    assert final.output == result.output == "ok"


def test_a_run_cut_at_max_turns_records_its_last_results_with_its_end(agent: Agent) -> None:
    spy = Spy(agent.journal)
    result = agent.runner(spy, max_turns=2).run("q", tenant=TENANT, run_id=RUN)

    assert result.output is None
    assert [r.status for r in spy.saved] == ["running", "max_turns"]
    assert spy.saved[-1].messages == result.messages
    assert result.messages[-1].role == "tool"  # the second turn's fetch ran, and is recorded
    assert agent.runner(steps=[refuse_calls]).resume(tenant=TENANT, run_id=RUN) == result


def test_resume_of_a_finished_run_returns_its_record_without_calling_the_model(
    agent: Agent,
) -> None:
    finished = agent.runner().run("q", tenant=TENANT, run_id=RUN)

    resumed = agent.runner(steps=[refuse_calls] * 8).resume(tenant=TENANT, run_id=RUN)

    assert resumed == finished
    assert agent.ran == Counter(read=1, note=1)  # and no tool ran again


CRASHES = [("after", 1), ("before", 2), ("after", 2), ("before", 3), ("after", 3), ("before", 4)]


@pytest.mark.parametrize("crash", CRASHES, ids=lambda c: f"{c[0]}-save-{c[1]}")
def test_a_crashed_run_resumes_to_the_uninterrupted_result(
    agent: Agent, crash: tuple[str, int]
) -> None:
    expected = Agent().runner().run("q", tenant=TENANT, run_id=RUN)
    with pytest.raises(Crash):
        agent.runner(Spy(agent.journal, crash=crash)).run("q", tenant=TENANT, run_id=RUN)
    before = Counter(agent.ran)
    recorded = agent.journal.load(SCOPE).record
    spy = Spy(agent.journal)

    result = agent.runner(spy).resume(tenant=TENANT, run_id=RUN)  # a fresh provider

    assert result.messages == expected.messages
    assert result.output == expected.output
    (resumed,) = [e for e in result.events if isinstance(e, RunResumed)]
    reran = tuple(c.name for c in recorded.unanswered())
    assert resumed == RunResumed(
        turns=recorded.turns, messages=len(recorded.messages), rerun_tools=reran
    )
    assert reran  # every record of a running run ends with a reply whose tools are pending
    # every result after the recorded prefix was produced here: the pending calls ran again
    # (whether or not they had run before the crash: at least once), the later ones once
    produced_here = Counter(
        m.name
        for m in result.messages[len(recorded.messages) :]
        if m.role == "tool" and m.name != "fetch_result"
    )
    assert agent.ran - before == produced_here
    assert set(agent.ran) == {"read", "note"}
    # every turn recorded once: the saves carry on from the recorded turn, one per call
    assert [r.turns for r in spy.saved] == list(range(recorded.turns + 1, 5))
    turns = [e.turn for e in result.events if e.kind == "model_called"]  # type: ignore[union-attr]
    assert turns == [1, 2, 3, 4]


def test_run_with_a_recorded_id_is_refused_before_the_model_is_called(agent: Agent) -> None:
    first = agent.runner().run("q", tenant=TENANT, run_id=RUN)
    before = agent.journal.load(SCOPE)

    with pytest.raises(RunConflictError, match="taken"):
        agent.runner(steps=[refuse_calls]).run("another prompt", tenant=TENANT, run_id=RUN)

    assert agent.journal.load(SCOPE) == before
    assert before.record.messages == first.messages
    # the same id in another tenant is another run
    other = agent.runner().run("q", tenant="globex", run_id=RUN)
    assert other.output == first.output


def test_resume_needs_a_journal_and_a_recorded_run(agent: Agent) -> None:
    bare = AgentRunner(provider=ScriptedProvider([]), tools=agent.tools)
    with pytest.raises(ConfigurationError, match="journal"):
        bare.resume(tenant=TENANT, run_id=RUN)
    agent.runner().run("q", tenant=TENANT, run_id=RUN)
    for tenant, run in ((TENANT, "unknown"), ("globex", RUN)):
        with pytest.raises(RunNotFoundError) as missing:
            agent.runner(steps=[refuse_calls]).resume(tenant=tenant, run_id=run)
        assert str(missing.value) == RUN_NOT_FOUND_MESSAGE
    agent.clock.advance(3600)
    with pytest.raises(RunNotFoundError):
        agent.runner(steps=[refuse_calls]).resume(tenant=TENANT, run_id=RUN)


class FailingJournal(Spy):
    """Its save n fails as a store does after its retries."""

    def __init__(self, inner: RunJournal, fail_at: int) -> None:
        super().__init__(inner)
        self.fail_at = fail_at

    def save(self, scope: Scope, record: RunRecord, *, replaces: str | None) -> str:
        if len(self.saved) + 1 == self.fail_at:
            raise ClaimStoreError("PutObject failed after 5 attempt(s): SlowDown (HTTP 503)")
        return super().save(scope, record, replaces=replaces)


def test_a_run_that_cannot_record_stops_rather_than_run_on_unrecorded(agent: Agent) -> None:
    runner = agent.runner(FailingJournal(agent.journal, fail_at=2))
    provider = runner.provider
    assert isinstance(provider, ScriptedProvider)

    with pytest.raises(ClaimStoreError, match="PutObject"):
        runner.run("q", tenant=TENANT, run_id=RUN)

    assert provider.calls == 2  # the reply that could not be recorded was the last call
    assert agent.ran == Counter(read=1)  # and its fetch never ran
    assert agent.journal.load(SCOPE).record.turns == 1


def test_of_two_resumes_the_later_saver_stops_before_calling_the_model_again(
    agent: Agent,
) -> None:
    with pytest.raises(Crash):
        agent.runner(Spy(agent.journal, crash=("after", 1))).run("q", tenant=TENANT, run_id=RUN)
    winner: list[Any] = []
    script = agent.script()

    def meanwhile(messages: Sequence[Message]) -> AssistantMessage:
        # B has loaded the run and asked the model; A resumes and finishes meanwhile
        winner.append(agent.runner().resume(tenant=TENANT, run_id=RUN))
        step: Callable[[Sequence[Message]], AssistantMessage] = script[1]
        return step(messages)

    loser = agent.runner(steps=[script[0], meanwhile, refuse_calls, refuse_calls])

    with pytest.raises(RunConflictError, match="another writer"):
        loser.resume(tenant=TENANT, run_id=RUN)

    assert loser.provider.calls == 1  # type: ignore[attr-defined]
    final = agent.journal.load(SCOPE).record
    assert final.finished and final.messages == winner[0].messages


def test_a_fresh_scripted_provider_plays_the_step_of_the_conversations_turn() -> None:
    steps = [AssistantMessage(content=str(n)) for n in range(3)]
    conversation: list[Message] = [AssistantMessage(content="0"), AssistantMessage(content="1")]

    provider = ScriptedProvider(steps)

    assert provider.complete(conversation, []).content == "2"
    assert provider.calls == 1
    with pytest.raises(RuntimeError, match="no step 4"):
        provider.complete([*conversation, AssistantMessage(content="2")], [])
