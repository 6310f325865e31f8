"""`python -m benchmarks [--quick] [--only NAME ...] [--render]`: run, save, render the pages.

The one harness. Each study (a measure, the real model, the load test, the peers) returns a
section; the harness prints it, saves it under benchmarks/results/sections/ and renders every
page from what is saved there: docs/benchmarks.md whole, and the marked blocks of
docs/capacity.md. So `--only NAME` re-measures one study and leaves the others' figures as
they were, and `--render` re-lays out every page (and re-derives the studies that keep raw
results: the model, the load test) without measuring anything.

A plain run measures every study but the two that need a venv or a quarter of an hour of
their own (`model`, `load`: `make bench-model`, `make bench-load`). `--quick` runs a reduced
profile and writes everything under .bench-quick/ (not docs/). The servers are started as
studies need them (moto in-process, s3rver from npm as a child process), on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

from benchmarks.context import FULL, QUICK, Bench
from benchmarks.load import study as load
from benchmarks.measures import (
    async_fetch,
    boundary,
    checkin,
    concurrency,
    conversation,
    fair_shares,
    fairness,
    fetch,
    forget,
    journal,
    json_path,
    lines,
    links,
    mcp,
    memory,
    peers,
    references,
    search,
    sessions,
    telemetry,
    width,
)
from benchmarks.model import study as model
from benchmarks.report import (
    Section,
    load_section,
    machine,
    render_page,
    render_text,
    save_section,
    splice,
)
from benchmarks.stats import fmt_ms
from devkit.third_party import s3rver_version
from s3claim import HandleKey

ROOT = Path(__file__).resolve().parent.parent
PAGE = "benchmarks.md"


@dataclass(frozen=True)
class Study:
    run: Callable[[Bench], Section]
    page: str = PAGE
    default: bool = True
    """Run by a plain `python -m benchmarks`; the others only when named with `--only`."""
    derive: Callable[[Bench], Section | None] | None = None
    """The section again from the raw results the study saved, measuring nothing."""


STUDIES: dict[str, Study] = {  # in the order of the page
    "fetch": Study(fetch.run),
    "width": Study(width.run),
    "checkin": Study(checkin.run),
    "forget": Study(forget.run),
    "concurrency": Study(concurrency.run),
    "memory": Study(memory.run),
    "async": Study(async_fetch.run),
    "search": Study(search.run),
    "fairness": Study(fairness.run),
    "json_path": Study(json_path.run),
    "lines": Study(lines.run),
    "conversation": Study(conversation.run),
    "references": Study(references.run),
    "links": Study(links.run),
    "model": Study(model.run, default=False, derive=model.derive),
    "peers": Study(peers.run),
    "sessions": Study(sessions.run),
    "journal": Study(journal.run),
    "mcp": Study(mcp.run),
    "fair_shares": Study(fair_shares.run),
    "boundary": Study(boundary.run),
    "telemetry": Study(telemetry.run),
    "load": Study(load.run, page="capacity.md", default=False, derive=load.derive),
    "costs": Study(load.costs, page="capacity.md", derive=load.costs),
}


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a reduced profile, in .bench-quick/")
    parser.add_argument("--only", nargs="+", choices=STUDIES, help="run only these studies")
    parser.add_argument("--render", action="store_true", help="measure nothing, render the pages")
    parser.add_argument("--out", type=Path, help="pages here, results in OUT/results")
    parser.add_argument(
        "--model-python",
        type=Path,
        default=ROOT / ".venv-model" / "bin" / "python",
        help="the model venv's interpreter (make bench-model builds it)",
    )
    parser.add_argument(
        "--wide-ctx", type=int, default=0, help="model: the inline run in this window too"
    )
    return parser.parse_args(argv)


def _environment(bench: Bench, seconds: float) -> list[tuple[str, str]]:
    timing = bench.timing.name + (f" ({bench.timing_caveat})" if bench.timing_caveat else "")
    return [
        *machine(),
        ("s3claim", version("s3claim")),
        ("boto3 / botocore", f"{version('boto3')} / {version('botocore')}"),
        ("moto", version("moto")),
        ("mcp (Python SDK)", version("mcp")),
        ("s3rver", s3rver_version() or "not installed"),
        ("Timing server", timing),
        ("Profile", bench.profile.name),
        ("Date", datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")),
        ("Run time", f"{seconds:.0f} s"),
    ]


def _measure(bench: Bench, name: str) -> Section:
    began = time.monotonic()
    bench.timing_used = False
    section = STUDIES[name].run(bench)
    if bench.timing_used and bench.timing_caveat:
        section.notes.append(
            f"s3rver could not be used ({bench.timing_caveat}), so this was timed on moto, "
            "which reads the whole object for every ranged GET: s3claim's latencies here grow "
            "with the object although its requests and bytes do not."
        )
    print(render_text(section))
    print(f"({name}: {fmt_ms(time.monotonic() - began)})\n", flush=True)
    return section


def _render(bench: Bench) -> list[Path]:
    """Every page that has a saved section, from the saved sections; the paths written."""
    saved = bench.results / "sections"
    pages: dict[str, list[tuple[str, Section]]] = {}
    for name, study in STUDIES.items():
        if (saved / f"{name}.json").exists():
            pages.setdefault(study.page, []).append((name, load_section(saved / f"{name}.json")))
    bench.out.mkdir(parents=True, exist_ok=True)
    written = []
    for page, sections in pages.items():
        path = bench.out / page
        if page == PAGE:
            environment = bench.results / "environment.json"
            text = render_page(
                [section for _, section in sections],
                preamble=(
                    "Generated by `make bench` (`python -m benchmarks`) from "
                    "benchmarks/results/; do not edit it by hand. Every request crosses a "
                    "socket on 127.0.0.1. Absolute times drift on shared machines: quote the "
                    "ratios, and link to a section rather than copy its figures."
                ),
                environment=json.loads(environment.read_text()) if environment.exists() else [],
            )
        else:  # a page written by hand, its generated sections between markers
            text = (path if path.exists() else ROOT / "docs" / page).read_text()
            for name, section in sections:
                text = splice(text, name, section)
        path.write_text(text)
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    if args.out:
        out, results = args.out, args.out / "results"
    elif args.quick:
        out = results = ROOT / ".bench-quick"
    else:
        out, results = ROOT / "docs", ROOT / "benchmarks" / "results"
    # The servers are loopback-only and take fake credentials; none of ours must leak in.
    for name in [n for n in os.environ if n.startswith(("AWS_", "S3CLAIM_"))]:
        del os.environ[name]
    os.environ["AWS_CONFIG_FILE"] = os.environ["AWS_SHARED_CREDENTIALS_FILE"] = os.devnull
    bench = Bench(
        profile=QUICK if args.quick else FULL,
        key=HandleKey.generate(),
        results=results,
        out=out,
        model_python=args.model_python,
        wide_ctx=args.wide_ctx,
    )
    chosen = [] if args.render else args.only or [n for n, s in STUDIES.items() if s.default]
    started = time.monotonic()
    missed: list[str] = []
    try:
        for name in chosen:
            section = _measure(bench, name)
            save_section(section, results / "sections" / f"{name}.json")
            missed += [f"{section.title}: {failure}" for failure in section.budget_failures]
        if args.render:
            for name, study in STUDIES.items():
                derived = study.derive(bench) if study.derive else None
                if derived is not None:
                    save_section(derived, results / "sections" / f"{name}.json")
        if not args.only and not args.render:  # a whole run: its machine heads the page
            environment = _environment(bench, time.monotonic() - started)
            (results / "environment.json").write_text(json.dumps(environment, indent=1) + "\n")
    finally:
        bench.stop()
    for path in _render(bench):
        print(f"wrote {path}")
    print(f"total {time.monotonic() - started:.0f} s")
    for line in missed:
        print(f"! budget missed: {line}", file=sys.stderr)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
