"""Previews that keep what matters (issue 37): lines picked by a pattern (`pick_lines`,
`pick_max`) and a JSON result's root members (`json_root`), shown between the marker and the
tail, verbatim and with where they sit; the presets for logs and JSON on real documents
(tests/fixtures/previews: a CI log of a failing pytest run, a GitHub compare response, an
excerpt of dpkg's log)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from pydantic import ValidationError

from s3claim import (
    AgentRunner,
    AssistantMessage,
    ClaimCheck,
    ClaimCheckPolicy,
    HandleKey,
    MemoryClaimCheckStore,
    RunContext,
    Scope,
    ScriptedProvider,
    ToolCall,
    ToolRegistry,
    claim_check_tool,
    tool,
)
from s3claim.claimcheck import _preview_notes, most_notes_chars
from s3claim.policy import LOG_PATTERN, ROOT_LISTING_CHARS
from s3claim.turns import kept_chars
from s3claim.wording import marker
from tests._hosts import claim_answer
from tests.conftest import StoreUnderTest

SCOPE = Scope(tenant="acme", run="ci-7")
FIXTURES = Path(__file__).parent / "fixtures" / "previews"
ROOT = Path(__file__).resolve().parents[1]
BUILD_LOG = (FIXTURES / "build.log").read_text(encoding="utf-8")
COMPARE = (FIXTURES / "github-compare.json").read_text(encoding="utf-8")
DPKG_LOG = (FIXTURES / "dpkg.log").read_text(encoding="utf-8")  # dpkg-log-provenance.txt
PICKED = re.compile(r"^line (\d+)(?:, characters (\d+)-(\d+) of its (\d+)-(\d+))?: (.*)$")
ERROR_LINE = (
    "2026-03-14T10:41:07Z ERROR [worker-7] settlement failed for order ord-3f9a17c2e4: "
    "ledger timeout after 30000 ms"
)
TRACE = (
    "Traceback (most recent call last):\n"
    '  File "/srv/app/ledger/client.py", line 77, in _request\n'
    "    raise LedgerUnavailable(status)\n"
    "ledger.errors.LedgerUnavailable: ledger answered 503 after 5 attempts\n"
)


def service_log(chars: int = 5_000_000) -> tuple[str, int]:
    """A service's log of `chars` characters: INFO lines, a WARN every 50th, one ERROR at 60%
    of it, a traceback at its end; and the ERROR's line number."""
    line = "2026-03-14T10:{:02d}:{:02d}Z {} [worker-{}] GET /api/v1/orders/{} status=200 in {} ms\n"
    lines = [
        line.format(n // 60 % 60, n % 60, "WARN " if n % 50 == 0 else "INFO ", n % 16, n, n % 900)
        for n in range(chars // 80)
    ]
    at = int(len(lines) * 0.6)
    lines.insert(at, ERROR_LINE + "\n")
    text = "".join(lines) + TRACE
    return text, at + 1


def picks_of(text: str) -> list[tuple[int, str]]:
    """(line number, text) of every picked line in a preview."""
    return [(int(m.group(1)), m.group(6)) for m in map(PICKED.match, text.split("\n")) if m]


def check(policy: ClaimCheckPolicy, store: MemoryClaimCheckStore | None = None) -> ClaimCheck:
    return ClaimCheck(
        store if store is not None else MemoryClaimCheckStore(), per_tool={"ci": policy}
    )


@pytest.mark.parametrize("store_under_test", ["memory", "s3"], indirect=True)
def test_a_5_mb_log_shows_its_error_at_60_percent_with_its_line_number(
    store_under_test: StoreUnderTest,
) -> None:
    log, error_line = service_log()
    store = store_under_test.store
    checked = ClaimCheck(store, policy=ClaimCheckPolicy.for_logs()).check_in(
        log, tool="ci", scope=SCOPE
    )
    assert checked.handle is not None and len(checked.text) < 4_096
    assert picks_of(checked.text) == [(error_line, ERROR_LINE)]  # WARN lines are not picked
    assert "matching the pick pattern: 1, each after its line number" in checked.text
    assert LOG_PATTERN not in checked.text  # all it matched is shown: the regex carries nothing
    assert checked.text.endswith(TRACE)  # the traceback is in the tail, so not picked again
    assert "; the last " in checked.text and " end this preview. Call fetch_result" in (
        checked.text
    )
    window = store.read_line(SCOPE, checked.handle, error_line, limit=200)  # type: ignore[attr-defined]
    assert window.text.split("\n")[0] == ERROR_LINE  # the number reads the line it names


def test_every_knob_off_is_the_specs_preview_byte_for_byte() -> None:
    checked = check(ClaimCheckPolicy()).check_in(BUILD_LOG, tool="ci", scope=SCOPE)
    head = BUILD_LOG[: checked.text.index("\n\n[")]
    line = marker(total_chars=len(BUILD_LOG), shown_chars=len(head), handle=checked.handle or "")
    assert checked.text == f"{head}\n\n{line}"
    assert _preview_notes(BUILD_LOG, ClaimCheckPolicy(), head=head, tail="") == []
    assert most_notes_chars(ClaimCheckPolicy()) == 0


def numbered(errors: set[int], total: int = 400) -> str:
    return "".join(
        f"{n:04d} ERROR step {n} failed\n" if n in errors else f"{n:04d} ok step {n}\n"
        for n in range(1, total + 1)
    )


@pytest.mark.parametrize(
    ("most", "shown"),
    [
        (4, [40, 80, 320, 360]),
        (5, [40, 80, 120, 320, 360]),
        (1, [40]),
        (10, list(range(40, 400, 40))),
    ],
)
def test_when_more_lines_match_the_first_half_and_the_last_half_show(
    most: int, shown: list[int]
) -> None:
    log = numbered(set(range(40, 400, 40)))  # 9 errors, none in the head or the tail
    policy = ClaimCheckPolicy(pick_lines="ERROR", pick_max=most, head_chars=200)
    text = check(policy).check_in(log, tool="ci", scope=SCOPE, searchable=True).text
    assert [n for n, _ in picks_of(text)] == shown
    assert all(line == f"{n:04d} ERROR step {n} failed" for n, line in picks_of(text))
    if most < 9:
        first = most - most // 2
        assert f": 9, of which the first {first} and the last {most // 2} follow" in text
        assert "find the others with search_result (regex=true)" in text
        assert "matching the regex `ERROR`: 9" in text  # what to search for them with
    else:
        assert "matching the pick pattern: 9, each after its line number. Read on from" in text


def test_lines_the_head_or_tail_shows_are_not_picked_again() -> None:
    log = numbered({2, 200, 399})
    policy = ClaimCheckPolicy(pick_lines="ERROR", head_chars=100, tail_chars=100)
    text = check(policy).check_in(log, tool="ci", scope=SCOPE).text
    head, tail = text.split("\n\n")[0], text.split("\n\n")[-1]
    assert "0002 ERROR" in head and "0399 ERROR" in tail
    assert picks_of(text) == [(200, "0200 ERROR step 200 failed")]
    assert "[Lines outside the head and tail matching the pick pattern: 1, each" in text


def test_a_pattern_that_matches_nothing_writes_no_note() -> None:
    """A note that found nothing carries nothing, and would ride in every later request."""
    log, store = numbered({2, 200, 399}), MemoryClaimCheckStore()
    bare = check(ClaimCheckPolicy(), store).check_in(log, tool="ci", scope=SCOPE).text
    none = check(ClaimCheckPolicy(pick_lines="FATAL"), store).check_in(log, tool="ci", scope=SCOPE)
    assert none.text == bare  # the spec's preview, byte for byte
    assert _preview_notes(log, ClaimCheckPolicy(pick_lines="FATAL"), head="", tail="") == []


def test_a_long_line_is_cut_where_it_pauses_around_the_match_and_says_its_span() -> None:
    words = "".join(f"w{n} " for n in range(4_000))
    log = numbered(set(), 100) + words + "ERROR the disk is full " + words + "\n" + numbered(set())
    checked = check(ClaimCheckPolicy(pick_lines="ERROR")).check_in(log, tool="ci", scope=SCOPE)
    (found,) = [m for m in map(PICKED.match, checked.text.split("\n")) if m]
    line, start, end, line_start, line_end, shown = found.groups()
    assert int(line) == 101 and log[int(start) : int(end)] == shown
    assert int(line_start) == len(numbered(set(), 100)) and log[int(line_end)] == "\n"
    assert "ERROR the disk is full" in shown and len(shown) <= 200
    assert not shown.startswith(" ") and shown.split(" ")[0] in words.split(" ")  # whole words


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"pick_lines": "("}, "not a valid regular expression (missing ) at position 1)"),
        (
            {"pick_lines": "(" * 500 + ")" * 500},
            "not a valid regular expression (its groups nest too deeply)",
        ),
        ({"pick_lines": ""}, "must not be empty"),
        ({"pick_lines": "ERROR|"}, "matches the empty string, so it would pick every line"),
        ({"pick_lines": "x" * 1_001}, "must be at most 1000 characters, got 1001"),
        ({"pick_lines": "x", "pick_max": 0}, "greater than 0"),
        (
            {"pick_lines": "x", "pick_max": 18},
            "head_chars + pick_max * 200 (512 + 3600) must be smaller than threshold_chars (4096)",
        ),
        (
            {"json_root": True, "tail_chars": 3_600},  # the listing is inside the head
            "head_chars + tail_chars (512 + 3600) must be smaller",
        ),
    ],
)
def test_a_bad_preview_is_refused_at_construction_in_one_line(
    settings: dict[str, object], message: str
) -> None:
    with pytest.raises(ValidationError) as refused:
        ClaimCheckPolicy(**settings)  # type: ignore[arg-type]
    (error,) = refused.value.errors()
    assert message in error["msg"] and "\n" not in error["msg"]


