"""A window of a claim, and the arguments a read may take (checked before any request)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_FETCH_CHARS", "Window", "check_line", "check_window"]

DEFAULT_FETCH_CHARS = 4096
"""One window: enough to read on, small enough not to undo the check-in."""


@dataclass(frozen=True, slots=True)
class Window:
    """`text` is content[offset:offset + limit], in characters; `next_offset` is None at the end.

    `total_lines` is the claim's line count (a line ends at `\\n`; see `count_lines`).
    """

    text: str
    offset: int
    total_chars: int
    next_offset: int | None
    total_lines: int | None = None

    @classmethod
    def of(
        cls, text: str, *, offset: int, total_chars: int, total_lines: int | None = None
    ) -> Window:
        end = offset + len(text)
        return cls(text, offset, total_chars, end if end < total_chars else None, total_lines)

    def __repr__(self) -> str:  # the text is tool content: never in a repr
        return (
            f"Window(offset={self.offset}, chars={len(self.text)}, "
            f"total_chars={self.total_chars}, next_offset={self.next_offset})"
        )


def check_window(offset: int, limit: int) -> None:
    """Refuse window arguments no store can serve (a developer mistake, so it raises)."""
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise ValueError(f"offset must be a non-negative integer, got {offset!r}")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit must be a positive integer, got {limit!r}")


def check_line(line: int, limit: int) -> None:
    """Refuse line arguments no store can serve (a developer mistake, so it raises)."""
    if isinstance(line, bool) or not isinstance(line, int) or line < 1:
        raise ValueError(f"line must be a positive integer (lines count from 1), got {line!r}")
    check_window(0, limit)
