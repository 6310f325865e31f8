"""The README's promises that code can check: settings table, commands, the two set-up lines."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from s3claim import S3ClaimSettings
from s3claim.cli import app

README = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")


def test_every_setting_is_in_the_table_and_nothing_else() -> None:
    documented = set(re.findall(r"^\| `(S3CLAIM_[A-Z_]+)` \|", README, re.MULTILINE))
    fields = {f"S3CLAIM_{name.upper()}" for name in S3ClaimSettings.model_fields}
    assert documented == fields


def test_every_command_is_documented() -> None:
    commands = {c.name or c.callback.__name__ for c in app.registered_commands if c.callback}
    documented = set(re.findall(r"^\| `s3claim ([\w-]+)", README, re.MULTILINE))
    assert commands == documented


def test_the_readme_opens_with_the_two_set_up_commands() -> None:
    first_block = README.split("```")[1]
    assert [line.split("#")[0].strip() for line in first_block.strip().splitlines()[1:]] == [
        "make demo",
        "make test",
    ]


def test_the_library_quickstart_runs_as_written() -> None:
    code = README.split("```python\n")[1].split("```")[0]
    namespace: dict[str, object] = {}
    exec(compile(code, "README.md", "exec"), namespace)
    result = namespace["result"]
    assert result.output == "Clause 1 sets the terms."  # type: ignore[attr-defined]
    kinds = [e.kind for e in result.events]  # type: ignore[attr-defined]
    assert kinds == [
        "model_called",
        "tool_result_stored",
        "model_called",
        "claim_fetched",
        "model_called",
        "run_finished",
    ]
    head = result.messages[2].content  # type: ignore[attr-defined]
    total = len(namespace["CONTRACT"])  # type: ignore[arg-type]
    assert f"[{total} characters, " in head
    assert f"[{total} characters, " in README  # the README shows what this code prints


def test_the_search_example_runs_as_written(capsys: pytest.CaptureFixture[str]) -> None:
    (code,) = [
        block.split("```")[0]
        for block in README.split("```python\n")[1:]
        if block.startswith("# search_result:")
    ]
    exec(compile(code, "README.md", "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    assert printed[-3] == "1 120085"  # the README shows what this code prints
    assert "# 1 120085" in README
    assert printed[-2:] == ["term 2718.", "Clause 2719. The parties agre"]
    assert "kind='claim_searched'" in printed[0] and "pattern_chars=10" in printed[0]


def _section(title: str) -> str:
    return README.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


@pytest.mark.parametrize("framework", ["OpenAI Agents SDK", "LangChain", "pydantic-ai"])
def test_each_framework_snippet_runs_as_written(framework: str) -> None:
    adapters = _section("Framework adapters")
    code = adapters.split(f"\n### {framework}\n", 1)[1].split("```python\n", 1)[1].split("```")[0]
    namespace: dict[str, object] = {}
    exec(compile(code, f"README.md ({framework})", "exec"), namespace)
    seen = namespace["seen"]
    assert isinstance(seen, str)
    assert seen.startswith("Clause 1. The parties agree to term 1.\n\n")
    assert re.search(
        r"\[135740 characters, \d+ not shown\. Call fetch_result with handle='claim:", seen
    )
    assert len(seen) < 700


def test_the_adapter_table_names_each_framework_hook_and_its_context_fields() -> None:
    rows = re.findall(r"^\| (.+?) \(`s3claim\[([a-z-]+)\]`\) \| (.+?) \|", README, re.MULTILINE)
    assert [(name, extra) for name, extra, _ in rows] == [
        ("OpenAI Agents SDK", "openai-agents"),
        ("LangChain v1", "langchain"),
        ("pydantic-ai", "pydantic-ai"),
    ]
    extras = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())
    assert {"openai-agents", "langchain", "pydantic-ai"} <= set(
        extras["project"]["optional-dependencies"]
    )
