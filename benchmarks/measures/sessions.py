"""Measure: multi-turn sessions side by side (issues 37 and 47), each system in its own loop.

Five sessions on held-out real documents nobody on the project wrote (`benchmarks/heldout/`,
each with its source, licence, size and SHA-256): a CPython test run made to fail and
CPython's NEWS, dpkg's log and GPL-3, botocore's endpoints.json, CloudFormation's schema of
an S3 bucket, Vim's tutors in Japanese and Russian. Each session is played by one scripted
model (`benchmarks.sessions.script`) inside every system's own framework: s3claim through
`AgentRunner` (defaults, presets, the docs' recommendations, and two baselines without a
claim check), and the peers' own code in their own venvs (`make bench-peers-venvs`):
pydantic-ai-harness's `ToolOutputLimits` in pydantic-ai's agent, Deep Agents'
`FilesystemMiddleware` in LangChain's, Strands' `ContextOffloader` in Strands'.

Per session and system: conversation characters and whole-request characters (the system
prompt and the tool definitions as each framework hands them to its model), summed over every
request; the largest request; model turns; tool executions; read calls; store requests and
bytes read; and how many questions were answered exactly (the witness, verbatim, in a tool
result the model was sent).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.context import Bench
from benchmarks.heldout import provenance
from benchmarks.measures.peers import PEERS, peer_results
from benchmarks.report import Section, Table
from benchmarks.sessions import s3claim_side
from benchmarks.sessions.script import sessions
from benchmarks.stats import fmt_bytes, fmt_int

__all__ = ["PEER_SIDES", "SYSTEMS", "run"]

PEER_SIDES = {
    "harness": "benchmarks.sessions.harness_side",
    "deepagents": "benchmarks.sessions.deepagents_side",
    "strands": "benchmarks.sessions.strands_side",
}
SYSTEMS = (*s3claim_side.ARMS, *(PEERS[name][0] for name in PEER_SIDES))
DEFAULTS = "s3claim (defaults)"
BASELINES = ("inline", f"truncation at {s3claim_side.TRUNCATE_AT:,}")


def _exact(r: dict[str, Any]) -> bool:
    return bool(r["answered"] == r["questions"])


def measure(bench: Bench) -> tuple[dict[tuple[str, str], dict[str, Any]], list[str]]:
    """Every (session, system)'s figures, and a note for each peer that could not run."""
    got: dict[tuple[str, str], dict[str, Any]] = {}
    for session in sessions():
        for arm in s3claim_side.ARMS:
            r = s3claim_side.run(bench, session, arm)
            got[(session.name, arm)] = r
    notes, versions = [], []
    with tempfile.TemporaryDirectory(prefix="s3claim-sessions-") as tmp:
        nothing = Path(tmp) / "stdin"
        nothing.write_text("")
        for name, module in PEER_SIDES.items():
            label, package, _ = PEERS[name]
            print(f"  sessions: running {label}...", file=sys.stderr, flush=True)
            results, said = peer_results(name, nothing, module)
            if results is None:
                notes.append(f"{label}: {said}")
                continue
            versions.append(f"{package} {said}")
            for r in results:
                got[(r["session"], label)] = r
    if versions:
        notes.append("Peers' versions: " + ", ".join(versions) + ".")
    return got, notes


def _row(r: dict[str, Any]) -> list[str]:
    return [
        r["session"],
        r["system"],
        fmt_int(r["conversation"]),
        fmt_int(r["whole"]),
        fmt_int(r["largest"]),
        fmt_int(r["tools"]),
        str(r["turns"]),
        str(r["executions"]),
        str(r["reads"]),
        str(r["store_requests"]),
        fmt_bytes(r["store_bytes"]),
        f"{r['answered']}/{r['questions']}",
    ]


def _why(ours: dict[str, Any], best: dict[str, Any]) -> str:
    """Why `best` sent fewer whole-request characters than s3claim, from the figures."""
    reasons = []
    if best["tools"] < ours["tools"]:
        reasons.append(
            f"its tool definitions are {fmt_int(best['tools'])} characters against s3claim's "
            f"{fmt_int(ours['tools'])}, sent with each of {ours['turns']} requests"
        )
    if best["turns"] < ours["turns"]:
        reasons.append(f"it needed {best['turns']} model turns to s3claim's {ours['turns']}")
    if best["conversation"] < ours["conversation"]:
        reasons.append(
            f"its conversation was shorter ({fmt_int(best['conversation'])} against "
            f"{fmt_int(ours['conversation'])}): its previews or reads carried less"
        )
    return "; ".join(reasons) or "its requests were smaller"


