"""What the model reads from s3claim, every word of it, and the patterns that read it back.

The marker after a head, the footer after a window, the line after a truncated result, the
claim tools' descriptions and refusals: a wording change is one edit here. Scripted models
(the demo, the benchmarks, the tests) read handles and offsets back with the patterns below,
so they follow the wording wherever it goes. The result boundary (`s3claim.hosting`)
rewrites anything in tool output that imitates these lines.

docs/reading.md quotes each line as the model reads it.
"""

from __future__ import annotations

import re

__all__ = [
    "ADDRESSES",
    "CONTINUE_SEEN",
    "END_SEEN",
    "FETCH_DESCRIPTION",
    "FROM_END_FLAG_MESSAGE",
    "HANDLE_SEEN",
    "LINES_WITHOUT_LINE_MESSAGE",
    "LINE_SEEN",
    "LINKS_UNAVAILABLE_MESSAGE",
    "MARKER_SEEN",
    "NOT_A_HANDLE_MESSAGE",
    "NOT_JSON_MESSAGE",
    "NO_LINE_INDEX_MESSAGE",
    "REFERENCE_DESCRIPTION",
    "REFERENCE_LINK_DESCRIPTION",
    "REUSED_LINE",
    "REUSED_SEEN",
    "RUN_NOT_FOUND_MESSAGE",
    "SEARCH_BUSY_MESSAGE",
    "SEARCH_DESCRIPTION",
    "STORE_REFUSED_MESSAGE",
    "STORE_UNAVAILABLE_MESSAGE",
    "UNAVAILABLE_MESSAGE",
    "addresses_message",
    "claim_link_name",
    "end_note",
    "footer",
    "given_twice_message",
    "length_too_long_message",
    "line_footer",
    "long_line_footer",
    "marker",
    "match_too_long_message",
    "member_page_refused",
    "no_member_pages_message",
    "page_past_members_message",
    "page_without_members_message",
    "past_end_note",
    "path_footer",
    "path_members",
    "pattern_too_costly_message",
    "picked_line",
    "picks_note",
    "reused_reference",
    "split_head",
    "strip_notes",
    "tool_failed_message",
    "truncation",
    "unknown_address_message",
    "unknown_tool_message",
    "whole_number_message",
]

UNAVAILABLE_MESSAGE = "claim unavailable: expired, never stored, or not in this scope"
"""Every handle that cannot be redeemed gets this one message (the `claim_unavailable` refusal)."""
STORE_UNAVAILABLE_MESSAGE = "the claim store is temporarily unavailable; try again"
STORE_REFUSED_MESSAGE = (
    "the claim store refuses this process's requests (its access or configuration, not a "
    "passing fault); trying again will not help: carry on without this result"
)
NOT_A_HANDLE_MESSAGE = (
    "not a handle: handles look like claim: and 33 hexadecimal digits, as put and ls print them"
)
"""The command line's word for an argument that is not a handle at all (a usage mistake: no
store is asked, so it tells nothing of what is stored)."""
RUN_NOT_FOUND_MESSAGE = "run not found: never recorded, expired, forgotten, or not this tenant's"
SEARCH_BUSY_MESSAGE = (
    "every search slot is taken by other searches, and none came free in time; try again in "
    "a few seconds"
)


def match_too_long_message(*, chars: int) -> str:
    """Why a regex whose match may run on for longer than search holds was not searched."""
    return (
        f"a match of this regular expression may run longer than {chars:,} characters (a `.*` "
        "or `+` on a claim with very long lines, or anchored at its start), more than search "
        "holds at once, so it cannot be found exactly; bound the repetition (`.{0,200}`, "
        '`[^"]*`) or search for a literal'
    )


def pattern_too_costly_message(*, seconds: float, matches: int, backtracked: bool) -> str:
    """What ran out when a regex used up its CPU time: backtracking, or counting its matches."""
    if backtracked:
        return (
            f"the regular expression used up its {seconds:.2f} s of CPU time backtracking "
            "(it tries long stretches again at every position, as nested repetition such as "
            "(a+)+ does, or a long repetition such as x{5000} over a long run of x); search "
            "for a literal or a simpler pattern"
        )
    return (
        f"the regular expression matched more than {matches} times and used up its "
        f"{seconds:.2f} s of CPU time counting them; search for a literal (a literal search "
        "is never stopped, however often it matches) or a narrower pattern"
    )


