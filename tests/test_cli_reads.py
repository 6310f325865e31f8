"""The reading commands (`fetch` in every mode, `search`, `link`) in-process against moto's
HTTP server: the bytes they print, the line on stderr, the refusals and their exit codes."""

from __future__ import annotations

import json
import time
from urllib.parse import urlsplit

import pytest
from typer.testing import CliRunner, Result

import s3claim.wording as wording
from s3claim import RunContext, S3ClaimCheckStore, claim_search_tool
from s3claim.cli import app
from s3claim.handles import HandleKey
from s3claim.links import LinkKey
from s3claim.scope import Scope
from tests.test_cli import CONTENT, _one_line_error, _put, bucket, client  # noqa: F401

runner = CliRunner()
LINES = CONTENT.splitlines(keepends=True)  # CRLF, a Unicode line, ANSI escapes
DOCUMENT = json.dumps(
    {"title": "ledger", "rows": [{"i": n, "memo": f"Zoë {n}"} for n in range(40)]}, indent=1
)
UNAVAILABLE = (
    "s3claim: error: claim unavailable: expired, never stored, or not in this scope (or "
    "checked in under another S3CLAIM_HANDLE_KEY: handles and tenant prefixes are keyed by it)\n"
)


def _fetch(handle: str, *flags: str, run: str = "r1") -> Result:
    return runner.invoke(app, ["fetch", "--tenant", "acme", "--run", run, handle, *flags])


def _at(line: int) -> int:
    """The character where `line` (from 1) of CONTENT starts."""
    return sum(len(text) for text in LINES[: line - 1])


# -- fetch, every way -------------------------------------------------------------------


@pytest.mark.usefixtures("bucket")
def test_fetch_by_line_prints_whole_lines_exactly_and_the_next_line() -> None:
    handle = _put("acme", "r1")

    result = _fetch(handle, "--line", "3", "--lines", "4")

    assert result.exit_code == 0, result.output
    assert result.stdout_bytes == "".join(LINES[2:6]).encode()
    assert result.stderr == (
        f"lines 3-6 of {len(LINES)}, characters {_at(3)}-{_at(7)} of {len(CONTENT)} "
        "(next --line 7)\n"
    )
    window = _fetch(handle, "--line", "5", "--limit", "100")  # whole lines within 100 chars
    kept = "".join(LINES[4:])[:100]
    kept = kept[: kept.rfind("\n") + 1]
    assert window.stdout_bytes == kept.encode()


@pytest.mark.usefixtures("bucket")
def test_fetch_by_line_with_all_reads_from_that_line_to_the_end() -> None:
    handle = _put("acme", "r1")

    result = _fetch(handle, "--line", "700", "--all", "--limit", "500")

    assert result.exit_code == 0, result.output
    assert result.stdout_bytes == CONTENT[_at(700) :].encode()
    assert result.stderr == (
        f"lines 700-{len(LINES)} of {len(LINES)}, characters {_at(700)}-{len(CONTENT)} of "
        f"{len(CONTENT)} (end)\n"
    )


@pytest.mark.usefixtures("bucket")
def test_a_line_longer_than_the_window_goes_on_by_offset() -> None:
    handle = _put("acme", "r1", "x" * 50 + "\nlast\n")
    result = _fetch(handle, "--line", "1", "--limit", "20")
    assert result.stdout_bytes == b"x" * 20
    assert result.stderr == (
        "line 1 of 2, characters 0-20 of 56 (line 1 goes on: next --offset 20)\n"
    )


@pytest.mark.usefixtures("bucket")
def test_fetch_from_the_end_prints_the_last_lines() -> None:
    handle = _put("acme", "r1")

    result = _fetch(handle, "--from-end", "--lines", "2")

    assert result.exit_code == 0, result.output
    assert result.stdout_bytes == "".join(LINES[-2:]).encode()
    n = len(LINES)
    assert result.stderr == (
        f"lines {n - 1}-{n} of {n}, characters {_at(n - 1)}-{len(CONTENT)} of {len(CONTENT)} "
        "(end)\n"
    )


@pytest.mark.usefixtures("bucket")
def test_fetch_by_path_prints_the_value_as_it_is_in_the_claim() -> None:
    handle = _put("acme", "r1", DOCUMENT)
    row = json.dumps(json.loads(DOCUMENT)["rows"][7], indent=1).replace("\n", "\n  ")
    start = DOCUMENT.index(row)

    value = _fetch(handle, "--path", "/rows/7")
    cut = _fetch(handle, "--path", "/rows", "--limit", "50")
    whole = _fetch(handle, "--path", "/rows", "--limit", "50", "--all")

    assert value.stdout_bytes == row.encode()
    assert value.stderr == (
        f"/rows/7 (object): characters {start}-{start + len(row)} of {len(DOCUMENT)} "
        "(the whole value)\n"
    )
    rows_at = DOCUMENT.index("[")
    rows_end = DOCUMENT.rindex("]") + 1
    assert cut.stdout_bytes == DOCUMENT[rows_at : rows_at + 50].encode()
    assert cut.stderr == (
        f"/rows (array): characters {rows_at}-{rows_at + 50} of {len(DOCUMENT)} (the value "
        f"goes on to {rows_end}: next --offset {rows_at + 50})\n"
    )
    assert whole.stdout_bytes == DOCUMENT[rows_at:rows_end].encode()
    assert "(the whole value)" in whole.stderr


