"""The bucket commands: claims (put, ls, forget, keygen), runs and the audit trail; reading
them (fetch, search, link) is `s3claim.cli._reads`."""

from __future__ import annotations

import json
import secrets
import sys
from contextlib import nullcontext
from dataclasses import asdict
from datetime import UTC, datetime
from functools import partial
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
    scope_of,
    when,
)
from s3claim.cli._exit import CliError, handled
from s3claim.cli._receipts import erase_through, open_receipt, summary
from s3claim.cli._table import Column, collected, counting, print_table
from s3claim.journal import RunInfo
from s3claim.s3 import S3AuditTrail
from s3claim.s3.admin import open_journal, open_store

__all__ = ["audit", "forget", "keygen", "ls", "put", "runs"]

Run = Annotated[str, typer.Option(help="Run the claim belongs to.", show_default=False)]


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
        scope = scope_of(tenant, run)  # refuse a bad name before reading or connecting
        content = _read_source(source)
        store = open_store(context.target(bucket, endpoint_url, prefix, region))
        try:
            handle = store.put(scope, content, ttl_seconds=ttl)
        except ValueError as exc:  # a TTL longer than the longest lifecycle class
            raise CliError(f"--ttl: {exc}") from None
    typer.echo(handle)


def ls(
    tenant: Tenant,
    run: OptionalRun = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object a line.")] = False,
    bucket: BucketOption = None,
    endpoint_url: EndpointOption = None,
    prefix: PrefixOption = None,
    region: RegionOption = None,
) -> None:
    """List a tenant's claims: handle, run tag, size and expiry (--json: tool and lines too).
    Never content.

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
                "tool": claim.tool,
                "chars": claim.chars,
                "lines": claim.lines,
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
    )  # no more: at 80 columns these leave the date just the room to wrap at its space
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
    if not claims:  # the one cause an operator cannot see from here
        typer.echo(
            "(none under this S3CLAIM_HANDLE_KEY: a tenant's claims are listed only with "
            "the key they were checked in under)",
            err=True,
        )


def forget(
    tenant: Tenant,
    run: OptionalRun = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON object: what was erased, and where.")
    ] = False,
    receipt: Annotated[
        Path | None,
        typer.Option(
            help="Write the erasure's signed receipt (JSON) here; check it with verify-receipt.",
            show_default=False,
        ),
    ] = None,
    proxy: Annotated[
        str | None,
        typer.Option(
            help="Erase through the MCP proxy serving HTTP at this URL instead (its memory "
            "store, which no other process reaches): a request signed with "
            "S3CLAIM_HANDLE_KEY, which the proxy must share.",
            show_default=False,
        ),
    ] = None,
    bucket: BucketOption = None,
    endpoint_url: EndpointOption = None,
    prefix: PrefixOption = None,
    region: RegionOption = None,
) -> None:
    """Erase every claim of a tenant, or of one run: every version, every delete marker.

    A run's journal (`s3claim runs`) and audit trail (`s3claim audit`) go with it; the count
    printed is of claims. With --receipt, what went by kind is written to the file, signed
    under S3CLAIM_HANDLE_KEY (`s3claim verify-receipt FILE`).

    Needs the S3CLAIM_HANDLE_KEY the claims were written with: under another key the tenant
    maps to other keys, and nothing is found.
    """
    with handled() as context:
        what = checked(tenant, run)
        if proxy is not None:
            if (bucket, endpoint_url, prefix, region) != (None, None, None, None):
                raise CliError("--proxy erases in the proxy's store: give no bucket options")
            where: dict[str, str | None] = {"proxy": proxy}
            erase = partial(erase_through, proxy, tenant=tenant, run=run)
        else:
            target = context.target(bucket, endpoint_url, prefix, region)
            where = {"bucket": target.bucket}
            erase = partial(open_store(target).erase, tenant=tenant, run=run)
        if not yes:  # asked on stderr: stdout is the result, which --json keeps parseable
            (kind, name), *_ = where.items()
            typer.confirm(
                f"Erase every claim of {what} in {kind} {name!r}, and its recorded runs? "
                "This cannot be undone",
                abort=True,
                err=True,
            )
        out = None if receipt is None else open_receipt(receipt)  # before anything is erased
        with out or nullcontext(), counting(f"Forgetting {what}", "removed") as update:
            signed = erase(progress=update)
            if out is not None:
                out.write(signed.to_json() + "\n")
    removed = signed.claims
    if as_json:
        record = {"tenant": tenant, "run": run, **where, "removed": removed}
        if receipt is not None:
            record["receipt"] = str(receipt)
        typer.echo(json.dumps(record))
        return
    typer.echo(f"Removed {removed} claim(s) of {what}.")
    if receipt is not None:
        typer.echo(f"Receipt: {receipt} ({summary(signed)})")


def keygen() -> None:
    """Print a fresh handle key, for S3CLAIM_HANDLE_KEY.

    Every process sharing a bucket needs the same key: a handle made under one key cannot be
    redeemed under another. Keep it out of shell history, e.g.
    `export S3CLAIM_HANDLE_KEY="$(s3claim keygen)"`.
    """
    typer.echo(secrets.token_urlsafe(32))


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
        for given in run or ():
            checked(tenant, given)
        read = _read_ids(runs_from) if runs_from is not None else []
        for given in read:
            checked(tenant, given, run_option="--runs-from")
        names = [*(run or ()), *read]
        journal = open_journal(context.target(bucket, endpoint_url, prefix, region))
        if names or run is not None or runs_from is not None:
            named = (
                (name, info)
                for name in dict.fromkeys(names)  # once each, in order: one LIST and one HEAD
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
