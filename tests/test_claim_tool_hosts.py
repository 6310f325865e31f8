"""One contract for the claim tools, run through every host: the runner, the framework
bridge and the MCP proxy. Each host supplies the scope and hands the model's arguments over;
what comes back (text, error or not, events) must be the same whoever hosts the call.

s3fs's pattern (`s3fs/tests/derived/s3fs_test.py`): the cases live in one class, and each
host is a subclass that names its driver in `tests._hosts`.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

import pytest

from s3claim import ClaimCheck, Event, Scope
from s3claim.testing import FailingStore
from s3claim.wording import (
    LINES_WITHOUT_LINE_MESSAGE,
    UNAVAILABLE_MESSAGE,
    end_note,
    footer,
    past_end_note,
)
from tests._hosts import drive, one_a_turn

SCOPE = Scope(tenant="acme", run="r-1")
TEXT = "".join(f"Clause {n}. The parties agree to term {n}.\n" for n in range(1, 400))
RECORDS = json.dumps({"items": [{"id": n, "name": f"record {n}"} for n in range(2000)]}, indent=1)


class ClaimToolContract:
    """The cases. A host names its driver (`tests._hosts.DRIVERS`)."""

    host: ClassVar[str]

    @pytest.fixture(autouse=True)
    def _store(self) -> None:
        self.store = FailingStore(failing=False)
        self.events: list[Event] = []
        self.handle = self.store.put(SCOPE, TEXT, ttl_seconds=60)

    def call(self, tool: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        """The text the model reads of one call, and whether it is an error."""
        run = drive(
            self.host,
            (),
            one_a_turn((tool, arguments)),
            claim_check=ClaimCheck(self.store),
            scope=SCOPE,
            on_event=self.events.append,
        )
        (answer,) = run.answers
        assert answer.links == 0  # a claim tool's answer is its text alone
        return answer.text, answer.error

    def error(self, tool: str, arguments: dict[str, Any]) -> dict[str, str]:
        text, is_error = self.call(tool, arguments)
        assert is_error, text[:200]
        refusal: dict[str, str] = json.loads(text)
        assert set(refusal) == {"error", "message"}
        return refusal

    def kinds(self) -> list[str]:
        return [e.kind for e in self.events]

    def test_a_window_and_its_footer(self) -> None:
        text, is_error = self.call("fetch_result", {"handle": self.handle})
        more = footer(offset=0, next_offset=4096, total_chars=len(TEXT), handle=self.handle)
        assert (text, is_error) == (f"{TEXT[:4096]}\n\n{more}", False)
        assert self.kinds() == ["claim_fetched"]

    def test_the_last_window_ends_with_a_note_and_past_the_end_says_how_long(self) -> None:
        last = len(TEXT) - 100
        note = end_note(offset=last, end=len(TEXT), total_chars=len(TEXT), total_lines=399)
        assert self.call("fetch_result", {"handle": self.handle, "offset": last}) == (
            f"{TEXT[last:]}\n\n{note}",
            False,
        )
        past = past_end_note(total_chars=len(TEXT), total_lines=399, offset=10**9)
        assert self.call("fetch_result", {"handle": self.handle, "offset": 10**9}) == (past, False)
        assert f"{len(TEXT)} characters, 399 lines" in past

    def test_a_line_is_read_whole_with_the_line_range_and_the_next_line(self) -> None:
        text, is_error = self.call("fetch_result", {"handle": self.handle, "line": 300})
        window, note = text.rsplit("\n\n", 1)
        start = TEXT.index("Clause 300.")
        assert not is_error and window.startswith("Clause 300.") and window.endswith("\n")
        assert TEXT[start : start + len(window)] == window and len(window) <= 4096
        last = 299 + window.count("\n")
        assert note == (
            f"[lines 300-{last} of 399 (characters {start}-{start + len(window)} of "
            f"{len(TEXT)}). Call fetch_result with handle='{self.handle}' and line={last + 1} "
            "to continue.]"
        )
        assert self.kinds() == ["claim_fetched"]
        assert self.events[0].offset == start  # type: ignore[attr-defined]

    def test_the_last_lines_and_a_line_past_the_last(self) -> None:
        text, _ = self.call("fetch_result", {"handle": self.handle, "line": 399})
        assert text == "Clause 399. The parties agree to term 399.\n\n\n" + end_note(
            offset=TEXT.index("Clause 399."),
            end=len(TEXT),
            total_chars=len(TEXT),
            total_lines=399,
            first_line=399,
            last_line=399,
        )
        text, is_error = self.call("fetch_result", {"handle": self.handle, "line": 400})
        assert not is_error
        assert text == past_end_note(total_chars=len(TEXT), total_lines=399, line=400)

    def test_from_end_reads_the_last_window_from_a_line_start(self) -> None:
        text, is_error = self.call("fetch_result", {"handle": self.handle, "from_end": True})
        window, note = text.rsplit("\n\n", 1)
        assert not is_error and TEXT.endswith(window) and len(window) <= 4096
        assert TEXT[len(TEXT) - len(window) - 1] == "\n"  # it starts a line
        assert note.startswith("[end of the result (fetch_result): characters ")
        assert note.endswith(f"of {len(TEXT)}, lines {400 - window.count(chr(10))}-399 of 399.]")

    @pytest.mark.parametrize(
        "arguments",
        [{"limit": 50}, {"line": 2, "limit": 50}, {"from_end": True, "limit": 50}],
    )
    def test_limit_bounds_every_mode(self, arguments: dict[str, Any]) -> None:
        text, is_error = self.call("fetch_result", {"handle": self.handle, **arguments})
        window = text.rsplit("\n\n", 1)[0]
        assert not is_error and 0 < len(window) <= 50 and window in TEXT

    def test_limit_bounds_a_path_read(self) -> None:
        handle = self.store.put(SCOPE, RECORDS, ttl_seconds=60)
        text, is_error = self.call("fetch_result", {"handle": handle, "path": "", "limit": 10})
        assert not is_error and text.startswith(RECORDS[:10] + "\n\n[the document: object")

    def test_lines_keeps_the_first_lines_read_by_line_and_the_footer_goes_on_after_them(
        self,
    ) -> None:
        text, is_error = self.call("fetch_result", {"handle": self.handle, "line": 300, "lines": 3})
        start, end = TEXT.index("Clause 300."), TEXT.index("Clause 303.")
        assert (text, is_error) == (
            f"{TEXT[start:end]}\n\n[lines 300-302 of 399 (characters {start}-{end} of "
            f"{len(TEXT)}). Call fetch_result with handle='{self.handle}' and line=303 to "
            "continue.]",
            False,
        )
        # more lines than the window holds: the window as without lines
        many = self.call("fetch_result", {"handle": self.handle, "line": 300, "lines": 10**6})
        assert many == self.call("fetch_result", {"handle": self.handle, "line": 300})
        # lines and limit: whichever ends first
        text, _ = self.call(
            "fetch_result", {"handle": self.handle, "line": 1, "lines": 5, "limit": 100}
        )
        assert text.startswith(TEXT[: TEXT.index("Clause 3.")] + "\n\n[lines 1-2 of 399")

    def test_lines_from_the_end_keeps_the_last_lines(self) -> None:
        text, is_error = self.call(
            "fetch_result", {"handle": self.handle, "from_end": True, "lines": 2}
        )
        start = TEXT.index("Clause 398.")
        assert (text, is_error) == (
            TEXT[start:]
            + "\n\n"
            + end_note(
                offset=start,
                end=len(TEXT),
                total_chars=len(TEXT),
                total_lines=399,
                first_line=398,
                last_line=399,
            ),
            False,
        )
        handle = self.store.put(SCOPE, "one\ntwo\nthree", ttl_seconds=60)  # no final break
        text, _ = self.call("fetch_result", {"handle": handle, "from_end": True, "lines": 1})
        assert text.startswith("three\n\n[end of the result (fetch_result): characters 8-13")

    @pytest.mark.parametrize(
        "given",
        [
            {"lines": 2},
            {"offset": 5, "lines": 2},
            {"path": "", "lines": 2},
            {"from_end": False, "lines": 1},
        ],
    )
    def test_lines_without_line_or_from_end_is_refused(self, given: dict[str, Any]) -> None:
        refusal = self.error("fetch_result", {"handle": self.handle, **given})
        assert refusal == {"error": "invalid_arguments", "message": refusal["message"]}
        assert LINES_WITHOUT_LINE_MESSAGE in refusal["message"]
        assert self.kinds() == []

    def test_a_search_snippet_is_the_matchs_whole_line(self) -> None:
        text, _ = self.call("search_result", {"handle": self.handle, "pattern": "term 300."})
        (match,) = json.loads(text)["matches"]
        assert match["snippet"] == "Clause 300. The parties agree to term 300."
        assert match["line"] == 300

    @pytest.mark.parametrize(
        ("arguments", "named"),
        [
            ({"line": 0}, "line"),
            ({"line": -3}, "line"),
            ({"line": True}, "line"),
            ({"line": "3"}, "line"),
            ({"line": 1.5}, "line"),
            ({"limit": 0}, "limit"),
            ({"limit": 4097}, "limit"),
            ({"limit": None}, "limit"),
            ({"limit": True}, "limit"),
            ({"from_end": "true"}, "from_end"),
            ({"from_end": 1}, "from_end"),
            ({"line": 2, "lines": 0}, "lines"),
            ({"line": 2, "lines": "2"}, "lines"),
            ({"from_end": True, "lines": True}, "lines"),
        ],
    )
    def test_bad_line_limit_and_from_end_are_refused(
        self, arguments: dict[str, Any], named: str
    ) -> None:
        refusal = self.error("fetch_result", {"handle": self.handle, **arguments})
        assert refusal["error"] == "invalid_arguments" and named in refusal["message"]
        assert self.kinds() == []

    @pytest.mark.parametrize(
        "given",
        [
            {"offset": 0, "line": 2},
            {"line": 2, "from_end": True},
            {"offset": 5, "from_end": True},
            {"path": "", "line": 1},
            {"offset": 0, "line": 1, "from_end": True, "path": ""},
        ],
    )
    def test_two_ways_to_a_window_are_refused_saying_which_to_drop(
        self, given: dict[str, Any]
    ) -> None:
        refusal = self.error("fetch_result", {"handle": self.handle, **given})
        assert refusal["error"] == "invalid_arguments"
        for name in given:
            assert f"drop {name}" in refusal["message"] or f"and {name}" in refusal["message"]
        assert self.kinds() == []

    def test_from_end_false_is_no_way_at_all(self) -> None:
        text, is_error = self.call(
            "fetch_result", {"handle": self.handle, "line": 2, "from_end": False, "limit": 9}
        )
        assert (text.split("\n")[0], is_error) == ("Clause 2.", False)

    def test_a_huge_line_reads_past_the_end(self) -> None:
        text, is_error = self.call("fetch_result", {"handle": self.handle, "line": 10**30})
        assert not is_error and text.startswith(f"[fetch_result: no line {10**30};")

    def test_a_negative_offset_is_refused(self) -> None:
        refusal = self.error("fetch_result", {"handle": self.handle, "offset": -1})
        assert refusal["error"] == "invalid_arguments" and "offset" in refusal["message"]
        assert self.kinds() == []

    def test_an_unknown_argument_is_refused(self) -> None:
        refusal = self.error("fetch_result", {"handle": self.handle, "whence": 0})
        assert refusal["error"] == "invalid_arguments" and "whence" in refusal["message"]

    @pytest.mark.parametrize("handle", ["claim:abc", "nonsense", "claim:1" + "0" * 32])
    def test_malformed_and_unknown_handles_get_the_one_refusal(self, handle: str) -> None:
        refusal = self.error("fetch_result", {"handle": handle})
        assert refusal == {"error": "claim_unavailable", "message": UNAVAILABLE_MESSAGE}
        assert self.kinds() == ["claim_unavailable"]

    @pytest.mark.parametrize(
        "wrap",
        ["'{}'", '"{}"', "&#39;{}&#39;", "&quot;{}&quot;", "&#x27;{}&#x27;", "&apos;{}&apos;"],
    )
    def test_a_handle_in_quotes_or_their_entities_is_the_handle_it_wraps(self, wrap: str) -> None:
        # llama-cpp-python's chatml-function-calling shows a model handle=&#39;claim:…&#39;
        wrapped = wrap.format(self.handle)
        text, is_error = self.call("fetch_result", {"handle": wrapped, "limit": 40})
        assert (text, is_error) == self.call("fetch_result", {"handle": self.handle, "limit": 40})
        found, is_error = self.call("search_result", {"handle": wrapped, "pattern": "term 300."})
        assert json.loads(found)["total_matches"] == 1 and not is_error

    @pytest.mark.parametrize(
        "wrap",
        [
            " {}",
            "'{}",
            "{}'",
            "'{}\"",
            "&#39;{}",
            "<{}>",
            "''{}''",
            "'&#39;{}&#39;'",
            "&amp;#39;{}&amp;#39;",
        ],
    )
    def test_nothing_else_around_a_handle_is_read_past(self, wrap: str) -> None:
        refusal = self.error("fetch_result", {"handle": wrap.format(self.handle)})
        assert refusal == {"error": "claim_unavailable", "message": UNAVAILABLE_MESSAGE}

    def test_another_runs_handle_gets_the_same_refusal(self) -> None:
        theirs = self.store.put(Scope("acme", "r-2"), TEXT, ttl_seconds=60)
        for tool, extra in (("fetch_result", {}), ("search_result", {"pattern": "Clause"})):
            refusal = self.error(tool, {"handle": theirs, **extra})
            assert refusal == {"error": "claim_unavailable", "message": UNAVAILABLE_MESSAGE}

    def test_a_store_fault_is_the_models_to_retry(self) -> None:
        self.store.failing = True
        for tool, extra in (
            ("fetch_result", {}),
            ("fetch_result", {"line": 3}),
            ("fetch_result", {"from_end": True}),
            ("search_result", {"pattern": "Clause"}),
        ):
            assert self.error(tool, {"handle": self.handle, **extra})["error"] == (
                "store_unavailable"
            )
        assert self.kinds() == ["claim_fetch_failed"] * 3 + ["claim_search_failed"]

    def test_a_json_value_is_read_by_path(self) -> None:
        handle = self.store.put(SCOPE, RECORDS, ttl_seconds=60)
        text, is_error = self.call("fetch_result", {"handle": handle, "path": "/items/1499/name"})
        assert (text, is_error) == ('"record 1499"', False)
        text, is_error = self.call("fetch_result", {"handle": handle, "path": "/items/1499"})
        record = json.loads(RECORDS)["items"][1499]
        window, members = text.split("\n\n")
        assert json.loads(window) == record and not is_error
        assert members.startswith("[/items/1499: object of 2 keys, characters ")
        assert "/items/1499/name string, characters " in members
        assert self.kinds() == ["claim_fetched", "claim_fetched"]

    def test_offset_beside_path_pages_the_members(self) -> None:
        handle = self.store.put(SCOPE, RECORDS, ttl_seconds=60)
        whole = self.call("fetch_result", {"handle": handle, "path": "/items"})
        assert self.call("fetch_result", {"handle": handle, "path": "/items", "offset": 0}) == whole
        page, is_error = self.call(
            "fetch_result", {"handle": handle, "path": "/items", "offset": 20}
        )
        assert not is_error and page.startswith("[/items: array of 2000 elements, characters ")
        assert " Members 21-40:\n/items/20 object, characters " in page
        assert page.endswith(
            "the next with path='/items' and offset=40; read one with path='/items/40'.]"
        )
        past = self.error("fetch_result", {"handle": handle, "path": "/items", "offset": 2000})
        assert (
            past["error"] == "no_such_path"
            and "2000 elements (offsets 0 to 1999)" in past["message"]
        )

    def test_path_reads_refuse_what_they_cannot_read(self) -> None:
        handle = self.store.put(SCOPE, RECORDS, ttl_seconds=60)
        both = self.error("fetch_result", {"handle": handle, "path": "", "offset": 0, "line": 1})
        assert both["error"] == "invalid_arguments"
        assert "gives offset, line and path" in both["message"]
        scalar = self.error("fetch_result", {"handle": handle, "path": "/items/0/id", "offset": 1})
        assert scalar["error"] == "invalid_arguments" and "no members" in scalar["message"]
        nothing = self.error("fetch_result", {"handle": handle, "path": "/items/2000"})
        assert nothing["error"] == "no_such_path" and "2000 elements" in nothing["message"]
        escape = self.error("fetch_result", {"handle": handle, "path": "/items~2"})
        assert escape["error"] == "invalid_arguments"
        assert self.error("fetch_result", {"handle": self.handle, "path": ""})["error"] == (
            "not_json"
        )

    def test_search_finds_a_clause_by_offset(self) -> None:
        text, is_error = self.call("search_result", {"handle": self.handle, "pattern": "term 300."})
        found = json.loads(text)
        assert not is_error and found["total_matches"] == 1
        assert TEXT[found["matches"][0]["offset"] :].startswith("term 300.")
        assert self.kinds() == ["claim_searched"]

    def test_an_invalid_regex_is_refused_with_the_engines_reason(self) -> None:
        refusal = self.error(
            "search_result", {"handle": self.handle, "pattern": "(unclosed", "regex": True}
        )
        assert refusal["error"] == "invalid_arguments"
        assert "not a valid regular expression" in refusal["message"]


class TestRunner(ClaimToolContract):
    """`AgentRunner`: the model's call in a scripted turn; the result is the tool message."""

    host = "runner"


class TestBridge(ClaimToolContract):
    """The framework adapters' bridge: arguments as the JSON text frameworks hand over."""

    host = "bridge"


class TestMcpProxy(ClaimToolContract):
    """The MCP proxy, through the official client: `isError` marks the refusals."""

    host = "mcp_proxy"
