"""`search_result`: one contract for every store (memory, S3 on moto, S3 on s3rver).

Matches are checked against the regex engine run over the whole text, and every offset is
confirmed by `fetch` at that offset; chunk boundaries are crossed on purpose (the S3 store
reads 1 MiB at a time, so 1 Mi, 512 Ki or 256 Ki characters a piece by width).
"""

from __future__ import annotations

import itertools
import json
import time
from typing import Any

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from devkit.servers import Wire
from s3claim import (
    AgentRunner,
    AssistantMessage,
    ClaimCheck,
    RunContext,
    ScriptedProvider,
    ToolCall,
    ToolRegistry,
    claim_check_tool,
    claim_search_tool,
    tool,
)
from s3claim._reading._search import MAX_MATCHES, SNIPPET_CHARS, compile_pattern, search_text
from s3claim.events import Event
from s3claim.scope import Scope
from s3claim.testing import ManualClock, MemoryClaimCheckStore
from s3claim.wording import UNAVAILABLE_MESSAGE
from tests._s3 import stored_bytes
from tests._strategies import examples
from tests.conftest import StoreUnderTest

SCOPE = Scope(tenant="acme", run="run-1")
TTL = 3600
KI = 1024


def search(sut: StoreUnderTest, handle: str, pattern: str, **arguments: Any) -> dict[str, Any]:
    """The tool's answer, parsed: results as JSON, refusals as {"error": ..., "message": ...}."""
    events: list[Event] = []
    context = RunContext(scope=arguments.pop("scope", SCOPE), agent="a", emit=events.append)
    from s3claim.errors import ToolError

    try:
        answer = claim_search_tool(sut.store).call(
            {"handle": handle, "pattern": pattern, **arguments}, context
        )
    except ToolError as error:
        answer = error.render()
    parsed: dict[str, Any] = json.loads(answer)
    parsed["_events"] = [e.model_dump() for e in events]
    return parsed


def test_no_nesting_of_groups_is_a_tool_failure() -> None:
    # Python's recursion limit is met by the engine's parser, at a depth the stack decides: the
    # pattern itself, or the probe that nests it once more (329 here), whichever comes first.
    store = MemoryClaimCheckStore()
    handle = store.put(SCOPE, "a" * 5_000, ttl_seconds=TTL)
    answers = {}
    for depth in range(300, 500, 3):
        sut = StoreUnderTest(store, ManualClock(), "memory")
        answer = search(sut, handle, "(" * depth + "a" + ")" * depth, regex=True)
        answers[depth] = answer.get("error", "found")
    assert set(answers.values()) == {"found", "invalid_arguments"}, answers


def reference(text: str, pattern: str, flags: int = 0) -> list[int]:
    return [m.start() for m in regex.finditer(pattern, text, flags) if m.end() > m.start()]


def confirm(sut: StoreUnderTest, handle: str, offsets: list[int], needle: str) -> None:
    """`fetch` at each offset starts with what was matched: the offsets are the same unit."""
    for offset in offsets:
        window = sut.store.fetch(SCOPE, handle, offset=offset, limit=len(needle))
        assert window.text.casefold() == needle.casefold(), offset


def test_a_literal_is_found_with_exact_offsets_and_snippets(
    store_under_test: StoreUnderTest,
) -> None:
    text = "".join(f"Clause {n}. The parties agree to term {n}.\n" for n in range(1, 400))
    handle = store_under_test.store.put(SCOPE, text, ttl_seconds=TTL)
    found = search(store_under_test, handle, "term 37.")
    assert found["total_matches"] == 1 and found["next_offset"] is None
    (match,) = found["matches"]
    assert match["offset"] == text.index("term 37.")
    assert "term 37." in match["snippet"] and len(match["snippet"]) <= SNIPPET_CHARS
    assert match["snippet"] in text
    confirm(store_under_test, handle, [match["offset"]], "term 37.")
    assert found["_events"] == [
        {
            "kind": "claim_searched",
            "handle": handle,
            "pattern_chars": 8,
            "matches": 1,
            "total_matches": 1,
        }
    ]


