"""`s3claim audit`: the audit trail a bucket keeps (`S3AuditTrail`), for one tenant or run."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Annotated

import typer

from s3claim.cli._config import (
    BucketOption,
    EndpointOption,
    OptionalRun,
    PrefixOption,
    RegionOption,
    checked,
    when,
)
from s3claim.cli._exit import handled
from s3claim.cli._table import Column, collected, print_table
from s3claim.s3 import S3AuditTrail
from s3claim.s3.admin import open_store

__all__ = ["audit"]


def _window(offset: int | None, chars: int | None) -> str:
    return f"{offset:,}+{chars:,}" if offset is not None and chars is not None else ""


def audit(
    tenant: Annotated[str, typer.Option(help="Tenant whose trail to list.", show_default=False)],
    run: OptionalRun = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object a line.")] = False,
    bucket: BucketOption = None,
    endpoint_url: EndpointOption = None,
    prefix: PrefixOption = None,
    region: RegionOption = None,
) -> None:
    """List a tenant's audit trail: every fetch, search and refusal the bucket kept.

    Kept only where the application attached `S3AuditTrail(store).handler()` to the
    `s3claim.audit` logger. Records hold when, the run's keyed tag, the handle, the window
    or the pattern's length and the outcome: never content, never a pattern. `forget`
    erases them with the tenant's claims.
    """
    with handled() as context:
        what = checked(tenant, run)
        trail = S3AuditTrail(open_store(context.target(bucket, endpoint_url, prefix, region)))
        records = collected(
            trail.records(tenant=tenant, run=run), f"Reading the audit trail of {what}", "read"
        )
    records.sort(key=lambda r: r.at)
    if as_json:
        for record in records:
            typer.echo(json.dumps(asdict(record), sort_keys=True))
        return
    columns = (
        Column("when (UTC)"),
        Column("operation"),
        Column("outcome"),
        Column("run tag", whole=True, abbreviate=12),
        Column("handle", whole=True),
        Column("window", right=True),
        Column("pattern chars", right=True),
        Column("matches", right=True),
    )
    rows = [
        (
            when(r.at),
            r.operation,
            r.outcome,
            r.run,
            r.handle or "(malformed)",
            _window(r.offset, r.chars),
            "" if r.pattern_chars is None else str(r.pattern_chars),
            "" if r.matches is None else f"{r.matches:,}",
        )
        for r in records
    ]
    print_table(f"{len(records)} audit record(s) of {what}", columns, rows)
