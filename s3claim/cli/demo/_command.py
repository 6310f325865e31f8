"""`s3claim demo`: picks the store and the provider, runs the scenario, renders the result."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from itertools import zip_longest
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from s3claim.cli._config import BucketOption, EndpointOption, PrefixOption, RegionOption, StoreKind
from s3claim.cli._exit import CliError, handled
from s3claim.cli.demo._bucket import demo_bucket
from s3claim.cli.demo._closing import event_table, next_steps, render_closing
from s3claim.cli.demo._failover import failover_demo
from s3claim.cli.demo._scenario import QUESTION, TENANT, Scenario, prefill_by_turn, run_scenario
from s3claim.memory import MemoryClaimCheckStore
from s3claim.providers import OpenAICompatibleProvider, Provider
from s3claim.s3 import S3ClaimSettings
from s3claim.s3.admin import load_settings, open_store
from s3claim.store import ClaimCheckStore
from s3claim.wording import split_head

__all__ = ["demo"]


class ProviderKind(StrEnum):
    scripted = "scripted"
    openai = "openai"


BASELINE_SCRIPTED = (
    "Baseline: the same question and read_contract tool, with no claim check and "
    "max_tool_result_chars={chars:,}, so the whole contract stays inline. It cannot fetch, and "
    "with the whole text in view it has no need to: its scripted model reads, then answers "
    "({turns} against {claimed}). That is its best case: every further turn would "
    "send the whole contract again."
)
BASELINE_MODEL = (
    "Baseline: the same question and model, with no claim check and "
    "max_tool_result_chars={chars:,}, so the whole contract stays inline; the model chose its "
    "own turns ({turns} against {claimed})."
)


@dataclass(frozen=True)
class _Setup:
    store: ClaimCheckStore
    description: str
    located: str | None  # the bucket and prefix, on S3
    lived: str  # where the claims were, and what became of them
    erase: bool  # a configured bucket: the demo forgets its run afterwards


IN_MEMORY = (
    "In the demo's own memory (MemoryClaimCheckStore): gone with its process; nothing is left "
    "behind."
)


@contextmanager
def _store(settings: S3ClaimSettings | None) -> Iterator[_Setup]:
    if settings is None:
        memory = MemoryClaimCheckStore()
        yield _Setup(memory, "memory (MemoryClaimCheckStore)", None, IN_MEMORY, erase=False)
        return
    with demo_bucket(settings) as where:
        store = open_store(where.target)
        yield _Setup(store, where.description, where.located, where.lived, not where.embedded)


def _provider(
    kind: ProviderKind,
    base_url: str | None,
    model: str | None,
    *,
    timeout: float,
    max_tokens: int | None,
) -> Provider | None:
    if kind is ProviderKind.scripted:
        return None
    if not base_url or not model:
        raise CliError("--provider openai needs --base-url and --model")
    try:
        return OpenAICompatibleProvider(
            base_url,
            model,
            api_key=os.environ.get("OPENAI_API_KEY"),
            timeout=timeout,
            max_tokens=max_tokens,
        )
    except ValueError as exc:
        raise CliError(str(exc)) from None


def _no_comparison(scenario: Scenario) -> str | None:
    """Why there is no ratio although both runs finished; None when there is one (or no baseline).

    A small model may answer without ever calling read_contract; then neither conversation
    held the contract, and a ratio of their characters would compare nothing.
    """
    if scenario.baseline is None or scenario.ratio is not None:
        return None
    if not scenario.claimed_read and not scenario.baseline_read:
        which, held = "in either run", "neither conversation held the contract"
    elif not scenario.claimed_read:
        which, held = "with the claim check", "nothing was checked in"
    else:
        which, held = "without the claim check", "that run never held the contract"
    return (
        f"No comparison: the model never called read_contract {which}, so {held} and the "
        "character counts above compare nothing."
    )


def _baseline_text(scenario: Scenario, scripted: bool) -> str:
    if scenario.baseline is None:
        if scenario.baseline_error:
            return f"Baseline: the whole-contract run failed ({scenario.baseline_error})."
        return "Baseline: not run (--no-baseline)."
    template = BASELINE_SCRIPTED if scripted else BASELINE_MODEL
    turns = len(prefill_by_turn(scenario.baseline))
    return template.format(
        chars=scenario.contract_chars,
        turns=f"{turns} model call" if turns == 1 else f"{turns} model calls",
        claimed=len(prefill_by_turn(scenario.claimed)),
    )


def report(
    scenario: Scenario, *, setup: _Setup, provider: str, scripted: bool, seconds: float
) -> dict[str, Any]:
    """The demo's result as plain data: the JSON document, and what the terminal shows."""
    seen = scenario.seen
    parts = split_head(seen) if seen is not None else None
    claimed = prefill_by_turn(scenario.claimed)
    baseline = prefill_by_turn(scenario.baseline) if scenario.baseline else []
    return {
        "store": setup.description,
        "bucket": setup.located,
        "provider": provider,
        "question": QUESTION,
        "contract_chars": scenario.contract_chars,
        "seen": {"head": parts[0], "marker": parts[1]} if parts else None,
        "events": [e.model_dump() for e in scenario.claimed.events],
        "baseline_events": (
            [e.model_dump() for e in scenario.baseline.events] if scenario.baseline else None
        ),
        "turns": [
            {"turn": turn, "with_claim_check": with_cc, "without": without}
            for turn, (with_cc, without) in enumerate(zip_longest(claimed, baseline), start=1)
        ],
        "total_with_claim_check": scenario.total_with,
        "total_without": scenario.total_without,
        "ratio": scenario.ratio,
        "read_contract": {
            "with_claim_check": scenario.claimed_read,
            "without": scenario.baseline_read,
        },
        "no_comparison": _no_comparison(scenario),
        "baseline": _baseline_text(scenario, scripted),
        "baseline_error": scenario.baseline_error,
        "answer": scenario.claimed.output,
        "baseline_answer": scenario.baseline.output if scenario.baseline else None,
        "seconds": round(seconds, 3),
        "claims_lived": setup.lived,
        "next": next_steps(failover=False),
    }