def marker(
    *,
    total_chars: int,
    shown_chars: int,
    handle: str,
    searchable: bool = False,
    references: bool = False,
    tail_chars: int = 0,
    noted: bool = False,
) -> str:
    """The line after a head that tells the model how to read on.

    It names `search_result` only when the agent has it, claim references only when the
    host resolves them, and the tail after it only when there is one (then what is not shown
    lies between the two, and the line says where); otherwise it is the spec's line.
    `noted`: notes (picked lines, a JSON listing) come between this line and the tail.
    """
    search = ", or search_result to find text in it" if searchable else ""
    passing = (
        f' To hand it to another tool, pass {{"$claim": "{handle}"}} as the argument.'
        if references
        else ""
    )
    if tail_chars:
        hidden_end = total_chars - tail_chars
        return (
            f"[{total_chars} characters, {hidden_end - shown_chars} not shown. They are "
            f"characters {shown_chars}-{hidden_end}; the last {tail_chars} "
            f"{'end this preview' if noted else 'follow this line'}. "
            f"Call fetch_result with handle='{handle}' and offset={shown_chars} to read "
            f"them{search}.{passing}]"
        )
    return (
        f"[{total_chars} characters, {total_chars - shown_chars} not shown. "
        f"Call fetch_result with handle='{handle}' to read the rest{search}.{passing}]"
    )


def picks_note(
    *,
    pattern: str,
    matched: int,
    shown: int,
    tail: bool,
    searchable: bool = False,
    stopped: bool = False,
) -> str:
    """The paragraph before the lines a preview picks (`pick_lines`): how many lines the
    pattern matched beyond what the preview shows, which of them follow, how to read on.
    Never written for a pattern that matched nothing and ran to the end: that note would
    carry nothing (`ClaimCheck` leaves it out). The regex is quoted only where the note
    sends the model to search for the lines it does not show (a preset's runs to 200
    characters, in every later request)."""
    where = "outside the head and tail" if tail else "outside the head"
    if stopped:
        found = f"{matched:,} before the regex used up its CPU time, part of the way through" + (
            ", each after its line number" if shown else ""
        )
    elif shown == matched:
        found = f"{matched:,}, each after its line number"
    else:
        first = shown - shown // 2
        found = (
            f"{matched:,}, of which the first {first} and the last {shown // 2} follow, each "
            "after its line number"
        )
    others = (
        ", or find the others with search_result (regex=true)"
        if searchable and (shown < matched or stopped)
        else ""
    )
    matching = f"the regex `{pattern}`" if others else "the pick pattern"
    return (
        f"[Lines {where} matching {matching}: {found}. Read on from one with "
        f"fetch_result and line=N{others}.]"
    )


def picked_line(
    *, line: int, text: str, start: int, end: int, line_start: int, line_end: int
) -> str:
    """One picked line after its number; a line too long to show whole says which of its
    characters these are (offsets in the result, as fetch_result counts them)."""
    if start == line_start and end == line_end:
        return f"line {line}: {text}"
    return f"line {line}, characters {start}-{end} of its {line_start}-{line_end}: {text}"


REFERENCE_DESCRIPTION = (
    'Any argument may be a claim reference, {"$claim": handle} (narrowed with "offset" and '
    '"length", "line" and "lines", or "path"): the tool receives the checked-in content.'
)
"""The line added to every tool's description when the host resolves claim references."""

REFERENCE_LINK_DESCRIPTION = (
    'With "as": "link" ({"$claim": handle, "as": "link"}), the tool receives instead a URL '
    "its code can read the content from, for a few minutes."
)
"""Added to `REFERENCE_DESCRIPTION` when the host can make links (`ClaimCheck.link_base_url`)."""

LINKS_UNAVAILABLE_MESSAGE = (
    'links are not configured on this host: pass the claim itself ({"$claim": handle}), '
    "narrowed if need be"
)
"""A link reference (`"as": "link"`) where the host has no link server to point at."""


