"""The public surface is pinned: a name added or dropped is a decision, not an accident."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
from types import ModuleType

import s3claim

PUBLIC_DUNDERS = {"__version__"}
"""Private by their spelling, public by convention: httpx keeps `__version__` in `__all__` too."""


def _public_names() -> set[str]:
    """Every name `import s3claim` offers: its attributes (modules aside) and its lazy names."""
    attributes = {
        name
        for name, value in vars(s3claim).items()
        if (not name.startswith("_") or name in PUBLIC_DUNDERS)
        and not isinstance(value, ModuleType)
    }
    return attributes | set(s3claim._LAZY)


def test_the_version_is_the_installed_distributions() -> None:
    """One source (s3claim/version.py), read by pyproject.toml: the metadata says the same."""
    assert s3claim.__version__ == importlib.metadata.version("s3claim")
    assert re.fullmatch(r"\d+\.\d+\.\d+", s3claim.__version__)


def test_all_is_exactly_the_public_names() -> None:
    """httpx's rule: `__all__` equals what the package offers, no more, no less."""
    assert set(s3claim.__all__) == _public_names()
    assert len(set(s3claim.__all__)) == len(s3claim.__all__)


def test_the_top_level_holds_at_most_fifty_names() -> None:
    """The claim check, its stores and tools, and what runs an agent around them; every other
    name lives in its family's module (events in `s3claim.events`, hosting steps in
    `s3claim.hosting`, ...)."""
    from s3claim import events, hosting

    assert len(s3claim.__all__) <= 50
    assert "Event" in s3claim.__all__ and "ToolResultStored" not in s3claim.__all__
    assert {"Call", "Host", "ToolAnswer"} <= set(hosting.__all__)  # one pipeline, its steps
    assert not {"admit", "resolve_references", "run_claim_tool"} & set(hosting.__all__)
    assert "ToolResultStored" in events.__all__


def test_all_is_sorted_and_every_name_resolves() -> None:
    def order(name: str) -> tuple[int, str]:  # constants, then classes, then functions
        return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)

    assert s3claim.__all__ == sorted(s3claim.__all__, key=order)
    for name in s3claim.__all__:
        assert getattr(s3claim, name) is not None


def test_the_exception_tree_has_one_root() -> None:
    errors = [getattr(s3claim, n) for n in s3claim.__all__ if n.endswith("Error")]
    assert len(errors) == 10
    assert all(issubclass(e, s3claim.S3ClaimError) for e in errors)
    claims = (
        s3claim.ClaimUnavailableError,
        s3claim.ClaimStoreError,
        s3claim.ConfigurationError,
        s3claim.RunConflictError,
        s3claim.RunNotFoundError,
    )
    assert all(issubclass(e, s3claim.ClaimCheckError) for e in claims)
    outside = (s3claim.ToolError, s3claim.ProviderError, s3claim.UpstreamError)
    assert not any(issubclass(e, s3claim.ClaimCheckError) for e in outside)
    assert issubclass(s3claim.ConfigurationError, ValueError)
    assert issubclass(s3claim.RunNotFoundError, LookupError)


def test_store_errors_say_what_failed() -> None:
    error = s3claim.ClaimStoreError("PutObject failed", reason="access_denied", code="403")
    assert (error.reason, error.code, error.status) == ("access_denied", "403", None)
    assert s3claim.ClaimStoreError("x").reason == "unavailable"


def test_the_protocols_are_satisfied_by_the_doubles() -> None:
    assert isinstance(s3claim.MemoryClaimCheckStore(), s3claim.ClaimCheckStore)
    assert isinstance(s3claim.MemoryClaimCheckStore(), s3claim.RangedStore)
    assert isinstance(s3claim.MemoryRunJournal(), s3claim.RunJournal)
    assert isinstance(s3claim.ManualClock(0), s3claim.Clock)
    assert isinstance(
        s3claim.ThreadedAsyncStore(s3claim.MemoryClaimCheckStore()), s3claim.AsyncClaimCheckStore
    )
    assert s3claim.AgentRunner.resume.__kwdefaults__ is None  # tenant and run_id: required
    assert s3claim.DEFAULT_FETCH_CHARS == 4096