def path_listing(store: MemoryClaimCheckStore, handle: str, first: int = 0) -> str:
    """The members paragraph `fetch_result(path="")` answers for a claim (`first` past 0:
    the page of them from that member, `offset=first` beside the path)."""
    context = RunContext(scope=SCOPE, agent="ci", emit=lambda event: None)
    arguments = {"handle": handle, "path": ""} | ({"offset": first} if first else {})
    answer = claim_answer(claim_check_tool(store), arguments, context)
    found = re.search(r"(?:\A|\n\n)(\[the document: [^\]]*\])", answer.text)
    assert found is not None, answer.text[-300:]
    return found.group(1)


WIDE_JSON = ClaimCheckPolicy(json_root=True, head_chars=1_024)  # room for COMPARE's listing


def test_a_json_result_lists_its_root_as_a_read_by_path_does() -> None:
    store = MemoryClaimCheckStore()
    checked = check(WIDE_JSON, store).check_in(COMPARE, tool="ci", scope=SCOPE)
    assert checked.handle is not None
    head, line, listing = checked.text.split("\n\n")
    assert COMPARE.startswith(head) and line.startswith(f"[{len(COMPARE)} characters")
    # The five URLs the head shows whole are not listed again: the page from the sixth.
    assert listing == path_listing(store, checked.handle, first=5)
    assert listing.startswith("[the document: object of 13 keys, characters 0-47301. Members 6-13")
    rows = listing.split("\n")[1:]
    assert [r.split(" ")[0] for r in rows] == [
        "/base_commit", "/merge_base_commit", "/status", "/ahead_by", "/behind_by",
        "/total_commits", "/commits", "/files",
    ]  # fmt: skip
    ends = [int(r.rsplit("-", 1)[1].rstrip("]")) for r in rows]
    assert min(ends) > len(head) and "characters 408-473" in path_listing(store, checked.handle)
    start, end = re.search(r"/files array, characters (\d+)-(\d+)\]$", listing).groups()  # type: ignore[union-attr]
    assert json.loads(COMPARE[int(start) : int(end)]) == json.loads(COMPARE)["files"]
    assert (
        not check(WIDE_JSON).check_in(BUILD_LOG, tool="ci", scope=SCOPE).text.endswith("]\n")
    )  # a log is not JSON: no listing
    assert (
        "\n\n[the document"
        not in check(WIDE_JSON).check_in("{" + COMPARE, tool="ci", scope=SCOPE).text
    )  # nor is a text that only starts like it


