"""s3claim: check oversized agent tool results into a store; the conversation keeps a head.

Import everything from here; modules with a leading underscore are private. The S3 names
load on first use, so the core (and `import s3claim`) never imports boto3 unless asked to.
"""

from typing import TYPE_CHECKING, Any

from s3claim.aio import AsyncClaimCheck, AsyncClaimCheckStore, ThreadedAsyncStore
from s3claim.claimcheck import CheckIn, ClaimCheck
from s3claim.clock import Clock, ManualClock, SystemClock
from s3claim.errors import (
    ClaimCheckError,
    ClaimStoreError,
    ClaimUnavailableError,
    ConfigurationError,
    RunConflictError,
    RunNotFoundError,
)
from s3claim.events import (
    ClaimFetched,
    ClaimFetchFailed,
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
from s3claim.journal import JournalEntry, MemoryRunJournal, RunInfo, RunJournal, RunRecord
from s3claim.memory import MemoryClaimCheckStore
from s3claim.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from s3claim.openai_compat import OpenAICompatibleProvider, ProviderError, TokenUsage
from s3claim.policy import ClaimCheckPolicy
from s3claim.providers import Provider, ScriptedProvider
from s3claim.retrieval import claim_check_tool
from s3claim.runner import AgentRunner, RunResult
from s3claim.scope import Scope
from s3claim.search import SearchableStore, claim_search_tool
from s3claim.store import DEFAULT_FETCH_CHARS, ClaimCheckStore, Window
from s3claim.tools import RunContext, Tool, ToolError, ToolRegistry, ToolView, tool

if TYPE_CHECKING:
    from s3claim.aio._s3 import AsyncS3ClaimCheckStore
    from s3claim.journal import S3RunJournal
    from s3claim.s3 import ClaimInfo, RetryPolicy, S3ClaimCheckStore, S3ClaimSettings

_LAZY = {"ClaimInfo", "RetryPolicy", "S3ClaimCheckStore", "S3ClaimSettings"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import s3claim.s3

        return getattr(s3claim.s3, name)
    if name == "S3RunJournal":
        from s3claim.journal._s3 import S3RunJournal

        return S3RunJournal
    if name == "AsyncS3ClaimCheckStore":
        from s3claim.aio._s3 import AsyncS3ClaimCheckStore

        return AsyncS3ClaimCheckStore
    raise AttributeError(f"module 's3claim' has no attribute {name!r}")


__all__ = [
    "DEFAULT_FETCH_CHARS",
    "AgentRunner",
    "AssistantMessage",
    "AsyncClaimCheck",
    "AsyncClaimCheckStore",
    "AsyncS3ClaimCheckStore",
    "CheckIn",
    "ClaimCheck",
    "ClaimCheckError",
    "ClaimCheckPolicy",
    "ClaimCheckStore",
    "ClaimFetchFailed",
    "ClaimFetched",
    "ClaimInfo",
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
    "S3ClaimCheckStore",
    "S3ClaimSettings",
    "S3RunJournal",
    "Scope",
    "ScriptedProvider",
    "SearchableStore",
    "SystemClock",
    "SystemMessage",
    "ThreadedAsyncStore",
    "TokenUsage",
    "Tool",
    "ToolCall",
    "ToolError",
    "ToolFailed",
    "ToolMessage",
    "ToolRegistry",
    "ToolResultStoreFailed",
    "ToolResultStored",
    "ToolResultTruncated",
    "ToolView",
    "UserMessage",
    "Window",
    "claim_check_tool",
    "claim_search_tool",
    "tool",
]
