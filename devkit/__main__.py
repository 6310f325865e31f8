"""`python -m devkit`: npm-install every pinned package the tests and benchmarks run (s3rver,
the reference MCP servers, the conformance suite with its Node 22, then the MCP Inspector that
runs on it), each into its own directory, side by side. They install on first use anyway;
`make test` runs this once before the suite, beside the type check, so that no test worker
waits on npm (or races another)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from devkit.mcp_servers import install_everything, install_inspector
from devkit.servers import install_s3rver

if __name__ == "__main__":
    with ThreadPoolExecutor() as pool:
        for done in [
            pool.submit(f) for f in (install_s3rver, install_everything, install_inspector)
        ]:
            done.result()
