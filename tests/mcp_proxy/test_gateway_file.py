"""The gateway's file (`s3claim mcp-proxy --config`): what it may hold, and every mistake in it
one line naming the file, exit 2. In-process: nothing here starts an upstream."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from s3claim.cli import app
from s3claim.errors import ConfigurationError
from s3claim.mcp import HttpUpstream, StdioUpstream, read_gateway_file
from tests.mcp_proxy._support import ROOT
from tests.test_docs import block_under

runner = CliRunner()
GOOD = """
[upstreams.fs]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "/srv/data"]
env = { NODE_EXTRA_CA_CERTS = "/etc/ssl/ca.pem", MODE = "ro" }
pass_env = ["S3CLAIM_TEST_PASSED"]
cwd = "/srv"
[upstreams.git-2]
command = "uvx"
args = ["mcp-server-git", "--repository", "/srv/repo"]
[upstreams.docs]
url = "http://127.0.0.1:9000/mcp"
"""


def test_a_file_gives_each_upstream_in_its_order_with_its_own_environment(
    tmp_path: Path,
) -> None:
    path = tmp_path / "gateway.toml"
    path.write_text(GOOD)
    environ = {"PATH": "/bin", "AWS_SECRET_ACCESS_KEY": "s", "S3CLAIM_TEST_PASSED": "yes"}
    targets = read_gateway_file(path, environ, max_result_bytes=4096)
    assert list(targets) == ["fs", "git-2", "docs"]
    fs, git, docs = targets.values()
    assert isinstance(fs, StdioUpstream) and isinstance(git, StdioUpstream)
    assert fs.command == "npx" and fs.args[-1] == "/srv/data" and fs.cwd == "/srv"
    assert dict(fs.env) == {
        "PATH": "/bin",
        "S3CLAIM_TEST_PASSED": "yes",
        "NODE_EXTRA_CA_CERTS": "/etc/ssl/ca.pem",
        "MODE": "ro",
    }
    assert dict(git.env) == {"PATH": "/bin"}  # the allowlist alone: fs's env is fs's
    assert fs.max_line_bytes == 4096
    assert docs == HttpUpstream(url="http://127.0.0.1:9000/mcp", max_event_bytes=4096)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("[upstreams.fs\ncommand = 'x'", "not valid TOML (Expected ']'"),
        ("", "upstreams: Field required"),
        ("[upstreams]", "upstreams: Dictionary should have at least 1 item"),
        ("store = 's3'\n[upstreams.a]\ncommand = 'x'", "store: unknown key"),
        ("[upstreams.a]\ncommand = 'x'\ncomand = 'y'", "upstreams.a.comand: unknown key"),
        ("[upstreams.a]\ncommand = 'x'\nurl = 'http://h/mcp'", "give exactly one of command"),
        ("[upstreams.a]\nargs = ['x']", "give exactly one of command (a stdio upstream) or url"),
        ("[upstreams.a]\ncommand = ''", "upstreams.a.command: String should have at least 1"),
        ("[upstreams.a]\nurl = 'http://h/mcp'\nenv = {}", "env: for a stdio upstream"),
        ("[upstreams.a]\nurl = 'file:///x'", "url must be an http:// or https:// URL"),
        ("[upstreams.a]\ncommand = 'x'\nargs = 'y'", "upstreams.a.args: Input should be a valid"),
        ("[upstreams.Fs]\ncommand = 'x'", "an upstream's name is 1 to 32 lower-case letters"),
        ("[upstreams.a__b]\ncommand = 'x'", "got 'a__b'"),
        (f"[upstreams.{'a' * 33}]\ncommand = 'x'", "an upstream's name is 1 to 32"),
        ("[upstreams.a]\ncommand = 'x'\nenv = { 'A B' = 'secret' }", "upstreams.a.env.A B"),
        ("[upstreams.a]\ncommand = 'x'\npass_env = ['S3CLAIM_TEST_UNSET']", "has no S3CLAIM"),
        ("[upstreams.a]\nb = 1\nc = 2", "upstreams.a.b: unknown key (and 1 more)"),
    ],
)
def test_each_mistake_in_the_file_is_one_line_naming_it(
    tmp_path: Path, text: str, said: str
) -> None:
    path = tmp_path / "gateway.toml"
    path.write_text(text)
    with pytest.raises(ConfigurationError) as caught:
        read_gateway_file(path, {"PATH": "/bin"})
    message = str(caught.value)
    assert message.startswith(f"{path}: ") and "\n" not in message
    assert said in message, message
    assert "secret" not in message  # what a key holds is never repeated


def test_a_file_that_cannot_be_read_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "latin1.toml").write_bytes(b"[upstreams.a]\ncommand = '\xe9'\n")
    for name, said in [
        ("missing.toml", "cannot be read (No such file or directory)"),
        (".", "cannot be read (Is a directory)"),
        ("latin1.toml", "not UTF-8 text"),
    ]:
        with pytest.raises(ConfigurationError, match=r"\(|UTF-8") as caught:
            read_gateway_file(tmp_path / name, {})
        assert str(caught.value) == f"{tmp_path / name}: {said}"


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--", "npx", "x"], "--config names the upstreams: give no command after --"),
        (["--upstream-url", "http://127.0.0.1:9/mcp"], "--config names the upstreams"),
        (["--upstream-env", "A=b"], "in a --config file, give each upstream its env"),
    ],
)
def test_the_command_line_takes_the_file_or_an_upstream_not_both(
    tmp_path: Path, argv: list[str], said: str
) -> None:
    path = tmp_path / "gateway.toml"
    path.write_text(GOOD)
    result = runner.invoke(app, ["mcp-proxy", "--tenant", "t", "--config", str(path), *argv])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("s3claim: error: ") and result.stderr.count("\n") == 1
    assert said in result.stderr, result.stderr


def test_a_malformed_file_stops_the_command_in_one_line_before_anything_starts(
    tmp_path: Path,
) -> None:
    path = tmp_path / "gateway.toml"
    path.write_text("[upstreams.a]\ncommand = 'x'\nurl = 'http://h/mcp'\n")
    result = runner.invoke(app, ["mcp-proxy", "--tenant", "t", "--config", str(path)])
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        f"s3claim: error: {path}: upstreams.a: give exactly one of command (a stdio upstream) "
        "or url (HTTP)\n"
    )


def test_the_docs_example_is_a_gateway_file(tmp_path: Path) -> None:
    shown = block_under(ROOT / "docs" / "mcp-proxy.md", "One gateway, many servers", "toml")
    path = tmp_path / "gateway.toml"
    path.write_text(shown.code)
    targets = read_gateway_file(path, {"PATH": "/bin", "GITHUB_TOKEN": "t"})
    assert list(targets) == ["fs", "git", "docs"]
    assert targets["fs"].env == {  # type: ignore[union-attr]
        "PATH": "/bin",
        "GITHUB_TOKEN": "t",
        "NODE_EXTRA_CA_CERTS": "/etc/ssl/ca.pem",
    }


@pytest.mark.parametrize(
    "nested", ["x = " + "{a = " * 3_000 + "1" + "}" * 3_000, "x = " + "[" * 3_000 + "]" * 3_000]
)
def test_a_file_nested_too_deep_for_the_toml_reader_is_one_line(
    tmp_path: Path, nested: str
) -> None:
    """tomllib recurses into inline tables and arrays: 3,000 levels were a RecursionError,
    a traceback of about 1,100 lines and exit 1 (issue 48)."""
    path = tmp_path / "gateway.toml"
    path.write_text(nested)
    with pytest.raises(ConfigurationError) as caught:
        read_gateway_file(path, {})
    assert str(caught.value) == f"{path}: nested too deeply to be a gateway file"
    result = runner.invoke(app, ["mcp-proxy", "--tenant", "t", "--config", str(path)])
    assert result.exit_code == 2, result.output
    assert result.stderr == f"s3claim: error: {path}: nested too deeply to be a gateway file\n"
