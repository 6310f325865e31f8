"""JSON documents for the path-read budgets and benchmarks, built to a size, deterministic.

- `records(chars)`: a list of records, the shape of an API response (pretty-printed, one
  record a few hundred characters).
- `nested(chars)`: botocore's `data/endpoints.json` (partitions, services, endpoints: about
  ten levels deep) with its partitions repeated, each copy renamed, until the size is reached.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["nested", "nested_pointers", "record_pointers", "records"]


def record_pointers(count: int) -> tuple[str, ...]:
    """Pointers at the start, middle and end of `records` of `count` records."""
    return ("", "/0", f"/{count // 2}/name", f"/{count - 1}/tags/1", f"/{count * 2 // 5}")


def nested_pointers(partitions: int) -> tuple[str, ...]:
    """Pointers into `nested` with this many partitions (8 a copy, `aws` first in each)."""
    last = (partitions - 1) // 8 * 8  # the last copy's `aws` partition
    return (
        "",
        "/partitions",
        "/partitions/0/services/ec2/endpoints/us-east-1",
        f"/partitions/{last}/services/s3",
        f"/partitions/{partitions - 1}/regions",
        f"/partitions/{last // 16 * 8}/services/sts/endpoints/aws-global/credentialScope/region",
    )


def records(chars: int) -> str:
    """A pretty-printed JSON list of records, at least `chars` characters long."""
    parts: list[str] = []
    size, n = 2, 0
    while size < chars:
        record = {
            "id": n,
            "name": f"record {n}",
            "status": "active" if n % 3 else "closed",
            "amount": round(n * 1.25, 2),
            "tags": ["alpha", f"group-{n % 17}"],
            "note": "lorem ipsum dolor sit amet, consectetur adipiscing elit " * (1 + n % 3),
        }
        part = json.dumps(record, indent=2).replace("\n", "\n  ")
        parts.append("  " + part)
        size += len(part) + 4
        n += 1
    return "[\n" + ",\n".join(parts) + "\n]"


@cache
def _endpoints() -> dict[str, Any]:
    import botocore

    path = Path(botocore.__file__).parent / "data" / "endpoints.json"
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def nested(chars: int) -> str:
    """botocore's endpoints.json, its partitions repeated to at least `chars` characters."""
    document = dict(_endpoints())
    originals = document["partitions"]
    one_copy = len(json.dumps(originals, indent=2))
    copies = max(1, -(-chars // one_copy))
    document["partitions"] = [
        {**partition, "partition": f"{partition['partition']}-{copy}"}
        for copy in range(copies)
        for partition in originals
    ]
    return json.dumps(document, indent=2)