def findings(got: dict[tuple[str, str], dict[str, Any]]) -> tuple[list[str], list[str]]:
    """Headlines (who leads each session) and notes (where s3claim does not lead, and why;
    where a preset or the recommendations cost more than the defaults)."""
    headlines, notes = [], []
    for session in sessions():
        here = {s: got[(session.name, s)] for s in SYSTEMS if (session.name, s) in got}
        exact = {s: r for s, r in here.items() if _exact(r) and s not in BASELINES}
        if not exact:
            continue
        by_conv = min(exact, key=lambda s: exact[s]["conversation"])
        by_whole = min(exact, key=lambda s: exact[s]["whole"])
        headlines.append(
            f"{session.name}: with every answer exact, the fewest conversation characters "
            f"{by_conv} ({fmt_int(exact[by_conv]['conversation'])}), the fewest whole-request "
            f"characters {by_whole} ({fmt_int(exact[by_whole]['whole'])})."
        )
        ours = here.get(DEFAULTS)
        if ours is None:
            continue
        peers = {s: r for s, r in exact.items() if not s.startswith("s3claim")}
        ahead = [s for s, r in peers.items() if r["whole"] < ours["whole"]]
        for s in sorted(ahead, key=lambda s: peers[s]["whole"]):
            notes.append(
                f"{session.name}: {s} sent fewer whole-request characters than s3claim's "
                f"defaults ({fmt_int(peers[s]['whole'])} against {fmt_int(ours['whole'])}): "
                f"{_why(ours, peers[s])}."
            )
        for s, r in peers.items():
            if r["conversation"] < ours["conversation"]:
                notes.append(
                    f"{session.name}: {s} sent fewer conversation characters than s3claim's "
                    f"defaults ({fmt_int(r['conversation'])} against "
                    f"{fmt_int(ours['conversation'])})."
                )
        for s in SYSTEMS:
            r = here.get(s)
            if r is None or not s.startswith("s3claim (") or s == DEFAULTS:
                continue
            if r["conversation"] > ours["conversation"]:
                paid = (
                    f": its previews carried what {ours['reads'] - r['reads']} of the defaults' "
                    f"reads fetched (reads {r['reads']} to {ours['reads']}, model turns "
                    f"{r['turns']} to {ours['turns']}), and its whole requests came to "
                    f"{fmt_int(r['whole'])} against {fmt_int(ours['whole'])} "
                    f"({r['whole'] / ours['whole'] - 1:+.0%})"
                    if r["whole"] < ours["whole"] and r["reads"] < ours["reads"]
                    else ""
                )
                notes.append(
                    f"{session.name}: {s} sent more conversation characters than the defaults "
                    f"({fmt_int(r['conversation'])} against {fmt_int(ours['conversation'])}, "
                    f"{r['conversation'] / ours['conversation'] - 1:+.0%}){paid}."
                )
        unexact = [
            f"{s} {here[s]['answered']}/{here[s]['questions']}"
            for s in SYSTEMS
            if s in here and not _exact(here[s]) and s not in BASELINES
        ]
        if unexact:
            notes.append(f"{session.name}: not every answer exact: {', '.join(unexact)}.")
    return headlines, notes


def run(bench: Bench) -> Section:
    got, peer_notes = measure(bench)
    headlines, notes = findings(got)
    rows = [
        _row(got[(s.name, system)])
        for s in sessions()
        for system in SYSTEMS
        if (s.name, system) in got
    ]
    documents = [
        [row["file"], fmt_int(row["characters"]), row["sha256"][:16], row["licence"], row["kept"]]
        for row in provenance().values()
    ]
    trimmed = [f"{row[0]}: {row[4]}" for row in documents if row[4] != "whole"]
    documents = [[*row[:4], "whole" if row[4] == "whole" else "trimmed"] for row in documents]
    return Section(
        title="Sessions side by side",
        intro=(
            "Multi-turn sessions on held-out real documents, one scripted model playing each "
            "inside every system's own framework: s3claim through `AgentRunner`, the peers' "
            "own code in their own agent loops. Conversation: the prompt, the model's calls "
            "and every tool result, summed over every request; whole request: that plus the "
            "system prompt and the tool definitions as the framework sent them."
        ),
        tables=[
            Table(
                headers=[
                    "session",
                    "system",
                    "conversation chars",
                    "whole-request chars",
                    "largest request",
                    "tool definitions",
                    "model turns",
                    "tool executions",
                    "read calls",
                    "store requests",
                    "bytes read",
                    "answers exact",
                ],
                rows=rows,
                align_left=2,
            ),
            Table(
                title="The held-out documents (benchmarks/heldout/provenance.json)",
                headers=["file", "characters", "SHA-256 (first 16)", "licence", "kept"],
                rows=documents,
                align_left=1,
            ),
        ],
        notes=[
            *notes,
            "s3claim's arms: the defaults; the presets (`ClaimCheckPolicy.for_logs()` for "
            "`read_log`, `for_json()` for `get_json`); the docs' recommendations (the presets, "
            f"`turn_budget_chars={s3claim_side.TURN_BUDGET:_}` on every tool, "
            "`reuse_seconds=300` on the document tools). The baselines run through "
            "`AgentRunner` without a claim check: every result inline, or cut at "
            f"{s3claim_side.TRUNCATE_AT:,} characters.",
            "The peers run on their defaults: pydantic-ai-harness's `ToolOutputLimits` in a "
            "pydantic-ai `Agent` (a `FunctionModel`), Deep Agents' `FilesystemMiddleware` in "
            "LangChain's `create_agent` (a chat model of its own), Strands' `ContextOffloader` "
            "in a Strands `Agent` (a `Model` of its own); each request's figures are taken "
            "from what the framework handed its model (its messages, system prompt, tool "
            "definitions).",
            "Store requests and bytes read: s3claim's S3 requests and GetObject bytes on moto "
            "(botocore event hooks); the peers' writes and reads of their own backends, each "
            "read counted as the whole stored file it loads (harness: its file store; Deep "
            "Agents: the state backend; Strands: its in-memory storage).",
            "A question is answered exactly when its witness (the line, the last lines, or "
            "the JSON member's exact text) is in a tool result the model was sent, with the "
            "system's line numbers set aside; the model reads at most three times a question.",
            *peer_notes,
            "Trimmed to stay small in git (provenance.json says where each file came from): "
            + "; ".join(trimmed)
            + ".",
        ],
        headlines=headlines,
    )
