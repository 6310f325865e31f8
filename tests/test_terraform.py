"""The Terraform module in terraform/: formatted, valid, unit-tested with a mocked provider,
clean under checkov, and `examples/local` applied for real on `moto_server` started as the
README says (stock moto, unpatched), where `s3claim doctor` and the store then run on the bucket
it made.

Terraform must be on PATH and hashicorp/aws in a local filesystem mirror; nothing is fetched.
Every Terraform run works on a copy of terraform/ in a temporary directory, so no `.terraform`,
lock or state file lands in the repository.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

REPO = Path(__file__).resolve().parents[1]
MODULE = REPO / "terraform"
CHECKOV = REPO / ".venv-checkov" / "bin" / "checkov"
# Read at import: the autouse fixture clears S3CLAIM_* before each test runs.
PLUGIN_MIRROR = os.environ.get("S3CLAIM_TF_PLUGIN_DIR", "/opt/tf-plugins")
TTL_TAG_KEY = "s3claim-ttl-days"
DAY = 86_400
# A claim's TTL and the day class the store must round it up to, with the default classes.
TTL_CASES = ((3_600, 1), (3 * DAY, 7), (20 * DAY, 30))
APPLY_TIMEOUT = 420


def _terraform_env(work: Path) -> dict[str, str]:
    """An environment sealed like the tests' own: fake AWS keys, mirror-only provider install."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("AWS_", "S3CLAIM_", "TF_"))
    }
    cli_config = work / "terraform.tfrc"
    # The mirror only: no registry is reachable, and none should be tried. (`init` installs
    # nothing in fact: every command reattaches to the provider `Terraform` starts.)
    cli_config.write_text(
        "provider_installation {\n"
        f'  filesystem_mirror {{\n    path = "{PLUGIN_MIRROR}"\n  }}\n'
        "}\n"
    )
    env.update(
        TF_CLI_CONFIG_FILE=str(cli_config),
        TF_IN_AUTOMATION="1",
        TF_INPUT="0",
        CHECKPOINT_DISABLE="1",
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_DEFAULT_REGION="us-east-1",
        AWS_CONFIG_FILE=os.devnull,
        AWS_SHARED_CREDENTIALS_FILE=os.devnull,
    )
    return env


