"""s3claim's benchmarks, side by side with the naive ways: `make bench` (or `QUICK=1`).

Three costs decide whether a claim-check store is worth it: what the model re-reads, what
each fetch moves, and what erasure takes. One harness (`python -m benchmarks`) runs the
studies: each measure in `benchmarks.measures` (s3claim and a baseline from
`benchmarks.baselines` in the same run, over HTTP on 127.0.0.1), the real model
(`benchmarks.model`), the load test (`benchmarks.load`) and the peers (`benchmarks.peers`).
Each returns a section for `benchmarks.report`, the one renderer of docs/benchmarks.md and
of docs/capacity.md's generated blocks. What the tests share with them is in `devkit`;
neither imports the other.
"""
