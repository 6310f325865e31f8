"""`benchmarks.context.alternating_puts`: paired rounds whose order turns, on a real bucket."""

from __future__ import annotations

from typing import Any

from benchmarks.context import alternating_puts


def test_each_put_leads_a_round_in_turn_and_meets_an_empty_bucket(s3: Any, bucket: str) -> None:
    calls: list[tuple[str, int, int]] = []  # (put, round, objects in the bucket before it)

    def put(name: str) -> Any:
        def call(i: int) -> None:
            held = s3.list_objects_v2(Bucket=bucket).get("KeyCount", 0)
            calls.append((name, i, held))
            s3.put_object(Bucket=bucket, Key=f"{name}/{i}", Body=b"x")

        return call

    times = alternating_puts(s3, bucket, [put("a"), put("b"), put("c")], rounds=4)
    assert [len(t) for t in times] == [4, 4, 4] and all(s > 0 for t in times for s in t)
    assert [(name, i) for name, i, _ in calls] == [
        ("a", -1), ("b", -1), ("c", -1),  # untimed, once each
        ("a", 0), ("b", 0), ("c", 0),
        ("b", 1), ("c", 1), ("a", 1),
        ("c", 2), ("a", 2), ("b", 2),
        ("a", 3), ("b", 3), ("c", 3),
    ]  # fmt: skip
    assert [held for _, i, held in calls if i >= 0] == [0] * 12
    buckets = [b["Name"] for b in s3.list_buckets()["Buckets"]]
    assert bucket not in buckets  # emptied and deleted at the end