def _n(value: int | None) -> str:
    return "—" if value is None else f"{value:,}"


def render(console: Console, data: dict[str, Any], scenario: Scenario) -> None:
    console.print(
        Text.assemble(
            ("s3claim demo", "bold"),
            f": counsel reads a {data['contract_chars']:,}-character contract.\n",
            f"Store: {data['store']}\n",
            f"Bucket: {data['bucket']}\n" if data["bucket"] else "",
            f"Provider: {data['provider']}\nQuestion: {QUESTION}",
        )
    )
    console.print(Rule("What the model saw: the read_contract result, verbatim"))
    seen = scenario.seen
    if seen is None:
        console.print(Text("(the model never called read_contract)", style="italic"))
    else:  # out(): no wrapping, no markup, so it is byte for byte what the model got
        console.out(seen, highlight=False)
    console.print(Rule("Run events (with the claim check)"))
    console.print(event_table(scenario.claimed.events, commas=True))
    console.print(Rule("Characters sent to the model, per model call"))
    table = Table(header_style="bold")
    table.add_column("turn", justify="right")
    table.add_column("with claim check", justify="right")
    table.add_column("without (whole result inline)", justify="right")
    for row in data["turns"]:
        table.add_row(str(row["turn"]), _n(row["with_claim_check"]), _n(row["without"]))
    table.add_section()
    table.add_row("total", _n(data["total_with_claim_check"]), _n(data["total_without"]))
    console.print(table)
    if data["ratio"] is not None:
        console.print(
            Text.assemble(
                "Without the claim check the model is sent ",
                (f"{data['ratio']:.1f}×", "bold green"),
                " the characters: "
                f"{data['total_without']:,} against {data['total_with_claim_check']:,}.",
            )
        )
    elif data["no_comparison"]:
        console.print(Text(data["no_comparison"], style="bold yellow"))
    console.print(Text(data["baseline"], style="dim"))
    console.print(Rule("Answer"))
    console.print(Text(data["answer"] or "(no answer: the run hit its turn limit)"))
    render_closing(console, data)


def demo(
    store: Annotated[
        StoreKind, typer.Option(help="s3: a real S3 API (embedded unless a bucket is set).")
    ] = StoreKind.s3,
    bucket: BucketOption = None,
    endpoint_url: EndpointOption = None,
    prefix: PrefixOption = None,
    region: RegionOption = None,
    provider: Annotated[
        ProviderKind,
        typer.Option(help="scripted: a deterministic model; openai: any chat-completions server."),
    ] = ProviderKind.scripted,
    base_url: Annotated[
        str | None,
        typer.Option(
            envvar="OPENAI_BASE_URL",
            help="API root of the server, e.g. http://127.0.0.1:8080/v1 (with --provider openai).",
        ),
    ] = None,
    model: Annotated[str | None, typer.Option(help="Model name (with --provider openai).")] = None,
    timeout: Annotated[
        float, typer.Option(min=0.1, help="Seconds to wait for each model reply.")
    ] = 120.0,
    max_tokens: Annotated[
        int | None,
        typer.Option(min=1, help="Most tokens each model reply may have (with --provider openai)."),
    ] = None,
    baseline: Annotated[
        bool, typer.Option(help="Also run without the claim check, to compare.")
    ] = True,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON document instead of tables.")
    ] = False,
    failover: Annotated[
        bool,
        typer.Option(
            help="Kill the run's process after its second model call; resume it in another."
        ),
    ] = False,
) -> None:
    """Show what claim-checking buys: one agent run with it, one without, measured.

    With no options it runs on an embedded S3 (a moto server on 127.0.0.1, stopped when done)
    with a scripted model. --bucket (or S3CLAIM_BUCKET) uses a real bucket instead; the demo
    forgets its claims afterwards. The API key for --provider openai is read from
    OPENAI_API_KEY (local servers usually need none). --failover runs the scenario in a
    process that is killed mid-run, and resumes it from the bucket in another.
    """
    started = time.perf_counter()
    with handled() as context:
        context.bucket = bucket
        if failover and (store is StoreKind.memory or provider is not ProviderKind.scripted):
            raise CliError(
                "--failover runs on S3 with the scripted model: a run in memory dies with "
                "its process, and a real model's answers cannot be compared run to run"
            )
        chosen = _provider(provider, base_url, model, timeout=timeout, max_tokens=max_tokens)
        settings = None
        if store is StoreKind.s3:
            settings = load_settings(
                bucket=bucket, endpoint_url=endpoint_url, prefix=prefix, region=region
            )
            context.bucket = settings.bucket  # --bucket or S3CLAIM_BUCKET: its errors name it
        if settings is not None and failover:
            failover_demo(settings, as_json=as_json)
            return
        with _store(settings) as setup:
            scenario = run_scenario(setup.store, provider=chosen, baseline=baseline)
            if setup.erase:
                setup.store.forget(tenant=TENANT, run=scenario.claimed.scope.run)
    described = "scripted" if chosen is None else f"{model} at {base_url}"
    data = report(
        scenario,
        setup=setup,
        provider=described,
        scripted=chosen is None,
        seconds=time.perf_counter() - started,
    )
    if as_json:
        typer.echo(json.dumps(data, ensure_ascii=False, indent=2))
        return
    render(Console(highlight=False), data, scenario)
