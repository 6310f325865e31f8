"""What `fetch_result` answers: the text the model reads back of a window (the window with its
footer or end note, a value with its members).

Pure: no store, no events. `s3claim.claim_tools` reads the window and hands it here, so the
four ways to a window share one rendering of where the window sits and how to go on (every
word of it in `s3claim.wording`).
"""

from __future__ import annotations

import s3claim.wording as wording
from s3claim._reading import LineWindow, PathRead, Read, Window, escape

__all__ = [
    "fitted_members",
    "render",
    "render_lines",
    "render_members",
    "render_offset",
    "render_path",
]


def render(answer: Read, handle: str, *, line: int | None, length: int | None = None) -> str:
    """What the model reads of any window (`line`: the line a read by line asked for;
    `length`: the window's, which bounds a page of members as it bounds characters)."""
    if isinstance(answer, PathRead):
        return render_path(answer, handle, length=length)
    if isinstance(answer, LineWindow):
        return render_lines(answer, handle, line=line)
    return render_offset(answer, handle)


def render_offset(window: Window, handle: str) -> str:
    """A window read by offset: the spec's footer while more remains, else an end note."""
    offset = window.offset
    if window.next_offset is not None:  # the spec's footer, word for word
        more = wording.footer(
            offset=offset,
            next_offset=window.next_offset,
            total_chars=window.total_chars,
            handle=handle,
        )
        return f"{window.text}\n\n{more}"
    if not window.text:
        return wording.past_end_note(
            total_chars=window.total_chars, total_lines=window.total_lines, offset=offset
        )
    end = wording.end_note(
        offset=offset,
        end=offset + len(window.text),
        total_chars=window.total_chars,
        total_lines=window.total_lines,
    )
    return f"{window.text}\n\n{end}"


def render_lines(window: LineWindow, handle: str, *, line: int | None) -> str:
    """What the model reads of a window read by line or from the end, and where it goes on."""
    if not window.text:
        return wording.past_end_note(
            total_chars=window.total_chars, total_lines=window.total_lines, line=line
        )
    first, last = window.first_line, window.last_line
    if window.next_offset is None:
        note = wording.end_note(
            offset=window.offset,
            end=window.end,
            total_chars=window.total_chars,
            total_lines=window.total_lines,
            first_line=first,
            last_line=last,
        )
    elif window.next_line is not None and first is not None and last is not None:
        note = wording.line_footer(
            first_line=first,
            last_line=last,
            total_lines=window.total_lines,
            offset=window.offset,
            end=window.end,
            total_chars=window.total_chars,
            next_line=window.next_line,
            handle=handle,
        )
    else:  # one line longer than the window: on by offset
        note = wording.long_line_footer(
            line=first or 1,
            total_lines=window.total_lines,
            offset=window.offset,
            end=window.end,
            total_chars=window.total_chars,
            handle=handle,
        )
    return f"{window.text}\n\n{note}"


def render_path(answer: PathRead, handle: str, *, length: int | None = None) -> str:
    """What the model reads of a value read by path: its text, its members, where it goes on;
    of a page of its members, the members alone, in at most `length` characters."""
    if answer.is_page:
        return render_members(answer, most_chars=length)
    parts = [answer.text]
    if answer.kind in ("object", "array"):
        parts.append(render_members(answer))
    if answer.next_offset is not None:
        parts.append(
            wording.path_footer(
                pointer=answer.pointer,
                shown_end=answer.next_offset,
                end=answer.end,
                handle=handle,
            )
        )
    return "\n\n".join(parts)


def render_members(answer: PathRead, *, most_chars: int | None = None) -> str:
    """The members paragraph of an object or array read by path; with `most_chars`, only as
    many of its rows as keep it that short (the others are counted, as the unlisted are; a
    page keeps one row at least, so that the next one goes on)."""
    return fitted_members(answer, most_chars=most_chars)[0]


def fitted_members(answer: PathRead, *, most_chars: int | None = None) -> tuple[str, int]:
    """`render_members`'s paragraph, and how many of `answer.members` it lists."""
    rows = [
        (f"{answer.pointer}/{_token(m.key, m.index, m.key_cut)}", m.kind, m.start, m.end)
        for m in answer.members
    ]
    while True:
        paragraph = wording.path_members(
            pointer=answer.pointer,
            kind=answer.kind,
            count=answer.member_count,
            start=answer.start,
            end=answer.end,
            rows=rows,
            first=answer.first_member,
        )
        if (
            most_chars is None
            or len(paragraph) <= most_chars
            or len(rows) <= (1 if answer.is_page else 0)
        ):
            return paragraph, len(rows)
        rows.pop()


def _token(key: str | None, index: int, cut: bool) -> str:
    """A member as its pointer token; a key cut for the listing ends in an ellipsis."""
    return str(index) if key is None else escape(key) + ("…" if cut else "")