def footer(*, offset: int, next_offset: int, total_chars: int, handle: str) -> str:
    """The line after a window when more remains."""
    return (
        f"[characters {offset}-{next_offset} of {total_chars}. Call fetch_result with "
        f"handle='{handle}' and offset={next_offset} to continue.]"
    )


def _span(first: int, last: int) -> str:
    return f"line {first}" if first == last else f"lines {first}-{last}"


def _lines_of(total_lines: int | None) -> str:
    if total_lines is None:
        return ""
    return f", {total_lines:,} line{'' if total_lines == 1 else 's'}"


def line_footer(
    *,
    first_line: int,
    last_line: int,
    total_lines: int | None,
    offset: int,
    end: int,
    total_chars: int,
    next_line: int,
    handle: str,
) -> str:
    """The line after a window read by line when more lines remain."""
    of = f" of {total_lines:,}" if total_lines is not None else ""
    return (
        f"[{_span(first_line, last_line)}{of} (characters {offset}-{end} of {total_chars}). "
        f"Call fetch_result with handle='{handle}' and line={next_line} to continue.]"
    )


def long_line_footer(
    *, line: int, total_lines: int | None, offset: int, end: int, total_chars: int, handle: str
) -> str:
    """The line after a window that ends inside one line longer than a window."""
    of = f" of {total_lines:,}" if total_lines is not None else ""
    return (
        f"[line {line}{of} goes on past this window (characters {offset}-{end} of "
        f"{total_chars}). Call fetch_result with handle='{handle}' and offset={end} to continue.]"
    )


def end_note(
    *,
    offset: int,
    end: int,
    total_chars: int,
    total_lines: int | None,
    first_line: int | None = None,
    last_line: int | None = None,
) -> str:
    """The paragraph after the last window of any read: nothing follows it. It names the
    tool, as footers do, so the boundary's rewrite of that name unmasks a forged one."""
    if first_line is not None and last_line is not None and total_lines is not None:
        lines = f", {_span(first_line, last_line)} of {total_lines:,}"
    else:
        lines = _lines_of(total_lines)
    return f"[end of the result (fetch_result): characters {offset}-{end} of {total_chars}{lines}.]"


def past_end_note(
    *, total_chars: int, total_lines: int | None, offset: int | None = None, line: int | None = None
) -> str:
    """What a read past the end says instead of nothing: how long the result is."""
    if total_chars == 0:
        return "[fetch_result: the result is empty, 0 characters.]"
    asked = f"no line {line}" if line is not None else f"nothing at offset {offset}"
    return (
        f"[fetch_result: {asked}; the result is {total_chars} characters"
        f"{_lines_of(total_lines)}. Read its last window with from_end=true.]"
    )


NO_LINE_INDEX_MESSAGE = (
    "this claim cannot be read by line: it is too long to index its lines (2**32 characters "
    "or more); read it by offset (from_end=true reads its end), or find text with "
    "search_result"
)
NOT_JSON_MESSAGE = (
    "this claim cannot be read by path: it is not a JSON object or array, or one nested "
    "too deep to index (more than 200 levels); read it by offset or by line, or find text "
    "with search_result"
)
LINES_WITHOUT_LINE_MESSAGE = (
    "lines counts the whole lines of a read by line or from the end: give it with line "
    "(the first lines from there) or from_end=true (the last lines), or drop it"
)
ADDRESSES = ("offset", "line", "from_end", "path")
"""The ways `fetch_result` addresses a window, in the order its messages name them."""
_READS_BY = {
    "offset": "characters from offset",
    "line": "whole lines from line",
    "from_end": "the last window",
    "path": "the value at path",
}


def addresses_message(given: set[str]) -> str:
    """A call that gave several ways to a window: which it gave, and which to drop."""
    named = [a for a in ADDRESSES if a in given]
    listed = ", ".join(named[:-1]) + f" and {named[-1]}"
    drops = "; ".join(
        f"keep {keep} (for {_READS_BY[keep]}) and drop "
        + " and ".join(n for n in named if n != keep)
        for keep in named
    )
    return (
        f"give one of offset, line, from_end or path, not several: this call gives {listed}. "
        f"To read one way, {drops}"
    )