def test_a_root_listing_keeps_to_its_budget_and_counts_the_rest() -> None:
    store = MemoryClaimCheckStore()
    wide = json.dumps({f"{'k' * 60}{n:03d}": f"v{n} " * 150 for n in range(300)}, indent=1)
    policy = ClaimCheckPolicy(json_root=True, head_chars=3_000)  # room past the listing's cap
    checked = check(policy, store).check_in(wide, tool="ci", scope=SCOPE)
    listing = checked.text.split("\n\n")[2]
    assert len(listing) <= ROOT_LISTING_CHARS
    full = path_listing(store, checked.handle or "")
    assert len(full) > ROOT_LISTING_CHARS  # what fetch_result lists would not fit
    rows, every = listing.split("\n")[1:-1], full.split("\n")[1:]
    first = every.index(rows[0])  # the first member the head does not show whole
    assert first > 0 and rows == every[first : first + len(rows)] and len(rows) < 20
    after = first + len(rows)
    assert listing.endswith(
        f"{300 - after} more not listed: the next with path='' and offset={after}; "
        "read one with path='/KEY', or find keys with search_result.]"
    )


@pytest.mark.parametrize(
    "document",
    [
        json.dumps({f"{'k' * 60}{n:03d}": n for n in range(300)}, indent=1),  # short values
        json.dumps([{"id": n, "name": f"record {n} " * 20} for n in range(200)]),  # records
        json.dumps({"a": "x" * 400, "b": 1}) + " " * 4_000,  # the head shows every member
    ],
    ids=["listing-longer-than-its-members", "array", "all-in-the-head"],
)
def test_no_root_listing_that_carries_nothing(document: str) -> None:
    """A listing that reading the members would beat, of positions `path="/N"` reaches
    anyway, or of members the head already shows, is not written."""
    store = MemoryClaimCheckStore()
    checked = check(ClaimCheckPolicy.for_json(), store).check_in(document, tool="ci", scope=SCOPE)
    bare = check(ClaimCheckPolicy(), store).check_in(document, tool="ci", scope=SCOPE)
    assert checked.handle is not None and checked.text == bare.text


