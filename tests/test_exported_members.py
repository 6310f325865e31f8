"""The public surface is pinned: a name added or dropped is a decision, not an accident."""

from __future__ import annotations

import s3claim


def test_all_is_sorted_and_every_name_resolves() -> None:
    def order(name: str) -> tuple[int, str]:  # constants, then classes, then functions
        return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)

    assert s3claim.__all__ == sorted(s3claim.__all__, key=order)
    assert len(set(s3claim.__all__)) == len(s3claim.__all__)
    for name in s3claim.__all__:
        assert getattr(s3claim, name) is not None


def test_core_names_are_exported() -> None:
    expected = {
        "AgentRunner", "AssistantMessage", "CheckIn", "ClaimCheck", "ClaimCheckError",
        "ClaimCheckPolicy", "ClaimCheckStore", "ClaimFetched", "ClaimStoreError",
        "ClaimUnavailable", "ClaimUnavailableError", "ConfigurationError", "DEFAULT_FETCH_CHARS",
        "ManualClock", "MemoryClaimCheckStore", "ModelCalled", "RunFinished", "RunResult", "Scope",
        "ScriptedProvider", "SystemClock", "SystemMessage", "Tool", "ToolCall", "ToolMessage",
        "ToolRegistry", "ToolResultStoreFailed", "ToolResultStored", "ToolResultTruncated",
        "UserMessage", "Window", "claim_check_tool", "tool",
        "ClaimSearched", "ClaimSearchFailed", "SearchableStore", "claim_search_tool",
    }  # fmt: skip
    assert expected <= set(s3claim.__all__)
    assert s3claim.DEFAULT_FETCH_CHARS == 4096


def test_run_journal_names_are_exported() -> None:
    expected = {
        "JournalEntry", "MemoryRunJournal", "RunConflictError", "RunInfo", "RunJournal",
        "RunNotFoundError", "RunRecord", "RunResumed", "S3RunJournal",
    }  # fmt: skip
    assert expected <= set(s3claim.__all__)
    assert isinstance(s3claim.MemoryRunJournal(), s3claim.RunJournal)
    assert issubclass(s3claim.RunConflictError, s3claim.ClaimCheckError)
    assert issubclass(s3claim.RunNotFoundError, s3claim.ClaimCheckError)
    assert s3claim.AgentRunner.resume.__kwdefaults__ is None  # tenant and run_id: required
    assert s3claim.S3RunJournal.__module__ == "s3claim.journal._s3"


def test_async_face_names_are_exported() -> None:
    assert {"AsyncClaimCheck", "AsyncClaimCheckStore", "ThreadedAsyncStore"} <= set(s3claim.__all__)
    assert isinstance(
        s3claim.ThreadedAsyncStore(s3claim.MemoryClaimCheckStore()), s3claim.AsyncClaimCheckStore
    )


def test_memory_store_satisfies_the_protocol() -> None:
    assert isinstance(s3claim.MemoryClaimCheckStore(), s3claim.ClaimCheckStore)
    assert isinstance(s3claim.MemoryClaimCheckStore(), s3claim.SearchableStore)
    assert isinstance(s3claim.ManualClock(0), s3claim.Clock)


def test_s3_names_load_lazily_and_the_core_does_not_import_boto3() -> None:
    import subprocess
    import sys

    probe = (
        "import sys, s3claim; assert 'boto3' not in sys.modules, 'core imported boto3'; "
        "import s3claim.journal; assert 'boto3' not in sys.modules, 'journal imported boto3'; "
        "s3claim.S3ClaimCheckStore; assert 'boto3' in sys.modules; print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"
    from s3claim import RetryPolicy, S3ClaimCheckStore, S3ClaimSettings

    assert S3ClaimCheckStore.__module__ == "s3claim.s3._store"
    assert {RetryPolicy.__name__, S3ClaimSettings.__name__} == {"RetryPolicy", "S3ClaimSettings"}


def test_import_s3claim_imports_no_agent_framework() -> None:
    import subprocess
    import sys

    frameworks = ("agents", "langchain", "langgraph", "langchain_core", "pydantic_ai", "mcp")
    probe = (
        "import sys, s3claim, s3claim.integrations; "
        f"print(sorted(m for m in {frameworks!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
