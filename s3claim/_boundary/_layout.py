"""How a structured tool result is laid out as text: valid JSON, one record to a line.

A list or a dict a tool returns is what an agent most often reads a part of: the 1,500th
record, the record naming a customer. Written as one compact line, a line reader (`line`,
a search's `line`) sees a single line of a megabyte. So the serialised JSON is broken at
its outer members, and only there:

- a top-level array: one element per line, `[\\n{...},\\n{...}\\n]`;
- a top-level object: one member per line, and an array that is a member's value (the
  `{"items": [...], "count": 2000}` of an API response) one element per line too;
- everything deeper stays compact, as the serialiser wrote it: a record is one line.

Only newlines are inserted, between tokens, so the text is still valid JSON whose value is
the result's, every member's characters are the serialiser's own (a read by `path` or a
search finds them as they were written), and a value with no members (`[]`, `{}`, a number)
is unchanged. Strings are never laid out: a tool returning text returns that text.
"""

from __future__ import annotations

from s3claim.safejson import SCAN

__all__ = ["records_on_lines"]


def records_on_lines(compact: str) -> str:
    """`compact` (JSON with no whitespace between tokens) with its outer members on lines.

    Anything else (another layout, nesting deeper than the parser recurses) comes back as
    it was: the layout helps reading, it must never fail a result.
    """
    try:
        return _laid_out(compact, 0, len(compact), envelope=True)
    except (ValueError, RecursionError, StopIteration, IndexError):
        return compact


def _laid_out(text: str, start: int, end: int, *, envelope: bool) -> str:
    """The container at `text[start:end]` with one member per line (an object's array
    members too when it is the `envelope`)."""
    first = text[start]
    if first not in "[{" or end - start <= 2:  # a scalar, `[]` or `{}`: nothing to break
        return text[start:end]
    is_object = first == "{"
    lines: list[str] = []
    pos = start + 1
    while True:
        member = pos
        if is_object:
            _, pos = SCAN(text, pos)  # the key
            if text[pos] != ":":
                raise ValueError("not compact JSON")
            pos += 1
        value = pos
        _, pos = SCAN(text, pos)
        if envelope and is_object and text[value] == "[":
            lines.append(text[member:value] + _laid_out(text, value, pos, envelope=False))
        else:
            lines.append(text[member:pos])
        if text[pos] == ",":
            pos += 1
            continue
        if pos != end - 1 or text[pos] != ("}" if is_object else "]"):
            raise ValueError("not compact JSON")
        break
    return first + "\n" + ",\n".join(lines) + "\n" + text[end - 1]
