"""The real-model section and its plot, from the results JSON (benchmarks/results/model.json).

The study measures for half an hour and saves what it measured; the section is built from
that file, as a `Section` the one renderer lays out, whenever the study runs or the pages are
re-rendered (`python -m benchmarks --render`).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.report import Section, Table
from benchmarks.stats import fmt_int, fmt_ratio
from s3claim.cli.demo import PARTIES

__all__ = ["PLOT", "RESULTS", "TITLE", "load", "plot", "section"]

RESULTS = Path(__file__).resolve().parent.parent / "results" / "model.json"
PLOT = "benchmarks-model.png"
TITLE = "Prefill on a real model (llama.cpp on CPU)"
HEADLINE_START = "On a real model on CPU"
_SCENARIOS = {
    "counsel": "Counsel (the demo's 4-turn script)",
    "twenty": "20 turns, 2 windows read",
}
_ARMS = ("claim check", "truncation at 16,384", "inline")


def load(path: Path = RESULTS) -> dict[str, Any] | None:
    """The saved results, or None when `make bench-model` has never been run here."""
    if not path.exists():
        return None
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


@dataclass(frozen=True)
class _TurnView:
    turn: int
    chars: int
    tokens: int | None
    refused: bool
    cold: float | None
    warm: float | None
    cold_cpu: float | None
    warm_cpu: float | None
    warm_new: float | None
    """Median prompt tokens the server evaluated on a warm pass (the rest was cached)."""


@dataclass(frozen=True)
class _ArmView:
    scenario: str
    name: str
    planned: int
    turns: list[_TurnView]
    cold_passes: int
    warm_passes: int

    @property
    def refused(self) -> _TurnView | None:
        return next((t for t in self.turns if t.refused), None)

    def total(self, mode: str) -> float:
        return sum(getattr(t, mode) or 0.0 for t in self.turns if not t.refused)

    def cumulative(self, mode: str) -> list[float]:
        out, running = [], 0.0
        for t in self.turns:
            if t.refused:
                break
            running += getattr(t, mode) or 0.0
            out.append(running)
        return out

    @property
    def tokens(self) -> int:
        return sum(t.tokens or 0 for t in self.turns if not t.refused)


def _view(arm: dict[str, Any]) -> _ArmView:
    passes: dict[str, list[list[dict[str, Any]]]] = arm["passes"]
    turns = []
    for index, chars in enumerate(arm["chars"]):
        reached = {m: [p[index] for p in passes.get(m, []) if len(p) > index] for m in passes}
        samples = [s for group in reached.values() for s in group]
        if not samples:
            break
        ok = {m: [s for s in group if s["error"] is None] for m, group in reached.items()}

        def med(mode: str, key: str, ok: dict[str, list[dict[str, Any]]] = ok) -> float | None:
            return _median([s[key] for s in ok.get(mode, []) if s[key] is not None])

        turns.append(
            _TurnView(
                turn=index + 1,
                chars=chars,
                tokens=samples[0]["prompt_tokens"],
                refused=any(s["error"] is not None for s in samples),
                cold=med("cold", "seconds"),
                warm=med("warm", "seconds"),
                cold_cpu=med("cold", "cpu_seconds"),
                warm_cpu=med("warm", "cpu_seconds"),
                warm_new=med("warm", "evaluated_tokens"),
            )
        )
    return _ArmView(
        arm["scenario"],
        arm["name"],
        len(arm["chars"]),
        turns,
        len(passes.get("cold", [])),
        len(passes.get("warm", [])),
    )


def _s(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    if seconds >= 100:
        return f"{seconds:,.0f} s"
    return f"{seconds:.1f} s" if seconds >= 10 else f"{seconds:.2f} s"


def _arm(views: list[_ArmView], scenario: str, name: str) -> _ArmView | None:
    return next((v for v in views if v.scenario == scenario and v.name == name), None)


def _ratio(view: _ArmView, ours: _ArmView | None, mode: str) -> str:
    if ours is None or view.refused is not None or not ours.total(mode) or not view.total(mode):
        return "—"
    return fmt_ratio(view.total(mode) / ours.total(mode))


def _summary_table(views: list[_ArmView], n_ctx: int) -> Table:
    rows = []
    for view in views:
        ours = _arm(views, view.scenario, "claim check")
        refused = view.refused
        finished = (
            f"no: turn {refused.turn} is {fmt_int(refused.tokens or 0)} tokens > {n_ctx:,}"
            if refused
            else "yes"
        )
        sent = [t for t in view.turns if not t.refused]
        cold = view.cold_passes > 0
        rows.append(
            [
                _SCENARIOS.get(view.scenario, view.scenario),
                view.name,
                f"{len(sent)} of {view.planned}",
                finished,
                fmt_int(view.tokens),
                fmt_int(max((t.tokens or 0 for t in sent), default=0)),
                _s(view.total("cold_cpu")) if cold else "—",
                _s(view.total("cold")) if cold else "—",
                _s(view.total("warm_cpu")),
                _s(view.total("warm")),
                _ratio(view, ours, "cold_cpu") if cold else "—",
                _ratio(view, ours, "warm_cpu"),
            ]
        )
    return Table(
        title="Whole runs: sums over the turns that fit, of per-turn medians",
        headers=[
            "scenario",
            "arm",
            "turns answered",
            "run finishes",
            "prompt tokens",
            "largest prompt",
            "cold CPU",
            "cold wall",
            "warm CPU",
            "warm wall",
            "cold CPU vs claim check",
            "warm CPU vs claim check",
        ],
        rows=rows,
        align_left=4,
    )


def _turn_table(views: list[_ArmView], scenario: str) -> Table:
    arms = [v for name in _ARMS if (v := _arm(views, scenario, name)) is not None]
    headers = ["turn"]
    for view in arms:
        headers += [f"{view.name}: tokens", "cold CPU", "warm CPU (new tokens)"]
    rows = []
    for index in range(max(v.planned for v in arms)):
        row = [str(index + 1)]
        for view in arms:
            turn = view.turns[index] if index < len(view.turns) else None
            if turn is None:
                row += ["—", "—", "—"]
            elif turn.refused:
                row += [f"{fmt_int(turn.tokens or 0)} ✗", "refused", "refused"]
            else:
                new = f" ({fmt_int(turn.warm_new)})" if turn.warm_new is not None else ""
                row += [fmt_int(turn.tokens or 0), _s(turn.cold_cpu), _s(turn.warm_cpu) + new]
        rows.append(row)
    return Table(
        title=f"{_SCENARIOS.get(scenario, scenario)}, turn by turn (medians; ✗: refused)",
        headers=headers,
        rows=rows,
    )


def _refusal(error: str | None) -> str:
    """The provider's error without the server's URL (its port changes every run)."""
    return "no error" if error is None else error.rsplit(" answered ", 1)[-1]


def _e2e_notes(e2e: dict[str, Any], n_ctx: int, default_tokens: list[int]) -> list[str]:
    notes = []
    demo = e2e.get("demo")
    if demo:
        said = demo["no_comparison"] or (
            f"a ratio of {demo['ratio']:.1f}×" if demo["ratio"] is not None else "no ratio"
        )
        notes.append(
            f"End to end, `{demo['command']}` exits {demo['exit_code']} after "
            f"{demo['seconds']:.0f} s. On the server's default chat format (the GGUF's own "
            "template, which renders no tools, and from which llama-cpp-python parses no tool "
            "calls) the model answers at once and never calls read_contract, and the demo "
            f'says so: "{said}"'
        )
    forced = e2e.get("forced_first_call")
    if forced:
        run = forced["claim_check"]
        arguments = run["tool_calls"][0]["arguments"] if run["tool_calls"] else None
        answer = (run["answer"] or "").split("\n")[0][:240]
        tokens = ", ".join(fmt_int(t) for t in run["prompt_tokens"])
        named = sum(party in (run["answer"] or "") for party in PARTIES)
        judged = (
            "it names both parties, which the head holds; whatever else it says is its own"
            if named == len(PARTIES)
            else f"it names {named} of the {len(PARTIES)} parties the head holds"
        )
        notes.append(
            "The claim-checked run for real: with `tool_choice` naming read_contract on the "
            "first call only (a grammar makes the model call it; the arguments are its own: "
            f"`{json.dumps(arguments, ensure_ascii=False)}`), the model got the "
            f"{run['first_result_chars']}-character head and marker, answered on its own in "
            f"{run['model_calls']} calls ({tokens} prompt tokens): \u201c{answer}\u201d "
            f"({judged}). "
            "The same forced call without the claim check put the whole contract inline, and "
            f"the next request was refused ({_refusal(forced['inline_error'])}): that run "
            f"never answers in a window of {n_ctx:,} tokens."
        )
    auto = e2e.get("auto_tool_choice")
    if auto:
        run = auto["claim_check"]
        called = ", ".join(c["name"] for c in run["tool_calls"]) or "no tool"
        rendered = auto.get("tool_result_prompt_tokens")
        dropped = (
            " Its template renders no tool results either: the counsel claim-check turns "
            f"count {', '.join(fmt_int(t) for t in rendered['tokens'])} prompt tokens there "
            f"against {', '.join(fmt_int(t) for t in default_tokens)} on the default template "
            "(what grows is the calls it renders, not their results), so a model that called "
            "read_contract would never see the head, the marker or the handle."
            if rendered
            else ""
        )
        notes.append(
            "`--chat_format chatml-function-calling` with `tool_choice: auto` (the generic "
            f"format that lets a model choose a tool): the model called {called} and answered "
            f"{json.dumps(run['answer'] or '')} (after 'message:' that format's grammar allows "
            f"only a tool call or the end of the reply).{dropped}"
        )
    return notes


def section(data: dict[str, Any]) -> Section:
    """The section, from `load()`'s data."""
    server, model, plan = data["server"], data["model"], data["plan"]
    n_ctx = server["n_ctx"]
    views = [_view(arm) for arm in data["arms"]]
    tables = [_summary_table(views, n_ctx)]
    tables += [_turn_table(views, s) for s in _SCENARIOS if any(v.scenario == s for v in views)]
    environment = Table(
        title="Model, server and machine",
        headers=["", ""],
        rows=[[k, str(v).rstrip(", ")] for k, v in data["environment"]],
        align_left=2,
    )
    tables.append(environment)
    notes = [
        "Prompt tokens are the server's own count (`usage.prompt_tokens`, or the figure in "
        "its refusal). The chat template renders the messages' text (system, question, tool "
        "results, assistant text), not the tool schemas or the calls' arguments.",
        "Cold: the server's cache is flushed before every turn, so every prompt token is "
        "evaluated; that is the spec's \u201cthe prefill pays for it every turn\u201d. Warm: "
        "the turns in order after one flush, as one agent alone on the server sends them; "
        "llama.cpp reuses the previous prompt's KV cache for the common prefix, so only the "
        "new tokens (in brackets) are evaluated, each attending to everything before it.",
        "Seconds are the server process's CPU time per request, with one thread: on an "
        "idle core that is the wall time, and unlike wall time it does not grow with what "
        "else the machine runs. Other work shared the two cores during the run (load average "
        f"{data['load_average']['before'][0]:.1f} before, "
        f"{data['load_average']['after'][0]:.1f} after), so the wall seconds in the first "
        "table, as the client saw them (prefill, one generated token, loopback HTTP), are "
        "noisier and larger.",
    ]
    wide = data.get("wide")
    if wide:
        view = _view(wide["arms"][0])
        ours = _arm(views, "twenty", "claim check")
        read = view.turns[1] if len(view.turns) > 1 else None
        if read is not None and not read.refused and ours is not None:
            notes.append(
                f"With a {wide['n_ctx']:,}-token window (past the {model['n_ctx_train']:,} "
                "tokens the model was trained for: its answers there would be worthless, its "
                "prefill cost is real), the inline 20-turn run does fit. Its turn 2 "
                f"({fmt_int(read.tokens or 0)} tokens, the contract) took "
                f"{_s(read.warm_cpu)} of CPU ({_s(read.warm)} wall); its 20 turns "
                f"{_s(view.total('warm_cpu'))} warm, against {_s(ours.total('warm_cpu'))} warm "
                f"and {_s(ours.total('cold_cpu'))} cold for the claim check's 20 turns. One "
                "warm pass, the cheapest case: cold, every turn would pay for the contract again."
            )
    counsel = _arm(views, "counsel", "claim check")
    default_tokens = [t.tokens or 0 for t in counsel.turns] if counsel else []
    notes += _e2e_notes(data.get("end_to_end", {}), n_ctx, default_tokens)
    notes.append(
        f"Repeats: {plan['warm']} warm passes per arm; {plan['cold']['counsel']} cold passes "
        f"for the counsel script and {plan['cold']['twenty']} for 20 turns, whose cold pass "
        "re-reads every prompt (about a quarter of an hour). Its 17 note turns differ by 18 "
        "tokens each, so their spread shows the noise of one sample."
    )
    if not wide:
        notes.append(
            "`make bench-model WIDE=1` adds the inline 20-turn run in a 32,768-token window, "
            "to time what the refused prompt would cost; this run did not include it."
        )
    headline = _headline(views, data)
    return Section(
        title=TITLE,
        intro=(
            f"The counsel scenario's conversations, replayed turn by turn to "
            f"{model['name']} ({model['quantisation']}) on llama.cpp's OpenAI-compatible "
            f"server through `OpenAICompatibleProvider`, in a window of {n_ctx:,} tokens (the "
            "context the model was trained for) and one token of generation, so what is "
            "timed is the prefill. The turns are the scripted ones of the conversation "
            "measure above, so every arm is sent the same turns whatever a small model would "
            f"say. Generated by `make bench-model` on {data['date']} in "
            f"{data['run_seconds'] / 60:.0f} minutes (after the build).\n\n"
            f"![Cumulative prefill seconds by turn: claim check, truncation, inline]({PLOT})"
        ),
        tables=tables,
        notes=notes,
        headlines=[headline] if headline else [],
    )


