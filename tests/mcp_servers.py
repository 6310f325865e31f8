"""Real MCP servers written by others, for the proxy's tests and its benchmark.

`@modelcontextprotocol/server-filesystem` comes from the npm registry, pinned, installed into
tests/.node-mcp on first use (gitignored; a directory of its own, because `npm install
--no-save` prunes whatever else a directory holds, such as s3rver). `mcp-server-git` is a
PyPI package in the dev extra: `python -m mcp_server_git`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["FILESYSTEM_VERSION", "FilesystemUnavailable", "git_server_argv", "install_filesystem"]

FILESYSTEM_PACKAGE = "@modelcontextprotocol/server-filesystem"
FILESYSTEM_VERSION = "2026.8.31"
NODE_DIR = Path(__file__).parent / ".node-mcp"


class FilesystemUnavailable(RuntimeError):
    """npm could not install the filesystem server; the message says why."""


def install_filesystem() -> Path:
    """The pinned server's executable, npm-installing it unless it is there already."""
    binary = NODE_DIR / "node_modules" / ".bin" / "mcp-server-filesystem"
    package = NODE_DIR / "node_modules" / FILESYSTEM_PACKAGE / "package.json"
    if binary.exists() and json.loads(package.read_text())["version"] == FILESYSTEM_VERSION:
        return binary
    npm = shutil.which("npm")
    if npm is None:
        raise FilesystemUnavailable("npm is not installed")
    NODE_DIR.mkdir(exist_ok=True)
    done = subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", "--no-save",
         f"{FILESYSTEM_PACKAGE}@{FILESYSTEM_VERSION}"],
        cwd=NODE_DIR,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )  # fmt: skip
    if done.returncode != 0 or not binary.exists():
        tail = " ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
        raise FilesystemUnavailable(f"npm install {FILESYSTEM_PACKAGE} failed: {tail}")
    return binary


def git_server_argv(repository: Path) -> list[str]:
    """The PyPI `mcp-server-git` on one repository, run by this interpreter."""
    return [sys.executable, "-m", "mcp_server_git", "--repository", str(repository)]
