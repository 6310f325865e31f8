"""Configuration: every refusal happens at construction and names what it refuses."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import SecretStr, ValidationError

from s3claim.errors import ConfigurationError
from s3claim.handles import HandleKey
from s3claim.s3 import RetryPolicy, S3ClaimCheckStore, S3ClaimSettings
from s3claim.scope import Scope

SECRET = "a-handle-key-of-enough-length"


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.setenv("S3CLAIM_BUCKET", "claims-bucket")
    monkeypatch.setenv("S3CLAIM_HANDLE_KEY", SECRET)
    return monkeypatch


def test_settings_read_the_environment(env: pytest.MonkeyPatch) -> None:
    env.setenv("S3CLAIM_PREFIX", "tenant-data/")
    env.setenv("S3CLAIM_ENDPOINT_URL", "http://127.0.0.1:9000")
    env.setenv("S3CLAIM_REGION", "eu-west-1")
    env.setenv("S3CLAIM_SSE", "aws:kms")
    env.setenv("S3CLAIM_KMS_KEY_ID", "alias/claims")
    env.setenv("S3CLAIM_TTL_DAY_CLASSES", "[2, 14, 60]")
    settings = S3ClaimSettings()
    assert settings.bucket == "claims-bucket"
    assert settings.prefix == "tenant-data/"
    assert settings.ttl_day_classes == (2, 14, 60)
    assert settings.handle_key is not None
    assert settings.handle_key.get_secret_value() == SECRET
    assert SECRET not in repr(settings)
    assert SECRET not in str(settings)


def test_from_settings_builds_a_path_style_single_attempt_client(env: pytest.MonkeyPatch) -> None:
    env.setenv("S3CLAIM_ENDPOINT_URL", "http://127.0.0.1:9000")
    store = S3ClaimCheckStore.from_settings()
    client: Any = store.client
    assert client.meta.endpoint_url == "http://127.0.0.1:9000"
    assert client.meta.config.s3["addressing_style"] == "path"
    assert client.meta.config.retries["total_max_attempts"] == 1
    assert SECRET not in repr(store)


def test_the_default_client_makes_a_single_attempt() -> None:
    store = S3ClaimCheckStore("claims-bucket", handle_key=SECRET)
    client: Any = store.client
    assert client.meta.config.retries["total_max_attempts"] == 1


def test_from_explicit_settings() -> None:
    settings = S3ClaimSettings(bucket="b", handle_key=SecretStr(SECRET), region="us-east-1")
    assert "bucket='b'" in repr(S3ClaimCheckStore.from_settings(settings))


@pytest.mark.parametrize(
    ("unset", "named"),
    [("S3CLAIM_BUCKET", "S3CLAIM_BUCKET"), ("S3CLAIM_HANDLE_KEY", "S3CLAIM_HANDLE_KEY")],
)
def test_a_missing_bucket_or_key_is_named(env: pytest.MonkeyPatch, unset: str, named: str) -> None:
    env.delenv(unset)
    with pytest.raises(ConfigurationError, match=named):
        S3ClaimCheckStore.from_settings()


def test_an_empty_bucket_variable_counts_as_missing(env: pytest.MonkeyPatch) -> None:
    env.setenv("S3CLAIM_BUCKET", "")
    with pytest.raises(ConfigurationError, match="S3CLAIM_BUCKET"):
        S3ClaimCheckStore.from_settings()


@pytest.mark.parametrize(
    ("variable", "value", "named"),
    [
        ("S3CLAIM_HANDLE_KEY", "short", "S3CLAIM_HANDLE_KEY"),
        ("S3CLAIM_PREFIX", "claims", "S3CLAIM_PREFIX"),
        ("S3CLAIM_SSE", "aws:kms", "S3CLAIM_KMS_KEY_ID"),
        ("S3CLAIM_SSE", "aes", "S3CLAIM_SSE"),
        ("S3CLAIM_KMS_KEY_ID", "alias/claims", "S3CLAIM_SSE"),
        ("S3CLAIM_TTL_DAY_CLASSES", "[7, 1]", "S3CLAIM_TTL_DAY_CLASSES"),
        ("S3CLAIM_TTL_DAY_CLASSES", "[]", "S3CLAIM_TTL_DAY_CLASSES"),
        ("S3CLAIM_TTL_DAY_CLASSES", "[0, 7]", "S3CLAIM_TTL_DAY_CLASSES"),
        ("S3CLAIM_TTL_DAY_CLASSES", '["a"]', "S3CLAIM_TTL_DAY_CLASSES"),
        ("S3CLAIM_TTL_DAY_CLASSES", "7,30", "S3CLAIM_TTL_DAY_CLASSES"),
    ],
)
def test_bad_variables_are_named_at_construction(
    env: pytest.MonkeyPatch, variable: str, value: str, named: str
) -> None:
    env.setenv(variable, value)
    with pytest.raises(ConfigurationError, match=named) as refused:
        S3ClaimCheckStore.from_settings()
    assert isinstance(refused.value, ValueError)


def test_a_short_key_is_refused_without_echoing_it(env: pytest.MonkeyPatch) -> None:
    env.setenv("S3CLAIM_HANDLE_KEY", "tiny-secret")
    with pytest.raises(ConfigurationError, match="S3CLAIM_HANDLE_KEY") as refused:
        S3ClaimCheckStore.from_settings()
    assert "tiny-secret" not in str(refused.value)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"bucket": ""}, "bucket"),
        ({"prefix": "claims"}, "prefix must end in '/', got 'claims'"),
        ({"prefix": ""}, "prefix"),
        ({"prefix": "/claims/"}, "prefix"),
        ({"prefix": "a//b/"}, "prefix"),
        ({"ttl_day_classes": ()}, "ttl_day_classes"),
        ({"ttl_day_classes": (7, 1)}, r"ascending, got \(7, 1\)"),
        ({"ttl_day_classes": (1, 1)}, "ascending"),
        ({"ttl_day_classes": (0, 1)}, "positive"),
        ({"ttl_day_classes": (-1,)}, "positive"),
        ({"ttl_day_classes": (True,)}, "positive"),
        ({"sse": "aws:kms"}, "kms_key_id"),
        ({"sse": "aes"}, "sse must be one of"),
        ({"kms_key_id": "alias/x"}, "aws:kms"),
        ({"handle_key": "short"}, "handle_key"),
        ({"handle_key": ""}, "handle_key"),
        ({"handle_key": SecretStr("")}, "handle_key"),
    ],
)
def test_the_constructor_refuses_what_cannot_work(kwargs: dict[str, Any], message: str) -> None:
    arguments: dict[str, Any] = {"bucket": "claims-bucket", "handle_key": SECRET, **kwargs}
    bucket = arguments.pop("bucket")
    with pytest.raises(ConfigurationError, match=message):
        S3ClaimCheckStore(bucket, **arguments)


@pytest.mark.parametrize(
    "secret",
    [SECRET, SECRET.encode(), SecretStr(SECRET), HandleKey(SECRET)],
    ids=["str", "bytes", "SecretStr", "HandleKey"],
)
def test_every_key_form_derives_the_same_handles(secret: Any) -> None:
    from s3claim.scope import Scope

    store = S3ClaimCheckStore("claims-bucket", handle_key=secret)
    scope = Scope(tenant="t", run="r")
    assert store.bucket.key.handle(scope, "d") == HandleKey(SECRET).handle(scope, "d")


def test_kms_is_accepted_with_a_key_id() -> None:
    store = S3ClaimCheckStore(
        "claims-bucket", handle_key=SECRET, sse="aws:kms", kms_key_id="alias/claims"
    )
    assert "aws:kms" in repr(store)


def test_retry_policy_is_frozen_and_checked() -> None:
    policy = RetryPolicy()
    assert (policy.attempts, policy.max_seconds, policy.initial_wait, policy.max_wait) == (
        5,
        20.0,
        0.05,
        2.0,
    )
    with pytest.raises(ValidationError):
        policy.attempts = 3  # type: ignore[misc]
    with pytest.raises(ValidationError):
        RetryPolicy(attempts=0)
    with pytest.raises(ValidationError, match="max_wait"):
        RetryPolicy(initial_wait=1.0, max_wait=0.5)
    with pytest.raises(ValidationError):
        RetryPolicy(max_seconds=0)


def test_an_overlong_prefix_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="at most 900 bytes"):
        S3ClaimCheckStore("claims-bucket", handle_key=SECRET, prefix="p" * 900 + "/")


def test_a_bucket_built_once_is_shared_whole_and_takes_no_settings_beside_it() -> None:
    from s3claim import S3RunJournal
    from s3claim.s3 import S3AuditTrail

    store = S3ClaimCheckStore("claims-bucket", handle_key=SECRET, prefix="p/")
    journal, trail = S3RunJournal(store.bucket), S3AuditTrail(store.bucket)
    assert journal.bucket is store.bucket is trail.bucket
    assert journal.run_tag(Scope("t", "r")) == store.run_tag(Scope("t", "r"))
    with pytest.raises(TypeError, match="settings of a Bucket given whole are its own"):
        S3ClaimCheckStore(store.bucket, prefix="other/")