@pytest.mark.parametrize(
    ("text", "pattern", "is_regex", "ignore_case", "needle"),
    [
        ("Section 14.2 Termination. " * 30, r"Section \d+\.\d", True, False, "Section 14.2"),
        ("the TERMINATION; termination; Termination " * 30, "termination", False, True, "term"),
        ("本契約は東京地方裁判所を管轄とする。" * 50, "東京地方裁判所", False, False, "東京地方"),
        ("Договор поставки. ДОГОВОР аренды. " * 60, "договор", False, True, "договор"),
        ("emoji 👩‍⚖️ and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 text; " * 80, "𝔘𝔫𝔦", False, False, "𝔘𝔫𝔦"),
        ("a.b a+b a*b (a|b) " * 50, "(a|b)", False, False, "(a|b)"),
    ],
    ids=["regex", "ignore-case", "japanese", "cyrillic-ignore-case", "astral", "literal-metachars"],
)  # fmt: skip
def test_patterns_of_every_kind_and_width(
    store_under_test: StoreUnderTest,
    text: str,
    pattern: str,
    is_regex: bool,
    ignore_case: bool,
    needle: str,
) -> None:
    handle = store_under_test.store.put(SCOPE, text, ttl_seconds=TTL)
    found = search(store_under_test, handle, pattern, regex=is_regex, ignore_case=ignore_case)
    expected = reference(
        text,
        pattern if is_regex else regex.escape(pattern),
        regex.IGNORECASE if ignore_case else 0,
    )
    assert found["total_matches"] == len(expected) > MAX_MATCHES
    assert [m["offset"] for m in found["matches"]] == expected[:MAX_MATCHES]
    if is_regex:
        needle = text[expected[0] : expected[0] + len(needle)]
    confirm(store_under_test, handle, [m["offset"] for m in found["matches"]], needle)


def test_paging_with_next_offset_returns_every_match_once(store_under_test: StoreUnderTest) -> None:
    text = "".join(f"row {n}: needle\n" for n in range(45))
    handle = store_under_test.store.put(SCOPE, text, ttl_seconds=TTL)
    offsets: list[int] = []
    offset: int | None = 0
    pages = 0
    while offset is not None:
        page = search(store_under_test, handle, "needle", offset=offset)
        assert page["total_matches"] == 45  # the claim's total, on every page
        offsets += [m["offset"] for m in page["matches"]]
        offset = page["next_offset"]
        pages += 1
    assert pages == 3
    assert offsets == reference(text, "needle")


@pytest.mark.slow
def test_matches_across_the_pieces_a_store_streams_are_found(
    store_under_test: StoreUnderTest,
) -> None:
    for filler, width in (("x", 1), ("é", 1), ("ж", 2), ("🙂", 4)):
        size = 2 * 1024 * KI
        needle = "NEEDLE-across"
        chars = list(filler * size)
        starts = [k * 256 * KI - 5 for k in range(1, 8)]
        for start in starts:  # straddles a piece boundary at every width
            chars[start : start + len(needle)] = needle
        text = "".join(chars)
        handle = store_under_test.store.put(SCOPE, text, ttl_seconds=TTL)
        assert handle.startswith(f"claim:{width}")
        found = search(store_under_test, handle, needle)
        assert [m["offset"] for m in found["matches"]] == sorted(starts), width
        confirm(store_under_test, handle, sorted(starts)[:3], needle)


