"""The README's promises that code can check: settings table, commands, the two set-up lines."""

from __future__ import annotations

import re
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
    documented = set(re.findall(r"^\| `s3claim (\w+)", README, re.MULTILINE))
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