def test_the_log_preset_on_a_real_ci_log() -> None:
    checked = check(ClaimCheckPolicy.for_logs()).check_in(BUILD_LOG, tool="ci", scope=SCOPE)
    lines = BUILD_LOG.split("\n")
    picks = picks_of(checked.text)
    assert [n for n, _ in picks] == [158, 165, 168, 171, 364, 377, 386, 387]
    assert all(text == lines[n - 1] for n, text in picks)  # verbatim, numbered from 1
    assert "FAILED" in picks[0][1] and picks[-2][1].startswith("E       AssertionError")
    assert ": 14, of which the first 4 and the last 4 follow" in checked.text
    assert checked.text.endswith(
        "5 failed, 286 passed, 12 warnings, 1 error in 0.49s ==============\n"
    )
    assert len(checked.text) <= kept_chars(len(BUILD_LOG), ClaimCheckPolicy.for_logs())


def test_the_log_presets_tail_is_the_end_that_tells_and_no_more() -> None:
    """The tail starts where the text does: after the last lines' blank line (pytest's
    summary), or at the first line in reach the pattern matches (a traceback after lines of
    INFO); and not at all where the end is more of the same (dpkg's log: no failure, no
    blank line), where the preset's preview is then the default's, byte for byte."""
    store = MemoryClaimCheckStore()
    logs = check(ClaimCheckPolicy.for_logs(), store)
    build = logs.check_in(BUILD_LOG, tool="ci", scope=SCOPE, searchable=True).text
    tail = build.split("\n\n")[-1]
    assert BUILD_LOG.endswith(f"\n\n{tail}") and len(tail) < 1024
    assert tail.startswith("-- Docs: ") and "short test summary info" in tail
    service, _ = service_log(60_000)
    assert logs.check_in(service, tool="ci", scope=SCOPE).text.endswith(f"ms\n\n{TRACE}")
    default = check(ClaimCheckPolicy(), store)
    for tool_said in (False, True):
        preset = logs.check_in(DPKG_LOG, tool="ci", scope=SCOPE, searchable=tool_said).text
        bare = default.check_in(DPKG_LOG, tool="ci", scope=SCOPE, searchable=tool_said).text
        assert preset == bare and len(preset) < 700


