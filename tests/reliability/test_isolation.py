"""No tenant or run reaches another's claims, and no name moves or merges an S3 key.

The contract suite shows two fixed other scopes refused, tests/test_runner.py that the
refusal texts match on the memory store, and tests/test_s3_store.py the key layout for a
fixed list of hostile names. Here scopes and names are generated, both stores answer, and
the refusal is compared field by field with an expired and a never-stored handle.
"""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from s3claim import ClaimUnavailableError, RunContext, Scope, ToolError, claim_check_tool
from s3claim.events import ClaimUnavailable, Event
from s3claim.wording import UNAVAILABLE_MESSAGE
from tests._strategies import examples
from tests.reliability._support import KEY_LAYOUT, Rig

TTL = 60
NAMES = st.one_of(
    st.text(min_size=1, max_size=12),
    st.sampled_from(["a", "a/b", "x", "x/y", "y", "..", "../..", "%2F", "/", "é", "e\u0301"]),
    st.text(alphabet="/.%2Fa\x00\n", min_size=1, max_size=6),
)
SCOPES = st.lists(st.builds(Scope, tenant=NAMES, run=NAMES), min_size=2, max_size=4, unique=True)
SETTINGS = settings(
    max_examples=examples(25),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def refused(rig: Rig, scope: Scope, handle: str) -> tuple[object, ...]:
    """Everything a caller can observe of a refusal: exception and tool result, and event."""
    try:
        rig.store.fetch(scope, handle)
    except ClaimUnavailableError as exc:
        raised = (type(exc), exc.args, str(exc), repr(exc))
    else:
        raise AssertionError(f"{scope} could read {handle}")
    events: list[Event] = []
    context = RunContext(scope=scope, agent="a", emit=events.append)
    try:
        claim_check_tool(rig.store).call({"handle": handle}, context)
    except ToolError as error:
        rendered = error.render()
    else:
        raise AssertionError(f"{scope} could fetch {handle}")
    assert events == [ClaimUnavailable(handle=handle)]
    return raised, rendered


@SETTINGS
@given(scopes=SCOPES, content=st.text(min_size=1, max_size=200))
def test_a_handle_is_unavailable_in_every_other_scope_exactly_like_a_missing_one(
    rig: Rig, scopes: list[Scope], content: str
) -> None:
    handles = [rig.store.put(scope, content, ttl_seconds=TTL) for scope in scopes]
    assert len(set(handles)) == len(scopes)  # the same content, another handle per scope
    never_stored = refused(rig, scopes[0], "claim:1" + "0" * 32)
    assert never_stored[0][2] == UNAVAILABLE_MESSAGE  # type: ignore[index]
    for (owner, handle), other in itertools.product(zip(scopes, handles, strict=True), scopes):
        if other == owner:
            assert rig.store.fetch(other, handle).text == content[:4096]
        else:
            assert refused(rig, other, handle) == never_stored
    rig.clock.advance(TTL)
    for scope, handle in zip(scopes, handles, strict=True):
        assert refused(rig, scope, handle) == never_stored  # expired looks the same too


@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(tenant=NAMES, run=NAMES)
def test_no_name_changes_the_key_layout(s3_rig: Rig, tenant: str, run: str) -> None:
    scope = Scope(tenant=tenant, run=run)
    handle = s3_rig.store.put(scope, "content", ttl_seconds=TTL)
    keys = s3_rig.object_keys()
    assert all(KEY_LAYOUT.fullmatch(k) for k in keys), keys
    assert any(k.endswith("/" + handle.removeprefix("claim:")) for k in keys)


# Pairs whose names a naive "tenant/run/" layout would nest or merge.
LOOKALIKES = [
    (Scope(tenant="a", run="r"), Scope(tenant="a/b", run="r")),
    (Scope(tenant="x/y", run="r"), Scope(tenant="x", run="y/r")),
    (Scope(tenant="x", run="y"), Scope(tenant="x/y", run="y")),
    (Scope(tenant="t", run="a"), Scope(tenant="t", run="a/..")),
    (Scope(tenant="%2F", run="r"), Scope(tenant="/", run="r")),
    (Scope(tenant="é", run="r"), Scope(tenant="e\u0301", run="r")),  # NFC vs NFD
    (Scope(tenant="t", run="r"), Scope(tenant="t\x00", run="r")),
]


def test_lookalike_names_share_no_prefix_and_forget_never_crosses(rig: Rig) -> None:
    stored = {
        scope: rig.store.put(scope, f"claim of {scope!r}", ttl_seconds=TTL)
        for pair in LOOKALIKES
        for scope in pair
    }
    if rig.client is not None:
        prefixes = {k.rsplit("/", 1)[0] for k in rig.object_keys()}
        tenants = {p.split("/")[1] for p in prefixes}
        assert len(prefixes) == len(stored)  # one run prefix each
        assert len(tenants) == len({s.tenant for s in stored})
    for doomed, _ in LOOKALIKES:
        assert rig.store.forget(tenant=doomed.tenant, run=doomed.run) == 1
    for _, spared in LOOKALIKES[:3]:
        # a tenant forgotten whole takes nothing of the lookalike tenant
        assert rig.store.forget(tenant=spared.tenant) == 1
    for scope, handle in stored.items():
        gone = scope in [d for d, _ in LOOKALIKES] or scope in [s for _, s in LOOKALIKES[:3]]
        if gone:
            assert refused(rig, scope, handle)
        else:
            assert rig.store.fetch(scope, handle).text == f"claim of {scope!r}"
