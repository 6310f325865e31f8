"""The reading commands: `fetch`, `search` and `link`, each the mechanism every door uses.

Their flags name a window as every text door names one (`Address.from_strings`: `--offset`,
`--line`, `--lines`, `--from-end`, `--path`, `--limit`), so a refusal is worded as at every
door; `fetch` reads it by the one reader (`RangedStore.read`), `search` runs the one search
(`RangedStore.search`), `link` seals a link as `ClaimCheck.link` does and adds the window as
its query. Content goes to stdout exactly as stored; where it sits and how to go on, to stderr.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated
from urllib.parse import urlencode

import typer

import s3claim.wording as wording
from s3claim.cli._config import (
    BucketOption,
    EndpointOption,
    PrefixOption,
    RegionOption,
    Tenant,
    handle_given,
    scope_of,
)
from s3claim.cli._exit import CliError, handled
from s3claim.errors import ClaimUnavailableError
from s3claim.links import DEFAULT_LINK_TTL_SECONDS, check_base_url, link
from s3claim.s3.admin import open_store
from s3claim.store import (
    DEFAULT_FETCH_CHARS,
    MAX_DIGITS,
    Address,
    AddressError,
    LineWindow,
    PathRead,
    Read,
    SearchResult,
)

__all__ = ["fetch", "link_command", "search"]

Run = Annotated[str, typer.Option(help="Run the claim belongs to.", show_default=False)]
Handle = Annotated[str, typer.Argument(help="The handle, claim:…", show_default=False)]
_WINDOW = "Window (one way at most: --offset, --line, --from-end or --path)"
Offset = Annotated[
    str | None,
    typer.Option(
        metavar="N",
        help="First character (from 0; the default way, at 0).",
        rich_help_panel=_WINDOW,
    ),
]
Line = Annotated[
    str | None,
    typer.Option(metavar="N", help="Whole lines from line N (from 1).", rich_help_panel=_WINDOW),
]
Lines = Annotated[
    str | None,
    typer.Option(
        metavar="K",
        help="At most K whole lines (with --line or --from-end).",
        rich_help_panel=_WINDOW,
    ),
]
FromEnd = Annotated[
    bool,
    typer.Option(
        "--from-end", help="The last window, from a line's start.", rich_help_panel=_WINDOW
    ),
]
Pointer = Annotated[
    str | None,
    typer.Option(
        "--path",
        metavar="POINTER",
        help="The value at a JSON Pointer, e.g. /rows/3 ('' for the whole document).",
        rich_help_panel=_WINDOW,
    ),
]
Limit = Annotated[
    str | None,
    typer.Option(
        "--limit",
        "--length",
        metavar="N",
        help=f"Characters in one window (fetch: {DEFAULT_FETCH_CHARS} by default; a link: "
        "the server's default).",
        rich_help_panel=_WINDOW,
    ),
]
_MOST = 10**MAX_DIGITS
"""The command line holds a window of any length a text door can name: it is the operator's."""


def address_of(
    *,
    offset: str | None,
    line: str | None,
    lines: str | None,
    from_end: bool,
    path: str | None,
    limit: str | None,
) -> tuple[Address, list[tuple[str, str]]]:
    """The window the flags name, as every text door reads one (an `AddressError` in its
    words, exit 2), and the pairs that name it (a link's query)."""
    given = {"offset": offset, "line": line, "lines": lines, "path": path, "length": limit}
    pairs = [(name, text) for name, text in given.items() if text is not None]
    pairs += [("from_end", "true")] if from_end else []
    address = Address.from_strings(pairs)
    if address.first_member:  # a page of members: fetch_result's, not a door of characters
        raise AddressError(wording.member_page_refused("the command line"))
    return address, pairs


def _write(text: str) -> None:
    """Content exactly as stored: UTF-8 bytes, no newline added, no styling stripped."""
    sys.stdout.buffer.write(text.encode("utf-8"))
    sys.stdout.flush()