def test_a_store_has_two_levels_and_no_capability_protocols() -> None:
    """Issue 46: the first level (`ClaimCheckStore`: put, fetch, forget) and the second
    (`RangedStore`: ranges, and so every reading mode, listing, hand-off, links, erasure
    receipts, run marks); no protocol per capability, no signature sniffing."""
    from s3claim import erasure, links, store

    assert {"ClaimCheckStore", "RangedStore", "Address", "ClaimInfo"} <= set(store.__all__)
    for gone in ("SearchableStore", "LineReadableStore", "PathReadableStore", "HandOffStore",
                 "ListableStore", "AsyncListableStore", "takes_tool"):  # fmt: skip
        assert gone not in store.__all__ and not hasattr(store, gone), gone
    assert not hasattr(links, "LinkableStore") and not hasattr(erasure, "ErasableStore")
    assert issubclass(s3claim.MemoryClaimCheckStore, s3claim.RangedStore)
    assert issubclass(s3claim.S3ClaimCheckStore, s3claim.RangedStore)
    assert {"ClaimInfo", "MAX_TOOL_NAME_BYTES"}.isdisjoint(s3claim.__all__)
    from s3claim.s3 import ClaimInfo

    assert ClaimInfo is store.ClaimInfo  # `s3claim.s3.ClaimInfo`, as before


def test_the_async_face_is_the_threaded_one_over_every_store() -> None:
    """Issue 46: one implementation a store, the sync one, which the async face runs on
    workers; the S3 family has no async store of its own, nor the reading engine an async
    driver."""
    from s3claim import aio, s3, store

    assert aio.__all__ == [
        "DEFAULT_MAX_WORKERS",
        "AsyncClaimCheck",
        "ThreadedAsyncStore",
        "Workers",
    ]
    assert s3.__all__ == [
        "Bucket",
        "ClaimInfo",
        "RetryPolicy",
        "S3AuditTrail",
        "S3ClaimCheckStore",
        "S3ClaimSettings",
        "S3RunJournal",
    ]
    assert {"AsyncClaimCheck", "AsyncClaimCheckStore", "ThreadedAsyncStore"} <= set(s3claim.__all__)
    assert [name for name in store.__all__ if name.startswith("Async")] == [
        "AsyncClaimCheckStore",
    ]
    s3_store = s3claim.S3ClaimCheckStore("b", handle_key="k" * 32)
    threaded = s3claim.ThreadedAsyncStore(s3_store)
    assert isinstance(threaded, store.AsyncClaimCheckStore)


def test_s3_names_load_lazily_and_the_core_does_not_import_boto3() -> None:
    probe = (
        "import sys, s3claim; assert 'boto3' not in sys.modules, 'core imported boto3'; "
        "assert 'numpy' not in sys.modules, 'core imported numpy'; "
        "import s3claim.journal, s3claim.memory, s3claim.aio, s3claim.providers; "
        "assert 'boto3' not in sys.modules, 'a family outside s3claim.s3 imported boto3'; "
        "s3claim.S3ClaimCheckStore; assert 'boto3' in sys.modules; print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"
    for name in sorted(s3claim._LAZY):
        assert getattr(s3claim, name).__module__.startswith("s3claim.s3."), name


def test_import_s3claim_imports_no_agent_framework() -> None:
    frameworks = ("agents", "langchain", "langgraph", "langchain_core", "pydantic_ai", "mcp")
    probe = (
        "import sys, s3claim, s3claim.integrations; "
        f"print(sorted(m for m in {frameworks!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_links_family_is_pinned() -> None:
    """Links live in `s3claim.links` (the server, which needs the mcp extra, beside it), not
    at the top level."""
    from s3claim import links

    assert links.__all__ == [
        "DEFAULT_LINK_TTL_SECONDS",
        "LINK_PATH",
        "Link",
        "LinkKey",
        "check_base_url",
        "link",
    ]
    assert not set(links.__all__) & set(s3claim.__all__)


def test_erasure_receipts_live_in_their_family_module() -> None:
    """Issue 38: the receipt and its check, in `s3claim.erasure`, not the top level; every
    store of the second level gives one (`RangedStore.erase`)."""
    from s3claim import erasure

    assert erasure.__all__ == [
        "ERASE_PATH",  # and the request a proxy's memory store is erased by (issue 48)
        "ERASE_SIGNATURE_HEADER",
        "RECEIPT_FORMAT",
        "EraseRequest",
        "ErasureReceipt",
        "issue_receipt",
        "verify_receipt",
    ]
    assert not set(erasure.__all__) & set(s3claim.__all__)
    assert all(hasattr(s3claim.S3ClaimCheckStore, name) for name in ("erase", "forget"))


def test_the_test_doubles_have_a_home_of_their_own() -> None:
    """Issue 46: the doubles an application's tests build on, in `s3claim.testing`, each the
    library's own part (the memory store is the memory store)."""
    from s3claim import testing

    assert testing.__all__ == [
        "FailingStore",
        "ManualClock",
        "MemoryClaimCheckStore",
        "MemoryRunJournal",
        "ScriptedProvider",
    ]
    assert testing.MemoryClaimCheckStore is s3claim.MemoryClaimCheckStore
    assert issubclass(testing.FailingStore, s3claim.RangedStore)
