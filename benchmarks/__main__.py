"""`python -m benchmarks [--quick] [--only NAME ...] [--out DIR]`: run, print, write the report.

Starts its own servers (moto in-process, s3rver from npm as a child process), runs the
measures in order, prints each table as it is ready, then writes `benchmarks.md` and
`benchmarks.png` into `--out` (docs/ by default).
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import time
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

from benchmarks.context import FULL, QUICK, Bench
from benchmarks.measures import (
    async_fetch,
    boundary,
    checkin,
    concurrency,
    conversation,
    fairness,
    fetch,
    forget,
    journal,
    json_path,
    lines,
    mcp,
    memory,
    peers,
    references,
    search,
    telemetry,
    width,
)
from benchmarks.model import report as model_report
from benchmarks.report import (
    FetchPoint,
    Section,
    machine,
    plot_fetch,
    render_markdown,
    render_text,
    replace_sections,
)
from benchmarks.stats import fmt_ms
from devkit.servers import MotoServer, s3rver_version, start_timing_server
from s3claim.handles import HandleKey

MEASURES: dict[str, Callable[[Bench], Section]] = {
    "width": width.run,
    "checkin": checkin.run,
    "boundary": boundary.run,
    "forget": forget.run,
    "conversation": conversation.run,
    "search": search.run,
    "json_path": json_path.run,
    "lines": lines.run,
    "fairness": fairness.run,
    "concurrency": concurrency.run,
    "memory": memory.run,
    "journal": journal.run,
    "mcp": mcp.run,
    "async": async_fetch.run,
    "peers": peers.run,
    "telemetry": telemetry.run,
    "references": references.run,
}
ORDER = (
    "fetch",
    "width",
    "checkin",
    "forget",
    "conversation",
    "search",
    "json_path",
    "lines",
    "references",
    "concurrency",
    "memory",
    "journal",
    "mcp",
    "async",
    "boundary",
    "fairness",
    "peers",
    "telemetry",
)
ROOT = Path(__file__).resolve().parent.parent


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a reduced set, under a minute")
    parser.add_argument("--only", nargs="+", choices=ORDER, help="run only these measures")
    parser.add_argument("--out", type=Path, default=ROOT / "docs", help="where the report goes")
    return parser.parse_args(argv)


def _environment(bench: Bench, seconds: float) -> list[tuple[str, str]]:
    return [
        *machine(),
        ("s3claim", version("s3claim")),
        ("boto3 / botocore", f"{version('boto3')} / {version('botocore')}"),
        ("moto", version("moto")),
        ("mcp (Python SDK)", version("mcp")),
        ("s3rver", s3rver_version() or "not installed"),
        ("Timing server", bench.timing.name),
        ("Profile", bench.profile.name),
        ("Date", datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")),
        ("Run time", f"{seconds:.0f} s"),
    ]


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    profile = QUICK if args.quick else FULL
    chosen = [m for m in ORDER if not args.only or m in args.only]
    # The servers below are loopback-only and take fake credentials; none of ours must leak in.
    for name in [n for n in os.environ if n.startswith(("AWS_", "S3CLAIM_"))]:
        del os.environ[name]
    os.environ["AWS_CONFIG_FILE"] = os.devnull
    os.environ["AWS_SHARED_CREDENTIALS_FILE"] = os.devnull
    started = time.monotonic()
    moto = MotoServer()
    timing, caveat = start_timing_server()
    bench = Bench(
        profile=profile, moto=moto, timing=timing, timing_caveat=caveat, key=HandleKey.generate()
    )
    if caveat:
        print(f"! s3rver unavailable ({caveat}); timing on {timing.name}", file=sys.stderr)
    sections: list[Section] = []
    points: list[FetchPoint] = []
    try:
        for name in chosen:
            began = time.monotonic()
            if name == "fetch":
                section, points = fetch.run(bench)
            else:
                section = MEASURES[name](bench)
            if caveat and name in ("fetch", "concurrency", "memory", "async"):
                section.notes.append(
                    f"s3rver could not be used ({caveat}), so this was timed on moto, which "
                    "reads the whole object for every ranged GET: s3claim's latencies here "
                    "grow with the object although its requests and bytes do not."
                )
            sections.append(section)
            print(render_text(section, len(sections)))
            print(f"({name}: {fmt_ms(time.monotonic() - began)})\n", flush=True)
    finally:
        timing.stop()
        moto.stop()
    seconds = time.monotonic() - started
    args.out.mkdir(parents=True, exist_ok=True)
    preamble = [
        f"Generated by `make bench{' QUICK=1' if args.quick else ''}` "
        f"(`python -m benchmarks{' --quick' if args.quick else ''}`). Every request crosses a "
        "socket on 127.0.0.1. Absolute times drift on shared machines: quote the ratios.",
    ]
    if points:
        preamble += [
            "",
            "![Fetch latency and bytes per fetch against document size](benchmarks.png)",
        ]
    if chosen == list(ORDER):
        model = model_report.load()  # `make bench-model`'s saved results: kept, not re-measured
        if model is not None:
            sections.append(model_report.section(model))
            model_report.plot(model, args.out / model_report.PLOT)
        markdown = render_markdown(
            sections, preamble=preamble, environment=_environment(bench, seconds)
        )
        (args.out / "benchmarks.md").write_text(markdown)
        if points:
            plot_fetch(points, args.out / "benchmarks.png", timing_server=timing.name)
        print(f"wrote {args.out / 'benchmarks.md'} and {args.out / 'benchmarks.png'}")
    elif (args.out / "benchmarks.md").exists():
        # --only: each section run replaces its namesake in the report (or is appended).
        report = args.out / "benchmarks.md"
        report.write_text(replace_sections(report.read_text(), sections))
        print(f"(--only: rewrote {', '.join(s.title for s in sections)} in {report})")
    else:
        print("(--only: no report to update; run the whole of make bench first)")
    print(f"total {seconds:.0f} s")
    missed = [f"{s.title}: {failure}" for s in sections for failure in s.budget_failures]
    for line in missed:
        print(f"! budget missed: {line}", file=sys.stderr)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