def fetch(
    tenant: Tenant,
    run: Run,
    handle: Handle,
    offset: Offset = None,
    line: Line = None,
    lines: Lines = None,
    from_end: FromEnd = False,
    path: Pointer = None,
    limit: Limit = None,
    read_all: Annotated[
        bool,
        typer.Option(
            "--all",
            help="Read on, window by window, to the end (of the value, with --path).",
        ),
    ] = False,
    bucket: BucketOption = None,
    endpoint_url: EndpointOption = None,
    prefix: PrefixOption = None,
    region: RegionOption = None,
) -> None:
    """Print a window of a claim (or, with --all, all from there) exactly as stored.

    By offset (the default), by line (--line, --lines), from the end (--from-end, --lines),
    or the value at a JSON Pointer (--path). Where the window sits and how to continue is
    written to stderr, so stdout is content only. Exit 1 when the claim is unavailable:
    expired, never stored, not this run's, or damaged.
    """
    with handled() as context:
        scope, handle = scope_of(tenant, run), handle_given(handle)
        address, _ = address_of(
            offset=offset, line=line, lines=lines, from_end=from_end, path=path, limit=limit
        )
        length = address.window(default=DEFAULT_FETCH_CHARS, most=_MOST)
        if read_all and (address.from_end or address.lines is not None):
            given = "--from-end" if address.from_end else "--lines"
            raise CliError(f"--all reads on to the end, which {given} does not: give one of them")
        store = open_store(context.target(bucket, endpoint_url, prefix, region))
        first = last = store.read(scope, handle, address, length=length)
        _refuse_past_the_end(address, first)
        _write(first.text)
        end = _start(first) + len(first.text)
        stop = first.end if isinstance(first, PathRead) else first.total_chars
        at = first.next_offset if read_all else None
        while at is not None and at < stop:  # on by offset, to the end of what was asked
            last = store.read(scope, handle, Address(offset=at), length=min(length, stop - at))
            _write(last.text)
            end = at + len(last.text)
            at = last.next_offset
    if sys.stdout.isatty() and last.text and not last.text.endswith("\n"):
        typer.echo(err=True)  # on a terminal, the line below starts a line of its own
    typer.echo(_position(first, last, end), err=True)


def _start(read: Read) -> int:
    return read.start if isinstance(read, PathRead) else read.offset


def _refuse_past_the_end(address: Address, read: Read) -> None:
    if read.text or not read.total_chars:  # an empty claim: its one window is empty
        return
    if address.way == "line":
        last = read.total_lines if isinstance(read, LineWindow) else None
        counted = (
            "" if last is None else f": the claim has {last:,} lines (the last is --line {last})"
        )
        raise CliError(f"--line {address.line} is past the end{counted}")
    if address.offset:
        raise CliError(
            f"--offset {address.offset} is past the end: the claim has {read.total_chars:,} "
            f"characters (the last is at --offset {read.total_chars - 1})"
        )


def _position(first: Read, last: Read, end: int) -> str:
    """Where what was printed sits (it ends at `end`), and the flag that reads on from it:
    `last` is the last window --all read, by offset; without it, `first` itself."""
    where = f"characters {_start(first)}-{end} of {first.total_chars}"
    if isinstance(first, PathRead):
        value = f"{first.pointer or 'the document'} ({first.kind})"
        more = (
            "the whole value"
            if end >= first.end
            else f"the value goes on to {first.end}: next --offset {end}"
        )
        return f"{value}: {where} ({more})"
    more = "end" if last.next_offset is None else f"next --offset {last.next_offset}"
    if isinstance(last, LineWindow) and last.next_offset is not None:
        more = (
            f"next --line {last.next_line}"
            if last.next_line is not None
            else f"line {last.first_line} goes on: next --offset {last.next_offset}"
        )
    if not isinstance(first, LineWindow) or first.first_line is None or not first.text:
        return f"{where} ({more})"
    upto = last.last_line if isinstance(last, LineWindow) else first.total_lines
    lines = f"line {upto}" if upto == first.first_line else f"lines {first.first_line}-{upto}"
    return f"{lines} of {first.total_lines:,}, {where} ({more})"


