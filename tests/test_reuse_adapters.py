"""Repeat reads through an adapter, beyond what every adapter is shown doing in
tests/test_knobs_in_adapters.py: per LangChain thread, ended by the window, refused at
construction when malformed."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from s3claim import ClaimCheck, Event, ManualClock, MemoryClaimCheckStore
from s3claim.errors import ConfigurationError
from s3claim.integrations.langchain import ClaimCheckMiddleware
from s3claim.wording import HANDLE_SEEN, reused_reference
from tests._counsel import CONTRACT
from tests.test_integration_langchain import _agent, _call, _invoke, _outputs, _steps

RAN: list[str] = []


@tool
def read_contract(name: str) -> str:
    """Return the full text of a named contract."""
    RAN.append("read_contract")
    return CONTRACT


@tool
def list_contracts() -> str:
    """The contracts' names."""
    RAN.append("list_contracts")
    return "msa"


@tool
def sign_contract(name: str) -> str:
    """Sign a contract (it changes it)."""
    RAN.append("sign_contract")
    return "signed"


TOOLS = (read_contract, list_contracts, sign_contract)


@pytest.fixture(autouse=True)
def _ran() -> None:
    RAN.clear()


def middleware(events: list[Event], clock: ManualClock | None = None) -> ClaimCheckMiddleware:
    store = MemoryClaimCheckStore(clock=clock or ManualClock())
    return ClaimCheckMiddleware(
        ClaimCheck(store),
        on_event=events.append,
        reuse={"read_contract": 300},
        read_only=["list_contracts"],
    )


def test_reuse_is_per_thread_and_ends_with_its_window() -> None:
    clock = ManualClock()
    events: list[Event] = []
    checked = middleware(events, clock)

    def twice(thread: str) -> list[Any]:
        replies = [_call("read_contract", "a", name="msa"), _call("read_contract", "b", name="msa")]
        model, agent = _agent(_steps(*replies, AIMessage("ok")), [checked], tools=TOOLS)
        _invoke(agent, "Read it twice.", thread=thread)
        return _outputs(model.requests[-1])

    twice("t1")
    twice("t2")  # another run: it runs again, once
    assert RAN == ["read_contract"] * 2
    clock.advance(300)
    first, again = twice("t1")  # the first read of t1 has expired: it runs again
    assert RAN == ["read_contract"] * 3
    handle = HANDLE_SEEN.search(first)
    assert handle is not None  # the repeat names the call that read it anew, "a"
    assert again == reused_reference(handle=handle.group(1), call_id="a", tool=None)


def test_a_bad_window_is_refused_at_construction() -> None:
    with pytest.raises(ConfigurationError, match=r"reuse\['read_contract'\]"):
        ClaimCheckMiddleware(ClaimCheck(MemoryClaimCheckStore()), reuse={"read_contract": -5})
    with pytest.raises(TypeError, match="read_only takes tool names"):
        ClaimCheckMiddleware(ClaimCheck(MemoryClaimCheckStore()), read_only="list_contracts")
