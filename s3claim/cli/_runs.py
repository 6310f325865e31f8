"""`s3claim runs`: a tenant's recorded runs, from their journals' metadata. Never content."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from s3claim.cli._config import BucketOption, EndpointOption, PrefixOption, RegionOption, when
from s3claim.cli._exit import handled
from s3claim.s3.admin import Target, load_settings, open_journal
from s3claim.scope import Scope

__all__ = ["runs"]


def runs(
    tenant: Annotated[str, typer.Option(help="Tenant the runs belong to.", show_default=False)],
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object a line.")] = False,
    bucket: BucketOption = None,
    endpoint_url: EndpointOption = None,
    prefix: PrefixOption = None,
    region: RegionOption = None,
) -> None:
    """List a tenant's recorded runs: run tag, status, turns and last update. Never content.

    Each run is read from its journal's metadata (one HEAD), never its body. Runs appear as
    their keyed tags; expired runs are listed until lifecycle collects them, marked expired.
    A journal this version cannot read is listed as unreadable.
    """
    now = datetime.now(UTC).timestamp()
    with handled() as context:
        Scope(tenant, "any")  # refuse a bad name before connecting
        target = Target.of(load_settings(bucket=bucket, endpoint_url=endpoint_url,
                                         prefix=prefix, region=region))  # fmt: skip
        context.bucket = target.bucket
        found = sorted(open_journal(target).runs(tenant=tenant), key=lambda r: -r.updated_at)
    if as_json:
        for run in found:
            record = {
                "run_tag": run.run_tag,
                "status": run.status,
                "turns": run.turns,
                "updated_at": run.updated_at,
                "expires_at": run.expires_at,
                "expired": run.expires_at <= now,
            }
            typer.echo(json.dumps(record))
        return
    table = Table(header_style="bold", title=f"{len(found)} run(s) of tenant {tenant!r}")
    table.add_column("run tag", no_wrap=True)  # the first 12 of 32 digits; --json has all
    table.add_column("status")
    table.add_column("turns", justify="right")
    table.add_column("last update (UTC)")
    table.add_column("expires (UTC)")
    for run in found:
        expired = " (expired)" if run.status != "unreadable" and run.expires_at <= now else ""
        table.add_row(
            run.run_tag[:12], run.status, str(run.turns), when(run.updated_at),
            when(run.expires_at) + expired,
        )  # fmt: skip
    Console(highlight=False).print(table)
