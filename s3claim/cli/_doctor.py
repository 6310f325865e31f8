"""`s3claim doctor`: the bucket checks (`s3claim.s3.admin.check_bucket`), rendered."""

from __future__ import annotations

import json
import time
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from s3claim.cli._config import BucketOption, EndpointOption, PrefixOption, RegionOption
from s3claim.cli._exit import Exit, describe, fail, handled
from s3claim.s3.admin import (
    Check,
    Status,
    Target,
    check_bucket,
    handle_key,
    keyring_checks,
    lifecycle_rules,
    load_settings,
    open_bucket,
)

__all__ = ["doctor"]

_MARK = {
    Status.passed: ("✓ pass", "green"),
    Status.failed: ("✗ fail", "bold red"),
    Status.warning: ("! warn", "yellow"),
    Status.skipped: ("- skip", "dim"),
}


def _render(console: Console, bucket: str, checks: list[Check]) -> None:
    table = Table(header_style="bold", title=f"s3claim doctor: bucket {bucket}")
    table.add_column("", no_wrap=True)
    table.add_column("check")
    table.add_column("detail", overflow="fold")
    for check in checks:
        mark, style = _MARK[check.status]
        table.add_row(Text(mark, style=style), check.name, check.detail)
    console.print(table)
    for check in checks:
        if check.fix and check.status in (Status.failed, Status.warning):
            console.print(Text.assemble((f"{check.name}: ", "bold"), f"fix: {check.fix}"))


def doctor(
    bucket: BucketOption = None,
    endpoint_url: EndpointOption = None,
    prefix: PrefixOption = None,
    region: RegionOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON document.")] = False,
    print_lifecycle: Annotated[
        bool,
        typer.Option(
            "--print-lifecycle",
            help="Print the lifecycle configuration the store needs (JSON) and exit.",
        ),
    ] = False,
) -> None:
    """Check a bucket against what the store needs; print each check with its fix.

    Exits 1 when any check fails (warnings do not fail); a bucket it cannot reach exits as
    every command does (2 missing or denied, 3 unreachable), its one line on stderr. Needs
    read access to the bucket's configuration, not the handle key; given a ring of keys
    (S3CLAIM_HANDLE_KEY=new,old), it also counts the live claims and journals each key still
    holds (one HeadObject each), so a key leaves the ring once it holds none.
    """
    with handled() as context:
        settings = load_settings(
            bucket=bucket, endpoint_url=endpoint_url, prefix=prefix, region=region
        )
        if print_lifecycle:
            rules = lifecycle_rules(prefix=settings.prefix, day_classes=settings.ttl_day_classes)
            typer.echo(json.dumps({"Rules": rules}, indent=2))
            return
        target = Target.of(settings)
        context.bucket = target.bucket
        checks = check_bucket(
            target.client,
            target.bucket,
            prefix=settings.prefix,
            day_classes=settings.ttl_day_classes,
        )
        ring = None if settings.handle_key is None else handle_key(settings).ring
        if ring is not None and len(ring) > 1 and checks[0].status is Status.passed:
            checks += keyring_checks(open_bucket(target), now=time.time())
    failed = any(c.status is Status.failed for c in checks)
    if as_json:
        document = {
            "bucket": target.bucket,
            "ok": not failed,
            "checks": [
                {"name": c.name, "status": c.status, "detail": c.detail, "fix": c.fix}
                for c in checks
            ],
        }
        typer.echo(json.dumps(document, indent=2))
    else:
        _render(Console(highlight=False), target.bucket, checks)
    unreached = next((c.error for c in checks if c.error is not None), None)
    error = None if unreached is None else describe(unreached, bucket=target.bucket)
    if error is not None:  # the report above, and the one line every command gives
        raise fail(error)
    if failed:
        raise typer.Exit(int(Exit.FAILED))