@pytest.mark.usefixtures("bucket")
def test_offset_stays_the_default_and_takes_length_as_limit() -> None:
    handle = _put("acme", "r1")
    by_default = _fetch(handle, "--length", "10")
    by_offset = _fetch(handle, "--offset", "0", "--limit", "10")
    assert by_default.stdout_bytes == by_offset.stdout_bytes == CONTENT[:10].encode()
    assert by_default.stderr == f"characters 0-10 of {len(CONTENT)} (next --offset 10)\n"


@pytest.mark.usefixtures("bucket")
@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--line", "3", "--path", "/a"], wording.addresses_message({"line", "path"})),
        (["--offset", "0", "--from-end"], wording.addresses_message({"offset", "from_end"})),
        (["--lines", "3"], wording.LINES_WITHOUT_LINE_MESSAGE),
        (["--line", "three"], wording.whole_number_message("line", digits=18)),
        (["--limit", "9" * 19], wording.whole_number_message("length", digits=18)),
        (["--line", "0"], "line: Input should be greater than 0"),
        (["--from-end", "--all"], "--all reads on to the end, which --from-end does not"),
        (["--line", "2", "--lines", "2", "--all"], "--all reads on to the end, which --lines"),
        (["--path", "/rows"], wording.NOT_JSON_MESSAGE),
        (["--line", "9999"], f"--line 9999 is past the end: the claim has {len(LINES)} lines"),
    ],
)
def test_a_window_no_read_can_serve_is_one_line_in_every_door_s_words(
    flags: list[str], message: str
) -> None:
    handle = _put("acme", "r1")
    result = _fetch(handle, *flags)
    _one_line_error(result, 2, message)
    assert result.stdout == ""


@pytest.mark.usefixtures("bucket")
def test_a_path_to_nothing_is_the_path_s_own_refusal() -> None:
    handle = _put("acme", "r1", DOCUMENT)
    _one_line_error(_fetch(handle, "--path", "/nope"), 2, "has no key 'nope'")
    _one_line_error(_fetch(handle, "--path", "rows"), 2, "path must be a JSON Pointer")


@pytest.mark.usefixtures("bucket")
def test_every_way_to_a_claim_not_this_run_s_is_the_one_refusal() -> None:
    handle = _put("acme", "r1")
    for flags in ([], ["--line", "2"], ["--from-end"], ["--path", ""]):
        result = _fetch(handle, *flags, run="r2")
        assert (result.exit_code, result.stderr, result.stdout) == (1, UNAVAILABLE, "")


# -- search -----------------------------------------------------------------------------


def _search(handle: str, *args: str) -> Result:
    return runner.invoke(app, ["search", "--tenant", "acme", "--run", "r1", handle, *args])


@pytest.mark.usefixtures("bucket")
def test_search_prints_the_matches_the_search_result_tool_finds() -> None:
    handle = _put("acme", "r1")
    tool = claim_search_tool(S3ClaimCheckStore.from_settings())
    context = RunContext(scope=Scope("acme", "r1"), agent="a", emit=lambda _: None)

    plain = _search(handle, "clause 7")
    exact = _search(handle, "clause 7", "--json")
    page2 = _search(handle, "CLAUSE 7", "-i", "--offset", "2000")

    expected = json.loads(tool.call({"handle": handle, "pattern": "clause 7"}, context))
    found = [(m["line"], m["offset"]) for m in expected["matches"]]
    assert len(found) == 20 and expected["total_matches"] == 400
    assert plain.exit_code == 0, plain.output
    rows = plain.stdout.splitlines()
    assert [tuple(map(int, row.split(":", 2)[:2])) for row in rows] == found
    first = CONTENT.index("clause 7")
    assert rows[0] == f"1:{first}:Zoë signs clause 7 — 株式会社東京.\\r"  # a break, escaped
    assert plain.stderr == f"20 of 400 matches (next --offset {expected['next_offset']})\n"
    records = [json.loads(row) for row in exact.stdout.splitlines()]
    assert records[1] == {"line": 3, "offset": found[1][1], "snippet": LINES[2][:-1]}
    assert page2.exit_code == 0 and page2.stdout.startswith(f"{_line_of(2000)}:")


