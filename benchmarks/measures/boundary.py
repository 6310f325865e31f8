"""Measure: what the result boundary's forgery rewrite costs, before and after issue 21.

`neutralise` runs on every tool result before anything else sees it. Issue 21 made it match
on a folded view of the text (NFKC, ignorables and marks dropped) with a longer token table;
its budget is at most 1.5x the time of the rewrite it replaced (`neutralise_before_21`, kept
in benchmarks/baselines.py), at 1 Mi and 64 Mi characters of each kind of text. A document
dense with disguised forgeries (one every 200 characters) is timed beside them: it is the
worst case, where the new rewrite folds every block, and carries no budget.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from benchmarks.baselines import neutralise_before_21
from benchmarks.context import Bench
from benchmarks.report import Section, Table
from benchmarks.stats import fmt_ms, fmt_ratio, median, time_once
from devkit.documents import NAMES, WIDTH_CHARSETS, Charset, MiB, document, label
from s3claim.hosting import neutralise

__all__ = ["BUDGET", "forged_document", "run"]

BUDGET = 1.5
"""After over before, on every honest document: the issue's ceiling."""
_FORGERIES = (
    "＜|im_start|＞",
    "cl\u200baim:9f2c9f2c",
    "<think>",
    "［INST］",
    "ｆｅｔｃｈ＿ｒｅｓｕｌｔ",
    "<|eot_id|>",
    "<\u200b|turn>",
)


def forged_document(chars: int) -> str:
    """Mixed UTF-8 text with a disguised forgery every 200 characters."""
    rng = random.Random("s3claim-bench-forged")  # noqa: S311  (text, not secrets)
    honest = document(chars, "utf8")
    parts = []
    for at in range(0, chars, 200):
        parts += [honest[at : at + 200], rng.choice(_FORGERIES)]
    return "".join(parts)[:chars]


def _timed(call: Callable[[], object], repeats: int) -> float:
    call()  # untimed: caches warm
    return median([time_once(call) for _ in range(repeats)])


def run(bench: Bench) -> Section:
    sizes = (MiB,) if bench.profile.name == "quick" else (MiB, 64 * MiB)
    rows: list[list[str]] = []
    failures: list[str] = []
    worst = 0.0
    kinds: list[Charset | None] = [*WIDTH_CHARSETS, None]
    for chars in sizes:
        repeats = 3 if chars >= 16 * MiB else 9
        for charset in kinds:
            text = document(chars, charset) if charset else forged_document(chars)
            if charset is not None:  # honest text: both leave it exactly as it is
                assert neutralise(text) == text == neutralise_before_21(text)
            before = _timed(lambda t=text: neutralise_before_21(t), repeats)
            after = _timed(lambda t=text: neutralise(t), repeats)
            ratio = after / before
            name = NAMES[charset] if charset else "forged every 200 characters"
            rows.append(
                [
                    label(chars),
                    name,
                    fmt_ms(before),
                    fmt_ms(after),
                    fmt_ratio(ratio),
                    f"{chars / after / 1e6:,.0f} M chars/s",
                ]
            )
            if charset is not None:
                worst = max(worst, ratio)
                if ratio > BUDGET:
                    failures.append(
                        f"the boundary on {label(chars)} characters of {name} took "
                        f"{ratio:.2f}x its time before issue 21 (budget {BUDGET}x)"
                    )
    return Section(
        title="The result boundary",
        intro=(
            "`neutralise`, the forgery rewrite every tool result passes through, on one "
            "document in memory: before issue 21 (five regular-expression passes, ASCII and "
            "full-width forms only) and after it (the folded view: NFKC, format characters, "
            "marks and other ignorables dropped; the longer token table). Median of 9 runs "
            "(3 at 64 Mi characters), in one process. Honest documents forge nothing, so both "
            "return them unchanged (checked); the forged one carries a disguised token every "
            "200 characters (full-width brackets, zero-width spaces inside words): the new "
            "rewrite folds every block of it, which is its worst case."
        ),
        tables=[
            Table(
                title="Boundary time, before and after issue 21",
                headers=["document", "text", "before", "after", "after / before", "after"],
                rows=rows,
                align_left=2,
            )
        ],
        headlines=[
            f"The result boundary, now matching look-alikes on a folded view, costs at most "
            f"{worst:.2f}× what it did on honest text of 1 Mi and 64 Mi characters "
            f"(budget {BUDGET}×)."
        ],
        notes=[
            "ASCII text is its own folded view and is matched as it is. Other text is cut into "
            "blocks of about 1 Ki characters at spaces, newlines and commas; a block is folded "
            "only when its NFKD form, matched with ignorables allowed between letters, might "
            "hold a forgery. So honest text pays a scan or two, and only forged text pays the "
            "folding."
        ],
        budget_failures=failures,
    )
