"""The load study (`make bench-load`): how many concurrent runs one bucket serves, here.

- `model`: the capacity model (S3 requests per operation, prices, cost per 1,000 runs);
  `benchmarks/tests/test_capacity_model.py` holds the simulated run to it request for request.
- `agent`: N concurrent simulated agent runs in one process against one bucket, each
  counted per operation with botocore hooks (one cell: `python -m benchmarks.load.agent`).
- `faults`: a loopback HTTP relay in front of the S3 server that counts requests per
  operation and can answer a share of them `503 SlowDown` for a while.
- `fleet`: 1, 2 and 4 `s3claim mcp-proxy --listen` processes on one bucket under an MCP
  load generator; one of them is SIGKILLed and restarted mid-load.
- `study`: the sweep, the chaos pass, and the results they save (capacity.json);
- `report`: docs/capacity.md's two sections and its plot, from those results.

Everything binds 127.0.0.1.
"""
