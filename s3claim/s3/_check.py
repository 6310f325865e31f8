"""One line of `s3claim doctor`'s report: a named check, its status, and the fix."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = ["Check", "Status"]


class Status(StrEnum):
    passed = "pass"
    failed = "fail"
    warning = "warn"
    skipped = "skip"


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    status: Status
    detail: str
    fix: str | None = None