def test_a_catastrophic_regex_is_stopped_by_its_cpu_budget(
    store_under_test: StoreUnderTest,
) -> None:
    """The budget is CPU time of the searching thread (0.5 s and 5 ns a character here), so
    the bound holds on a loaded machine, where wall time does not: this regex would otherwise
    backtrack for longer than the universe has existed."""
    handle = store_under_test.store.put(SCOPE, "a" * 20_000 + "!", ttl_seconds=TTL)
    started = time.process_time()
    found = search(store_under_test, handle, "(a|aa)+b", regex=True)
    assert time.process_time() - started < 2.0
    assert found["error"] == "pattern_too_costly"
    assert found["_events"] == [
        {"kind": "claim_search_failed", "handle": handle, "error": "pattern_too_costly"}
    ]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"pattern": ""}, "pattern: String should have at least 1 character"),
        ({"pattern": "x" * 1001}, "pattern: String should have at most 1000 characters"),
        ({"pattern": "ab(c", "regex": True}, r"pattern: not a valid regular expression \(miss"),
        # 500 nested groups: the engine's parser recursed past Python's limit (tool_failed)
        ({"pattern": "(" * 500 + ")" * 500, "regex": True},
         r"pattern: not a valid regular expression \(its groups nest too deeply\)$"),
        ({"pattern": "x", "offset": -1}, "offset: Input should be greater than or equal to 0"),
        ({"pattern": "x", "offset": "3"}, "offset: Input should be a valid integer"),
    ],
)  # fmt: skip
def test_bad_arguments_are_errors_the_model_can_read(
    store_under_test: StoreUnderTest, arguments: dict[str, Any], message: str
) -> None:
    handle = store_under_test.store.put(SCOPE, "some text", ttl_seconds=TTL)
    arguments = dict(arguments)  # shared by every store's run of this case
    pattern = arguments.pop("pattern")
    found = search(store_under_test, handle, pattern, **arguments)
    assert found["error"] == "invalid_arguments"
    assert regex.match(message, found["message"]), found["message"]
    assert found["_events"] == []


def test_forged_foreign_and_expired_handles_are_the_uniform_refusal(
    store_under_test: StoreUnderTest,
) -> None:
    handle = store_under_test.store.put(SCOPE, "secret text " * 10, ttl_seconds=TTL)
    refusal = {"error": "claim_unavailable", "message": UNAVAILABLE_MESSAGE}
    cases = [
        ("claim:1" + "0" * 32, SCOPE),  # well-formed, never stored
        ("claim:" + handle[7:], SCOPE),  # format 1: no width digit
        ("claim:4" + handle[7:], SCOPE),  # width digit altered
        (handle, Scope(tenant="acme", run="other")),
        (handle, Scope(tenant="globex", run="run-1")),
    ]
    for candidate, scope in cases:
        found = search(store_under_test, candidate, "secret", scope=scope)
        assert {k: found[k] for k in ("error", "message")} == refusal, candidate
    store_under_test.clock.advance(TTL)
    found = search(store_under_test, handle, "secret")
    assert {k: found[k] for k in ("error", "message")} == refusal
    assert found["_events"] == [{"kind": "claim_unavailable", "handle": handle}]


def test_a_snippet_is_the_matchs_lines_when_they_fit_else_200_characters_of_them(
    store_under_test: StoreUnderTest,
) -> None:
    long_line = "x" * 150 + " needle " + "y" * 500
    text = "first line\nthe needle line\n" + long_line + "\nlast\n" + "z" * 300
    handle = store_under_test.store.put(SCOPE, text, ttl_seconds=TTL)
    snippets = [m["snippet"] for m in search(store_under_test, handle, "needle")["matches"]]
    at = long_line.index(" needle ") + 1
    assert snippets == ["the needle line", long_line[at - 97 : at + 103]]
    assert len(snippets[1]) == SNIPPET_CHARS and "\n" not in snippets[1]

    def only(pattern: str) -> str:
        (match,) = search(store_under_test, handle, pattern, regex=True)["matches"]
        return str(match["snippet"])

    assert only(r"line\nthe") == "first line\nthe needle line"  # every line it is on
    assert only(r"\nthe") == "\nthe needle line"  # from its break, not the line before
    assert only(r"the needle line\n") == "the needle line\n"  # to its break
    assert only(r"(?m)^last$") == "last"
    assert only("z+") == "z" * SNIPPET_CHARS  # a match longer than a snippet: its start
    assert only(r"\Afirst") == "first line"


def test_snippets_are_neutralised_like_every_result(store_under_test: StoreUnderTest) -> None:
    text = "x " * 100 + "see claim:abc and fetch_result and <|im_start|> now " + "y " * 100
    handle = store_under_test.store.put(SCOPE, text, ttl_seconds=TTL)
    (match,) = search(store_under_test, handle, "see")["matches"]
    assert "claim-abc" in match["snippet"] and "fetch-result" in match["snippet"]
    assert "(|im_start|)" in match["snippet"] and "claim:" not in match["snippet"]