def _headline(views: list[_ArmView], data: dict[str, Any]) -> str | None:
    n_ctx, model = data["server"]["n_ctx"], data["model"]
    counsel = _arm(views, "counsel", "claim check")
    inline = _arm(views, "counsel", "inline")
    ours, cut = _arm(views, "twenty", "claim check"), _arm(views, "twenty", "truncation at 16,384")
    if not (counsel and inline and ours and cut and inline.refused):
        return None
    if not (ours.total("cold_cpu") and counsel.total("cold_cpu")):
        return None
    largest = max(t.tokens or 0 for t in counsel.turns)
    lost = 1 - data["truncate_at"] / data["contract_chars"]
    return (
        f"{HEADLINE_START} ({model['name']} on llama.cpp, one CPU thread, {n_ctx:,}-token "
        f"window): without the claim check the counsel run cannot go on, its turn "
        f"{inline.refused.turn} is {fmt_int(inline.refused.tokens or 0)} tokens and the server "
        f"refuses it; with it no turn exceeds {fmt_int(largest)} tokens and the 4 turns "
        f"prefill in {_s(counsel.total('cold_cpu'))} of CPU cold "
        f"({_s(counsel.total('warm_cpu'))} warm). Over 20 turns, cold: "
        f"{_s(ours.total('cold_cpu'))} for the claim check against "
        f"{_s(cut.total('cold_cpu'))} for truncation "
        f"({fmt_ratio(cut.total('cold_cpu') / ours.total('cold_cpu'))}), which also loses "
        f"{lost:.0%} of the contract."
    )


