"""The bucket commands in-process (typer's CliRunner) against moto's HTTP server."""

from __future__ import annotations

import json
import re
import sys
import uuid
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from botocore.exceptions import ClientError
from typer.testing import CliRunner

from s3claim.cli import app
from s3claim.cli._exit import Exit, describe
from s3claim.handles import HandleKey
from s3claim.s3._errors import store_error
from s3claim.s3._lifecycle import lifecycle_rules
from s3claim.s3._provision import provision_bucket
from s3claim.scope import Scope

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

runner = CliRunner()
CANARY = "CANARY-0b1e"
CONTENT = ("Zoë signs clause 7 — 株式会社東京.\r\n" + CANARY + " \x1b[31mred\x1b[0m\n") * 400


@pytest.fixture
def client(moto_endpoint: str) -> S3Client:
    return boto3.client("s3", endpoint_url=moto_endpoint)


@pytest.fixture
def bucket(client: S3Client, moto_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """A bucket as the Terraform module makes it, and the environment pointing at it."""
    name = f"cli-{uuid.uuid4().hex}"
    provision_bucket(client, name, prefix="claims/", day_classes=(1, 7, 30))
    monkeypatch.setenv("S3CLAIM_BUCKET", name)
    monkeypatch.setenv("S3CLAIM_ENDPOINT_URL", moto_endpoint)
    monkeypatch.setenv("S3CLAIM_HANDLE_KEY", "k" * 32)
    return name


def _put(tenant: str, run: str, content: str = CONTENT, *extra: str) -> str:
    result = runner.invoke(app, ["put", "--tenant", tenant, "--run", run, *extra], input=content)
    assert result.exit_code == 0, result.output
    handle = result.stdout.strip()
    assert handle.startswith("claim:")
    return handle


def _one_line_error(result: object, code: int, *needles: str) -> None:
    assert result.exit_code == code, result.output  # type: ignore[attr-defined]
    stderr: str = result.stderr  # type: ignore[attr-defined]
    assert stderr.startswith("s3claim: error: ") and stderr.count("\n") == 1, stderr
    assert "Traceback" not in result.output  # type: ignore[attr-defined]
    for needle in needles:
        assert needle in stderr


@pytest.mark.usefixtures("bucket")
def test_put_then_fetch_all_gives_the_content_back_exactly() -> None:
    handle = _put("acme", "r1")

    result = runner.invoke(app, ["fetch", "--tenant", "acme", "--run", "r1", handle, "--all"])

    assert result.exit_code == 0, result.output
    assert result.stdout_bytes == CONTENT.encode("utf-8")
    assert result.stderr == f"characters 0-{len(CONTENT)} of {len(CONTENT)} (end)\n"


@pytest.mark.usefixtures("bucket")
def test_fetch_reads_one_window_and_says_where_to_continue() -> None:
    handle = _put("acme", "r1")
    args = ["fetch", "--tenant", "acme", "--run", "r1", handle]

    first = runner.invoke(app, args)
    later = runner.invoke(app, [*args, "--offset", "5000", "--limit", "10"])
    tail = runner.invoke(app, [*args, "--offset", str(len(CONTENT) - 3), "--all"])

    assert first.stdout_bytes == CONTENT[:4096].encode()
    assert first.stderr == f"characters 0-4096 of {len(CONTENT)} (next --offset 4096)\n"
    assert later.stdout_bytes == CONTENT[5000:5010].encode()
    assert tail.stdout_bytes == CONTENT[-3:].encode()


def test_put_reads_a_file(bucket: str, tmp_path: pytest.TempPathFactory) -> None:
    path = tmp_path / "result.txt"  # type: ignore[operator]
    path.write_text(CONTENT, encoding="utf-8", newline="")
    result = runner.invoke(app, ["put", "--tenant", "acme", "--run", "r1", str(path)])
    assert result.exit_code == 0
    assert result.stdout.strip() == _put("acme", "r1")  # same content, same scope: one handle


@pytest.mark.usefixtures("bucket")
def test_a_claim_from_another_run_is_unavailable() -> None:
    handle = _put("acme", "r1")
    result = runner.invoke(app, ["fetch", "--tenant", "acme", "--run", "r2", handle])
    _one_line_error(result, 1, "claim unavailable")
    result = runner.invoke(app, ["fetch", "--tenant", "acme", "--run", "r1", "claim:nope"])
    _one_line_error(result, 1, "claim unavailable")


@pytest.mark.usefixtures("bucket")
def test_another_handle_key_sees_nothing_and_both_commands_say_the_key_may_be_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    handle = _put("acme", "r1")
    monkeypatch.setenv("S3CLAIM_HANDLE_KEY", "j" * 32)
    listed = runner.invoke(app, ["ls", "--tenant", "acme"])
    assert listed.exit_code == 0 and "0 claim(s)" in listed.stdout
    assert "S3CLAIM_HANDLE_KEY" in listed.stderr
    fetched = runner.invoke(app, ["fetch", "--tenant", "acme", "--run", "r1", handle])
    _one_line_error(fetched, 1, "claim unavailable", "another S3CLAIM_HANDLE_KEY")


@pytest.mark.usefixtures("bucket")
def test_an_offset_past_the_end_is_one_line_naming_the_last_offset() -> None:
    handle = _put("acme", "r1", "short")
    for offset in ("5", "99999999"):
        result = runner.invoke(
            app, ["fetch", "--tenant", "acme", "--run", "r1", "--offset", offset, handle]
        )
        _one_line_error(result, 2, f"--offset {offset} is past the end", "5 characters")
        assert result.stdout == ""
    last = runner.invoke(app, ["fetch", "--tenant", "acme", "--run", "r1", "--offset", "4", handle])
    assert (last.exit_code, last.stdout) == (0, "t")


@pytest.mark.usefixtures("bucket")
def test_ls_lists_handles_sizes_and_expiry_never_content() -> None:
    first, second = _put("acme", "r1"), _put("acme", "r2", "short")
    _put("other", "r1")

    table = runner.invoke(app, ["ls", "--tenant", "acme"])
    lines = runner.invoke(app, ["ls", "--tenant", "acme", "--json"])
    one_run = runner.invoke(app, ["ls", "--tenant", "acme", "--run", "r2", "--json"])

    assert table.exit_code == lines.exit_code == one_run.exit_code == 0
    assert first in table.stdout and second in table.stdout and "2 claim(s)" in table.stdout
    assert f"{len(CONTENT):,}" in table.stdout
    records = [json.loads(line) for line in lines.stdout.splitlines()]
    assert {r["handle"]: r["chars"] for r in records} == {first: len(CONTENT), second: 5}
    assert {r["handle"]: r["lines"] for r in records}[second] == 1
    assert all(r["tool"] is None for r in records)  # `s3claim put` names no tool
    assert all(not r["expired"] and len(r["run_tag"]) == 32 for r in records)
    assert [json.loads(line)["handle"] for line in one_run.stdout.splitlines()] == [second]
    for result in (table, lines, one_run):
        assert CANARY not in result.output and "short" not in result.output


def test_ls_marks_expired_claims_and_skips_objects_that_are_not_claims(
    bucket: str, client: S3Client
) -> None:
    handle = _put("acme", "r1", "x", "--ttl", "1")
    tenant_prefix = "claims/" + HandleKey("k" * 32).tenant_tag("acme") + "/"
    client.put_object(Bucket=bucket, Key=tenant_prefix + "README", Body=b"not a claim")
    records = runner.invoke(app, ["ls", "--tenant", "acme", "--json"]).stdout.splitlines()
    assert [json.loads(r)["handle"] for r in records] == [handle]


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@pytest.mark.usefixtures("bucket")
def test_ls_into_a_pipe_prints_every_cell_whole_at_any_width() -> None:
    handle = _put("acme", "r1", "x" * 1_000_000)
    result = runner.invoke(app, ["ls", "--tenant", "acme"], env={"COLUMNS": "40"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[:2] == ["1 claim(s) of tenant 'acme'", lines[1]]
    assert lines[1].split() == ["handle", "run", "tag", "chars", "expires", "(UTC)"]
    row = lines[2].split()
    assert row[:3] == [handle, HandleKey("k" * 32).run_tag(Scope("acme", "r1")), "1,000,000"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", row[3]) and re.fullmatch(r"\d\d:\d\d:\d\dZ", row[4])
    assert len(lines) == 3 and "…" not in result.stdout and "│" not in result.stdout
    assert result.stderr == ""  # no progress frames, not even a blank line, in a pipe


@pytest.mark.usefixtures("bucket")
def test_ls_on_an_80_column_terminal_wraps_cells_and_never_cuts_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    handle = _put("acme", "r1", "x" * 1_000_000)
    monkeypatch.setattr("s3claim.cli._table.is_terminal", lambda stream: True)
    result = runner.invoke(app, ["ls", "--tenant", "acme"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    shown = ANSI.sub("", result.stdout)
    assert "─" in shown and "…" not in shown
    assert all(len(line) <= 80 for line in shown.splitlines())
    row = next(line for line in shown.splitlines() if handle in line)  # the handle: one line
    tag = HandleKey("k" * 32).run_tag(Scope("acme", "r1"))
    assert f" {tag[:12]} " in row and " 1,000,000 " in row  # a short tag, as git shows hashes
    words = shown.split()
    assert any(re.fullmatch(r"\d{4}-\d\d-\d\d", w) for w in words)  # wrapped at its space
    assert any(re.fullmatch(r"\d\d:\d\d:\d\dZ", w) for w in words)


@pytest.mark.usefixtures("bucket")
def test_ls_counts_what_it_reads_on_a_terminal_s_stderr(monkeypatch: pytest.MonkeyPatch) -> None:
    handles = {_put("acme", f"r{n}", f"claim {n}") for n in range(3)}
    monkeypatch.setattr("s3claim.cli._table.is_terminal", lambda stream: stream is sys.stderr)
    result = runner.invoke(app, ["ls", "--tenant", "acme"], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    progress = ANSI.sub("", result.stderr)
    assert "Listing the claims of tenant 'acme'" in progress and "3 read" in progress
    assert {line.split()[0] for line in result.stdout.splitlines()[2:]} == handles  # plain


@pytest.mark.usefixtures("bucket")
def test_forget_json_is_one_object_and_the_prompt_goes_to_stderr() -> None:
    _put("acme", "r1"), _put("acme", "r2", "short")
    declined = runner.invoke(app, ["forget", "--tenant", "acme", "--json"], input="n\n")
    assert declined.exit_code == 1
    assert "Erase every claim of tenant 'acme'" in declined.stderr
    # CliRunner echoes the typed answer on stdout, as a terminal shows it; nothing else is there.
    assert declined.stdout.split() == ["n"]
    one = runner.invoke(app, ["forget", "--tenant", "acme", "--run", "r2", "--json"], input="y\n")
    assert one.exit_code == 0, one.output
    answer, line = one.stdout.splitlines()
    assert answer.strip() == "y"
    record = json.loads(line)
    assert record == {"tenant": "acme", "run": "r2", "bucket": record["bucket"], "removed": 1}
    rest = json.loads(runner.invoke(app, ["forget", "-y", "--tenant", "acme", "--json"]).stdout)
    assert (rest["run"], rest["removed"]) == (None, 1)


@pytest.mark.usefixtures("bucket")
def test_forget_asks_first_and_shows_what_it_removed() -> None:
    _put("acme", "r1"), _put("acme", "r2", "short"), _put("other", "r1")

    declined = runner.invoke(app, ["forget", "--tenant", "acme"], input="n\n")
    assert declined.exit_code == 1
    assert "Erase every claim of tenant 'acme'" in declined.output
    assert len(runner.invoke(app, ["ls", "--tenant", "acme", "--json"]).stdout.splitlines()) == 2

    one_run = runner.invoke(app, ["forget", "--tenant", "acme", "--run", "r2"], input="y\n")
    assert one_run.exit_code == 0, one_run.output
    assert "Removed 1 claim(s) of run 'r2' of tenant 'acme'." in one_run.stdout

    rest = runner.invoke(app, ["forget", "--tenant", "acme", "--yes"])
    assert rest.exit_code == 0
    assert rest.stdout == "Removed 1 claim(s) of tenant 'acme'.\n"
    assert runner.invoke(app, ["ls", "--tenant", "acme", "--json"]).stdout == ""
    assert runner.invoke(app, ["ls", "--tenant", "other", "--json"]).stdout.count("\n") == 1


def test_keygen_prints_a_fresh_usable_key() -> None:
    keys = {runner.invoke(app, ["keygen"]).stdout for _ in range(3)}
    assert len(keys) == 3
    for key in keys:
        assert key.endswith("\n") and len(key.strip()) == 43
        HandleKey(key.strip())


# -- configuration errors: one line, no traceback ------------------------------------------


def test_no_bucket() -> None:
    result = runner.invoke(app, ["ls", "--tenant", "acme"])
    _one_line_error(result, 2, "--bucket or S3CLAIM_BUCKET")


@pytest.mark.usefixtures("bucket")
def test_no_handle_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("S3CLAIM_HANDLE_KEY")
    for args in (["put", "--tenant", "a", "--run", "r"], ["ls", "--tenant", "a"]):
        _one_line_error(runner.invoke(app, args, input="x"), 2, "S3CLAIM_HANDLE_KEY is not set")
    monkeypatch.setenv("S3CLAIM_HANDLE_KEY", "short")
    result = runner.invoke(app, ["put", "--tenant", "a", "--run", "r"], input="x")
    _one_line_error(result, 2, "S3CLAIM_HANDLE_KEY")
    assert "short" not in result.stderr


@pytest.mark.usefixtures("bucket")
def test_no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)  # it caches what it resolved before
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    result = runner.invoke(app, ["put", "--tenant", "a", "--run", "r"], input="x")
    _one_line_error(result, 2, "no AWS credentials found")


@pytest.mark.usefixtures("bucket")
def test_no_such_bucket() -> None:
    result = runner.invoke(app, ["put", "--tenant", "a", "--run", "r", "--bucket", "nope-nope"])
    _one_line_error(result, 2, "bucket 'nope-nope' does not exist")
    result = runner.invoke(app, ["ls", "--tenant", "a", "--bucket", "nope-nope"])
    _one_line_error(result, 2, "bucket 'nope-nope' does not exist")


@pytest.mark.usefixtures("bucket")
def test_an_unreachable_endpoint_is_unavailable() -> None:
    result = runner.invoke(app, ["ls", "--tenant", "a", "--endpoint-url", "http://127.0.0.1:9"])
    _one_line_error(result, 3, "cannot reach S3 at http://127.0.0.1:9")


@pytest.mark.usefixtures("bucket")
def test_bad_settings_and_input_are_named() -> None:
    result = runner.invoke(app, ["ls", "--tenant", "a", "--prefix", "claims"])
    _one_line_error(result, 2, "--prefix must end in '/'")
    result = runner.invoke(app, ["put", "--tenant", "a", "--run", "r", "--ttl", "99999999"])
    _one_line_error(result, 2, "--ttl", "30 days")
    result = runner.invoke(app, ["put", "--tenant", "a", "--run", "r", "/no/such/file"])
    _one_line_error(result, 2, "cannot read /no/such/file")
    result = runner.invoke(app, ["put", "--tenant", "a", "--run", "r"], input=b"\xff\xfe")
    _one_line_error(result, 2, "stdin is not UTF-8 text")


@pytest.mark.usefixtures("bucket")
@pytest.mark.parametrize("command", ["put", "fetch", "ls", "forget"])
def test_a_tenant_or_run_name_out_of_bounds_is_one_usage_line(command: str) -> None:
    args = [command, "--tenant", "", "--run", "r" * 1025]
    if command == "fetch":
        args.append("claim:1" + "0" * 32)
    if command == "forget":
        args.append("--yes")
    result = runner.invoke(app, args, input="some content")
    _one_line_error(result, 2, "invalid input:")


def test_a_malformed_environment_variable_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("S3CLAIM_TTL_DAY_CLASSES", "not json")
    _one_line_error(runner.invoke(app, ["doctor"]), 2, "S3CLAIM_")


@pytest.mark.parametrize(
    ("code", "expected", "exit_code"),
    [
        ("AccessDenied", "access denied to bucket 'b'", Exit.CONFIGURATION),
        ("InvalidAccessKeyId", "credentials were refused", Exit.CONFIGURATION),
        ("PermanentRedirect", "another region", Exit.CONFIGURATION),
        ("SlowDown", "store unavailable", Exit.UNAVAILABLE),
    ],
)
def test_store_errors_are_explained_by_their_cause(
    code: str, expected: str, exit_code: Exit
) -> None:
    cause = ClientError({"Error": {"Code": code}, "ResponseMetadata": {"HTTPStatusCode": 403}}, "X")
    error = describe(store_error("PutObject", cause, attempts=5), bucket="b")
    assert error is not None
    assert expected in str(error) and error.code == exit_code
    assert describe(ValueError("a bug")) is None


# -- doctor --------------------------------------------------------------------------------


def test_doctor_passes_the_bucket_the_terraform_module_makes(bucket: str, client: S3Client) -> None:
    result = runner.invoke(app, ["doctor", "--json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["ok"] and document["bucket"] == bucket
    assert {c["status"] for c in document["checks"]} == {"pass"}
    assert [c["name"] for c in document["checks"]] == [
        "reachable",
        "default encryption",
        "public access blocked",
        "versioning off",
        "lifecycle: 1-day class",
        "lifecycle: 7-day class",
        "lifecycle: 30-day class",
        "lifecycle: abort incomplete uploads",
        "capability: ranged GET",
        "capability: object tagging",
        "capability: conditional PUT",
        "capability: versioning API",
        "capability: lifecycle rules",
    ]
    assert client.list_objects_v2(Bucket=bucket).get("KeyCount", 0) == 0  # the probe is gone
    table = runner.invoke(app, ["doctor"])
    assert table.exit_code == 0 and "✓ pass" in table.stdout and "fail" not in table.stdout


def test_doctor_fails_a_bare_bucket_and_says_how_to_fix_it(
    client: S3Client, moto_endpoint: str
) -> None:
    name = f"bare-{uuid.uuid4().hex}"
    client.create_bucket(Bucket=name)
    args = ["doctor", "--bucket", name, "--endpoint-url", moto_endpoint]

    result = runner.invoke(app, [*args, "--json"])

    assert result.exit_code == 1
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    assert checks["reachable"]["status"] == "pass"
    assert checks["versioning off"]["status"] == "pass"
    for failed in ("public access blocked", "lifecycle: 1-day class", "lifecycle: 30-day class"):
        assert checks[failed]["status"] == "fail" and checks[failed]["fix"]
    assert "put-public-access-block" in checks["public access blocked"]["fix"]
    assert checks["lifecycle: abort incomplete uploads"]["status"] == "warn"
    words = " ".join(runner.invoke(app, args).stdout.split())
    assert "✗ fail" in words and "fix: aws s3api put-public-access-block" in words


def _doctor_checks() -> dict[str, dict[str, str]]:
    result = runner.invoke(app, ["doctor", "--json"])
    return {c["name"]: c for c in json.loads(result.stdout)["checks"]}


def test_doctor_checks_versioning_and_the_days_of_each_rule(bucket: str, client: S3Client) -> None:
    client.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    rules = lifecycle_rules(prefix="claims/", day_classes=(1, 7, 30))
    rules[0]["Expiration"] = {"Days": 2}  # 1-day claims kept for 2: a warning
    rules[2]["Expiration"] = {"Days": 3}  # 30-day claims deleted after 3: a failure
    client.put_bucket_lifecycle_configuration(
        Bucket=bucket, LifecycleConfiguration={"Rules": rules}
    )

    checks = _doctor_checks()

    assert checks["versioning off"]["status"] == "fail"
    assert checks["lifecycle: 1-day class"]["status"] == "warn"
    assert checks["lifecycle: 7-day class"]["status"] == "pass"
    assert checks["lifecycle: 30-day class"]["status"] == "fail"
    assert "before their TTL" in checks["lifecycle: 30-day class"]["detail"]

    rules.append(
        {
            "ID": "noncurrent",
            "Status": "Enabled",
            "Filter": {"Prefix": "claims/"},
            "NoncurrentVersionExpiration": {"NoncurrentDays": 1},
        }
    )
    client.put_bucket_lifecycle_configuration(
        Bucket=bucket, LifecycleConfiguration={"Rules": rules}
    )
    checks = _doctor_checks()
    assert checks["versioning off"]["status"] == "pass"


def test_doctor_on_a_missing_bucket_fails_and_skips_the_rest(moto_endpoint: str) -> None:
    args = ["doctor", "--bucket", "nope-nope", "--endpoint-url", moto_endpoint, "--json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 1
    checks = json.loads(result.stdout)["checks"]
    assert checks[0]["status"] == "fail" and "does not exist" in checks[0]["detail"]
    assert {c["status"] for c in checks[1:]} == {"skip"}


def test_doctor_reports_what_s3rver_lacks_and_what_the_store_does_without_it(
    s3rver: Any, s3rver_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = f"doctor-{uuid.uuid4().hex[:12]}"
    s3rver_client.create_bucket(Bucket=name)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3rver.credentials[0])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3rver.credentials[1])
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)  # it caches the first credentials
    args = ["doctor", "--bucket", name, "--endpoint-url", s3rver.url, "--json"]

    result = runner.invoke(app, args)

    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    status = {name: check["status"] for name, check in checks.items()}
    assert result.exit_code == 0, checks  # nothing the store cannot work around
    assert status["capability: ranged GET"] == "pass"
    assert status["capability: versioning API"] == "pass"
    assert "forget lists keys instead" in checks["capability: versioning API"]["detail"]
    for lacking in ("object tagging", "conditional PUT", "lifecycle rules"):
        assert status[f"capability: {lacking}"] == "warn", lacking
    assert (
        "journal cannot keep out a second writer" in checks["capability: conditional PUT"]["detail"]
    )
    assert "reads still refuse them" in checks["capability: lifecycle rules"]["detail"]
    assert status["default encryption"] == status["lifecycle rules"] == "warn"
    assert "no API" in checks["default encryption"]["detail"]
    assert s3rver_client.list_objects_v2(Bucket=name).get("KeyCount", 0) == 0


def test_doctor_prints_the_lifecycle_the_store_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("S3CLAIM_PREFIX", "tools/")
    result = runner.invoke(app, ["doctor", "--print-lifecycle"])
    assert result.exit_code == 0
    rules = json.loads(result.stdout)["Rules"]
    assert rules == lifecycle_rules(prefix="tools/", day_classes=(1, 7, 30))
    assert rules[1] == {
        "ID": "s3claim-ttl-7d",
        "Status": "Enabled",
        "Filter": {
            "And": {"Prefix": "tools/", "Tags": [{"Key": "s3claim-ttl-days", "Value": "7"}]}
        },
        "Expiration": {"Days": 7},
    }
    assert rules[-1]["Filter"] == {"Prefix": ""}
    assert rules[-1]["AbortIncompleteMultipartUpload"] == {"DaysAfterInitiation": 1}


COMMANDS = [
    "demo",
    "put",
    "fetch",
    "search",
    "link",
    "ls",
    "forget",
    "verify-receipt",
    "keygen",
    "doctor",
]


@pytest.mark.parametrize("command", [[], *([name] for name in COMMANDS)])
def test_every_command_has_help_with_the_exit_codes(command: list[str]) -> None:
    result = runner.invoke(app, [*command, "--help"])
    assert result.exit_code == 0
    words = " ".join(result.stdout.split())
    assert "Exit codes: 0 ok" in words or command == []
    assert "Usage:" in words


def test_version_prints_the_package_version() -> None:
    from s3claim import __version__

    for args in (["--version"], ["--version", "ls"]):  # eager: before any command runs
        result = runner.invoke(app, args)
        assert (result.exit_code, result.stdout) == (0, f"s3claim {__version__}\n")


def test_shell_completion_is_offered() -> None:
    words = " ".join(runner.invoke(app, ["--help"]).stdout.split())
    assert "--install-completion" in words and "--show-completion" in words
