"""The proxy's settings (issue 46): one model, `ProxySettings`, whose fields are the options of
`s3claim mcp-proxy` and the keys of a `--config` file's `[proxy]` table; a flag given wins
over the file, and a value refused is one line naming the flag, the variable or the key."""

from __future__ import annotations

import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import typer.core
import typer.main
from typer.testing import CliRunner

from s3claim.bounds import DEFAULT_MAX_BYTES, DEFAULT_MAX_CALLS
from s3claim.cli import app
from s3claim.errors import ConfigurationError
from s3claim.mcp import HEADER_TIMEOUT_SECONDS, ProxySettings, read_gateway_settings
from s3claim.policy import ClaimCheckPolicy
from tests.mcp_proxy._support import PYTHON, ROOT, UPSTREAM, http_proxy
from tests.mcp_proxy.test_links_gateway import _link_to
from tests.test_docs import block_under

runner = CliRunner()
UPSTREAMS = f'[upstreams.dev]\ncommand = "{PYTHON}"\nargs = ["{UPSTREAM}"]\n'
NOWHERE = '[upstreams.dev]\ncommand = "/nonexistent/server"\n'
"""An upstream that cannot start: the command gets as far as starting it (exit 3)."""


def _params() -> dict[str, Any]:
    command = typer.main.get_command(app)
    assert isinstance(command, typer.core.TyperGroup)
    return {p.name: p for p in command.commands["mcp-proxy"].params if p.name}


def _proxy(tmp_path: Path, table: str, *argv: str, **env: str) -> tuple[int, str]:
    """`mcp-proxy --config` with `table` as its `[proxy]`: the exit code and stderr's last line."""
    path = tmp_path / "gateway.toml"
    path.write_text(f"{NOWHERE}[proxy]\n{table}\n")
    result = runner.invoke(
        app, ["mcp-proxy", "--tenant", "t", "--config", str(path), *argv], env=env
    )
    return result.exit_code, result.stderr.splitlines()[-1]


def test_every_setting_is_an_option_of_that_name_with_the_models_default() -> None:
    params = _params()
    settings = ProxySettings()
    for name in ProxySettings.model_fields:
        option = params[name]
        assert option.opts[0] == f"--{name.replace('_', '-')}"
        expected = None if name == "reuse" else getattr(settings, name)
        assert option.default == expected, name
    assert settings.policy == ClaimCheckPolicy()  # the policy's defaults, not copies of them
    assert (settings.max_calls, settings.max_read_bytes) == (DEFAULT_MAX_CALLS, DEFAULT_MAX_BYTES)
    assert settings.header_timeout == HEADER_TIMEOUT_SECONDS
    assert params["tenant"].envvar == "S3CLAIM_TENANT"
    assert params["header_timeout"].envvar == "S3CLAIM_HEADER_TIMEOUT"


def test_a_later_source_wins_and_a_refusal_names_the_source_of_the_value() -> None:
    file = ({"max_calls": 8, "threshold_chars": 2000}, lambda key: f"gw.toml: proxy.{key}")
    flags = ({"threshold_chars": 3000}, lambda key: f"--{key}")
    settings = ProxySettings.from_sources([file, flags])
    assert (settings.max_calls, settings.policy.threshold_chars) == (8, 3000)
    assert settings.model_fields_set == {"max_calls", "threshold_chars"}
    with pytest.raises(ConfigurationError) as caught:
        ProxySettings.from_sources([file, ({"max_tenant_calls": 9}, lambda key: f"--{key}")])
    assert str(caught.value) == "--max_tenant_calls: cannot be more than --max-calls (8), got 9"
    with pytest.raises(ConfigurationError) as caught:
        ProxySettings.from_sources([({"max_calls": 0, "secret": "s3cr3t"}, file[1])])
    assert str(caught.value) == (
        "gw.toml: proxy.max_calls: Input should be greater than or equal to 1; "
        "gw.toml: proxy.secret: Extra inputs are not permitted"
    )  # never the value


def test_a_proxy_table_sets_a_knob_and_a_flag_given_wins_over_it(tmp_path: Path) -> None:
    code, said = _proxy(tmp_path, 'store = "s3"')
    assert code == 2 and "S3CLAIM_BUCKET" in said  # the file chose the s3 store
    code, said = _proxy(tmp_path, 'store = "s3"', "--store", "memory")
    assert code == 3 and "no such command: '/nonexistent/server'" in said  # the flag won