def test_a_search_on_s3_is_one_get_of_the_object(store_under_test: StoreUnderTest) -> None:
    if store_under_test.kind == "memory":
        return  # the memory store sends no requests; the contract above holds for it
    client = store_under_test.store.client  # type: ignore[attr-defined]
    wire = Wire.attach(client)
    text = "ж" * (3 * 1024 * KI) + "needle"
    handle = store_under_test.store.put(SCOPE, text, ttl_seconds=TTL)
    wire.clear()
    assert search(store_under_test, handle, "needle")["total_matches"] == 1
    assert dict(wire.requests) == {"GetObject": 1}
    assert dict(wire.response_bytes) == {"GetObject": stored_bytes(2 * len(text))}


# -- line numbers, and matches longer than the carry ------------------------------------------

MEMORY_AND_S3 = pytest.mark.parametrize("store_under_test", ["memory", "s3"], indirect=True)


def minified_claim(chars: int) -> str:
    """A one-line JSON response of exactly `chars` characters, `"count"` at its very end."""
    rows, n = [], 0
    while sum(map(len, rows)) + len(rows) + 60 < chars:
        rows.append(json.dumps({"id": n, "name": f"record {n}"}, separators=(",", ":")))
        n += 1
    head = '{"items":[' + ",".join(rows) + '],"pad":"'
    tail = f'","count":{n}}}'
    return head + "x" * (chars - len(head) - len(tail)) + tail


@MEMORY_AND_S3
@pytest.mark.parametrize(
    "pattern",
    [r"\A\{.*\}\Z", r'\A\{"items":.*"count":\d+', r"\A.{213000}", r'\A.*"pad"'],
)
def test_an_anchored_regex_whose_match_ends_past_the_carry_is_found(
    store_under_test: StoreUnderTest, pattern: str
) -> None:
    """The issue's case: one 213,251-character line, the match ending in its last 64 Ki."""
    text = minified_claim(213_251)
    assert len(text) == 213_251 and "\n" not in text
    handle = store_under_test.store.put(SCOPE, text, ttl_seconds=TTL)
    found = search(store_under_test, handle, pattern, regex=True)
    assert reference(text, pattern) == [0]
    assert found["total_matches"] == 1, found
    assert [(m["offset"], m["line"]) for m in found["matches"]] == [(0, 1)]


@MEMORY_AND_S3
def test_a_match_too_long_to_hold_is_a_clear_error_never_a_silent_miss(
    store_under_test: StoreUnderTest, monkeypatch: pytest.MonkeyPatch
) -> None:
    from s3claim._reading import _search as module

    monkeypatch.setattr(module, "MAX_HELD_CHARS", 100 * KI)
    text = minified_claim(300_000)
    handle = store_under_test.store.put(SCOPE, text, ttl_seconds=TTL)
    found = search(store_under_test, handle, r'\A.*"count"', regex=True)
    assert found["error"] == "match_too_long", found
    assert "102,400 characters" in found["message"] and "search for a literal" in found["message"]
    assert [e["kind"] for e in found["_events"]] == ["claim_search_failed"]
    assert found["_events"][0]["error"] == "match_too_long"
    # A bounded pattern on the same claim is settled by the carry: found, never held.
    bounded = search(store_under_test, handle, r'"count":\d{1,9}', regex=True)
    assert [m["offset"] for m in bounded["matches"]] == [text.index('"count":')]


