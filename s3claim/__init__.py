"""s3claim: check oversized agent tool results into a store; the conversation keeps a head.

Import everything from here; modules with a leading underscore are private. The S3 names
load on first use, so the core (and `import s3claim`) never imports boto3 unless asked to.
"""

from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

from s3claim._version import __version__
from s3claim.aio import AsyncClaimCheck, ThreadedAsyncStore
from s3claim.claim_tools import (
    ToolAnswer,
    claim_check_tool,
    claim_search_tool,
    claim_tools,
    run_claim_tool,
)
from s3claim.claimcheck import CheckIn, ClaimCheck
from s3claim.clock import Clock, ManualClock, SystemClock
from s3claim.errors import (
    ClaimCheckError,
    ClaimStoreError,
    ClaimUnavailableError,
    ConfigurationError,
    ProviderError,
    RunConflictError,
    RunNotFoundError,
    S3ClaimError,
    StoreFailure,
    ToolError,
    UpstreamError,
)
from s3claim.events import (
    ClaimEvicted,
    ClaimFetched,
    ClaimFetchFailed,
    ClaimPassed,
    ClaimSearched,
    ClaimSearchFailed,
    ClaimUnavailable,
    Event,
    ModelCalled,
    RunFinished,
    RunResumed,
    ToolFailed,
    ToolResultStored,
    ToolResultStoreFailed,
    ToolResultTruncated,
)
from s3claim.handles import HandleKey
from s3claim.journal import JournalEntry, RunInfo, RunJournal, RunRecord
from s3claim.memory import MemoryClaimCheckStore, MemoryRunJournal
from s3claim.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from s3claim.policy import ClaimCheckPolicy
from s3claim.providers import OpenAICompatibleProvider, Provider, ScriptedProvider, TokenUsage
from s3claim.runner import AgentRunner, RunResult
from s3claim.scope import Scope
from s3claim.store import (
    DEFAULT_FETCH_CHARS,
    AsyncClaimCheckStore,
    ClaimCheckStore,
    SearchableStore,
    Window,
)
from s3claim.telemetry import AuditRecord
from s3claim.tools import RunContext, Tool, ToolRegistry, ToolView, tool

if _TYPE_CHECKING:
    from s3claim.s3 import (
        AsyncS3ClaimCheckStore,
        ClaimInfo,
        RetryPolicy,
        S3AuditTrail,
        S3ClaimCheckStore,
        S3ClaimSettings,
        S3RunJournal,
    )

_LAZY = frozenset(
    {
        "AsyncS3ClaimCheckStore",
        "ClaimInfo",
        "RetryPolicy",
        "S3AuditTrail",
        "S3ClaimCheckStore",
        "S3ClaimSettings",
        "S3RunJournal",
    }
)
"""Names of `s3claim.s3`, which imports boto3: loaded when first asked for."""


def __getattr__(name: str) -> _Any:
    if name in _LAZY:
        import s3claim.s3

        return getattr(s3claim.s3, name)
    raise AttributeError(f"module 's3claim' has no attribute {name!r}")


__all__ = [
    "DEFAULT_FETCH_CHARS",
    "AgentRunner",
    "AssistantMessage",
    "AsyncClaimCheck",
    "AsyncClaimCheckStore",
    "AsyncS3ClaimCheckStore",
    "AuditRecord",
    "CheckIn",
    "ClaimCheck",
    "ClaimCheckError",
    "ClaimCheckPolicy",
    "ClaimCheckStore",
    "ClaimEvicted",
    "ClaimFetchFailed",
    "ClaimFetched",
    "ClaimInfo",
    "ClaimPassed",
    "ClaimSearchFailed",
    "ClaimSearched",
    "ClaimStoreError",
    "ClaimUnavailable",
    "ClaimUnavailableError",
    "Clock",
    "ConfigurationError",
    "Event",
    "HandleKey",
    "JournalEntry",
    "ManualClock",
    "MemoryClaimCheckStore",
    "MemoryRunJournal",
    "Message",
    "ModelCalled",
    "OpenAICompatibleProvider",
    "Provider",
    "ProviderError",
    "RetryPolicy",
    "RunConflictError",
    "RunContext",
    "RunFinished",
    "RunInfo",
    "RunJournal",
    "RunNotFoundError",
    "RunRecord",
    "RunResult",
    "RunResumed",
    "S3AuditTrail",
    "S3ClaimCheckStore",
    "S3ClaimError",
    "S3ClaimSettings",
    "S3RunJournal",
    "Scope",
    "ScriptedProvider",
    "SearchableStore",
    "StoreFailure",
    "SystemClock",
    "SystemMessage",
    "ThreadedAsyncStore",
    "TokenUsage",
    "Tool",
    "ToolAnswer",
    "ToolCall",
    "ToolError",
    "ToolFailed",
    "ToolMessage",
    "ToolRegistry",
    "ToolResultStoreFailed",
    "ToolResultStored",
    "ToolResultTruncated",
    "ToolView",
    "UpstreamError",
    "UserMessage",
    "Window",
    "__version__",
    "claim_check_tool",
    "claim_search_tool",
    "claim_tools",
    "run_claim_tool",
    "tool",
]