def _line_of(offset: int) -> int:
    """The line of CONTENT of the first match of 'clause 7' at or after `offset`."""
    return CONTENT.count("\n", 0, CONTENT.index("clause 7", offset)) + 1


@pytest.mark.usefixtures("bucket")
def test_search_without_a_match_prints_nothing_and_says_so() -> None:
    handle = _put("acme", "r1")
    result = _search(handle, "no such words")
    assert (result.exit_code, result.stdout_bytes, result.stderr) == (0, b"", "no match\n")
    regex = _search(handle, r"clause \d{3}", "--regex")
    assert (regex.exit_code, regex.stdout) == (0, "")


@pytest.mark.usefixtures("bucket")
def test_search_refusals_are_one_line_with_their_exit_code() -> None:
    handle = _put("acme", "r1")
    _one_line_error(_search(handle, "(", "--regex"), 2, "not a valid regular expression")
    _one_line_error(_search(handle, ""), 2, "pattern: give 1 to 1000 characters")
    for other in (["--run", "r2", handle], ["--run", "r1", "claim:1" + "0" * 32]):
        result = runner.invoke(app, ["search", "--tenant", "acme", *other, "clause"])
        assert (result.exit_code, result.stderr, result.stdout) == (1, UNAVAILABLE, "")


# -- link -------------------------------------------------------------------------------


def _link(handle: str, *flags: str) -> Result:
    base = ["--base-url", "http://127.0.0.1:9/"]
    return runner.invoke(app, ["link", "--tenant", "acme", "--run", "r1", handle, *base, *flags])


@pytest.mark.usefixtures("bucket")
def test_a_link_the_command_makes_is_served_with_its_window() -> None:
    from starlette.testclient import TestClient

    from s3claim.links.server import links_app

    handle = _put("acme", "r1")
    document = _put("acme", "r1", DOCUMENT)
    made = {
        "whole": _link(handle),
        "lines": _link(handle, "--line", "3", "--lines", "2"),
        "end": _link(handle, "--from-end", "--lines", "1", "--ttl", "60"),
        "path": _link(document, "--path", "/rows/7/memo"),
    }
    urls = {name: result.stdout.strip() for name, result in made.items()}
    assert all(result.exit_code == 0 for result in made.values()), made
    assert all(url.startswith("http://127.0.0.1:9/claims/") for url in urls.values())
    assert urlsplit(urls["lines"]).query == "line=3&lines=2"
    assert urlsplit(urls["path"]).query == "path=/rows/7/memo"

    store = S3ClaimCheckStore.from_settings()
    with TestClient(links_app(store)) as http:
        answers = {
            name: http.get(url.removeprefix("http://127.0.0.1:9")) for name, url in urls.items()
        }
    assert answers["whole"].content == CONTENT.encode()
    assert answers["lines"].content == "".join(LINES[2:4]).encode()
    assert answers["lines"].headers["X-Claim-Next-Offset"] == str(_at(5))
    assert answers["end"].content == LINES[-1].encode()
    assert answers["path"].content == b'"Zo\\u00eb 7"'  # the value's own text: JSON escapes

    token = urlsplit(urls["end"]).path.rsplit("/", 1)[1]
    opened = LinkKey(HandleKey("k" * 32)).open(token)
    assert opened is not None and opened.expires_at <= time.time() + 60


@pytest.mark.usefixtures("bucket")
def test_link_refusals() -> None:
    handle = _put("acme", "r1")
    plain_http = runner.invoke(
        app, ["link", "--tenant", "acme", "--run", "r1", handle, "--base-url", "http://example.com"]
    )
    _one_line_error(plain_http, 2, "base_url must use https://")
    _one_line_error(_link(handle, "--line", "2", "--path", "/a"), 2, "give one of offset")
    for gone in ("claim:1" + "0" * 32, _put("acme", "r9", "x")):
        result = _link(gone)
        assert (result.exit_code, result.stderr, result.stdout) == (1, UNAVAILABLE, "")


@pytest.mark.usefixtures("bucket")
def test_a_page_of_members_is_refused_by_the_commands_that_print_characters() -> None:
    handle = _put("acme", "r1", DOCUMENT)
    for command in (
        ["fetch", "--tenant", "acme", "--run", "r1", handle],
        ["link", "--tenant", "acme", "--run", "r1", handle, "--base-url", "http://127.0.0.1:9"],
    ):
        done = runner.invoke(app, [*command, "--path", "/rows", "--offset", "20"])
        assert done.exit_code == 2, done.output
        assert done.stderr == (
            f"s3claim: error: {wording.member_page_refused('the command line')}\n"
        )
    assert _fetch(handle, "--path", "/rows", "--offset", "0").exit_code == 0  # the value
