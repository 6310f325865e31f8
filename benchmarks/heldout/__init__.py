"""Held-out documents: real files nobody on the project wrote, committed with their provenance.

`provenance.json` beside them says, for each, where it came from, its licence, what was kept
(three are trimmed to a few hundred KB, and say how), its size and its SHA-256. `text(name)`
reads one and refuses a file whose bytes are not the ones recorded, so every run measures the
same text. Standard library only: the peers' venvs read them too.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["HERE", "provenance", "text"]

HERE = Path(__file__).resolve().parent


@cache
def provenance() -> dict[str, dict[str, Any]]:
    """Each file's record, by file name."""
    rows: list[dict[str, Any]] = json.loads((HERE / "provenance.json").read_text("utf-8"))
    return {row["file"]: row for row in rows}


@cache
def text(name: str) -> str:
    """The document `name`, checked against its recorded size and SHA-256."""
    row = provenance()[name]
    data = (HERE / name).read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if len(data) != row["bytes"] or digest != row["sha256"]:
        raise ValueError(f"{name}: {len(data)} bytes, sha256 {digest}; provenance.json differs")
    return data.decode("utf-8")