FROM_END_FLAG_MESSAGE = (
    "from_end is a flag: give it no value, 1 or true (0 or false: not from the end)"
)


def unknown_address_message(name: str, names: tuple[str, ...]) -> str:
    """A text door (a query, a URI) named a parameter no address has."""
    return f"unknown parameter {name[:40]!r}: a window is named by {', '.join(names)}"


def given_twice_message(name: str) -> str:
    return f"{name} is given more than once: give it once"


def whole_number_message(name: str, *, digits: int) -> str:
    """A text door's number that is not one (the value itself is never quoted)."""
    return f"{name} must be a whole number: 1 to {digits} ASCII digits"


def length_too_long_message(most: int) -> str:
    return f"length is at most {most} characters here: read a longer stretch window by window"


def path_members(
    *,
    pointer: str,
    kind: str,
    count: int,
    start: int,
    end: int,
    rows: list[tuple[str, str, int, int]],
    first: int = 0,
) -> str:
    """The members paragraph after an object or array read by path, or of a page of them.

    `rows` are (member pointer, type, start, end) of the members from `first` (0: the first);
    the rest are counted, with the call that lists the next and the way to read one (a model
    walks a large result without reading it).
    """
    where = pointer or "the document"
    noun = "keys" if kind == "object" else "elements"
    shown = first + len(rows)
    last = " (the last)" if first and shown == count else ""
    lines = [
        f"[{where}: {kind} of {count} {noun}, characters {start}-{end}."
        + (f" Members {first + 1}-{shown}{last}:" if rows else "")
    ]
    lines += [f"{member} {type_}, characters {a}-{b}" for member, type_, a, b in rows]
    if count > shown:
        example = f"{pointer}/{shown}" if kind == "array" else f"{pointer}/KEY"
        lines.append(
            f"{count - shown} more not listed: the next with path='{pointer}' and "
            f"offset={shown}; read one with path='{example}'"
            + (", or find keys with search_result" if kind == "object" else "")
            + "."
        )
    return "\n".join(lines) + "]"


def page_without_members_message(where: str, kind: str) -> str:
    """`offset` beside `path` on a value that has no members to list."""
    return (
        f"nothing to list: {where} is a {kind}, which has no members (offset beside path "
        "lists an object's or array's members from that one on): drop offset to read the "
        "value, or drop path to read characters from offset"
    )


def page_past_members_message(where: str, kind: str, *, count: int, first: int) -> str:
    """`offset` beside `path` at or past the container's last member."""
    noun = "keys" if kind == "object" else "elements"
    offsets = f"offsets 0 to {count - 1}" if count else "no offsets"
    return (
        f"nothing at offset {first} of the members: {where} has {count} {noun} ({offsets}); "
        "offset beside path counts members from 0. To read characters from offset, drop path"
    )


def no_member_pages_message(where: str) -> str:
    """A large object checked in before its members could be listed page by page."""
    return (
        f"{where} was checked in before its members could be listed page by page: read one "
        f"with path='{where if where != 'the document' else ''}/KEY', or find keys with "
        "search_result"
    )


def member_page_refused(door: str) -> str:
    """A door that delivers a value's exact characters was given a page of its members."""
    return (
        f"offset beside path lists a value's members from that one (fetch_result shows "
        f"them); {door} delivers characters: give path alone (the whole value) or offset "
        "alone (characters from there)"
    )


def path_footer(*, pointer: str, shown_end: int, end: int, handle: str) -> str:
    """The line after a window of a value read by path when more of the value remains."""
    return (
        f"[{pointer or 'the document'} goes on to character {end}. Call fetch_result with "
        f"handle='{handle}' and offset={shown_end} to continue.]"
    )


def truncation(*, total_chars: int, kept_chars: int) -> str:
    """The line after a result cut without a claim check: the rest is gone, and it says so."""
    return f"[{total_chars} characters, {total_chars - kept_chars} cut off and not retrievable.]"


