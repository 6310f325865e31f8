"""The `s3claim` command: typer wires the commands; each lives in a module of its own."""

from __future__ import annotations

import gc
from typing import Annotated

import typer

from s3claim.cli._command import Command, Group
from s3claim.cli._doctor import doctor
from s3claim.cli._mcp_proxy import CONTEXT_SETTINGS, mcp_proxy
from s3claim.cli._ops import audit, forget, keygen, ls, put, runs
from s3claim.cli._reads import fetch, link_command, search
from s3claim.cli._receipts import verify_receipt_command
from s3claim.cli._serve import serve
from s3claim.cli.demo import demo
from s3claim.version import __version__

__all__ = ["app", "main"]

EPILOG = (
    "Exit codes: 0 ok; 1 a check failed, a claim is unavailable, or you declined; "
    "2 usage or configuration (no bucket, no key, no credentials, access denied, no such "
    "bucket); 3 the store or the model server is unavailable."
)

app = typer.Typer(
    name="s3claim",
    cls=Group,
    epilog=EPILOG,
    no_args_is_help=True,
    # --install-completion / --show-completion for bash, zsh, fish and PowerShell.
    add_completion=True,
    # Locals in a traceback could include a handle key or tool content: never show them.
    pretty_exceptions_show_locals=False,
    rich_markup_mode="markdown",
)
for command in (demo, put, fetch, search, ls, runs, audit, forget, keygen, doctor, serve):
    app.command(cls=Command, epilog=EPILOG)(command)
app.command("link", cls=Command, epilog=EPILOG)(link_command)
app.command("verify-receipt", cls=Command, epilog=EPILOG)(verify_receipt_command)
app.command("mcp-proxy", cls=Command, epilog=EPILOG, context_settings=CONTEXT_SETTINGS)(mcp_proxy)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"s3claim {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Claim-check store for oversized LLM agent tool results, on S3.

    `s3claim demo` shows what claim-checking buys; the other commands operate a claim bucket
    configured by the S3CLAIM_* environment (S3CLAIM_BUCKET, S3CLAIM_HANDLE_KEY, ...).
    """


def main() -> None:
    """The console script's entry point."""
    try:
        app()
    finally:
        # Exit without a last collection of everything imported (boto3's models, pydantic's
        # schemas): it took about 0.45 s of CPU on every command's way out, after its last
        # output, and more than half of an `mcp-proxy`'s exit when its client closes stdin.
        # atexit handlers (an OpenTelemetry SDK's flush) and std streams' flush still run.
        gc.freeze()