class Terraform:
    """Runs terraform in a private copy of terraform/, each directory initialised once.

    Every command talks to one hashicorp/aws process, started here in the provider's debug
    mode and reattached (`TF_REATTACH_PROVIDERS`): terraform otherwise launches the 675 MB
    provider several times per command (32 times for the module's `terraform test`), and
    those launches were most of this file's CPU. `close` stops it.
    """

    def __init__(self, work: Path) -> None:
        binary = shutil.which("terraform")
        assert binary is not None, "terraform is not on PATH: these tests need it, they do not skip"
        self.binary = binary
        self.root = work / "terraform"
        shutil.copytree(
            MODULE,
            self.root,
            ignore=shutil.ignore_patterns(".terraform", "*.tfstate*", ".terraform.lock.hcl"),
        )
        self.env = _terraform_env(work)
        self._initialised: set[str] = set()
        self.provider = subprocess.Popen(
            [str(_provider_binary()), "-debug"],
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.env["TF_REATTACH_PROVIDERS"] = _reattach_config(self.provider)

    def close(self) -> None:
        self.provider.terminate()
        try:
            self.provider.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.provider.kill()
            self.provider.wait()
        assert self.provider.stdout is not None
        self.provider.stdout.close()

    def run(
        self, subdir: str, *args: str, timeout: float = 120, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [self.binary, *args, "-no-color"],
            cwd=self.root / subdir,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check:
            assert result.returncode == 0, (
                f"terraform {' '.join(args)} in {subdir or '.'} exited {result.returncode}\n"
                f"{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
            )
        return result

    def init(self, subdir: str) -> None:
        if subdir not in self._initialised:
            self.run(subdir, "init", "-input=false")
            self._initialised.add(subdir)


def _provider_binary() -> Path:
    found = sorted(
        Path(PLUGIN_MIRROR).glob("registry.terraform.io/hashicorp/aws/*/*/terraform-provider-aws*")
    )
    assert found, f"hashicorp/aws is not in the provider mirror {PLUGIN_MIRROR}"
    return found[-1]


def _reattach_config(provider: subprocess.Popen[str]) -> str:
    """The JSON the debug-mode provider prints for terraform to reattach to it."""
    assert provider.stdout is not None
    for line in provider.stdout:  # a provider that dies ends the loop (and the test)
        found = re.search(r"TF_REATTACH_PROVIDERS='(\{.*\})'", line)
        if found:
            return found.group(1)
    raise AssertionError(f"the provider exited {provider.wait()} without a reattach config")


@pytest.fixture(scope="module")
def terraform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Terraform]:
    terraform = Terraform(tmp_path_factory.mktemp("tf"))
    try:
        yield terraform
    finally:
        terraform.close()


# --- static checks --------------------------------------------------------------------------


def test_terraform_files_are_formatted(terraform: Terraform) -> None:
    result = terraform.run("", "fmt", "-check", "-recursive", "-diff", check=False)
    assert result.returncode == 0, f"run `terraform fmt -recursive terraform`:\n{result.stdout}"


# examples/local is applied below, which validates it (and must warn of nothing) on the way.
@pytest.mark.parametrize("subdir", ["", "examples/basic"])
def test_configuration_is_valid(terraform: Terraform, subdir: str) -> None:
    terraform.init(subdir)
    result = terraform.run(subdir, "validate", "-json")
    report = json.loads(result.stdout)
    assert report["valid"] is True
    assert report["warning_count"] == 0, report["diagnostics"]


def test_module_unit_tests_pass_with_mocked_provider(terraform: Terraform) -> None:
    terraform.init("")
    result = terraform.run("", "test")
    assert "0 failed" in result.stdout
    # Every case of the suites in terraform/tests must have run.
    cases = sum(
        len(re.findall(r'^run "', path.read_text(), flags=re.MULTILINE))
        for path in (MODULE / "tests").glob("*.tftest.hcl")
    )
    assert cases >= 5
    assert f"Success! {cases} passed, 0 failed." in result.stdout, result.stdout


def test_checkov_passes_with_every_skip_explained() -> None:
    assert CHECKOV.exists(), f"{CHECKOV} is missing: `make .venv-checkov/.installed` installs it"
    command = [str(CHECKOV), "-d", str(MODULE), "--framework", "terraform", "--skip-download"]
    result = subprocess.run(
        [*command, "-o", "json"], capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    report = json.loads(result.stdout)
    summary = report["summary"]
    assert summary["failed"] == 0, report["results"]["failed_checks"]
    assert summary["parsing_errors"] == 0
    # A checkov that found nothing to scan also exits 0: make sure the bucket was seen.
    assert summary["passed"] >= 10
    scanned = {check["resource"] for check in report["results"]["passed_checks"]}
    assert any(resource.endswith("aws_s3_bucket.this") for resource in scanned)
    for skipped in report["results"]["skipped_checks"]:
        reason = (skipped.get("check_result") or {}).get("suppress_comment", "")
        assert len(reason) > 20, f"{skipped['check_id']} is skipped without a reason"


# --- end to end against moto ----------------------------------------------------------------


@pytest.fixture(scope="module")
def moto_server() -> Iterator[str]:
    """`moto_server -p PORT`, as terraform/README.md says to start it: stock moto, unpatched."""
    from devkit.servers import MotoServerCommand

    server = MotoServerCommand()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(scope="module")
def applied(terraform: Terraform, moto_server: str) -> Iterator[dict[str, Any]]:
    """examples/local applied once against moto; destroyed when the module's tests are done."""
    example = "examples/local"
    bucket = f"s3claim-tf-{secrets.token_hex(4)}"
    variables = ("-var", f"endpoint={moto_server}", "-var", f"bucket={bucket}")
    terraform.init(example)
    try:
        applied = terraform.run(
            example, "apply", "-auto-approve", *variables, timeout=APPLY_TIMEOUT
        )
        assert "Warning:" not in applied.stdout + applied.stderr, applied.stdout[-4000:]
        outputs = json.loads(terraform.run(example, "output", "-json").stdout)
        yield {"bucket": bucket, **{name: output["value"] for name, output in outputs.items()}}
    finally:
        terraform.run(example, "destroy", "-auto-approve", *variables, timeout=APPLY_TIMEOUT)


@pytest.fixture
def s3(moto_server: str) -> Any:
    return boto3.client("s3", endpoint_url=moto_server, region_name="us-east-1")


def _ttl_rules(rules: list[dict[str, Any]]) -> dict[tuple[str | None, str, str], int]:
    """(prefix or None, tag key, tag value) -> expiration days, for each day-class rule.

    A rule filtered by prefix AND tag gives its prefix; one filtered by the tag alone, None.
    """
    found = {}
    for rule in rules:
        filt = rule.get("Filter", {})
        if "And" in filt:
            prefix, (tag,) = filt["And"]["Prefix"], filt["And"]["Tags"]
        elif "Tag" in filt:
            prefix, tag = None, filt["Tag"]
        else:
            continue
        assert rule["Status"] == "Enabled"
        found[(prefix, tag["Key"], tag["Value"])] = rule["Expiration"]["Days"]
    return found


@pytest.mark.slow
@pytest.mark.timeout(APPLY_TIMEOUT * 2)
def test_applied_bucket_has_one_expiration_rule_per_ttl_class(
    applied: dict[str, Any], s3: Any
) -> None:
    assert applied["bucket_name"] == applied["bucket"]
    assert applied["ttl_day_classes"] == [1, 7, 30]
    rules = s3.get_bucket_lifecycle_configuration(Bucket=applied["bucket"])["Rules"]
    # The local example filters by tag alone (moto drops part of an And filter).
    assert _ttl_rules(rules) == {
        (None, TTL_TAG_KEY, "1"): 1,
        (None, TTL_TAG_KEY, "7"): 7,
        (None, TTL_TAG_KEY, "30"): 30,
    }
    (abort,) = [rule for rule in rules if "AbortIncompleteMultipartUpload" in rule]
    assert abort["AbortIncompleteMultipartUpload"] == {"DaysAfterInitiation": 1}
    assert abort["Filter"] == {"Prefix": ""}
    assert len(rules) == 4
    # The rules the demo and `s3claim doctor` use are the module's: the same IDs, each class's
    # rule on the same tag (the module's default adds the prefix; terraform test checks it).
    from s3claim.s3._lifecycle import lifecycle_rules

    expected = lifecycle_rules(prefix="claims/", day_classes=(1, 7, 30))
    assert {r["ID"] for r in rules} == {r["ID"] for r in expected}
    applied_by_id = {r["ID"]: r for r in rules}
    for rule in expected:
        for (prefix, key, value), days in _ttl_rules([rule]).items():
            assert prefix == "claims/"
            assert _ttl_rules([applied_by_id[rule["ID"]]]) == {(None, key, value): days}


@pytest.mark.slow
@pytest.mark.timeout(APPLY_TIMEOUT * 2)
def test_doctor_passes_on_the_applied_bucket(applied: dict[str, Any]) -> None:
    """The README's path: apply, export store_env, `s3claim doctor`: every check passes."""
    from typer.testing import CliRunner

    from s3claim.cli import app

    as_documented = {
        **applied["store_env"],
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
    }
    result = CliRunner().invoke(app, ["doctor", "--json"], env=as_documented)
    checks = json.loads(result.stdout)["checks"]
    failed = [check for check in checks if check["status"] == "fail"]
    assert failed == [], failed
    assert result.exit_code == 0, result.output
    passed = {check["name"] for check in checks if check["status"] == "pass"}
    assert {"lifecycle: 1-day class", "lifecycle: 7-day class", "lifecycle: 30-day class"} <= passed


@pytest.mark.slow
@pytest.mark.timeout(APPLY_TIMEOUT * 2)
def test_applied_bucket_is_private_encrypted_and_unversioned(
    applied: dict[str, Any], s3: Any
) -> None:
    bucket = applied["bucket"]
    encryption = s3.get_bucket_encryption(Bucket=bucket)["ServerSideEncryptionConfiguration"]
    (rule,) = encryption["Rules"]
    assert rule["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    block = s3.get_public_access_block(Bucket=bucket)["PublicAccessBlockConfiguration"]
    assert block == {
        "BlockPublicAcls": True,
        "IgnorePublicAcls": True,
        "BlockPublicPolicy": True,
        "RestrictPublicBuckets": True,
    }
    ownership = s3.get_bucket_ownership_controls(Bucket=bucket)["OwnershipControls"]
    assert ownership["Rules"] == [{"ObjectOwnership": "BucketOwnerEnforced"}]
    assert "Status" not in s3.get_bucket_versioning(Bucket=bucket)
    # The local example turns the TLS-only policy off: moto would apply its Deny to everything.
    with pytest.raises(s3.exceptions.ClientError, match="NoSuchBucketPolicy"):
        s3.get_bucket_policy(Bucket=bucket)


@pytest.mark.slow
@pytest.mark.timeout(APPLY_TIMEOUT * 2)
def test_store_env_names_the_applied_bucket(applied: dict[str, Any], moto_server: str) -> None:
    assert applied["store_env"] == {
        "S3CLAIM_BUCKET": applied["bucket"],
        "S3CLAIM_PREFIX": "claims/",
        "S3CLAIM_REGION": "us-east-1",
        "S3CLAIM_SSE": "AES256",
        "S3CLAIM_TTL_DAY_CLASSES": "[1,7,30]",
        "S3CLAIM_ENDPOINT_URL": moto_server,
    }
    policy = json.loads(applied["iam_policy_json"])
    objects = next(s for s in policy["Statement"] if s["Sid"] == "ClaimObjects")
    assert objects["Resource"] == [f"arn:aws:s3:::{applied['bucket']}/claims/*"]


@pytest.mark.slow
@pytest.mark.timeout(APPLY_TIMEOUT * 2)
def test_store_round_trip_on_applied_bucket_matches_lifecycle_rules(
    applied: dict[str, Any], s3: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from s3claim import S3ClaimCheckStore, Scope

    for name, value in applied["store_env"].items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("S3CLAIM_HANDLE_KEY", secrets.token_hex(32))
    store = S3ClaimCheckStore.from_settings()
    bucket, prefix = applied["bucket"], applied["key_prefix"]
    scope = Scope(tenant="tenant-tf", run="run-tf")
    rules = _ttl_rules(s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"])

    for ttl_seconds, days in TTL_CASES:
        before = {o["Key"] for o in _objects(s3, bucket, prefix)}
        content = f"tool result kept {days} day(s) " + "x" * 5_000
        handle = store.put(scope, content, ttl_seconds=ttl_seconds)

        window = store.fetch(scope, handle, offset=0, limit=4096)
        assert window.text == content[:4096]
        assert window.total_chars == len(content)
        assert window.next_offset == 4096

        new_keys = {o["Key"] for o in _objects(s3, bucket, prefix)} - before
        assert new_keys, f"put with ttl_seconds={ttl_seconds} wrote nothing under {prefix}"
        for key in new_keys:
            assert key.startswith(prefix)
            tags = s3.get_object_tagging(Bucket=bucket, Key=key)["TagSet"]
            value = {tag["Key"]: tag["Value"] for tag in tags}[TTL_TAG_KEY]
            assert value == str(days)
            # The object falls under exactly the lifecycle rule of its class.
            assert rules[(None, TTL_TAG_KEY, value)] == days

    assert store.forget(tenant="tenant-tf") >= len(TTL_CASES)
    assert _objects(s3, bucket, prefix) == []


def _objects(s3: Any, bucket: str, prefix: str) -> list[dict[str, Any]]:
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    return [obj for page in pages for obj in page.get("Contents", [])]
