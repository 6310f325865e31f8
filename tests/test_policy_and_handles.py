"""ClaimCheckPolicy validation and keyed handle derivation."""

from __future__ import annotations

import hashlib
import hmac
import re

import pytest
from pydantic import ValidationError

from s3claim import ClaimCheckPolicy, HandleKey, Scope
from s3claim.handles import content_digest, content_width, handle_width, is_handle


def test_policy_defaults() -> None:
    policy = ClaimCheckPolicy()
    assert (policy.threshold_chars, policy.head_chars, policy.ttl_seconds) == (4096, 512, 3600)


def test_a_head_no_smaller_than_the_threshold_is_refused_with_the_numbers() -> None:
    with pytest.raises(ValidationError, match=r"head_chars \(5000\).*threshold_chars \(4096\)"):
        ClaimCheckPolicy(head_chars=5000)
    with pytest.raises(ValidationError, match="no smaller"):
        ClaimCheckPolicy(threshold_chars=512, head_chars=512)


@pytest.mark.parametrize("field", ["threshold_chars", "head_chars", "ttl_seconds"])
@pytest.mark.parametrize("value", [0, -1])
def test_non_positive_values_are_refused(field: str, value: int) -> None:
    with pytest.raises(ValidationError, match=field):
        ClaimCheckPolicy(**{field: value})


def test_policy_is_frozen() -> None:
    policy = ClaimCheckPolicy()
    with pytest.raises(ValidationError):
        policy.head_chars = 10  # type: ignore[misc]


KEY = HandleKey(b"k" * 32)


def test_handle_format_is_claim_a_width_digit_and_128_bits_of_hex() -> None:
    for content, width in [("hello", 1), ("Zoë", 1), ("Łódź", 2), ("株式", 2), ("ok 👍", 4)]:
        handle = KEY.handle(Scope("acme", "run-1"), content)
        assert is_handle(handle)
        assert handle_width(handle) == content_width(content) == width
        assert re.fullmatch(rf"claim:{width}[0-9a-f]{{32}}", handle)


def test_the_width_is_the_narrowest_that_holds_every_character() -> None:
    assert content_width("") == 1
    assert content_width("\x00\xff") == 1
    assert content_width("\u0100") == 2
    assert content_width("\uffff" * 3) == 2
    assert content_width("a" * 1000 + "\U00010000") == 4
    assert content_width("\U0010ffff") == 4


def test_handle_is_an_hmac_over_an_unambiguous_encoding_of_scope_digest_and_width() -> None:
    digest = content_digest("hello")
    fields = [b"handle", b"acme", b"run-1", digest, b"1"]
    message = b"".join(len(f).to_bytes(8, "big") + f for f in fields)
    mac = hmac.new(b"k" * 32, message, hashlib.sha256).hexdigest()[:30]
    # The last two digits name the key of a ring that made it: a MAC of the others.
    key_id = (
        len(b"key id").to_bytes(8, "big")
        + b"key id"
        + (31).to_bytes(8, "big")
        + b"1"
        + mac.encode()
    )
    named = hmac.new(b"k" * 32, key_id, hashlib.sha256).hexdigest()[:2]
    assert KEY.handle(Scope("acme", "run-1"), "hello") == "claim:1" + mac + named


def test_a_handle_from_a_digest_or_utf8_bytes_at_hand_is_the_same_handle() -> None:
    scope = Scope("acme", "run-1")
    digest = content_digest("plain text", utf8=b"plain text")
    assert KEY.handle(scope, "plain text", digest=digest) == KEY.handle(scope, "plain text")


@pytest.mark.parametrize("size", [0, 1, 4095, 4096, 4097, 3 * 1024 * 1024 + 5])
def test_the_content_digest_is_the_sha256_of_its_blocks_sha256s(size: int) -> None:
    # 3 MiB and more is hashed on two threads: the halves must meet at a block boundary.
    text = "".join(chr(32 + i % 95) for i in range(size))
    data = text.encode("utf-8")
    blocks = [hashlib.sha256(data[at : at + 4096]).digest() for at in range(0, len(data), 4096)]
    assert content_digest(text) == hashlib.sha256(b"".join(blocks)).digest()
    assert content_digest("Zoë " * size) != content_digest("Zoe " * size) or size == 0


def test_scope_fields_cannot_be_shifted_into_each_other() -> None:
    assert KEY.handle(Scope("a/b", "c"), "x") != KEY.handle(Scope("a", "b/c"), "x")
    assert KEY.tenant_tag("a") != KEY.tenant_tag("a ")
    assert KEY.run_tag(Scope("ab", "c")) != KEY.run_tag(Scope("a", "bc"))


def test_same_content_same_scope_one_handle_other_scope_or_key_another() -> None:
    handle = KEY.handle(Scope("acme", "r1"), "contract text")
    assert KEY.handle(Scope("acme", "r1"), "contract text") == handle
    assert KEY.handle(Scope("acme", "r2"), "contract text") != handle
    assert KEY.handle(Scope("umbrella", "r1"), "contract text") != handle
    assert HandleKey(b"j" * 32).handle(Scope("acme", "r1"), "contract text") != handle


def test_key_is_never_shown_and_must_be_long_enough() -> None:
    assert "kkkk" not in repr(KEY)
    with pytest.raises(ValueError, match="at least 16 bytes"):
        HandleKey("short")


@pytest.mark.parametrize(
    "value",
    [
        "claim:",
        "claim:1" + "A" * 32,
        "claim:1" + "g" * 32,
        "claim:" + "a" * 32,  # format 1: no width digit
        "claim:3" + "a" * 32,
        "claim:0" + "a" * 32,
        "claim:8" + "a" * 32,
        "../../etc/passwd",
        "",
        None,
        7,
        "claim:1" + "a" * 31,
        "claim:1" + "a" * 33,
        " claim:1" + "a" * 32,
        "claim：1" + "a" * 32,
    ],
)
def test_malformed_handles_are_recognised(value: object) -> None:
    assert not is_handle(value)


def test_lone_surrogates_are_refused_before_hashing() -> None:
    with pytest.raises(ValueError, match="lone surrogate"):
        content_digest("bad \ud800 text")


def test_scope_refuses_empty_and_unencodable_names_but_takes_odd_ones() -> None:
    with pytest.raises(ValidationError):
        Scope("", "run")
    with pytest.raises(ValidationError, match="unicode"):
        Scope("t\udc00", "run")
    odd = Scope("../a/b%2F\x00\u202e", "ラン")
    assert odd.tenant.startswith("..")