def search(
    tenant: Tenant,
    run: Run,
    handle: Handle,
    pattern: Annotated[
        str, typer.Argument(help="What to find: a literal, or with --regex a regex.")
    ],
    regex: Annotated[bool, typer.Option("--regex", help="PATTERN is a regular expression.")] = (
        False
    ),
    ignore_case: Annotated[
        bool, typer.Option("--ignore-case", "-i", help="Case-insensitive.")
    ] = False,
    offset: Annotated[
        int, typer.Option(min=0, help="Matches from this character on (the next page's).")
    ] = 0,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON object a match, its snippet exact.")
    ] = False,
    bucket: BucketOption = None,
    endpoint_url: EndpointOption = None,
    prefix: PrefixOption = None,
    region: RegionOption = None,
) -> None:
    """Find text in a claim, as the search_result tool does: one match a line, LINE:OFFSET:SNIPPET.

    The snippet is the line the match is on (200 characters of it at most), its line breaks
    written as `\\n` and `\\r` and a backslash as `\\\\`, so each match is one line (--json: each
    match as it is). A page is the first matches from --offset; how many there are in all,
    and the --offset of the next page, go to stderr. Exit 0 with nothing printed when none
    matches; exit 1 when the claim is unavailable, 2 for a pattern no search can run.
    """
    with handled() as context:
        scope, handle = scope_of(tenant, run), handle_given(handle)
        store = open_store(context.target(bucket, endpoint_url, prefix, region))
        result = store.search(
            scope, handle, pattern, regex=regex, ignore_case=ignore_case, offset=offset
        )
    for match in result.matches:
        if as_json:
            record = {"line": match.line, "offset": match.offset, "snippet": match.snippet}
            typer.echo(json.dumps(record, ensure_ascii=False))
        else:
            typer.echo(f"{match.line}:{match.offset}:{_one_line(match.snippet)}")
    typer.echo(_found(result, offset), err=True)


def _one_line(snippet: str) -> str:
    return snippet.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")


def _found(result: SearchResult, offset: int) -> str:
    shown, total = len(result.matches), result.total_matches
    if not shown:
        return f"no match from --offset {offset}" if offset else "no match"
    more = "end" if result.next_offset is None else f"next --offset {result.next_offset}"
    return f"{shown} of {total:,} match{'' if total == 1 else 'es'} ({more})"


def link_command(
    tenant: Tenant,
    run: Run,
    handle: Handle,
    base_url: Annotated[
        str,
        typer.Option(
            help="Where `s3claim serve` is reached: https://, or http:// on a loopback host.",
            show_default=False,
        ),
    ],
    ttl: Annotated[
        int, typer.Option(min=1, help="Seconds the link reads (never past the claim's expiry).")
    ] = DEFAULT_LINK_TTL_SECONDS,
    offset: Offset = None,
    line: Line = None,
    lines: Lines = None,
    from_end: FromEnd = False,
    path: Pointer = None,
    limit: Limit = None,
    bucket: BucketOption = None,
    endpoint_url: EndpointOption = None,
    prefix: PrefixOption = None,
    region: RegionOption = None,
) -> None:
    """Print a link to a claim: a URL that reads it, with nothing but an HTTP client.

    `s3claim serve` serves it, with the same S3CLAIM_HANDLE_KEY and bucket. Without window
    flags it reads the whole text; with them, that window (the flags become its query). The
    URL is a credential until it expires. Exit 1 when the claim is unavailable.
    """
    with handled() as context:
        scope, handle = scope_of(tenant, run), handle_given(handle)
        base = check_base_url(base_url)  # one line, exit 2, before anything is read
        _, pairs = address_of(
            offset=offset, line=line, lines=lines, from_end=from_end, path=path, limit=limit
        )
        store = open_store(context.target(bucket, endpoint_url, prefix, region))
        try:
            url = link(store, handle, scope=scope, base_url=base, ttl_seconds=ttl)
        except ClaimUnavailableError:
            store.bucket.probe_read()  # a HEAD's 404 may be the bucket's: say so if it is
            raise
    typer.echo(f"{url}?{urlencode(pairs, safe='/')}" if pairs else url)
