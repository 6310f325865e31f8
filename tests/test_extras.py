"""A missing extra is one line naming the install, at the feature's first use.

tests/test_packaging.py proves it where the extras really are absent (a clean venv with the
wheel alone); here each path is driven in this process, with a module hidden from `import`,
and the install command is checked for every way s3claim can have been installed.
"""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from s3claim.cli import app
from s3claim.extras import EXTRAS, MissingExtraError, install_command, require_extra

ROOT = Path(__file__).parent.parent
runner = CliRunner()


def test_every_extra_a_feature_needs_is_in_the_table_and_no_other() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    extras = set(pyproject["project"]["optional-dependencies"])
    assert set(EXTRAS) == extras - {"dev", "bench"}  # the two that only this repository uses


class _Installed:
    """A stand-in for `importlib.metadata.distribution("s3claim")` with a given direct_url."""

    def __init__(self, direct_url: dict[str, Any] | None) -> None:
        self._text = None if direct_url is None else json.dumps(direct_url)

    def read_text(self, name: str) -> str | None:
        assert name == "direct_url.json"
        return self._text


@pytest.mark.parametrize(
    ("direct_url", "command"),
    [
        (
            {"url": "file:///src/s3claim", "dir_info": {"editable": True}},
            "pip install -e '/src/s3claim[mcp]'",
        ),
        ({"url": "file:///src/s3claim", "dir_info": {}}, "pip install '/src/s3claim[mcp]'"),
        (
            {"url": "file:///tmp/my%20dist/s3claim-1.0-py3-none-any.whl", "archive_info": {}},
            "pip install '/tmp/my dist/s3claim-1.0-py3-none-any.whl[mcp]'",
        ),
        (None, "pip install 's3claim[mcp]'"),  # from an index
        ({"url": "https://example.invalid/s3claim.whl"}, "pip install 's3claim[mcp]'"),
    ],
)
def test_the_install_named_is_where_this_copy_came_from(
    monkeypatch: pytest.MonkeyPatch, direct_url: dict[str, Any] | None, command: str
) -> None:
    monkeypatch.setattr(importlib.metadata, "distribution", lambda _: _Installed(direct_url))
    assert install_command("mcp") == command


def test_run_from_a_source_tree_names_an_editable_install(monkeypatch: pytest.MonkeyPatch) -> None:
    def not_installed(name: str) -> None:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", not_installed)
    assert install_command("mcp") == f"pip install -e '{ROOT}[mcp]'"


def test_a_present_extra_passes_and_an_absent_one_names_its_module(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    require_extra("demo")  # the dev extra has them all
    monkeypatch.setitem(sys.modules, "flask_cors", None)  # the last of the extra's three
    with pytest.raises(MissingExtraError) as caught:
        require_extra("demo")
    assert caught.value.name == "flask_cors"
    assert isinstance(caught.value, ModuleNotFoundError)
    assert str(caught.value) == (
        "the demo's embedded S3 needs the demo extra (flask_cors is not installed): "
        f"{install_command('demo')}"
    )


def test_mcp_proxy_without_the_sdk_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)
    result = runner.invoke(app, ["mcp-proxy", "--tenant", "acme", "--", "true"])
    assert result.exit_code == 2
    assert result.stderr == (
        f"s3claim: error: the MCP proxy needs the mcp extra (mcp is not installed): "
        f"{install_command('mcp')}\n"
    )


def test_serve_without_the_sdk_is_one_line_naming_serve(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not "the MCP proxy needs ...": `serve` needs the SDK for its HTTP server (issue 48,
    item 6), and the README's list of extras says so."""
    monkeypatch.setitem(sys.modules, "mcp", None)
    result = runner.invoke(app, ["serve"])
    assert result.exit_code == 2
    assert result.stderr == (
        f"s3claim: error: s3claim serve needs the mcp extra (mcp is not installed): "
        f"{install_command('mcp')}\n"
    )
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert "`mcp` (the MCP proxy and `s3claim serve`)" in readme


def test_import_s3claim_mcp_without_the_sdk_raises_the_line_alone() -> None:
    """The SDK hidden, its dependencies (anyio, ...) present: the line names the SDK."""
    probe = (
        "import sys; sys.modules['mcp'] = None\n"
        "try:\n    import s3claim.mcp\n"
        "except ModuleNotFoundError as exc:\n"
        "    print(type(exc).__name__, exc.__cause__, exc.__suppress_context__)\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == [
        "MissingExtraError None True",
        f"the MCP proxy needs the mcp extra (mcp is not installed): {install_command('mcp')}",
    ]


def test_a_broken_install_keeps_its_own_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """An import that fails with the extra's modules present is not called a missing extra."""
    from s3claim.extras import reraise_missing

    broken = ModuleNotFoundError("No module named 'yarl'", name="yarl")
    with pytest.raises(ModuleNotFoundError) as caught:
        reraise_missing("mcp", broken)
    assert caught.value is broken
