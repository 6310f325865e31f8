"""Claim operations on a bucket: put, fetch, ls, forget, keygen, each composing the S3 store."""

from __future__ import annotations

import json
import secrets
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

from s3claim.cli._config import (
    BucketOption,
    EndpointOption,
    OptionalRun,
    PrefixOption,
    RegionOption,
    Tenant,
    checked,
    when,
)
from s3claim.cli._exit import CliError, handled
from s3claim.cli._table import Column, collected, counting, print_table
from s3claim.s3.admin import open_store
from s3claim.scope import Scope
from s3claim.store import DEFAULT_FETCH_CHARS

__all__ = ["fetch", "forget", "keygen", "ls", "put"]

Run = Annotated[str, typer.Option(help="Run the claim belongs to.", show_default=False)]


def _write(text: str) -> None:
    """Content exactly as stored: UTF-8 bytes, no newline added, no styling stripped."""
    sys.stdout.buffer.write(text.encode("utf-8"))
    sys.stdout.flush()


def _read_source(source: str) -> str:
    try:
        data = sys.stdin.buffer.read() if source == "-" else Path(source).read_bytes()
    except OSError as exc:
        raise CliError(f"cannot read {source}: {exc.strerror or type(exc).__name__}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise CliError(f"{'stdin' if source == '-' else source} is not UTF-8 text") from None


def put(
    tenant: Tenant,
    run: Run,
    source: Annotated[
        str, typer.Argument(help="File to check in, or - for stdin.", show_default=True)
    ] = "-",
    ttl: Annotated[int, typer.Option(min=1, help="Seconds the claim can be fetched.")] = 3600,
    bucket: BucketOption = None,
    endpoint_url: EndpointOption = None,
    prefix: PrefixOption = None,
    region: RegionOption = None,
) -> None:
    """Check content in and print its handle.

    The content is stored as given: the result boundary of an agent run does not apply here.
    """
    with handled() as context:
        scope = Scope(tenant, run)  # refuse a bad name before reading or connecting
        content = _read_source(source)
        store = open_store(context.target(bucket, endpoint_url, prefix, region))
        try:
            handle = store.put(scope, content, ttl_seconds=ttl)
        except ValueError as exc:  # a TTL longer than the longest lifecycle class
            raise CliError(f"--ttl: {exc}") from None
    typer.echo(handle)


def fetch(
    tenant: Tenant,
    run: Run,
    handle: Annotated[str, typer.Argument(help="The handle, claim:…", show_default=False)],
    offset: Annotated[int, typer.Option(min=0, help="First character to read.")] = 0,
    limit: Annotated[
        int, typer.Option(min=1, help="Characters in one window.")
    ] = DEFAULT_FETCH_CHARS,
    read_all: Annotated[
        bool, typer.Option("--all", help="Read every window from --offset to the end.")
    ] = False,
    bucket: BucketOption = None,
    endpoint_url: EndpointOption = None,
    prefix: PrefixOption = None,
    region: RegionOption = None,
) -> None:
    """Print a claim's content, one window (or, with --all, all of it) exactly as stored.

    Where the window ends and where to continue is written to stderr, so stdout is content
    only. Exit 1 when the claim is unavailable: expired, never stored, or not this run's.
    """
    with handled() as context:
        scope = Scope(tenant, run)
        store = open_store(context.target(bucket, endpoint_url, prefix, region))
        next_offset: int | None = offset
        while next_offset is not None:
            window = store.fetch(scope, handle, next_offset, limit)
            _write(window.text)
            next_offset = window.next_offset
            if not read_all:
                break
    end = window.offset + len(window.text)
    more = "end" if next_offset is None else f"next --offset {next_offset}"
    typer.echo(f"characters {offset}-{end} of {window.total_chars} ({more})", err=True)


def ls(
    tenant: Tenant,
    run: OptionalRun = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object a line.")] = False,
    bucket: BucketOption = None,
    endpoint_url: EndpointOption = None,
    prefix: PrefixOption = None,
    region: RegionOption = None,
) -> None:
    """List a tenant's claims: handle, run tag, size and expiry. Never content.

    Runs appear as their keyed tags (names are never stored); expired claims are listed
    until lifecycle collects them, marked expired; a claim whose seal fails, marked damaged.
    """
    now = datetime.now(UTC).timestamp()
    with handled() as context:
        checked(tenant, run)
        listing = open_store(context.target(bucket, endpoint_url, prefix, region)).claims(
            tenant=tenant, run=run
        )
        claims = collected(listing, f"Listing the claims of tenant {tenant!r}", "read")
    if as_json:
        for claim in claims:
            record = {
                "handle": claim.handle,
                "run_tag": claim.run_tag,
                "chars": claim.chars,
                "expires_at": claim.expires_at,
                "expired": claim.expires_at <= now,
                "damaged": claim.damaged,
            }
            typer.echo(json.dumps(record))
        return
    columns = (
        Column("handle", whole=True),
        Column("run tag", whole=True, abbreviate=12),
        Column("chars", right=True, whole=True),
        Column("expires (UTC)"),
    )
    rows = [
        (
            claim.handle,
            claim.run_tag,
            f"{claim.chars:,}",
            "(damaged: no read will serve it)"
            if claim.damaged
            else when(claim.expires_at) + (" (expired)" if claim.expires_at <= now else ""),
        )
        for claim in claims
    ]
    print_table(f"{len(claims)} claim(s) of tenant {tenant!r}", columns, rows)


def forget(
    tenant: Tenant,
    run: OptionalRun = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON object: what was erased, and where.")
    ] = False,
    bucket: BucketOption = None,
    endpoint_url: EndpointOption = None,
    prefix: PrefixOption = None,
    region: RegionOption = None,
) -> None:
    """Erase every claim of a tenant, or of one run: every version, every delete marker.

    A run's journal (`s3claim runs`) lives under the run's prefix and goes with it; the
    count printed is of claims.

    Needs the S3CLAIM_HANDLE_KEY the claims were written with: under another key the tenant
    maps to other keys, and nothing is found.
    """
    with handled() as context:
        what = checked(tenant, run)
        target = context.target(bucket, endpoint_url, prefix, region)
        store = open_store(target)
        if not yes:  # asked on stderr: stdout is the result, which --json keeps parseable
            typer.confirm(
                f"Erase every claim of {what} in bucket {target.bucket!r}, and its recorded "
                "runs? This cannot be undone",
                abort=True,
                err=True,
            )
        with counting(f"Forgetting {what}", "removed") as update:
            removed = store.forget(tenant=tenant, run=run, progress=update)
    if as_json:
        record = {"tenant": tenant, "run": run, "bucket": target.bucket, "removed": removed}
        typer.echo(json.dumps(record))
        return
    typer.echo(f"Removed {removed} claim(s) of {what}.")


def keygen() -> None:
    """Print a fresh handle key, for S3CLAIM_HANDLE_KEY.

    Every process sharing a bucket needs the same key: a handle made under one key cannot be
    redeemed under another. Keep it out of shell history, e.g.
    `export S3CLAIM_HANDLE_KEY="$(s3claim keygen)"`.
    """
    typer.echo(secrets.token_urlsafe(32))
