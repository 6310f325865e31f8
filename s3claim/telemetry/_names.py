"""Every span, metric and attribute name s3claim emits, in one place, so dashboards can rely
on them and a rename is one edit (docs/observability.md is the reference)."""

from __future__ import annotations

SCOPE_NAME = "s3claim"
"""The instrumentation scope of every tracer and meter."""

# -- spans ------------------------------------------------------------------------------
CHECK_IN = "s3claim.check_in"
FETCH = "s3claim.fetch"
SEARCH = "s3claim.search"
FORGET = "s3claim.forget"
JOURNAL_SAVE = "s3claim.journal.save"
JOURNAL_LOAD = "s3claim.journal.load"
EXECUTE_TOOL = "execute_tool"
"""The GenAI conventions' operation; a runner's tool call is the span `execute_tool {name}`."""

INVOKE_AGENT = "invoke_agent"
"""A runner's run (or resume): the span `invoke_agent {agent}`, parent of its tool calls."""

# -- attributes -------------------------------------------------------------------------
TOOL = "s3claim.tool"
HANDLE = "s3claim.handle"
CHARS_TOTAL = "s3claim.chars.total"
CHARS_SHOWN = "s3claim.chars.shown"
CHARS_KEPT_OUT = "s3claim.chars.kept_out"
"""A stored result's characters that the conversation does not hold: total less shown."""
OUTCOME = "s3claim.outcome"
CHECK_IN_REASON = "s3claim.check_in.reason"
"""Set when a result under its threshold was checked in: `turn_budget` or `room`."""
WINDOW_OFFSET = "s3claim.window.offset"
WINDOW_CHARS = "s3claim.window.chars"
SEARCH_MATCHES = "s3claim.search.matches"
PATTERN_CHARS = "s3claim.search.pattern_chars"
CLAIMS_DELETED = "s3claim.claims.deleted"
RUN_TURNS = "s3claim.run.turns"
S3_REQUESTS = "s3claim.s3.requests"
S3_BYTES = "s3claim.s3.bytes"
TENANT = "s3claim.tenant"
RUN = "s3claim.run"
OPERATION = "s3claim.operation"
ERROR_TYPE = "error.type"
GEN_AI_OPERATION = "gen_ai.operation.name"
GEN_AI_TOOL_NAME = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID = "gen_ai.tool.call.id"
GEN_AI_AGENT_NAME = "gen_ai.agent.name"
GEN_AI_TOOL_CALL_RESULT_REF = "gen_ai.tool.call.result_ref"
"""The claim a result was checked in as (its `claim:` handle, the URI MCP resources use): on
the check-in span and the tool-execution span around it, and on each fetch and search of it.
Named after the GenAI upload hook's `gen_ai.input.messages_ref` / `gen_ai.output.messages_ref`."""

# -- metrics ----------------------------------------------------------------------------
CLAIMS = "s3claim.claims"
CHARS_SAVED = "s3claim.chars.saved"
CLAIM_SIZE = "s3claim.claim.size"
FETCHES = "s3claim.fetches"
REUSES = "s3claim.reuses"
STORE_DURATION = "s3claim.store.duration"

AUDIT_FOLDER = "audit"
"""Where a bucket keeps a run's audit records: `{run prefix}audit/`."""
AUDIT_LOGGER = "s3claim.audit"
"""The logger of the audit trail: one record per fetch, search and refusal."""
