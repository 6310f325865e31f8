"""`s3claim runs`: a tenant's recorded runs, from their journals' metadata. Never content.

Run names are never stored, only their keyed tags, so a listing shows tags. An operator who
knows the run ids (`--run r-42`, or many with `--runs-from FILE`) gets exactly those runs,
each found by its tag (one LIST and one HEAD) and shown under its name.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

from s3claim.cli._config import (
    BucketOption,
    EndpointOption,
    PrefixOption,
    RegionOption,
    checked,
    when,
)
from s3claim.cli._exit import CliError, handled
from s3claim.cli._table import Column, collected, print_table
from s3claim.journal import RunInfo
from s3claim.s3.admin import open_journal

__all__ = ["runs"]


def runs(
    tenant: Annotated[str, typer.Option(help="Tenant the runs belong to.", show_default=False)],
    run: Annotated[
        list[str] | None,
        typer.Option(
            help="Only this run id (its tag is derived from it); repeat for more.",
            show_default=False,
        ),
    ] = None,
    runs_from: Annotated[
        str | None,
        typer.Option(
            help="Only the run ids in this file, one a line (- for stdin).", show_default=False
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object a line.")] = False,
    bucket: BucketOption = None,
    endpoint_url: EndpointOption = None,
    prefix: PrefixOption = None,
    region: RegionOption = None,
) -> None:
    """List a tenant's recorded runs: run tag, status, turns and last update. Never content.

    Each run is read from its journal's metadata (one HEAD), never its body. Runs appear as
    their keyed tags, or under their ids when given with --run or --runs-from; expired runs
    are listed until lifecycle collects them, marked expired. A journal this version cannot
    read is listed as unreadable.
    """
    now = datetime.now(UTC).timestamp()
    with handled() as context:
        checked(tenant, None)  # refuse a bad name before connecting
        names = [*(run or ()), *(_read_ids(runs_from) if runs_from is not None else ())]
        for name in names:
            checked(tenant, name)
        journal = open_journal(context.target(bucket, endpoint_url, prefix, region))
        if names or run is not None or runs_from is not None:
            named = (
                (name, info)
                for name in dict.fromkeys(names)  # once each, in the order given
                for info in journal.runs(tenant=tenant, run=name)
            )
            found: list[tuple[str | None, RunInfo]] = collected(named, "Finding the runs", "found")
        else:
            listing = ((None, info) for info in journal.runs(tenant=tenant))
            found = collected(listing, f"Listing the runs of tenant {tenant!r}", "read")
    found.sort(key=lambda named: -named[1].updated_at)
    missing = [n for n in dict.fromkeys(names) if n not in {name for name, _ in found}]
    for name in missing:
        typer.echo(f"no recorded run {name!r} of tenant {tenant!r}", err=True)
    if as_json:
        for name, info in found:
            record: dict[str, object] = {"run": name} if names else {}
            record |= {
                "run_tag": info.run_tag,
                "status": info.status,
                "turns": info.turns,
                "updated_at": info.updated_at,
                "expires_at": info.expires_at,
                "expired": info.expires_at <= now,
            }
            typer.echo(json.dumps(record))
        return
    columns = [
        *([Column("run", whole=True)] if names else []),
        Column("run tag", whole=True, abbreviate=12),
        Column("status"),
        Column("turns", right=True, whole=True),
        Column("last update (UTC)"),
        Column("expires (UTC)"),
    ]
    rows = [
        (
            *([name or ""] if names else []),
            info.run_tag,
            info.status,
            str(info.turns),
            when(info.updated_at),
            when(info.expires_at) + _expired(info, now),
        )
        for name, info in found
    ]
    print_table(f"{len(found)} run(s) of tenant {tenant!r}", columns, rows)


def _expired(info: RunInfo, now: float) -> str:
    return " (expired)" if info.status != "unreadable" and info.expires_at <= now else ""


def _read_ids(source: str) -> list[str]:
    """Run ids, one a line; blank lines and the whitespace around an id are ignored."""
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"--runs-from {source}: {getattr(exc, 'strerror', None) or exc}") from None
    return [line.strip() for line in text.splitlines() if line.strip()]