def plot(data: dict[str, Any], path: Path) -> None:
    """Cumulative prefill seconds by turn, one panel per scenario, cold and warm."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    views = [_view(arm) for arm in data["arms"]]
    wide = data.get("wide")
    colors = {"claim check": "tab:blue", "truncation at 16,384": "tab:orange", "inline": "tab:red"}
    panels = [s for s in _SCENARIOS if any(v.scenario == s for v in views)]
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4.8), squeeze=False)
    for axis, scenario in zip(axes[0], panels, strict=True):
        for name in _ARMS:
            view = _arm(views, scenario, name)
            if view is None:
                continue
            for mode, style in (("cold", "-"), ("warm", "--")):
                ys = view.cumulative(f"{mode}_cpu")
                if not ys or (mode == "cold" and not view.cold_passes):
                    continue
                axis.plot(
                    range(1, len(ys) + 1), ys, style, color=colors[name], marker="o",
                    markersize=3, label=f"{name}, {mode}",
                )  # fmt: skip
            if view.refused is not None:
                at = view.refused.turn
                before = view.cumulative("warm_cpu")
                y = before[-1] if before else 0.0
                axis.plot([at], [y], "x", color=colors[name], markersize=12, mew=2.5)
                axis.annotate(
                    f"refused: {fmt_int(view.refused.tokens or 0)} tokens\n"
                    f"> {data['server']['n_ctx']:,}-token window",
                    (at, y), textcoords="axes fraction", xytext=(0.35, 0.55), fontsize=8,
                    color=colors[name], arrowprops={"arrowstyle": "->", "color": colors[name]},
                )  # fmt: skip
        if wide and scenario == "twenty":
            view = _view(wide["arms"][0])
            ys = view.cumulative("warm_cpu")
            axis.plot(
                range(1, len(ys) + 1), ys, ":", color="tab:red", marker=".",
                label=f"inline, warm, {wide['n_ctx']:,}-token window (one pass)",
            )  # fmt: skip
        axis.xaxis.set_major_locator(MaxNLocator(integer=True))
        axis.set_ylim(bottom=0)
        axis.set_xlabel("turn (model call)")
        axis.set_ylabel("cumulative prefill, CPU seconds (one thread)")
        axis.set_title(_SCENARIOS[scenario], fontsize=10)
        axis.grid(True, which="major", alpha=0.4)
        axis.legend(fontsize=7, loc="upper left")
    fig.suptitle(
        f"{data['model']['name']} on llama.cpp, {data['server']['n_ctx']:,}-token window: "
        "cumulative prefill by turn (solid: cold, dashed: warm)"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
