"""What the tests and the benchmarks share, and neither owns: a development kit, never shipped.

- `servers`: S3 servers on 127.0.0.1 (moto in-process or as a child, s3rver from npm, moto on
  https), a one-attempt client for them, and `Wire`, which counts what a client sent;
- `third_party`: the programs written by others the tests run (s3rver, the reference MCP
  servers, the conformance suite, the Inspector), pinned, installed from npm on first use;
- `documents`: deterministic texts of each width, and JSON, built to a size;
- `journal_costs`: the run journal's requests and bytes, counted on the wire.

`tests/` and `benchmarks/` import from here and never from each other. The wheel and the
sdist hold `s3claim` only (`[tool.setuptools.packages.find]`), so this stays in the checkout.
"""
