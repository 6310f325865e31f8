"""`python -m devkit`: npm-install every pinned package the tests and benchmarks run (s3rver,
the reference MCP servers, the conformance suite with its Node 22, the MCP Inspector), each
into its own directory, side by side. They install on first use anyway; `make test` runs this
once with the system's Python, beside the dev venv's install (the installs need only the
standard library), so that no test worker waits on npm (or races another)."""

from devkit.third_party import install_all

if __name__ == "__main__":
    install_all()