def test_an_environment_variable_wins_over_the_file_and_is_named_when_refused(
    tmp_path: Path,
) -> None:
    assert _proxy(tmp_path, "header_timeout = 0.001", S3CLAIM_HEADER_TIMEOUT="5")[0] == 3
    code, said = _proxy(tmp_path, "header_timeout = 5", S3CLAIM_HEADER_TIMEOUT="0")
    assert (code, said) == (
        2,
        "s3claim: error: S3CLAIM_HEADER_TIMEOUT: Input should be greater than or equal to 0.01",
    )


@pytest.mark.parametrize(
    ("table", "argv", "said"),
    [
        ("max_calls = 0", (), "{path}: proxy.max_calls: Input should be greater than or equal"),
        ("", ("--max-calls", "0"), "--max-calls: Input should be greater than or equal to 1"),
        ('max_calls = "8"', (), "{path}: proxy.max_calls: Input should be a valid integer"),
        ("max_calls = 8", ("--max-tenant-calls", "9"), "--max-tenant-calls: cannot be more"),
        ("maxcalls = 8", (), "{path}: proxy.maxcalls: Extra inputs are not permitted"),
        ('pick_lines = "("', (), "{path}: proxy.pick_lines: Value error, not a valid regular"),
        ("", ("--max-read-bytes", "0"), "--max-read-bytes: Input should be greater than"),
        ('listen = "9000"', (), "{path}: proxy.listen: takes HOST:PORT"),
        ('link_base_url = "http://example.com"', (), "{path}: proxy.link_base_url: base_url"),
        ("reuse = { echo = 5 }", (), "{path}: proxy: reuse names an upstream's tools"),
        ("ttl_seconds = 34560001", (), "{path}: proxy.ttl_seconds: Input should be less than"),
    ],
)
def test_a_bad_value_from_either_source_is_one_line_naming_it_exit_2(
    tmp_path: Path, table: str, argv: tuple[str, ...], said: str
) -> None:
    path = tmp_path / "gateway.toml"
    path.write_text(f"{NOWHERE}[proxy]\n{table}\n")
    result = runner.invoke(app, ["mcp-proxy", "--tenant", "t", "--config", str(path), *argv])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("s3claim: error: ") and result.stderr.count("\n") == 1
    assert said.format(path=path) in result.stderr, result.stderr


def test_read_gateway_settings_is_the_proxy_table_as_written(tmp_path: Path) -> None:
    path = tmp_path / "gateway.toml"
    path.write_text(f"{UPSTREAMS}[proxy]\nmax_calls = 8\nstore = 'memory'\n")
    assert read_gateway_settings(path) == {"max_calls": 8, "store": "memory"}
    path.write_text(UPSTREAMS)
    assert read_gateway_settings(path) == {}


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return int(response.status), response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def test_max_read_bytes_bounds_the_link_reads_at_claims(
    sealed_module: None, tmp_path: Path
) -> None:
    """A window reserves 4 bytes a character: 20,000 fit in 100,000 bytes, 30,000 do not. The
    file's `[proxy]` threshold checks in a result of 3,000 characters (4,096 by default)."""
    config = tmp_path / "gateway.toml"
    config.write_text(f"{UPSTREAMS}[proxy]\nthreshold_chars = 2000\n")
    options = ("--tenant", "acme", "--store", "memory", "--references", "--config", str(config))
    with http_proxy(*options, "--max-read-bytes", "100000", upstream_argv=()) as proxy:
        url = _link_to(proxy, 3_000)
        assert _get(f"{url}?offset=0&length=20000")[0] == 200
        status, said = _get(f"{url}?offset=0&length=30000")
        assert status == 503 and b"(100000 bytes, --max-read-bytes" in said
        assert _get(url)[0] == 503  # a whole text reserves what it may hold of one: 8 MiB
    assert not any("Traceback" in line for line in proxy.stderr), "".join(proxy.stderr)[-3000:]


def test_the_docs_proxy_table_is_settings(tmp_path: Path) -> None:
    shown = block_under(ROOT / "docs" / "mcp-proxy.md", "Settings", "toml")
    path = tmp_path / "gateway.toml"
    path.write_text(f"{UPSTREAMS}{shown.code}")
    table = read_gateway_settings(path)
    settings = ProxySettings.from_sources([(table, lambda key: f"{path}: proxy.{key}")])
    assert settings.model_fields_set == set(table)
    assert (settings.address, settings.max_read_bytes) == (("127.0.0.1", 9000), 32 * 2**20)
