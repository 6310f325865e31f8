"""Timing and summary helpers: medians, percentiles, ratios and how to print them."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence

__all__ = ["fmt_bytes", "fmt_int", "fmt_ms", "fmt_ratio", "median", "percentile", "time_once"]


def time_once(call: Callable[[], object]) -> float:
    """Seconds one call took (monotonic, high resolution)."""
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else math.nan


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100): an observed value, never an interpolation."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def fmt_ms(seconds: float) -> str:
    if math.isnan(seconds):
        return "n/a"
    ms = seconds * 1000
    if ms >= 100:
        return f"{ms:,.0f} ms"
    if ms >= 10:
        return f"{ms:.1f} ms"
    if ms < 0.1:
        return f"{ms * 1000:.0f} µs"
    return f"{ms:.2f} ms"


def fmt_ratio(ratio: float) -> str:
    if math.isnan(ratio) or math.isinf(ratio):
        return "n/a"
    if ratio >= 100:
        return f"{ratio:,.0f}×"
    if ratio >= 10:
        return f"{ratio:.1f}×"
    return f"{ratio:.2f}×"


def fmt_int(value: float) -> str:
    return f"{value:,.0f}"


def fmt_bytes(value: float) -> str:
    """Bytes in binary units, exact below 1 KiB."""
    if value < 1024:
        return f"{value:,.0f} B"
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if value >= scale:
            return f"{value / scale:,.1f} {unit}"
    raise AssertionError("unreachable")