@MEMORY_AND_S3
@pytest.mark.parametrize(("filler", "width"), [("x", 1), ("ж", 2), ("🙂", 4)])
def test_line_numbers_are_exact_across_pieces_at_every_width(
    store_under_test: StoreUnderTest, filler: str, width: int
) -> None:
    """Lines of every length (CRLF and LF, some over a piece long) around needles placed on
    the S3 store's piece boundaries (1 MiB: 1 Mi, 512 Ki or 256 Ki characters by width)."""
    piece = 1024 * KI // width
    lengths = [1, 3, 700, 0, 40_000, piece + 17, 5, 90_000, 2]
    parts: list[str] = []
    for n in range(60):
        length = lengths[n % len(lengths)]
        parts.append(filler * length + ("\r\n" if n % 3 else "\n"))
    chars = list("".join(parts))
    needle = "NEEDLE"
    starts = [k * piece - 3 for k in range(1, len(chars) // piece)] + [len(chars) - 40]
    for start in starts:
        chars[start : start + len(needle)] = needle
    text = "".join(chars)
    handle = store_under_test.store.put(SCOPE, text, ttl_seconds=TTL)
    assert handle.startswith(f"claim:{width}")
    for pattern, is_regex in ((needle, False), (r"NEE\w+", True), (r"NEEDLE(?=.*\n)", True)):
        found = search(store_under_test, handle, pattern, regex=is_regex)
        expected = reference(text, pattern if is_regex else regex.escape(pattern))
        assert len(expected) >= 3
        assert [m["offset"] for m in found["matches"]] == expected[:MAX_MATCHES], pattern
        lines = [text.count("\n", 0, offset) + 1 for offset in expected[:MAX_MATCHES]]
        assert [m["line"] for m in found["matches"]] == lines, pattern
    confirm(store_under_test, handle, expected[:3], needle)


def test_a_line_ends_at_a_newline_and_crlf_is_one_break(store_under_test: StoreUnderTest) -> None:
    text = "a\r\nb\rc\n\nd" + "\n" * 5000 + "e"
    handle = store_under_test.store.put(SCOPE, text, ttl_seconds=TTL)
    found = search(store_under_test, handle, "[a-e]", regex=True)
    assert [(m["offset"], m["line"]) for m in found["matches"]] == [
        (0, 1),
        (3, 2),
        (5, 2),  # a lone \r does not end a line
        (8, 4),
        (len(text) - 1, 5004),
    ]


# -- the algorithm, on any split of the text --------------------------------------------------


# Anchored and unanchored; tries that read a few characters (settled by the carry) and tries
# that may read to the end of the text at hand (`.*`, `+`, lookaheads: probed).
PATTERNS = [
    *("ab", "a+", "b[aA]+b", r"\bA", "ba?b", r"a\s+b", "aaaa", "a.*b", "a.*?b", r"a(?=.*B)"),
    *(r"a(?!b)", r"(?<=b)a", "(a|ab)(c|bcd)", r"(?m)^a", r"(?m)b$", r"a\Z", r"\bab\b"),
    *(r"\Aa", r"\A.*b", r"\A[ab ]+", r"\A.{0,12}", r"\A(?s:.*)B", r"\A.*z|b", r"(?s)a.*B\Z"),
]


@settings(
    max_examples=examples(300),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    text=st.text(alphabet="abAB \n", max_size=300),
    cuts=st.lists(st.integers(min_value=0, max_value=300), max_size=12),
    pattern=st.sampled_from(PATTERNS),
    offset=st.integers(min_value=0, max_value=300),
    ignore_case=st.booleans(),
)
def test_any_split_finds_what_the_engine_finds_in_the_whole_text(
    monkeypatch: pytest.MonkeyPatch,
    text: str,
    cuts: list[int],
    pattern: str,
    offset: int,
    ignore_case: bool,
) -> None:
    from s3claim._reading import _search as module

    monkeypatch.setattr(module, "_CARRY", 16)  # small pieces must cross boundaries often
    monkeypatch.setattr(module, "_CONTEXT", 16)
    bounds = sorted({0, len(text), *(c for c in cuts if c <= len(text))})
    pieces = [text[a:b] for a, b in itertools.pairwise(bounds)]
    compiled = compile_pattern(pattern, is_regex=True, ignore_case=ignore_case)
    result = search_text(iter(pieces), compiled, offset=offset)
    expected = [m for m in compiled.finditer(text) if m.end() > m.start()]
    assert result.total_matches == len(expected)
    page = [m for m in expected if m.start() >= offset][:MAX_MATCHES]
    assert [m.offset for m in result.matches] == [m.start() for m in page]
    for found, want in zip(result.matches, page, strict=True):
        assert want.group()[:SNIPPET_CHARS] in found.snippet
        assert found.line == text.count("\n", 0, want.start()) + 1
    more = len([m for m in expected if m.start() >= offset]) > MAX_MATCHES
    assert result.next_offset == (page[-1].end() if more else None)


# -- in the run loop ------------------------------------------------------------------------


def test_the_runner_offers_search_and_the_marker_says_so(
    store_under_test: StoreUnderTest,
) -> None:
    contract = "".join(f"Clause {n}. Terms of article {n}.\n\n" for n in range(1, 3000))
    store = store_under_test.store

    @tool
    def read_contract() -> str:
        """The contract."""
        return contract

    def search_step(messages: Any) -> AssistantMessage:
        handle = regex.search(r"handle='(claim:[0-9a-z]+)'", messages[-1].content).group(1)
        call = ToolCall(
            id="s", name="search_result", arguments={"handle": handle, "pattern": "article 2718."}
        )
        return AssistantMessage(tool_calls=(call,))

    provider = ScriptedProvider(
        [
            AssistantMessage(tool_calls=(ToolCall(id="r", name="read_contract"),)),
            search_step,
            AssistantMessage(content="done"),
        ]
    )
    registry = ToolRegistry((read_contract, claim_check_tool(store), claim_search_tool(store)))
    runner = AgentRunner(provider=provider, tools=registry.view(), claim_check=ClaimCheck(store))
    result = runner.run("find article 2718", tenant=SCOPE.tenant, run_id=SCOPE.run)
    head = result.messages[2].content
    assert head.endswith("to read the rest, or search_result to find text in it.]")
    found = json.loads(result.messages[4].content)
    assert [m["offset"] for m in found["matches"]] == [contract.index("article 2718.")]
    assert [e.kind for e in result.events].count("claim_searched") == 1


@MEMORY_AND_S3
def test_a_structured_result_reads_by_path_and_its_matches_are_its_records_lines(
    store_under_test: StoreUnderTest,
) -> None:
    """A tool's list of records, checked in by the runner: one record to a line, so a search's
    `line` is the record's (line 1 is `[`), and `path` reads its exact characters."""
    store = store_under_test.store
    orders = [{"id": n, "customer": f"customer {n}", "note": "rush, gift"} for n in range(2000)]

    @tool
    def list_orders() -> list[dict[str, Any]]:
        """Every order."""
        return orders

    provider = ScriptedProvider(
        [
            AssistantMessage(tool_calls=(ToolCall(id="l", name="list_orders"),)),
            AssistantMessage(content="done"),
        ]
    )
    registry = ToolRegistry((list_orders, claim_check_tool(store), claim_search_tool(store)))
    runner = AgentRunner(provider=provider, tools=registry.view(), claim_check=ClaimCheck(store))
    result = runner.run("list", tenant=SCOPE.tenant, run_id=SCOPE.run)
    shown = result.messages[2].content
    handle = regex.search(r"handle='(claim:[0-9a-z]+)'", shown).group(1)
    head = shown.split("\n\n[")[0]
    assert [json.loads(line.rstrip(",")) for line in head.split("\n")[1:]] == orders[
        : head.count("\n")
    ]  # the head ends after a whole record
    text = store.fetch(SCOPE, handle, offset=0, limit=10**7).text
    assert json.loads(text) == orders and text.count("\n") == 2001
    found = search(store_under_test, handle, '"customer":"customer 1499"')
    ((match),) = found["matches"]
    assert match["line"] == 1501
    assert text.split("\n")[1500] == json.dumps(orders[1499], separators=(",", ":")) + ","
    answer = store.read_path(SCOPE, handle, "/1499", limit=4096)  # type: ignore[attr-defined]
    assert json.loads(answer.text) == orders[1499]
    assert answer.text == text[answer.start : answer.end]


@pytest.mark.parametrize(
    ("pattern", "reads"),
    [
        (r"Section \d{1,3}", 12),  # at most 11 characters, and one looked at after
        (r"\bERROR\b", 6),
        (r"a(?=.{5}z)", 8),  # a lookahead reads what it looks at
        (r"ERROR.*", None),
        (r"\d+", None),
        (r"a(?=.*z)", None),
        (r"x{70000}", None),  # bounded, but past the carry
        (r"\p{Lu}\w", None),  # the `regex` module's own syntax: cannot be told, so probed
    ],
)
def test_how_far_a_try_reads_decides_carry_or_probe(pattern: str, reads: int | None) -> None:
    from s3claim._reading._matching import reach

    assert reach(regex.compile(pattern), within=64 * KI) == reads
