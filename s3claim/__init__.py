"""s3claim: check oversized agent tool results into a store; the conversation keeps a head.

The claim check, its stores and its tools are imported from here, with what it takes to run
an agent around them. Each family has the rest in its module: `s3claim.events` (what a run
records), `s3claim.hosting` (what every host does with a tool call), `s3claim.messages`,
`s3claim.providers`, `s3claim.journal`, `s3claim.tools`, `s3claim.errors`, `s3claim.store`
(for writing a store), `s3claim.s3` (the S3 family). Modules with a leading underscore are
private. The S3 names load on first use, so `import s3claim` never imports boto3.
"""

from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

from s3claim.aio import AsyncClaimCheck, ThreadedAsyncStore
from s3claim.claim_tools import claim_check_tool, claim_search_tool, claim_tools
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
    ToolError,
    UpstreamError,
)
from s3claim.events import Event
from s3claim.handles import HandleKey
from s3claim.journal import RunJournal
from s3claim.memory import MemoryClaimCheckStore, MemoryRunJournal
from s3claim.messages import AssistantMessage, Message, ToolCall
from s3claim.policy import ClaimCheckPolicy
from s3claim.providers import OpenAICompatibleProvider, ScriptedProvider
from s3claim.runner import AgentRunner, RunResult
from s3claim.scope import Scope
from s3claim.store import (
    DEFAULT_FETCH_CHARS,
    AsyncClaimCheckStore,
    ClaimCheckStore,
    RangedStore,
    Window,
)
from s3claim.tools import RunContext, Tool, ToolRegistry, tool
from s3claim.version import __version__

if _TYPE_CHECKING:
    from s3claim.s3 import (
        RetryPolicy,
        S3ClaimCheckStore,
        S3ClaimSettings,
        S3RunJournal,
    )

_LAZY = frozenset(
    {
        "RetryPolicy",
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
    "CheckIn",
    "ClaimCheck",
    "ClaimCheckError",
    "ClaimCheckPolicy",
    "ClaimCheckStore",
    "ClaimStoreError",
    "ClaimUnavailableError",
    "Clock",
    "ConfigurationError",
    "Event",
    "HandleKey",
    "ManualClock",
    "MemoryClaimCheckStore",
    "MemoryRunJournal",
    "Message",
    "OpenAICompatibleProvider",
    "ProviderError",
    "RangedStore",
    "RetryPolicy",
    "RunConflictError",
    "RunContext",
    "RunJournal",
    "RunNotFoundError",
    "RunResult",
    "S3ClaimCheckStore",
    "S3ClaimError",
    "S3ClaimSettings",
    "S3RunJournal",
    "Scope",
    "ScriptedProvider",
    "SystemClock",
    "ThreadedAsyncStore",
    "Tool",
    "ToolCall",
    "ToolError",
    "ToolRegistry",
    "UpstreamError",
    "Window",
    "__version__",
    "claim_check_tool",
    "claim_search_tool",
    "claim_tools",
    "tool",
]