REUSED_LINE = (
    "[Same call, same arguments as earlier in this run: not run again; its earlier result follows.]"
)
"""The line before a repeat read's earlier result, given whole again when its host says the
earlier one left the conversation (`s3claim.reuse`): the rest is what the model received the
first time, byte for byte."""


def reused_reference(*, handle: str, call_id: str | None, tool: str | None) -> str:
    """A repeat read's answer while its earlier result is in the conversation (`s3claim.reuse`):
    the call it came from (by its id; where the host sees none, by its tool) and its handle.
    A pure function of them, so a replayed conversation repeats it byte for byte."""
    earlier = (
        f"call '{call_id}'"
        if call_id is not None
        else f"an earlier {tool} call"
        if tool is not None
        else "an earlier call"
    )
    return (
        f"[Same call, same arguments as {earlier}: not run again. Its result is above, "
        f"handle='{handle}'; read on with fetch_result.]"
    )


def claim_link_name(total_chars: int) -> str:
    """The name of the resource link to a claim (its URI is the handle; MCP proxy only)."""
    return f"the whole result ({total_chars} characters), checked in"


def unknown_tool_message(name: str, available: list[str]) -> str:
    """`name` must already be neutralised: it is the model's own text."""
    return f"there is no tool named {name!r}; available: {available}"


def tool_failed_message(error: str) -> str:
    """A tool raised: the model learns that, and the exception's type, never its message."""
    return f"the tool failed ({error})"


FETCH_DESCRIPTION = (
    "Read a checked-in tool result by its handle, one window of at most `limit` characters. "
    "At most one of: `offset` (characters), `line` (whole lines from this one), `from_end` (the "
    "last window), `path` (a JSON Pointer such as /items/3). `lines`: at most that many lines, "
    "with `line` or `from_end`."
)
"""`fetch_result`'s description: sent with every request, so only what its schema (the
bounds, the types) and its answers (the marker, footers, end notes, member listings) do not
already teach: which arguments choose the window."""
SEARCH_DESCRIPTION = (
    "Find text in a checked-in tool result: up to {matches} matches from `offset`, each with the "
    "offset and line fetch_result reads it at. `regex`: a regular expression ((?m) makes ^ and $ "
    "match at lines). For more, pass next_offset as `offset`."
)
"""`search_result`'s description, as lean: its answer is JSON that names its own fields."""

# -- reading it back (scripted models, the demo, the benchmarks, the tests) ------------------

HANDLE_SEEN = re.compile(r"handle='(claim:[0-9a-z]+)'")
"""A handle as a marker or footer names it."""
REUSED_SEEN = re.compile(
    r"\[Same call, same arguments as [^\]\n]{1,80}: not run again\. Its result is above, "
    r"handle='claim:[0-9a-z]+'; read on with fetch_result\.\]\Z"
)
"""A repeat read answered by reference (`reused_reference`), the whole text."""
MARKER_SEEN = re.compile(r"\[(\d+) characters, (\d+) not shown\.")
"""A marker: total characters and characters not shown."""
CONTINUE_SEEN = re.compile(r"and offset=(\d+) to continue\.\]\Z")
"""A footer: the offset to fetch next."""
LINE_SEEN = re.compile(r"and line=(\d+) to continue\.\]\Z")
"""A line footer: the line to fetch next."""
END_SEEN = re.compile(
    r"\n\n\[end of the result \(fetch_result\): [^\n]*\]\Z|\A\[fetch_result: [^\n]*\]\Z"
)
"""An end note (after the last window), or the note of a read past the end (alone)."""
_FOOTER_SEEN = re.compile(r"\n\n\[(?:characters|lines?) \d[^\n]* to continue\.\]\Z")


def strip_notes(answer: str) -> str:
    """A window as `fetch_result` answered it, without its footer or end note: the claim's
    own characters (for scripted readers that rebuild a result from its windows)."""
    return _FOOTER_SEEN.sub("", END_SEEN.sub("", answer, count=1), count=1)


def split_head(text: str) -> tuple[str, str] | None:
    """A checked-in result as (head, marker); None when the result was not checked in."""
    if MARKER_SEEN.search(text) is None or "\n\n" not in text:
        return None
    head, line = text.rsplit("\n\n", 1)
    return head, line
