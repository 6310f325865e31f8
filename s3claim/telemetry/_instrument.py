"""The instrumented entry points: what each face wraps, so every face gets the same spans.

The core opens its operations with the `*_operation` helpers (a check-in in `ClaimCheck`, a
read in `s3claim.store.RangedStore`, a search in the claim tools); the stores and journals
decorate the rest of their methods (`traced_forget`, `traced_journal_save`, ...).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar, cast

import s3claim.telemetry._names as n
from s3claim.errors import RunConflictError, RunNotFoundError
from s3claim.scope import Scope
from s3claim.telemetry._spans import Operation, tenant_attributes

__all__ = [
    "agent_run_span",
    "check_in_operation",
    "fetch_operation",
    "search_operation",
    "tool_call_span",
    "traced_forget",
    "traced_journal_load",
    "traced_journal_save",
]

_F = TypeVar("_F", bound=Callable[..., Any])
_MAX_CALL_ID = 128


def check_in_operation(owner: object, scope: Scope, *, tool: str) -> Operation:
    """A result admitted: outcome `stored`, `passed`, `truncated` or `store_failed`. A stored
    one's reference and sizes are set on the tool-execution span around it as well."""
    return Operation(
        n.CHECK_IN, failure="store_failed", owner=owner, scope=scope, attributes={n.TOOL: tool}
    )


def fetch_operation(
    owner: object, scope: Scope, *, handle: str | None, offset: int | None
) -> Operation:
    """A window read: outcome `ok`, `unavailable` or `failed`; audited."""
    return _claim_read(n.FETCH, "fetch", owner, scope, handle, {n.WINDOW_OFFSET: offset})


def search_operation(
    owner: object, scope: Scope, *, handle: str | None, pattern_chars: int
) -> Operation:
    """A search: outcome `ok`, `unavailable`, `failed`, `busy`, `pattern_too_costly`,
    `match_too_long`; audited."""
    return _claim_read(n.SEARCH, "search", owner, scope, handle, {n.PATTERN_CHARS: pattern_chars})


def _claim_read(
    name: str,
    duration: str,
    owner: object,
    scope: Scope,
    handle: str | None,
    attributes: dict[str, Any],
) -> Operation:
    """An audited read of one claim, which both conventions name by its handle."""
    return Operation(
        name,
        duration=duration,
        owner=owner,
        scope=scope,
        audit=True,
        attributes={n.HANDLE: handle, n.GEN_AI_TOOL_CALL_RESULT_REF: handle, **attributes},
    )


def tool_call_span(name: str | None, call_id: str | None) -> Operation:
    """A runner's tool call, as the GenAI conventions name it (`execute_tool {name}`).

    `name` is None for a tool the agent does not have: a name the model made up is not
    recorded, since it could say anything.
    """
    return Operation(
        f"{n.EXECUTE_TOOL} {name}" if name else n.EXECUTE_TOOL,
        failure="error",
        attributes={
            n.GEN_AI_OPERATION: n.EXECUTE_TOOL,
            n.GEN_AI_TOOL_NAME: name,
            n.GEN_AI_TOOL_CALL_ID: call_id[:_MAX_CALL_ID] if call_id else None,
        },
    )


def agent_run_span(agent: str) -> Operation:
    """A runner's run or resume, as the GenAI conventions name it (`invoke_agent {agent}`)."""
    return Operation(
        f"{n.INVOKE_AGENT} {agent}",
        attributes={n.GEN_AI_OPERATION: n.INVOKE_AGENT, n.GEN_AI_AGENT_NAME: agent},
    )


def traced_forget(method: _F) -> _F:
    """`forget(self, *, tenant, run=None, ...)` or `erase(...)`: an erasure, with the claims
    it removed (the count `forget` returns, or an erasure receipt's `claims`)."""

    @functools.wraps(method)
    def forget(self: Any, *, tenant: str, run: str | None = None, **kwargs: Any) -> Any:
        with Operation(n.FORGET, duration="forget") as op:
            if op.recording and isinstance(tenant, str) and tenant:
                op.attributes.update(tenant_attributes(self, tenant, run))
            removed = method(self, tenant=tenant, run=run, **kwargs)
            op.set(claims_deleted=getattr(removed, "claims", removed))
            return removed

    return cast(_F, forget)


def traced_journal_save(method: _F) -> _F:
    """`save(self, scope, record, *, replaces)` of a run journal."""

    @functools.wraps(method)
    def save(self: Any, scope: Scope, record: Any, **kwargs: Any) -> Any:
        turns = getattr(record, "turns", None)
        with Operation(
            n.JOURNAL_SAVE,
            duration="journal.save",
            owner=self,
            scope=scope,
            attributes={n.RUN_TURNS: turns},
        ) as op:
            try:
                return method(self, scope, record, **kwargs)
            except RunConflictError:
                op.outcome = "conflict"
                raise

    return cast(_F, save)


def traced_journal_load(method: _F) -> _F:
    """`load(self, scope)` of a run journal."""

    @functools.wraps(method)
    def load(self: Any, scope: Scope) -> Any:
        with Operation(n.JOURNAL_LOAD, duration="journal.load", owner=self, scope=scope) as op:
            try:
                entry = method(self, scope)
            except RunNotFoundError:
                op.outcome = "not_found"
                raise
            op.set(run_turns=entry.record.turns)
            return entry

    return cast(_F, load)
