"""Scope: who a claim belongs to. Handles are derived from it and lookups check it.

docs/security.md ("Scopes") says how a scope is checked.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import StringConstraints
from pydantic.dataclasses import dataclass

__all__ = ["Scope"]

# pydantic refuses strings UTF-8 cannot carry (lone surrogates) on its own.
_Name = Annotated[str, StringConstraints(min_length=1, max_length=1024)]


@dataclass(frozen=True)
class Scope:
    """A tenant and one run of an agent for that tenant.

    Any string of 1 to 1,024 characters is accepted (slashes, dots, control characters):
    names are only ever hashed, never placed in a key or a handle as they are.
    """

    tenant: _Name
    run: _Name