def test_the_presets_previews_on_the_fixtures_are_no_larger_than_they_need() -> None:
    """What each preset adds to the default preview on the committed documents: nothing on
    dpkg's log; on the CI log its failures and summary; on the API response only the
    members the head does not show (about 400 characters)."""
    store = MemoryClaimCheckStore()
    sizes = {}
    for name, text, preset in (
        ("dpkg", DPKG_LOG, ClaimCheckPolicy.for_logs()),
        ("build", BUILD_LOG, ClaimCheckPolicy.for_logs()),
        ("compare", COMPARE, ClaimCheckPolicy.for_json()),
    ):
        sizes[name] = tuple(
            len(check(policy, store).check_in(text, tool="ci", scope=SCOPE, searchable=True).text)
            for policy in (ClaimCheckPolicy(), preset)
        )
    assert sizes["dpkg"][1] == sizes["dpkg"][0]
    assert sizes["build"][1] <= 2_500
    assert sizes["compare"][1] == sizes["compare"][0]  # no listing fits in its head's room


@pytest.mark.parametrize("name", ["botocore-endpoints.json", "cfn-aws-s3-bucket.json"])
def test_the_json_preset_is_never_longer_than_the_default(name: str) -> None:
    """The root listing takes the place of the head's second half: on botocore's endpoints
    (two members, one of 254 K characters) it is the shorter preview; on the CloudFormation
    schema (13 members, no listing fits) it is the default's."""
    text = (ROOT / "benchmarks/heldout" / name).read_text(encoding="utf-8")
    bare, preset = (
        check(policy, MemoryClaimCheckStore()).check_in(text, tool="ci", scope=SCOPE).text
        for policy in (ClaimCheckPolicy(), ClaimCheckPolicy.for_json())
    )
    assert len(preset) <= len(bare)
    if name.startswith("botocore"):
        assert len(preset) < len(bare) and "\n/partitions array, characters 19-" in preset


def test_the_presets_keep_to_the_threshold_they_are_given() -> None:
    assert ClaimCheckPolicy.for_logs(threshold_chars=8_192).threshold_chars == 8_192
    assert ClaimCheckPolicy.for_json(ttl_seconds=60).json_root
    assert ClaimCheckPolicy.for_json(threshold_chars=1_500).threshold_chars == 1_500
    with pytest.raises(ValidationError, match=r"\(512 \+ 1024 \+ 1600\) must be smaller"):
        ClaimCheckPolicy.for_logs(threshold_chars=3_000)


_REPLAY = """
import sys
from pathlib import Path
from s3claim import ClaimCheck, ClaimCheckPolicy, HandleKey, MemoryClaimCheckStore, Scope
store = MemoryClaimCheckStore(handle_key=HandleKey("the same key, 16 bytes or more"))
api = ClaimCheckPolicy(json_root=True, head_chars=1024)  # room for the listing
policies = {"ci": ClaimCheckPolicy.for_logs(), "api": api}
check = ClaimCheck(store, per_tool=policies)
scope = Scope(tenant="acme", run="ci-7")
for tool, name in (("ci", "build.log"), ("api", "github-compare.json")):
    text = Path(sys.argv[1], name).read_text(encoding="utf-8")
    sys.stdout.write(check.check_in(text, tool=tool, scope=scope, searchable=True).text + "\\x00")
"""


def test_previews_are_the_same_bytes_in_another_process() -> None:
    """A pure function of the result, the tool, the policy and the scope: another process
    (another hash seed) places the same bytes, so a replayed run keeps the cache's prefix."""
    store = MemoryClaimCheckStore(handle_key=HandleKey("the same key, 16 bytes or more"))
    here = ClaimCheck(store, per_tool={"ci": ClaimCheckPolicy.for_logs(), "api": WIDE_JSON})
    mine = "".join(
        here.check_in(text, tool=tool, scope=SCOPE, searchable=True).text + "\x00"
        for tool, text in (("ci", BUILD_LOG), ("api", COMPARE))
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(FIXTURES.parents[2])}
    theirs = subprocess.run(
        [sys.executable, "-c", _REPLAY, str(FIXTURES)],
        capture_output=True, text=True, encoding="utf-8", check=True, env=env,
    ).stdout  # fmt: skip
    assert theirs == mine
    assert "\n\n[Lines outside the head and tail" in mine and "\n\n[the document:" in mine


