"""`s3claim verify-receipt`: check an erasure receipt (`forget --receipt`) against the key.

It verifies what a holder of S3CLAIM_HANDLE_KEY signed, not what happened in the bucket: it
reads the file and the key, and sends no request (docs/security.md, "Erasure receipts").
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, TextIO
from urllib.parse import urlsplit

import typer
from pydantic import ValidationError

from s3claim.cli._config import checked, scope_of
from s3claim.cli._exit import CliError, Exit, handled
from s3claim.erasure import (
    ERASE_PATH,
    ERASE_SIGNATURE_HEADER,
    EraseRequest,
    ErasureReceipt,
    verify_receipt,
)
from s3claim.errors import describe_validation_error
from s3claim.s3.admin import handle_key, load_settings

__all__ = ["erase_through", "open_receipt", "read_receipt", "summary", "verify_receipt_command"]


def open_receipt(path: Path) -> TextIO:
    """The file `forget --receipt` writes the receipt's canonical JSON to, opened before the
    erasure: a path it cannot write is refused while nothing is erased yet."""
    try:
        return path.open("w", encoding="utf-8")
    except OSError as exc:
        raise CliError(f"--receipt {path}: {exc.strerror or type(exc).__name__}") from None


def read_receipt(path: Path) -> tuple[ErasureReceipt, bytes]:
    """The receipt in the file, and the file's bytes (what is verified)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or type(exc).__name__}") from None
    try:
        return ErasureReceipt.from_json(data), data
    except ValidationError as exc:
        why = describe_validation_error(exc)
        raise CliError(f"{path} is not an erasure receipt ({why})") from None
    except ValueError:  # not JSON, not UTF-8, nested too deep
        raise CliError(f"{path} is not an erasure receipt (not JSON)") from None


def verify_receipt_command(
    receipt: Annotated[
        Path, typer.Argument(help="The receipt `forget --receipt` wrote.", show_default=False)
    ],
    tenant: Annotated[
        str | None, typer.Option(help="Also check the receipt erased this tenant.")
    ] = None,
    run: Annotated[
        str | None, typer.Option(help="Also check it erased this run (of --tenant).")
    ] = None,
) -> None:
    """Check an erasure receipt under S3CLAIM_HANDLE_KEY: one line, and exit 0 when it verifies.

    Exit 1 when it does not (a field edited, forged, signed under another key, or not of
    --tenant/--run); 2 when the file is not a receipt or the key is missing. Sends no request.
    """
    with handled():
        if run is not None and tenant is None:
            raise CliError("--run needs --tenant: a run is named within its tenant")
        if tenant is not None:
            checked(tenant, run)
        found, data = read_receipt(receipt)
        key = handle_key(load_settings())
        if not verify_receipt(data, key):  # the bytes signed, not the fields read from them
            raise CliError(
                f"{receipt} does not verify under S3CLAIM_HANDLE_KEY: edited (a field, or how "
                "it is written), forged, or signed under another key",
                Exit.FAILED,
            )
        if tenant is not None:  # by the tags of whichever key of the ring signed it
            scope = None if run is None else scope_of(tenant, run)
            expected = [
                (k.tenant_tag(tenant), None if scope is None else k.run_tag(scope))
                for k in key.ring
            ]
            if (found.tenant, found.run) not in expected:
                what = f"run {run!r} of tenant {tenant!r}" if run else f"tenant {tenant!r}"
                raise CliError(f"{receipt} verifies, but is not an erasure of {what}", Exit.FAILED)
    typer.echo(f"verified: {summary(found)}")


def summary(receipt: ErasureReceipt) -> str:
    """What the receipt says, on one line: where, whom (by tag), when, what went."""
    whom = f"tenant {receipt.tenant}" + (f" run {receipt.run}" if receipt.run else "")
    when = f"{receipt.started_at:%Y-%m-%d %H:%M:%SZ}"
    return (
        f"{receipt.store} {whom} erased {when}: {receipt.claims} claim(s) "
        f"({receipt.hand_offs} hand-off copies), {receipt.indexes} index(es), "
        f"{receipt.journals} journal(s), {receipt.audit_records} audit record(s), "
        f"{receipt.other} other; {receipt.versions} version(s), "
        f"{receipt.delete_markers} delete marker(s); {receipt.remaining} left"
    )


def erase_through(
    proxy: str,
    *,
    tenant: str,
    run: str | None,
    progress: Callable[[int], None] | None = None,
) -> ErasureReceipt:
    """Erase through the proxy serving HTTP at `proxy` (`s3claim.mcp`'s `/erase`): a request
    signed under S3CLAIM_HANDLE_KEY; its answer, the receipt, verified under the same key."""
    parts = urlsplit(proxy)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise CliError(
            f"--proxy takes the proxy's URL, such as http://127.0.0.1:8000, got {proxy!r}"
        )
    key = handle_key(load_settings())
    body, signature = EraseRequest(tenant=tenant, run=run, at=time.time()).signed(key)
    request = urllib.request.Request(  # noqa: S310 (the scheme is http or https, checked above)
        f"{parts.scheme}://{parts.netloc}{ERASE_PATH}",
        data=body,
        headers={ERASE_SIGNATURE_HEADER: signature, "Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=120) as answer:  # noqa: S310 (as above)
            text = answer.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        said = exc.read().decode("utf-8", "replace").strip().splitlines()
        line = said[0] if said and exc.code != 404 else "it takes no erase requests"
        code = Exit.UNAVAILABLE if exc.code >= 500 else Exit.CONFIGURATION
        raise CliError(f"the proxy at {parts.netloc} refused: {line}", code) from None
    except (urllib.error.URLError, OSError) as exc:
        why = getattr(exc, "reason", exc)
        raise CliError(
            f"cannot reach the proxy at {parts.netloc}: {why}", Exit.UNAVAILABLE
        ) from None
    try:
        if not verify_receipt(text, key):
            raise CliError(
                "the proxy's receipt does not verify under S3CLAIM_HANDLE_KEY", Exit.FAILED
            )
        receipt = ErasureReceipt.from_json(text)
    except ValueError:
        raise CliError("the proxy answered no erasure receipt", Exit.UNAVAILABLE) from None
    if progress is not None:
        progress(receipt.claims)
    return receipt
