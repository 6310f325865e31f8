"""The optional extras: what each brings, and the one line that says how to install it.

The core needs none of them. A feature behind an extra checks for its modules where it is
first used (the import of its family, or the command that runs it) and raises
`MissingExtraError` when one is absent: a `ModuleNotFoundError` whose message is the
`pip install` that fixes it, so the user reads one line instead of a traceback ending in some
dependency's dependency (`anyio`).

s3claim is not on the package index yet, so the command names where this copy was installed
from (PEP 610's `direct_url.json`): a checkout (`pip install -e '/src/s3claim[mcp]'`) or a
built wheel; `pip install 's3claim[mcp]'` only for a copy that came from an index.

README.md ("Install") lists the extras and what each brings.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import shlex
from pathlib import Path
from typing import NoReturn
from urllib.parse import unquote, urlparse

__all__ = ["EXTRAS", "MissingExtraError", "install_command", "require_extra", "reraise_missing"]

EXTRAS: dict[str, tuple[str, tuple[str, ...]]] = {
    "demo": ("the demo's embedded S3", ("moto", "flask", "flask_cors")),
    "mcp": ("the MCP proxy", ("mcp",)),
    "openai-agents": ("the OpenAI Agents SDK adapter", ("agents",)),
    "langchain": ("the LangChain adapter", ("langchain",)),
    "pydantic-ai": ("the pydantic-ai adapter", ("pydantic_ai",)),
}
"""Extra -> (the feature it enables, the top-level modules that feature imports)."""


class MissingExtraError(ModuleNotFoundError):
    """A feature's extra is not installed; the message is the command that installs it."""

    def __init__(
        self, extra: str, *, missing: str, alternative: str = "", feature: str = ""
    ) -> None:
        feature = feature or EXTRAS[extra][0]
        also = f" ({alternative})" if alternative else ""
        super().__init__(
            f"{feature} needs the {extra} extra ({missing} is not installed): "
            f"{install_command(extra)}{also}",
            name=missing,
        )
        self.extra = extra


def require_extra(extra: str, *, alternative: str = "", feature: str = "") -> None:
    """Raise `MissingExtraError` unless every module the extra brings can be imported.
    `feature`: what needs it, where that is not the extra's own feature (`s3claim serve`
    needs `mcp` for its HTTP server).

    Only looks (`find_spec`), never imports: cheap enough before a command starts.
    """
    for module in EXTRAS[extra][1]:
        if importlib.util.find_spec(module) is None:
            raise MissingExtraError(extra, missing=module, alternative=alternative, feature=feature)


def reraise_missing(extra: str, error: ModuleNotFoundError) -> NoReturn:
    """From `except ModuleNotFoundError`: the extra's absence as one line, else `error` as is.

    An import that fails although the extra's modules are there is a broken install, not a
    missing extra, and keeps its own traceback.
    """
    try:
        require_extra(extra)
    except MissingExtraError as missing:
        raise missing from None  # the dependency's own ImportError would bury the line
    raise error


def install_command(extra: str) -> str:
    """`pip install` of this s3claim with `extra`, from wherever this copy was installed."""
    where = _installed_from()
    if where is None:
        return f"pip install {shlex.quote(f's3claim[{extra}]')}"
    path, editable = where
    return f"pip install {'-e ' if editable else ''}{shlex.quote(f'{path}[{extra}]')}"


def _installed_from() -> tuple[str, bool] | None:
    """(local path, editable) when this s3claim came from a directory or a file; else None."""
    try:
        raw = importlib.metadata.distribution("s3claim").read_text("direct_url.json")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree, not installed
        root = Path(__file__).resolve().parents[1]
        return (str(root), True) if (root / "pyproject.toml").is_file() else None
    try:
        direct = json.loads(raw) if raw else None
    except ValueError:
        return None
    if not isinstance(direct, dict) or not str(direct.get("url", "")).startswith("file:"):
        return None
    path = unquote(urlparse(str(direct["url"])).path)
    dir_info = direct.get("dir_info")
    return path, isinstance(dir_info, dict) and dir_info.get("editable") is True