def test_the_runner_reads_a_picked_line_by_its_number() -> None:
    log, error_line = service_log(400_000)

    @tool
    def service_logs() -> str:
        """The service's log."""
        return log

    def read_picked(messages: list[object]) -> AssistantMessage:
        content = str(getattr(messages[-1], "content", ""))
        ((number, _),) = picks_of(content)
        handle = re.search(r"handle='(claim:[0-9a-z]+)'", content).group(1)  # type: ignore[union-attr]
        arguments = {"handle": handle, "line": number, "lines": 1}
        return AssistantMessage(
            tool_calls=(ToolCall(id="r", name="fetch_result", arguments=arguments),)
        )

    store = MemoryClaimCheckStore()
    runner = AgentRunner(
        provider=ScriptedProvider(
            [
                AssistantMessage(tool_calls=(ToolCall(id="l", name="service_logs", arguments={}),)),
                read_picked,
                AssistantMessage(content="the ledger timed out"),
            ]
        ),
        tools=ToolRegistry((service_logs, claim_check_tool(store))).view(agent="ops"),
        claim_check=ClaimCheck(store, policy=ClaimCheckPolicy.for_logs()),
    )
    result = runner.run("why did settlement fail?", tenant="acme", run_id="ci-7")
    preview, window = [m.content for m in result.messages if m.role == "tool"]
    assert picks_of(preview) == [(error_line, ERROR_LINE)]
    assert window.split("\n")[0] == ERROR_LINE and "\n\n[line " in window


def test_the_mcp_proxy_shows_the_picks_and_the_listing() -> None:
    from tests.mcp_proxy._support import in_process, text_of

    log, error_line = service_log(60_000)
    policy = ClaimCheckPolicy(
        pick_lines=r"(?m)\bERROR\b|^Traceback ", tail_chars=300, json_root=True
    )

    async def scenario() -> None:
        async with in_process(policy=policy) as (client, _):
            picked = text_of(await client.call_tool("echo", {"text": log}))
            rows = text_of(await client.call_tool("structured_only", {"rows": 200}))
        assert picks_of(picked) == [(error_line, ERROR_LINE)]
        assert picked.endswith(TRACE) and " end this preview. " in picked
        listing = rows.split("\n\n")[2]
        assert listing.startswith("[the document: object of 1 keys, characters 0-")
        assert "\n/rows array, characters " in listing

    anyio.run(scenario)


def test_a_crlf_logs_final_block_is_its_tail_as_an_lf_logs_is() -> None:
    """The blank line before a summary ends in \r\n\r\n in a Windows log: found all the same."""
    lines = [f"Setting up package-{n} (1.{n}) ..." for n in range(400)]
    summary = ["Summary:", *(f"  {n} packages set up" for n in range(30))]  # most of a tail
    lf = "\n".join([*lines, "", *summary]) + "\n"
    crlf = lf.replace("\n", "\r\n")
    tails = []
    for text in (lf, crlf):
        preview = check(ClaimCheckPolicy.for_logs()).check_in(text, tool="ci", scope=SCOPE).text
        tails.append(preview.split("\n\n")[-1])  # the parts of a preview: blank lines
    assert tails[0].startswith("Summary:") and tails[1].startswith("Summary:")
    assert tails[1] == tails[0].replace("\n", "\r\n")


def test_a_listing_never_lengthens_the_preview_by_a_markers_digit() -> None:
    """A shorter head can add a digit to the marker's count of what is not shown: the
    listing's room gives it back (10,312 characters: 9,821 not shown by the default head,
    10,161 by the half head)."""
    members = {f"key{n:02d}": "v" * 200 for n in range(40)}
    for size in range(10_200, 10_400, 7):
        text = json.dumps(members | {"pad": "p" * (size - len(json.dumps(members)) - 10)})
        bare, preset = (
            check(policy).check_in(text, tool="ci", scope=SCOPE).text
            for policy in (ClaimCheckPolicy(), ClaimCheckPolicy.for_json())
        )
        assert len(preset) <= len(bare), size
