"""The contract generator lives in the package now (the demo uses it); tests import it here."""

from __future__ import annotations

from s3claim._contract import contract

__all__ = ["contract"]
