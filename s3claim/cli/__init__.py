"""The `s3claim` command line: a demo of what claim-checking buys, and bucket operations."""

from s3claim.cli._app import app, main

__all__ = ["app", "main"]
