"""The gateway's file (`s3claim mcp-proxy --config gateway.toml`): the upstreams it fronts.

    [upstreams.fs]                       # a stdio upstream
    command = "npx"
    args = ["-y", "@modelcontextprotocol/server-filesystem", "/srv/data"]
    env = { NODE_EXTRA_CA_CERTS = "/etc/ssl/ca.pem" }   # this upstream only
    pass_env = ["GITHUB_TOKEN"]          # passed on from the proxy's environment
    reuse = { read_text_file = 300 }     # repeat reads answered from their claim
    [upstreams.docs]                     # a streamable HTTP upstream
    url = "http://127.0.0.1:9000/mcp"

    [proxy]                              # the proxy's settings, as the flags name them
    max_calls = 16

The `[proxy]` table holds `s3claim.mcp.ProxySettings`, one set for every upstream, checked
with the command line's flags (a flag given wins) by `ProxySettings.from_sources`;
`read_gateway_settings` reads it. `reuse` is an upstream's, since it names its own tools:
`read_gateway_reuse` reads it, as the gateway names the tools (`fs__read_text_file`), and
the proxy refuses at start any that its server does not mark read-only (`readOnlyHint`).

TOML read by `tomllib`, validated by pydantic at this boundary: an unknown key, an upstream
that is not exactly one of `command` and `url`, a name that cannot prefix a tool
(`UPSTREAM_NAME`), or nesting too deep for `tomllib` is one `ConfigurationError` line naming
the file and what is wrong.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from s3claim.errors import ConfigurationError
from s3claim.mcp._gateway import SEPARATOR, UPSTREAM_NAME, bad_name
from s3claim.mcp._targets import HttpUpstream, StdioUpstream, UpstreamTarget, upstream_environment

__all__ = ["read_gateway_file", "read_gateway_reuse", "read_gateway_settings"]

_MAX_BYTES = 1024**2  # a gateway file is a few lines; a bigger one is not one


_Variable = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]


class _Upstream(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    command: Annotated[str, Field(min_length=1)] | None = None
    args: list[str] = []
    env: dict[_Variable, str] = {}
    pass_env: list[_Variable] = []
    cwd: str | None = None
    url: str | None = None
    reuse: dict[Annotated[str, Field(min_length=1)], Annotated[int, Field(ge=0, strict=True)]] = {}

    @model_validator(mode="after")
    def _one_kind(self) -> _Upstream:
        if (self.command is None) == (self.url is None):
            raise ValueError("give exactly one of command (a stdio upstream) or url (HTTP)")
        if self.url is not None:
            stdio_only = [
                k for k in ("args", "env", "pass_env", "cwd") if k in self.model_fields_set
            ]
            if stdio_only:
                raise ValueError(f"{', '.join(stdio_only)}: for a stdio upstream (command) only")
            if not self.url.startswith(("http://", "https://")):
                raise ValueError("url must be an http:// or https:// URL")
        return self

    def target(self, environ: Mapping[str, str], max_result_bytes: int | None) -> UpstreamTarget:
        if self.url is not None:
            return HttpUpstream(url=self.url, max_event_bytes=max_result_bytes)
        assert self.command is not None
        for name in self.pass_env:
            if name not in environ:
                raise ValueError(f"pass_env: the proxy's environment has no {name}")
        env = {**upstream_environment(environ, self.pass_env), **self.env}
        return StdioUpstream(
            command=self.command,
            args=tuple(self.args),
            cwd=self.cwd,
            env=env,
            max_line_bytes=max_result_bytes,
        )


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    upstreams: Annotated[dict[str, _Upstream], Field(min_length=1)]
    proxy: dict[str, object] = {}  # checked with the flags, by `ProxySettings.from_sources`

    @field_validator("proxy")
    @classmethod
    def _no_reuse(cls, value: dict[str, object]) -> dict[str, object]:
        if "reuse" in value:
            raise ValueError(
                "reuse names an upstream's tools: give each upstream a reuse table "
                "([upstreams.NAME] reuse = { read_text_file = 300 })"
            )
        return value

    @field_validator("upstreams", mode="before")
    @classmethod
    def _names(cls, value: object) -> object:
        for name in value if isinstance(value, dict) else ():
            if not UPSTREAM_NAME.fullmatch(name):
                raise ValueError(bad_name(name))
        return value


def read_gateway_file(
    path: Path, environ: Mapping[str, str], *, max_result_bytes: int | None = None
) -> dict[str, UpstreamTarget]:
    """The upstreams of the gateway file at `path`, in its order, each a target as the command
    line would build it: a stdio upstream's environment is the allowlist of `environ`, then
    its `pass_env` names and its `env` (`upstream_environment`). Raises `ConfigurationError`
    (one line, naming the file) for a file that cannot be read or is not a gateway's."""
    parsed = _parsed(path)
    targets: dict[str, UpstreamTarget] = {}
    for name, upstream in parsed.upstreams.items():
        try:
            targets[name] = upstream.target(environ, max_result_bytes)
        except ValueError as exc:  # a pass_env name the proxy's environment lacks
            raise ConfigurationError(f"{path}: upstreams.{name}.{exc}") from None
    return targets


def read_gateway_reuse(path: Path) -> dict[str, int]:
    """The gateway file's `reuse` tables, every upstream's, as the gateway names the tools:
    `{"fs__read_text_file": 300}` (for `ClaimCheckProxy(reuse=...)`; 0 means none)."""
    parsed = _parsed(path)
    return {
        f"{name}{SEPARATOR}{tool}": seconds
        for name, upstream in parsed.upstreams.items()
        for tool, seconds in upstream.reuse.items()
        if seconds
    }


def read_gateway_settings(path: Path) -> dict[str, object]:
    """The gateway file's `[proxy]` table, as it is: the proxy's settings by the flags'
    names with underscores (`max_calls = 8`), for `ProxySettings.from_sources` to check
    with the command line's. `reuse` is refused there, as it names an upstream's tools."""
    return dict(_parsed(path).proxy)


def _parsed(path: Path) -> _File:
    try:
        with path.open("rb") as stream:
            raw = stream.read(_MAX_BYTES + 1)
        if len(raw) > _MAX_BYTES:
            raise ConfigurationError(f"{path}: over {_MAX_BYTES} bytes: not a gateway file")
        data = tomllib.loads(raw.decode("utf-8"))
    except OSError as exc:
        raise ConfigurationError(f"{path}: cannot be read ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise ConfigurationError(f"{path}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigurationError(f"{path}: not valid TOML ({exc})") from None
    except RecursionError:  # tomllib recurses into inline tables and arrays
        raise ConfigurationError(f"{path}: nested too deeply to be a gateway file") from None
    try:
        parsed = _File.model_validate(data)
    except ValidationError as exc:
        raise ConfigurationError(f"{path}: {_first(exc)}") from None
    return parsed


def _first(error: ValidationError) -> str:
    """The first problem, where it is and what: the offending value is left out."""
    problems = error.errors(include_url=False, include_input=False, include_context=False)
    item = problems[0]
    where = ".".join(str(part) for part in item["loc"])
    said = "unknown key" if item["type"] == "extra_forbidden" else item["msg"]
    said = said.removeprefix("Value error, ")
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"{where}: {said}{more}" if where else f"{said}{more}"
