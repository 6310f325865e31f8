"""The adapters' shared bridge, without a framework: the edges every adapter inherits."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass

import pytest

from s3claim import ClaimCheck, MemoryClaimCheckStore, Scope
from s3claim.errors import ConfigurationError
from s3claim.integrations._bridge import Bridge, field_of, scope_of
from s3claim.wording import end_note

SCOPE = Scope(tenant="acme", run="matter-7")


def test_context_fields_are_read_as_attributes_or_keys() -> None:
    @dataclass
    class Deps:
        tenant: str

    assert field_of(Deps("acme"), "tenant") == "acme"
    assert field_of({"tenant": "acme"}, "tenant") == "acme"
    assert field_of(None, "tenant") is None
    assert field_of(object(), "tenant") is None


def test_a_scope_that_is_not_two_short_strings_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match=r"tenant \(int\) and run \(str\) must be strings"):
        scope_of(42, "r", tenant_hint="", run_hint="")
    with pytest.raises(ConfigurationError, match=r"tenant \(str\) and run \(str\)"):
        scope_of("", "r", tenant_hint="", run_hint="")
    assert scope_of("a", "r", tenant_hint="", run_hint="") == Scope("a", "r")


def test_a_result_the_boundary_refuses_reaches_the_model_as_an_error() -> None:
    bridge = Bridge(ClaimCheck(MemoryClaimCheckStore()))
    call = bridge.begin("read", {}, scope=SCOPE, agent="a")
    error = json.loads(bridge.finish(call, "bad \ud800 text"))
    assert error["error"] == "invalid_result"
    assert "lone surrogate at index 4" in error["message"]
    assert "bad" not in error["message"]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [("not json", "are not valid JSON"), ("[1, 2]", "must be a JSON object")],
)
def test_claim_tool_arguments_that_are_not_a_json_object_are_refused(
    arguments: str, message: str
) -> None:
    bridge = Bridge(ClaimCheck(MemoryClaimCheckStore()))
    call = asyncio.run(
        bridge.aside(bridge.begin, "fetch_result", arguments, scope=SCOPE, agent="a")
    )
    assert call.answer is not None and call.answer.is_error
    assert json.loads(call.answer.text) == {
        "error": "invalid_arguments",
        "message": f"the arguments {message}",
    }


def test_a_claim_tool_reads_what_the_bridge_checked_in() -> None:
    bridge = Bridge(ClaimCheck(MemoryClaimCheckStore()))
    content = "x" * 10_000
    call = bridge.begin("read", {}, scope=SCOPE, agent="a")
    head = asyncio.run(bridge.aside(bridge.finish, call, content))
    handle = head.split("handle='", 1)[1].split("'", 1)[0]
    fetch = bridge.begin("fetch_result", {"handle": handle, "offset": 8192}, scope=SCOPE, agent="a")
    assert fetch.answer is not None
    assert fetch.answer.text == "x" * (10_000 - 8192) + "\n\n" + end_note(
        offset=8192, end=10_000, total_chars=10_000, total_lines=1
    )


def test_only_a_claim_check_is_accepted() -> None:
    with pytest.raises(TypeError, match="expected a ClaimCheck, got MemoryClaimCheckStore"):
        Bridge(MemoryClaimCheckStore())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("adapter", "framework", "extra"),
    [
        ("openai_agents", "agents", "openai-agents"),
        ("langchain", "langchain", "langchain"),
        ("pydantic_ai", "pydantic_ai", "pydantic-ai"),
    ],
)
def test_an_adapter_without_its_framework_names_the_extra(
    adapter: str, framework: str, extra: str
) -> None:
    import subprocess
    import sys

    from s3claim.extras import EXTRAS, install_command

    probe = (
        f"import sys; sys.modules[{framework!r}] = None\n"
        f"try:\n    import s3claim.integrations.{adapter}\n"
        "except ModuleNotFoundError as exc:\n    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == (
        f"{EXTRAS[extra][0]} needs the {extra} extra ({framework} is not installed): "
        f"{install_command(extra)}"
    )
