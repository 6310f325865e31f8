"""s3claim's benchmarks, side by side with the naive ways: `make bench` (or `QUICK=1`).

Three costs decide whether a claim-check store is worth it: what the model re-reads, what
each fetch moves, and what erasure takes. Each measure in `benchmarks.measures` runs s3claim
and a baseline from `benchmarks.baselines` in the same run, over HTTP on 127.0.0.1, and
returns tables for `benchmarks.report`, which writes docs/benchmarks.md and the plot.
"""
